"""MXNet's ``contrib`` operators (``_contrib_<name>``, shown as ``mx.nd.contrib.<name>``), one
file per family. Importing the package registers them all."""

from . import allclose, attention, boolean_mask, count_sketch, fft, hawkesll, index_copy, straight_through  # noqa: F401

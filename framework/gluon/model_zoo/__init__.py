"""``mx.gluon.model_zoo``: network definitions of MXNet 1.9.1's zoo, without pretrained weights.

The parameter names (prefixes) are MXNet's, so a ``.params`` file saved from MXNet's zoo
network loads into the same MXLab network. MXLab never downloads: ``pretrained=True``
raises :class:`PretrainedError`; load a file you have with ``net.load_parameters(path)``.
"""

from __future__ import annotations

from . import model_store, vision
from .vision import PretrainedError, get_model

__all__ = ["PretrainedError", "get_model", "model_store", "vision"]

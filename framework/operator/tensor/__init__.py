"""Tensor operators, one file per family. Importing the package registers them all."""

from . import (  # noqa: F401
    broadcast,
    contrib_quadratic,
    elemwise_binary,
    elemwise_unary,
    indexing,
    init_ops,
    matrix,
    optimizer_ops,
    ordering,
    random_ops,
    reduce,
    shape,
    smooth_l1,
)

"""Tensor operators, one file per family. Importing the package registers them all."""

from . import (  # noqa: F401
    broadcast,
    cast,
    contrib_quadratic,
    dot,
    elemwise_binary,
    elemwise_unary,
    indexing,
    init_ops,
    join_split,
    optimizer_ops,
    ordering,
    pad,
    random_ops,
    reduce,
    shape,
    slicing,
    smooth_l1,
    tile_repeat,
    transpose,
)

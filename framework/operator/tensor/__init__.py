"""Tensor operators, one file per family. Importing the package registers them all."""

from . import (  # noqa: F401
    broadcast,
    cast,
    contrib_quadratic,
    dot,
    elemwise_binary,
    elemwise_unary,
    histogram,
    indexing,
    init_ops,
    join_split,
    optimizer_ops,
    ordering,
    random_ops,
    rearrange,
    reduce,
    shape,
    slicing,
    smooth_l1,
    tile_repeat,
    transpose,
)

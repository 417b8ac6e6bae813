"""The fused RNN's *reserve*: what the forward pass keeps for the backward pass, in one array.

Backpropagation through time needs every step's gates and states. Recomputing them would
cost another forward pass, so the forward pass writes them into a hidden fourth (or second)
output, a 1-D array whose size follows from the shapes alone (MXNet and cuDNN call it the
reserve space). Being an ordinary output, it is allocated by the executor's memory planner
and kept alive exactly until ``_backward_RNN`` has read it, like Dropout's mask.

Layout, one contiguous ``(T, N, width)`` block after another:

1. for each layer and direction, the cell's cache fields (:meth:`cells.Cell.cache_fields`);
2. each layer's output ``(T, N, directions * (H or P))`` (the states of both directions);
3. with dropout (``p > 0``) and several layers, the dropout mask applied to each layer's
   output but the last (scaled by ``1 / (1 - p)``, all ones outside training).
"""

from __future__ import annotations

from typing import Any

from .cells import Cell
from .layout import RNNShape

Key = tuple  # ("cache", layer, direction, field) | ("output", layer) | ("mask", layer)


def reserve_blocks(spec: RNNShape, cell: Cell, steps: int, batch: int, p: float) -> list[tuple[Key, tuple]]:
    """Every block of the reserve, in order, as ``(key, (T, N, width))``."""
    blocks: list[tuple[Key, tuple]] = []
    for layer in range(spec.num_layers):
        for direction in range(spec.directions):
            for field, width in cell.cache_fields(spec):
                blocks.append((("cache", layer, direction, field), (steps, batch, width)))
    layer_out = (steps, batch, spec.directions * spec.output_size)
    blocks += [(("output", layer), layer_out) for layer in range(spec.num_layers)]
    if p > 0:
        blocks += [(("mask", layer), layer_out) for layer in range(spec.num_layers - 1)]
    return blocks


def reserve_size(spec: RNNShape, cell: Cell, steps: int, batch: int, p: float) -> int:
    """Number of elements of the reserve."""
    return sum(t * n * w for _, (t, n, w) in reserve_blocks(spec, cell, steps, batch, p))


def carve(reserve: Any, spec: RNNShape, cell: Cell, steps: int, batch: int, p: float) -> dict[Key, Any]:
    """Views of the reserve array, one per block."""
    views = {}
    offset = 0
    for key, shape in reserve_blocks(spec, cell, steps, batch, p):
        size = shape[0] * shape[1] * shape[2]
        views[key] = reserve[offset : offset + size].reshape(shape)
        offset += size
    return views

"""``Correlation``: FlowNet's correlation layer, comparing two feature maps at many offsets.

For every output position and every displacement (dx, dy) of a (2r+1) x (2r+1) grid
(``r = max_displacement // stride2``, offsets ``stride2`` apart), it compares the
``kernel_size`` x ``kernel_size`` window of ``data1`` at that position with the window of
``data2`` shifted by the displacement: the mean over the window and the channels of
``a * b`` (``is_multiply``) or ``|a - b|``. Both inputs are zero-padded by ``pad_size``;
output positions are ``stride1`` apart and start ``max_displacement`` in, so every
displaced window stays inside. One output channel per displacement.

The loops run over displacements and kernel taps (a few dozen), each step one vectorised
operation over the whole batch, all channels and all positions; never over pixels.
MXNet's two hidden outputs (the padded inputs, channels last) are kept.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..infer import InferenceError, ShapeT, shape_assign, shape_known
from ..node import Entry, Node, NodeAttrs
from ..params import OperatorParamError, Param, ParamSet
from ..registry import register
from ..tensor.common import backward_entries, put, register_backward
from .sampler import float_types


class CorrelationParam(ParamSet):
    kernel_size = Param(int, 1, "Side of the compared windows (odd).", low=0)
    max_displacement = Param(int, 1, "Largest displacement compared, in pixels.", low=0)
    stride1 = Param(int, 1, "Step between output positions in data1.", low=0)
    stride2 = Param(int, 1, "Step between compared displacements.", low=0)
    pad_size = Param(int, 0, "Zero padding of both inputs on every side.", low=0)
    is_multiply = Param(bool, True, "Compare by multiplication (True) or absolute difference (False).")


class Layout:
    """The sizes one call needs: padded input, output grid, displacements."""

    def __init__(self, attrs: NodeAttrs, height: int, width: int) -> None:
        p = attrs.parsed
        if p.kernel_size < 1 or p.kernel_size % 2 == 0:
            raise OperatorParamError(f"{attrs.name}: kernel_size must be a positive odd number, got {p.kernel_size}")
        if p.stride1 < 1 or p.stride2 < 1:
            raise OperatorParamError(
                f"{attrs.name}: stride1 and stride2 must be positive, got {p.stride1} and {p.stride2}"
            )
        self.kernel, self.stride, self.start = p.kernel_size, p.stride1, p.max_displacement
        self.padded = (height + 2 * p.pad_size, width + 2 * p.pad_size)
        border = p.max_displacement + (p.kernel_size - 1) // 2
        self.out = tuple(math.ceil((size - 2 * border) / p.stride1) for size in self.padded)
        if min(self.out) < 1:
            raise InferenceError(
                f"{attrs.name}: input ({height}, {width}) padded by {p.pad_size} is too small for kernel_size "
                f"{p.kernel_size} and max_displacement {p.max_displacement}"
            )
        radius = p.max_displacement // p.stride2
        grid = 2 * radius + 1
        #: (dy, dx) of output channel k: row-major over the displacement grid
        self.displacements = [
            ((k // grid - radius) * p.stride2, (k % grid - radius) * p.stride2) for k in range(grid**2)
        ]

    def window(self, tap: tuple[int, int], shift: tuple[int, int]) -> tuple[slice, slice, slice, slice]:
        """Index of the padded cells that kernel tap ``tap`` reads at every output position, shifted."""
        rows = self.start + tap[0] + shift[0]
        cols = self.start + tap[1] + shift[1]
        return (
            slice(None),
            slice(None),
            slice(rows, rows + (self.out[0] - 1) * self.stride + 1, self.stride),
            slice(cols, cols + (self.out[1] - 1) * self.stride + 1, self.stride),
        )

    def taps(self) -> list[tuple[int, int]]:
        return [(a, b) for a in range(self.kernel) for b in range(self.kernel)]


def _correlation_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    for i in range(2):
        if in_shapes[i] is not None and len(in_shapes[i]) != 4:
            raise InferenceError(f"{name}: data{i + 1} must be 4-d (N, C, H, W), got shape {tuple(in_shapes[i])}")
    shape_assign(in_shapes, 0, in_shapes[1], name, "data1")
    shape_assign(in_shapes, 1, in_shapes[0], name, "data2")
    data = in_shapes[0]
    if not shape_known(data):
        return False
    layout = Layout(attrs, data[2], data[3])
    shape_assign(out_shapes, 0, (data[0], len(layout.displacements), *layout.out), name, "output")
    for i in (1, 2):
        shape_assign(out_shapes, i, (data[0], *layout.padded, data[1]), name, f"tmp{i}")
    return True


def _pad(xp: Any, x: Any, pad: int) -> Any:
    return xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))


def _correlation_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    layout = Layout(attrs, *inputs[0].shape[2:])
    a, b = (_pad(xp, x, p.pad_size) for x in inputs)
    norm = layout.kernel**2 * a.shape[1]
    out = xp.zeros(outputs[0].shape, np.result_type(a.dtype, np.float32))
    for k, shift in enumerate(layout.displacements):
        for tap in layout.taps():
            first, second = a[layout.window(tap, (0, 0))], b[layout.window(tap, shift)]
            compared = first * second if p.is_multiply else xp.abs(first - second)
            out[:, k] += compared.sum(axis=1)
    put(outputs[0], req[0], out / norm)
    put(outputs[1], req[1], a.transpose(0, 2, 3, 1))
    put(outputs[2], req[2], b.transpose(0, 2, 3, 1))


def _correlation_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, data1, data2): every compared pair sends the gradient to both cells."""
    xp, p = op_ctx.xp, attrs.parsed
    g, data1 = inputs[0], inputs[1]
    layout = Layout(attrs, *data1.shape[2:])
    a, b = (_pad(xp, x, p.pad_size) for x in inputs[1:3])
    g = g / (layout.kernel**2 * a.shape[1])
    d_a, d_b = xp.zeros_like(a), xp.zeros_like(b)
    for k, shift in enumerate(layout.displacements):
        weight = g[:, k : k + 1]
        for tap in layout.taps():
            here, there = layout.window(tap, (0, 0)), layout.window(tap, shift)
            if p.is_multiply:
                d_a[here] += weight * b[there]
                d_b[there] += weight * a[here]
            else:
                sign = xp.sign(a[here] - b[there]) * weight
                d_a[here] += sign
                d_b[there] -= sign
    h, w = data1.shape[2:]
    interior = (slice(None), slice(None), slice(p.pad_size, p.pad_size + h), slice(p.pad_size, p.pad_size + w))
    put(outputs[0], req[0], d_a[interior])
    put(outputs[1], req[1], d_b[interior])


def _correlation_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    return backward_entries(node, "_backward_Correlation", [out_grads[0], *node.inputs])


(
    register("Correlation")
    .describe("FlowNet's correlation of two feature maps: one output channel per displacement.")
    .set_params(CorrelationParam)
    .set_num_inputs(2)
    .set_num_outputs(3)
    .set_num_visible_outputs(1)
    .set_input_names(["data1", "data2"])
    .set_output_names(["output", "tmp1", "tmp2"])
    .set_infer_shape(_correlation_shape)
    .set_infer_type(float_types)
    .set_compute(_correlation_forward)
    .set_gradient(_correlation_gradient)
)
register_backward("_backward_Correlation", _correlation_backward, CorrelationParam, num_inputs=3, num_outputs=2)

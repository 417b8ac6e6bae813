"""``im2col`` and ``col2im``: the sliding-window unfold behind Convolution, as operators.

``im2col`` turns an (N, C, *spatial) array into (N, C * prod(kernel), L): column ``l`` holds
the ``C * prod(kernel)`` values under window position ``l`` (channel slowest, then the
kernel taps), over the zero-padded input, with ``stride`` and ``dilate`` as in
Convolution. ``col2im`` is its adjoint: it adds every column back onto an image of
spatial size ``output_size`` (overlapping windows add up; padding is dropped). Each is the
other's gradient. Both reuse ``nn/im2col.py`` (the strided window view and the per-tap
scatter-add, batch axis last) and ``nn/geometry.py`` (per-axis parameters and sizes).
"""

from __future__ import annotations

import math
from typing import Any

from ..infer import InferenceError, ShapeT, shape_assign, shape_known
from ..nn import im2col as unfold
from ..nn.geometry import Geometry, per_axis
from ..node import Entry, Node, NodeAttrs
from ..params import REQUIRED, OperatorParamError, Param, ParamSet, Shape
from ..registry import register
from ..tensor.common import backward_entries, put, same_type


class Im2colParam(ParamSet):
    kernel = Param(Shape, REQUIRED, "Window size: (w,), (h, w) or (d, h, w).")
    stride = Param(Shape, Shape(), "Step between windows per axis (default 1).")
    dilate = Param(Shape, Shape(), "Spacing between kernel taps per axis (default 1).")
    pad = Param(Shape, Shape(), "Zero padding on both sides per axis (default 0).")


class Col2imParam(Im2colParam):
    output_size = Param(Shape, REQUIRED, "Spatial size of the image to rebuild: (w,), (h, w) or (d, h, w).")


def geometry(attrs: NodeAttrs) -> Geometry:
    """The window parameters with defaults filled in, checked against the kernel's rank."""
    p, who = attrs.parsed, attrs.name
    kernel = tuple(p.kernel)
    if not 1 <= len(kernel) <= 3 or min(kernel) < 1:
        raise OperatorParamError(f"{who}: kernel must have 1 to 3 positive sizes, got kernel={kernel}")
    if hasattr(p, "output_size") and len(p.output_size) != len(kernel):
        raise OperatorParamError(f"{who}: output_size={tuple(p.output_size)} must have the kernel's rank {len(kernel)}")
    return Geometry(
        kernel,
        per_axis(who, p, "stride", kernel, 1, 1),
        per_axis(who, p, "dilate", kernel, 1, 1),
        per_axis(who, p, "pad", kernel, 0, 0),
    )


def window_counts(attrs: NodeAttrs, g: Geometry, spatial: tuple[int, ...]) -> tuple[int, ...]:
    """Window positions per axis; raises when a window does not fit into the padded input."""
    counts = tuple(g.out_size(axis, size) for axis, size in enumerate(spatial))
    if min(counts) < 1:
        raise InferenceError(
            f"{attrs.name}: the dilated kernel {tuple(g.dilated(a) for a in range(len(spatial)))} does not fit into "
            f"the padded input {g.padded_shape(spatial)}"
        )
    return counts


def _im2col_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    g = geometry(attrs)
    data = in_shapes[0]
    if data is None or not shape_known(data):
        return False
    if len(data) != len(g.kernel) + 2:
        raise InferenceError(f"{attrs.name}: data {tuple(data)} must have 2 + {len(g.kernel)} dimensions")
    counts = window_counts(attrs, g, tuple(data[2:]))
    shape_assign(out_shapes, 0, (data[0], data[1] * math.prod(g.kernel), math.prod(counts)), attrs.name, "output")
    return True


def _col2im_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    g, name = geometry(attrs), attrs.name
    size = tuple(attrs.parsed.output_size)
    counts = window_counts(attrs, g, size)
    k = math.prod(g.kernel)
    cols = in_shapes[0]
    if cols is not None:
        if len(cols) != 3:
            raise InferenceError(f"{name}: data must be 3-d (N, C * prod(kernel), L), got {tuple(cols)}")
        if cols[1] and cols[1] % k:
            raise InferenceError(f"{name}: data {tuple(cols)}: axis 1 must be a multiple of prod(kernel) = {k}")
        if cols[2] and cols[2] != math.prod(counts):
            raise InferenceError(
                f"{name}: data {tuple(cols)} has {cols[2]} columns, but output_size {size} gives "
                f"{math.prod(counts)} windows"
            )
        shape_assign(out_shapes, 0, (cols[0], cols[1] // k, *size), name, "output")
    if out_shapes[0] is not None:
        shape_assign(in_shapes, 0, (out_shapes[0][0], out_shapes[0][1] * k, math.prod(counts)), name, "data")
    return shape_known(in_shapes[0])


def im2col_array(xp: Any, x: Any, g: Geometry, counts: tuple[int, ...]) -> Any:
    """(N, C, *S) -> (N, C * prod(kernel), L) through the strided window view."""
    n, c = x.shape[:2]
    padded = xp.empty((c, *g.padded_shape(x.shape[2:]), n), x.dtype)
    unfold.to_batch_last(xp, x, g.pad, padded)
    view = unfold.window_view(xp, padded, g.kernel, g.stride, g.dilate, counts)  # (C, *kernel, *out, N)
    return xp.moveaxis(view, -1, 0).reshape(n, c * math.prod(g.kernel), math.prod(counts))


def col2im_array(xp: Any, cols: Any, g: Geometry, size: tuple[int, ...], counts: tuple[int, ...]) -> Any:
    """(N, C * prod(kernel), L) -> (N, C, *size): every column added back onto its window."""
    n = cols.shape[0]
    c = cols.shape[1] // math.prod(g.kernel)
    batch_last = xp.moveaxis(cols.reshape(n, c, *g.kernel, *counts), 0, -1)
    image = xp.empty((c, *size, n), cols.dtype)
    unfold.col2im(xp, batch_last, image, g.kernel, g.stride, g.dilate, g.pad, counts)
    return xp.moveaxis(image, -1, 0)


def _im2col_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    g, x = geometry(attrs), inputs[0]
    put(outputs[0], req[0], im2col_array(op_ctx.xp, x, g, window_counts(attrs, g, x.shape[2:])))


def _im2col_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    g, size = geometry(attrs), outputs[0].shape[2:]
    put(outputs[0], req[0], col2im_array(op_ctx.xp, inputs[0], g, size, window_counts(attrs, g, size)))


def _col2im_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    g, size = geometry(attrs), tuple(attrs.parsed.output_size)
    put(outputs[0], req[0], col2im_array(op_ctx.xp, inputs[0], g, size, window_counts(attrs, g, size)))


def _col2im_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    g, size = geometry(attrs), tuple(attrs.parsed.output_size)
    put(outputs[0], req[0], im2col_array(op_ctx.xp, inputs[0], g, window_counts(attrs, g, size)))


def _grad_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """Backward nodes get (out_grad, data): the gradient is shaped like data."""
    shape_assign(out_shapes, 0, in_shapes[1], attrs.name, "gradient of data")
    return shape_known(out_shapes[0])


def _grad_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    return same_type(attrs, in_types, out_types)


def _gradient(backward: str):
    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        return backward_entries(node, backward, [out_grads[0], node.inputs[0]])

    return gradient


for _name, _params, _shape, _forward, _backward, _text in (
    (
        "im2col",
        Im2colParam,
        _im2col_shape,
        _im2col_forward,
        _im2col_backward,
        "Unfolds sliding windows: (N, C, *S) -> (N, C * prod(kernel), number of windows).",
    ),
    (
        "col2im",
        Col2imParam,
        _col2im_shape,
        _col2im_forward,
        _col2im_backward,
        "Adds columns back onto an image: (N, C * prod(kernel), L) -> (N, C, *output_size).",
    ),
):
    (
        register(_name)
        .describe(_text)
        .set_params(_params)
        .set_num_inputs(1)
        .set_num_outputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_shape)
        .set_infer_type(same_type)
        .set_compute(_forward)
        .set_gradient(_gradient(f"_backward_{_name}"))
    )
    (
        register(f"_backward_{_name}")
        .set_params(_params)
        .set_num_inputs(2)
        .set_num_outputs(1)
        .set_infer_shape(_grad_shape)
        .set_infer_type(_grad_type)
        .set_compute(_backward)
        .set_is_backward()
    )

"""Pooling: max, average, sum or Lp over sliding windows (MXNet's ``Pooling``), 1-D/2-D/3-D.

Each output value summarises one ``kernel``-sized window of the (padded) input, windows
``stride`` apart (default 1 per axis, as MXNet). Output length per axis:

* ``pooling_convention='valid'`` (default): ``1 + (size + 2 * pad - kernel) // stride``;
* ``'full'``: ``1 + ceil((size + 2 * pad - kernel) / stride)``, so the last window may hang
  over the padded edge (the overhang is ignored, as in MXNet);
* ``global_pool=True``: one window covering the whole input (kernel, stride, pad ignored).

Padding never wins a max (it counts as the lowest value). For ``avg``, ``count_include_pad``
(default True) divides by the window size clipped to the padded input; False divides by the
number of real input elements. ``lp`` computes ``(sum x^p)^(1/p)`` for ``p_value`` 1, 2
or 3, without absolute values, exactly as MXNet does.

Computed without any loop over pixels: one vectorised operation per kernel position (four
for a 2x2 kernel) over strided slices of the input. Max is separable, so it is taken one
spatial axis at a time: ``kh - 1 + kw - 1`` operations instead of ``kh * kw - 1``, the first
over whole contiguous rows. The backward pass routes each output gradient to the first
position of its window equal to the output (max; ties go to the first in row-major order,
as MXNet), or spreads it evenly (avg/sum), again one operation per kernel position. When
windows do not overlap (stride >= kernel, LeNet's 2x2 stride 2) and there is no padding,
each input element receives at most one gradient, so those are written straight into the
result instead of being added to a zeroed grid. 'same' convention is refused: MXNet 1.9.1
itself cannot run it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, shape_assign, shape_known
from ..kernel import ADD, NULL, WRITE, OpContext, Req, assign
from ..node import Entry, Node, NodeAttrs
from ..params import OperatorParamError, Param, ParamSet, Shape
from ..registry import register
from .convolution import float_type
from .geometry import CHANNEL_FIRST, Geometry, check_layout, check_rank, label, per_axis
from .im2col import compute_dtype


class PoolingParam(ParamSet):
    kernel = Param(Shape, Shape(), "Pooling kernel size: (x,), (y, x) or (d, y, x).")
    pool_type = Param(str, "max", "Pooling type to be applied.", choices=("avg", "lp", "max", "sum"))
    global_pool = Param(bool, False, "Ignore kernel size, do global pooling based on the current input feature map.")
    cudnn_off = Param(bool, False, "Turn off cuDNN pooling; accepted, no effect (no cuDNN).")
    pooling_convention = Param(str, "valid", "Pooling convention to be applied.", choices=("full", "same", "valid"))
    stride = Param(Shape, Shape(), "Stride: (x,), (y, x) or (d, y, x). Defaults to 1 for each dimension.")
    pad = Param(Shape, Shape(), "Pad for pooling: (x,), (y, x) or (d, y, x). Defaults to no padding.")
    p_value = Param(int, None, "Value of p for Lp pooling: 1, 2 or 3; required for Lp pooling.")
    count_include_pad = Param(
        bool, None, "Only for avg pooling: whether padding elements count in the average. Defaults to True."
    )
    layout = Param(
        str,
        None,
        "Layout of input and output; only NCW/NCHW/NCDHW are supported.",
        choices=("NCDHW", "NCHW", "NCW", "NDHWC", "NHWC", "NWC"),
    )


def _check_params(attrs: NodeAttrs) -> None:
    """Parameter checks that need no input shape."""
    p, who = attrs.parsed, label(attrs)
    if p.pooling_convention == "same":
        raise OperatorParamError(
            f"{who}: pooling_convention='same' is not supported (MXNet 1.9.1 fails on it too); use 'valid' or 'full'"
        )
    if p.pool_type == "lp" and p.p_value not in (1, 2, 3):
        raise OperatorParamError(f"{who}: pool_type='lp' needs p_value 1, 2 or 3, got p_value={p.p_value}")
    if not p.global_pool:
        if len(p.kernel) not in CHANNEL_FIRST:
            raise OperatorParamError(
                f"{who}: kernel must have 1, 2 or 3 dimensions unless global_pool=True, got kernel={tuple(p.kernel)}"
            )
        if min(p.kernel) < 1:
            raise OperatorParamError(f"{who}: kernel sizes must be positive, got kernel={tuple(p.kernel)}")


def pool_geometry(attrs: NodeAttrs, nd: int, spatial: Sequence[int] | None = None) -> Geometry:
    """Validate and fill kernel/stride/pad for an ``nd``-D input; ``spatial`` for global pooling."""
    p, who = attrs.parsed, label(attrs)
    check_layout(who, p.layout, nd, f"{nd}-D pooling")
    no_dilation = (1,) * nd
    if p.global_pool:
        kernel = tuple(spatial) if spatial is not None else (0,) * nd
        return Geometry(kernel, (1,) * nd, no_dilation, (0,) * nd)
    kernel = tuple(p.kernel)
    return Geometry(
        kernel, per_axis(who, p, "stride", kernel, 1, 1), no_dilation, per_axis(who, p, "pad", kernel, 0, 0)
    )


def _pool_infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """out = (N, C, *O); batch and channels also flow back from the output to the data."""
    p, who = attrs.parsed, label(attrs)
    _check_params(attrs)
    data, out = in_shapes[0], out_shapes[0]
    nd = len(p.kernel) if not p.global_pool else None
    if nd is None:
        known = data if data is not None else out
        if known is None:
            return False
        nd = len(known) - 2
        if nd not in CHANNEL_FIRST:
            raise InferenceError(
                f"{who}: data should be 3-D, 4-D or 5-D (batch, channel, *spatial), got shape {tuple(known)}"
            )
    check_rank(who, data, nd + 2, "data")
    check_rank(who, out, nd + 2, "output")
    if out is not None:
        shape_assign(in_shapes, 0, (out[0], out[1]) + (0,) * nd, who, "data")
        data = in_shapes[0]
    if data is None:
        return False
    g = pool_geometry(attrs, nd, data[2:])
    spatial = []
    for i in range(nd):
        size = data[2 + i]
        if not size:
            spatial.append(0)
            continue
        if p.global_pool:
            spatial.append(1)
            continue
        if g.kernel[i] > g.padded(i, size):
            raise InferenceError(
                f"{who}: kernel size ({g.kernel[i]}) exceeds input ({size} padded to {g.padded(i, size)}) "
                f"along spatial axis {i} (data shape {tuple(data)})"
            )
        spatial.append(g.out_size(i, size, ceil=p.pooling_convention == "full"))
    shape_assign(out_shapes, 0, (data[0], data[1], *spatial), who, "output")
    return shape_known(in_shapes[0]) and shape_known(out_shapes[0])


# ---------------------------------------------------------------------------- the computation
class _Windows:
    """The input padded (only when needed) so that every window is a strided slice of it."""

    def __init__(self, attrs: NodeAttrs, x_shape: tuple[int, ...], out_spatial: tuple[int, ...]) -> None:
        nd = len(x_shape) - 2
        self.spatial = x_shape[2:]
        self.out_spatial = out_spatial
        self.g = pool_geometry(attrs, nd, self.spatial)
        # the padded extent each axis needs: the windows' reach, at least pad + input
        self.extent = tuple(
            max((o - 1) * s + k, p + size)
            for o, s, k, p, size in zip(
                out_spatial, self.g.stride, self.g.kernel, self.g.pad, self.spatial, strict=True
            )
        )
        self.padded = any(self.g.pad) or any(e > size for e, size in zip(self.extent, self.spatial, strict=True))
        # each input element lies in at most one window, and (covers) in exactly one
        self.disjoint = all(s >= k for s, k in zip(self.g.stride, self.g.kernel, strict=True))
        self.covers = not self.padded and all(
            s == k and o * k == size
            for s, k, o, size in zip(self.g.stride, self.g.kernel, out_spatial, self.spatial, strict=True)
        )
        self.interior = (slice(None), slice(None)) + tuple(
            slice(p, p + size) for p, size in zip(self.g.pad, self.spatial, strict=True)
        )

    def source(self, xp: Any, x: Any, fill: float, dtype: Any) -> Any:
        """``x`` itself, or a copy padded with ``fill`` out to the windows' reach."""
        if not self.padded:
            return x if x.dtype == dtype else x.astype(dtype)
        src = xp.full(x.shape[:2] + self.extent, fill, dtype=dtype)
        src[self.interior] = x
        return src

    def axis_slice(self, axis: int, k: int, ndim: int) -> tuple[slice, ...]:
        """The strided slice along spatial ``axis`` read by kernel offset ``k`` (other axes whole)."""
        s, o = self.g.stride[axis], self.out_spatial[axis]
        index = [slice(None)] * ndim
        index[2 + axis] = slice(k, k + s * (o - 1) + 1, s)
        return tuple(index)

    def slices(self) -> list[tuple[slice, ...]]:
        """One index per kernel position: the strided slice of the source it reads."""
        g = self.g
        return [
            (slice(None), slice(None))
            + tuple(slice(k, k + s * (o - 1) + 1, s) for k, s, o in zip(kpos, g.stride, self.out_spatial, strict=True))
            for kpos in itertools.product(*(range(k) for k in g.kernel))
        ]

    def inverse_count(self, attrs: NodeAttrs, xp: Any, dtype: Any) -> Any:
        """1 / (number of elements averaged) per output position, shaped to broadcast."""
        p, g = attrs.parsed, self.g
        include_pad = p.count_include_pad is None or p.count_include_pad
        count = np.ones((), dtype=np.float64)
        for i, (o, s, k, pad, size) in enumerate(
            zip(self.out_spatial, g.stride, g.kernel, g.pad, self.spatial, strict=True)
        ):
            start = np.arange(o) * s - pad
            end = np.minimum(start + k, size + pad)
            if not include_pad:
                start, end = np.maximum(start, 0), np.minimum(end, size)
            shape = [1] * len(self.out_spatial)
            shape[i] = o
            count = count * (end - start).reshape(shape)
        # a window holding no element at all ('full' overhang) averages to 0, as in MXNet
        inverse = np.divide(1.0, count, out=np.zeros_like(count), where=count > 0)
        return xp.asarray(inverse.astype(dtype))


def _max_forward(xp: Any, win: _Windows, src: Any, out: Any, req: Req) -> None:
    """``out`` = the maximum of each window of ``src``, one spatial axis at a time.

    Axis by axis, the windows' maxima along that axis: (N, C, H, W) -> (N, C, oh, W) ->
    (N, C, oh, ow). The last step writes straight into ``out`` when ``req`` is write.
    """
    nd = len(win.out_spatial)
    current = src
    for axis in range(nd):
        kernel = win.g.kernel[axis]
        taps = [current[win.axis_slice(axis, k, current.ndim)] for k in range(kernel)]
        if kernel == 1:  # nothing to compare: a strided view
            current = taps[0]
            continue
        target = out if axis == nd - 1 and req is WRITE else None
        current = xp.maximum(taps[0], taps[1], out=target)
        for tap in taps[2:]:
            xp.maximum(current, tap, out=current)
    if current is not out:
        assign(out, req, current)


def _scatter(grid: Any, index: tuple[slice, ...], value: Any, overwrite: bool) -> None:
    """One kernel position's gradient onto ``grid``: written when windows are disjoint, else added."""
    if overwrite:
        grid[index] = value
    else:
        grid[index] += value


def _max_backward(xp: Any, src: Any, y: Any, grad: Any, slices: list, grid: Any, overwrite: bool) -> None:
    """Route each window's gradient to the first of its positions (row-major) equal to its maximum.

    Each position's mask is "equals the maximum and no earlier position did" (boolean
    operations on output-sized masks: cheap next to the strided arithmetic), and the position
    takes ``grad`` where its mask is set. With ``overwrite`` (disjoint windows, no padding)
    the product is written straight into ``grid`` instead of added.
    """
    exact = bool(xp.isfinite(grad).all())  # grad * hit equals where(hit, grad, 0) only when finite
    claimed = None
    for index in slices:
        hit = src[index] == y
        if claimed is None:
            claimed = hit
        else:
            hit &= ~claimed
            claimed |= hit
        if exact and overwrite:
            xp.multiply(grad, hit, out=grid[index])
        else:
            _scatter(grid, index, grad * hit if exact else xp.where(hit, grad, 0), overwrite)


def _pool_forward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    if req[0] is NULL:
        return
    p, xp = attrs.parsed, op_ctx.xp
    x, out = inputs[0], outputs[0]
    win = _Windows(attrs, x.shape, out.shape[2:])
    if p.pool_type == "max":
        src = win.source(xp, x, float(np.finfo(x.dtype).min), x.dtype)
        _max_forward(xp, win, src, out, req[0])
        return
    cdt = compute_dtype(x.dtype)
    src = win.source(xp, x, 0.0, cdt)
    power = p.p_value if p.pool_type == "lp" else 1
    acc = xp.zeros(out.shape, dtype=cdt)
    for index in win.slices():
        acc += src[index] if power == 1 else src[index] ** power
    if p.pool_type == "avg":
        acc *= win.inverse_count(attrs, xp, cdt)
    elif power == 2:
        xp.sqrt(acc, out=acc)
    elif power == 3:
        xp.cbrt(acc, out=acc)
    assign(out, req[0], acc)


def _pool_backward(attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
    """inputs: (out_grad, data, output); one scatter-add per kernel position."""
    if req[0] is NULL:
        return
    p, xp = attrs.parsed, op_ctx.xp
    d_out, x, y = inputs[:3]
    d_x = outputs[0]
    win = _Windows(attrs, x.shape, d_out.shape[2:])
    slices = win.slices()
    cdt = compute_dtype(x.dtype)
    # work straight in the output when no padding is involved; with disjoint windows (and
    # req write) each position's share can even be written instead of added to zeros
    direct = not win.padded and d_x.dtype == cdt
    overwrite = direct and win.disjoint and req[0] is not ADD
    if direct:
        grid = d_x
        if req[0] is not ADD and not (overwrite and win.covers):
            grid[...] = 0
    else:
        grid = xp.zeros(x.shape[:2] + win.extent, dtype=cdt)
    if p.pool_type == "max":
        src = win.source(xp, x, float(np.finfo(x.dtype).min), x.dtype)
        _max_backward(xp, src, y, d_out.astype(cdt, copy=False), slices, grid, overwrite)
    elif p.pool_type in ("avg", "sum") or p.p_value == 1:
        share = d_out.astype(cdt, copy=False)
        if p.pool_type == "avg":
            share = share * win.inverse_count(attrs, xp, cdt)
        for index in slices:
            _scatter(grid, index, share, overwrite)
    else:  # lp with p = 2 or 3: d/dx (sum x^p)^(1/p) = (x / y)^(p - 1)
        src = win.source(xp, x, 0.0, cdt)
        y_c = y.astype(cdt, copy=False)
        power = p.p_value - 1
        with np.errstate(divide="ignore", invalid="ignore"):  # a zero output gives inf/nan, as in MXNet
            scale = d_out.astype(cdt, copy=False) / (y_c if power == 1 else y_c * y_c)
        for index in slices:
            _scatter(grid, index, scale * (src[index] if power == 1 else src[index] * src[index]), overwrite)
    if not direct:
        assign(d_x, req[0], grid[win.interior])


def _pool_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """The backward node reads (out_grad, data, output), as MXNet's ``_backward_Pooling``."""
    backward = make_backward_node(node, "_backward_Pooling", [out_grads[0], node.inputs[0], Entry(node, 0)])
    return [Entry(backward, 0)]


def _backward_infer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(out_shapes, 0, in_shapes[1], label(attrs), "data gradient")
    shape_assign(in_shapes, 1, out_shapes[0], label(attrs), "data")
    return shape_known(out_shapes[0])


def _pool_type(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    return float_type(attrs, in_types, out_types)


(
    register("Pooling")
    .describe(
        "Performs max, avg, sum or lp pooling over 1-D/2-D/3-D windows (NCW/NCHW/NCDHW), "
        "with 'valid' or 'full' output-size convention, or over the whole input (global_pool)."
    )
    .set_params(PoolingParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_pool_infer_shape)
    .set_infer_type(_pool_type)
    .set_compute(_pool_forward)
    .set_gradient(_pool_gradient)
)
(
    register("_backward_Pooling")
    .set_params(PoolingParam)
    .set_num_inputs(3)
    .set_infer_shape(_backward_infer_shape)
    .set_infer_type(_pool_type)
    .set_compute(_pool_backward)
    .set_is_backward()
)

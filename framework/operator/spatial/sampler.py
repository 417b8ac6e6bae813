"""Sampling an image at computed positions: ``GridGenerator``, ``BilinearSampler``,
``SpatialTransformer`` (the spatial transformer network of Jaderberg et al.).

The shared idea is a *sampling grid*: an array (N, 2, H_out, W_out) whose two channels give,
for every output pixel, the x and the y position in the input to read, normalised so that
-1 is the first pixel and +1 the last one of each axis. ``GridGenerator`` makes a grid (from
an affine matrix applied to the regular grid, or from an optical flow added to it),
``BilinearSampler`` reads an image at a grid with bilinear interpolation (positions outside
the image read 0), and ``SpatialTransformer`` is the two in one.

Bilinear reading is a gather at the four neighbouring pixels of each position, weighted by
the distances; its gradient scatters back with ``xp.add.at`` (the data) and differentiates
the weights (the grid): the whole batch at once, no loop over pixels. MXNet's hidden
outputs are kept (``grid_dst``, ``tmp``, ``grid_src``), so symbol JSON that refers to them
loads, and the backward operators are ``_backward_<name>``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from ..node import Entry, Node, NodeAttrs
from ..params import REQUIRED, OperatorParamError, Param, ParamSet, Shape
from ..registry import register
from ..tensor.common import backward_entries, put, register_backward


# ------------------------------------------------------------------ grids
def regular_grid(xp: Any, height: int, width: int, dtype: Any) -> Any:
    """(3, H*W) homogeneous normalised target coordinates: rows x, y, 1 (x varies fastest)."""
    ys, xs = np.meshgrid(np.linspace(-1.0, 1.0, height), np.linspace(-1.0, 1.0, width), indexing="ij")
    return xp.asarray(np.stack([xs.ravel(), ys.ravel(), np.ones(height * width)]).astype(dtype))


def affine_grid(xp: Any, theta: Any, height: int, width: int) -> Any:
    """(N, 2, H, W) source positions of the affine maps ``theta`` (N, 6) = rows of (2, 3) matrices."""
    n = theta.shape[0]
    return (theta.reshape(n, 2, 3) @ regular_grid(xp, height, width, theta.dtype)).reshape(n, 2, height, width)


def _flow_scale(xp: Any, height: int, width: int, dtype: Any) -> Any:
    """Per-channel factor from pixel units to normalised units: 2 / (size - 1)."""
    return xp.asarray(np.array([2.0 / max(width - 1, 1), 2.0 / max(height - 1, 1)], dtype)).reshape(1, 2, 1, 1)


def warp_grid(xp: Any, flow: Any) -> Any:
    """(N, 2, H, W) source positions: each pixel moved by the flow (in pixels), then normalised."""
    _, _, h, w = flow.shape
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    pixels = xp.asarray(np.stack([xs, ys]).astype(flow.dtype))[None]
    return (flow + pixels) * _flow_scale(xp, h, w, flow.dtype) - 1


# ------------------------------------------------------------------ bilinear sampling
def _corners(xp: Any, x_real: Any, y_real: Any, height: int, width: int):
    """The four neighbours of each position: (y index, x index, weight, inside, d weight/dx, d weight/dy)."""
    x0, y0 = xp.floor(x_real), xp.floor(y_real)
    fx, fy = x_real - x0, y_real - y0
    for dy in (0, 1):
        for dx in (0, 1):
            yy, xx = y0 + dy, x0 + dx
            wy, wx = (fy if dy else 1 - fy), (fx if dx else 1 - fx)
            inside = (yy >= 0) & (yy <= height - 1) & (xx >= 0) & (xx <= width - 1)
            yi = yy.clip(0, height - 1).astype(np.int64)
            xi = xx.clip(0, width - 1).astype(np.int64)
            yield yi, xi, wy * wx * inside, inside, (1 if dx else -1) * wy, (1 if dy else -1) * wx


def _real_positions(grid: Any, height: int, width: int) -> tuple[Any, Any]:
    """Pixel coordinates of the normalised grid (N, Ho, Wo) each."""
    return (grid[:, 0] + 1) * (width - 1) / 2, (grid[:, 1] + 1) * (height - 1) / 2


def bilinear_sample(xp: Any, data: Any, grid: Any) -> Any:
    """(N, C, H, W) read at ``grid`` (N, 2, Ho, Wo) -> (N, C, Ho, Wo); outside reads 0."""
    n, _, h, w = data.shape
    x_real, y_real = _real_positions(grid, h, w)
    nhwc = data.transpose(0, 2, 3, 1)
    batch = xp.arange(n).reshape(n, 1, 1)
    out = xp.zeros((*x_real.shape, data.shape[1]), data.dtype)
    for yi, xi, weight, _, _, _ in _corners(xp, x_real, y_real, h, w):
        out += nhwc[batch, yi, xi] * weight[..., None]
    return out.transpose(0, 3, 1, 2)


def bilinear_sample_backward(xp: Any, g: Any, data: Any, grid: Any) -> tuple[Any, Any]:
    """Gradients of :func:`bilinear_sample` for output gradient ``g``: (d data, d grid)."""
    n, c, h, w = data.shape
    x_real, y_real = _real_positions(grid, h, w)
    nhwc = data.transpose(0, 2, 3, 1)
    g_nhwc = g.transpose(0, 2, 3, 1)
    batch = xp.arange(n).reshape(n, 1, 1)
    d_data = xp.zeros((n * h * w, c), data.dtype)
    d_x = xp.zeros(x_real.shape, data.dtype)
    d_y = xp.zeros(y_real.shape, data.dtype)
    for yi, xi, weight, inside, dw_dx, dw_dy in _corners(xp, x_real, y_real, h, w):
        flat = (batch * h + yi) * w + xi
        xp.add.at(d_data, flat.ravel(), (g_nhwc * weight[..., None]).reshape(-1, c))
        seen = (g_nhwc * nhwc[batch, yi, xi]).sum(axis=-1) * inside
        d_x += seen * dw_dx
        d_y += seen * dw_dy
    d_grid = xp.stack([d_x * (w - 1) / 2, d_y * (h - 1) / 2], axis=1)
    return d_data.reshape(n, h, w, c).transpose(0, 3, 1, 2), d_grid


# ------------------------------------------------------------------ shared inference helpers
def _check_rank(name: str, shape: ShapeT, rank: int, what: str) -> None:
    if shape is not None and len(shape) != rank:
        raise InferenceError(f"{name}: {what} must be {rank}-d, got shape {tuple(shape)}")


def float_types(attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
    """Every input and output has one float dtype."""
    known = next((t for t in [*in_types, *out_types] if t is not None), None)
    if known is None:
        return False
    if np.dtype(known).kind != "f":
        raise InferenceError(f"{attrs.name}: needs floating-point inputs, got {known}")
    for i in range(len(in_types)):
        type_assign(in_types, i, known, attrs.name, f"input {i}")
    for i in range(len(out_types)):
        type_assign(out_types, i, known, attrs.name, f"output {i}")
    return True


def _first_output_gradient(backward: str, count: int):
    """Gradient builder: a backward node of (gradient of the visible output, forward inputs)."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        return backward_entries(node, backward, [out_grads[0], *node.inputs], count)

    return gradient


# ------------------------------------------------------------------ GridGenerator
class GridGeneratorParam(ParamSet):
    transform_type = Param(
        str, REQUIRED, "Affine matrices (N, 6) or optical flows (N, 2, H, W).", choices=("affine", "warp")
    )
    target_shape = Param(Shape, Shape((0, 0)), "Output (H, W); needed for 'affine', ignored for 'warp'.")


def _target(attrs: NodeAttrs) -> tuple[int, int]:
    shape = tuple(attrs.parsed.target_shape)
    if len(shape) != 2 or min(shape) < 1:
        raise OperatorParamError(f"{attrs.name}: target_shape must be two positive sizes (H, W), got {shape}")
    return shape[0], shape[1]


def _grid_generator_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    if attrs.parsed.transform_type == "affine":
        h, w = _target(attrs)
        _check_rank(name, in_shapes[0], 2, "affine data (N, 6)")
        if in_shapes[0] is not None and in_shapes[0][1] not in (0, 6):
            raise InferenceError(f"{name}: affine data must be (N, 6), got {tuple(in_shapes[0])}")
        batch = (in_shapes[0] or (0,))[0] or (out_shapes[0] or (0,))[0]
        shape_assign(in_shapes, 0, (batch, 6), name, "data")
        shape_assign(out_shapes, 0, (batch, 2, h, w), name, "output")
        shape_assign(out_shapes, 1, (3, h * w), name, "grid_dst")
    else:
        _check_rank(name, in_shapes[0], 4, "warp data (N, 2, H, W)")
        _check_rank(name, out_shapes[0], 4, "output")
        shape_assign(in_shapes, 0, out_shapes[0], name, "data")
        shape_assign(out_shapes, 0, in_shapes[0], name, "output")
        if in_shapes[0] is not None:
            if in_shapes[0][1] not in (0, 2):
                raise InferenceError(f"{name}: warp data must be (N, 2, H, W), got {tuple(in_shapes[0])}")
            shape_assign(out_shapes, 1, (2, *in_shapes[0][2:]), name, "grid_dst")
    return shape_known(in_shapes[0]) and shape_known(out_shapes[0])


def _grid_generator_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, data = op_ctx.xp, inputs[0]
    if attrs.parsed.transform_type == "affine":
        h, w = _target(attrs)
        put(outputs[0], req[0], affine_grid(xp, data, h, w))
        put(outputs[1], req[1], regular_grid(xp, h, w, data.dtype))
    else:
        put(outputs[0], req[0], warp_grid(xp, data))
        _, _, h, w = data.shape
        ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
        put(outputs[1], req[1], xp.asarray(np.stack([xs, ys])))


def _grid_generator_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (d output, data): the grid is linear in the data."""
    xp, g, data = op_ctx.xp, inputs[0], inputs[1]
    if attrs.parsed.transform_type == "affine":
        n, _, h, w = g.shape
        d_theta = g.reshape(n, 2, h * w) @ regular_grid(xp, h, w, g.dtype).T
        put(outputs[0], req[0], d_theta.reshape(n, 6))
    else:
        put(outputs[0], req[0], g * _flow_scale(xp, data.shape[2], data.shape[3], g.dtype))


(
    register("GridGenerator")
    .describe("Makes a sampling grid (N, 2, H, W) of normalised source positions from affine matrices or flows.")
    .set_params(GridGeneratorParam)
    .set_num_inputs(1)
    .set_num_outputs(2)
    .set_num_visible_outputs(1)
    .set_input_names(["data"])
    .set_output_names(["output", "grid_dst"])
    .set_infer_shape(_grid_generator_shape)
    .set_infer_type(float_types)
    .set_compute(_grid_generator_forward)
    .set_gradient(_first_output_gradient("_backward_GridGenerator", 1))
)
register_backward("_backward_GridGenerator", _grid_generator_backward, GridGeneratorParam)


# ------------------------------------------------------------------ BilinearSampler
class BilinearSamplerParam(ParamSet):
    cudnn_off = Param(
        bool, None, "Whether to turn cuDNN off (MXLab never uses cuDNN; accepted for compatibility).", optional=True
    )


def _sampler_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    data, grid, out = in_shapes[0], in_shapes[1], out_shapes[0]
    for shape, what in ((data, "data"), (grid, "grid"), (out, "output")):
        _check_rank(name, shape, 4, what)
    if grid is not None and grid[1] not in (0, 2):
        raise InferenceError(f"{name}: grid must be (N, 2, H_out, W_out), got {tuple(grid)}")
    n = next((s[0] for s in (data, grid, out) if s is not None and s[0]), 0)
    c = next((s[1] for s in (data, out) if s is not None and s[1]), 0)
    ho = next((s[2] for s in (grid, out) if s is not None and s[2]), 0)
    wo = next((s[3] for s in (grid, out) if s is not None and s[3]), 0)
    shape_assign(in_shapes, 0, (n, c, *(data[2:] if data is not None else (0, 0))), name, "data")
    shape_assign(in_shapes, 1, (n, 2, ho, wo), name, "grid")
    shape_assign(out_shapes, 0, (n, c, ho, wo), name, "output")
    shape_assign(out_shapes, 1, (n, ho, wo, 2), name, "tmp")
    return all(shape_known(s) for s in in_shapes)


def _sampler_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, data, grid = op_ctx.xp, inputs[0], inputs[1]
    put(outputs[0], req[0], bilinear_sample(xp, data, grid))
    put(outputs[1], req[1], grid.transpose(0, 2, 3, 1))


def _sampler_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    d_data, d_grid = bilinear_sample_backward(op_ctx.xp, *inputs[:3])
    put(outputs[0], req[0], d_data)
    put(outputs[1], req[1], d_grid)


(
    register("BilinearSampler")
    .describe("Reads (N, C, H, W) data at a grid (N, 2, Ho, Wo) of normalised (x, y) positions, bilinearly.")
    .set_params(BilinearSamplerParam)
    .set_num_inputs(2)
    .set_num_outputs(2)
    .set_num_visible_outputs(1)
    .set_input_names(["data", "grid"])
    .set_output_names(["output", "tmp"])
    .set_infer_shape(_sampler_shape)
    .set_infer_type(float_types)
    .set_compute(_sampler_forward)
    .set_gradient(_first_output_gradient("_backward_BilinearSampler", 2))
)
register_backward("_backward_BilinearSampler", _sampler_backward, BilinearSamplerParam, num_inputs=3, num_outputs=2)


# ------------------------------------------------------------------ SpatialTransformer
class SpatialTransformerParam(ParamSet):
    target_shape = Param(Shape, Shape((0, 0)), "Output (H, W).")
    transform_type = Param(str, REQUIRED, "The transformation (affine only).", choices=("affine",))
    sampler_type = Param(str, REQUIRED, "The sampling (bilinear only).", choices=("bilinear",))
    cudnn_off = Param(
        bool, None, "Whether to turn cuDNN off (MXLab never uses cuDNN; accepted for compatibility).", optional=True
    )


def _transformer_shape(attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name = attrs.name
    h, w = _target(attrs)
    data, loc = in_shapes
    _check_rank(name, data, 4, "data")
    _check_rank(name, loc, 2, "loc")
    if loc is not None and loc[1] not in (0, 6):
        raise InferenceError(f"{name}: loc must be (N, 6) for an affine transform, got {tuple(loc)}")
    n = next((s[0] for s in (data, loc, out_shapes[0]) if s is not None and s[0]), 0)
    c = next((s[1] for s in (data, out_shapes[0]) if s is not None and s[1]), 0)
    shape_assign(in_shapes, 0, (n, c, *(data[2:] if data is not None else (0, 0))), name, "data")
    shape_assign(in_shapes, 1, (n, 6), name, "loc")
    shape_assign(out_shapes, 0, (n, c, h, w), name, "output")
    shape_assign(out_shapes, 1, (3, h * w), name, "grid_dst")
    shape_assign(out_shapes, 2, (n, 2, h * w), name, "grid_src")
    return all(shape_known(s) for s in in_shapes)


def _transformer_forward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, (data, loc) = op_ctx.xp, inputs
    h, w = _target(attrs)
    grid = affine_grid(xp, loc, h, w)
    put(outputs[0], req[0], bilinear_sample(xp, data, grid))
    put(outputs[1], req[1], regular_grid(xp, h, w, loc.dtype))
    put(outputs[2], req[2], grid.reshape(grid.shape[0], 2, h * w))


def _transformer_backward(attrs: NodeAttrs, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (d output, data, loc): back through the sampler, then through the affine grid."""
    xp, (g, data, loc) = op_ctx.xp, inputs
    h, w = _target(attrs)
    d_data, d_grid = bilinear_sample_backward(xp, g, data, affine_grid(xp, loc, h, w))
    put(outputs[0], req[0], d_data)
    d_loc = d_grid.reshape(loc.shape[0], 2, h * w) @ regular_grid(xp, h, w, loc.dtype).T
    put(outputs[1], req[1], d_loc.reshape(loc.shape))


(
    register("SpatialTransformer")
    .describe("Warps (N, C, H, W) data by the affine maps `loc` (N, 6): GridGenerator then BilinearSampler.")
    .set_params(SpatialTransformerParam)
    .set_num_inputs(2)
    .set_num_outputs(3)
    .set_num_visible_outputs(1)
    .set_input_names(["data", "loc"])
    .set_output_names(["output", "grid_dst", "grid_src"])
    .set_infer_shape(_transformer_shape)
    .set_infer_type(float_types)
    .set_compute(_transformer_forward)
    .set_gradient(_first_output_gradient("_backward_SpatialTransformer", 2))
)
register_backward(
    "_backward_SpatialTransformer", _transformer_backward, SpatialTransformerParam, num_inputs=3, num_outputs=2
)

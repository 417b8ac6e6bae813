"""``depth_to_space`` and ``space_to_depth``: moving pixels between channels and space.

Both rearrange a 4-d NCHW array without changing a value, with ``block_size`` ``b``:
``depth_to_space`` turns (N, C, H, W) into (N, C / b^2, H * b, W * b) and
``space_to_depth`` is its exact inverse. The mechanism is one reshape, one transpose and
one reshape; MXNet's channel order (DCR: the block offset is the slowest part of the
channel index) fixes the axis permutation:

    depth_to_space: (N, b, b, C', H, W) -> transpose (0, 3, 4, 1, 5, 2) -> (N, C', H*b, W*b)
    space_to_depth: (N, C, H', b, W', b) -> transpose (0, 3, 5, 1, 2, 4) -> (N, C*b*b, H', W')

Because each is the other's inverse permutation, each one's gradient is the other operator
(a forward node, so second derivatives work too).
"""

from __future__ import annotations

from typing import Any

from ..infer import InferenceError, ShapeT, shape_assign
from ..node import Entry, Node
from ..params import REQUIRED, Param, ParamSet
from ..registry import register
from ..tensor.common import forward_node, put, same_type


class BlockParam(ParamSet):
    block_size = Param(int, REQUIRED, "Side of the square blocks moved between depth and space.", low=1)


def _check_rank(name: str, shape: ShapeT) -> None:
    if shape is not None and len(shape) != 4:
        raise InferenceError(f"{name}: expects a 4-d (N, C, H, W) input, got shape {tuple(shape)}")


def _depth_to_space_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    name, b = attrs.name, attrs.parsed.block_size
    _check_rank(name, in_shapes[0])
    _check_rank(name, out_shapes[0])
    if in_shapes[0] is not None:
        n, c, h, w = in_shapes[0]
        if c and c % (b * b):
            raise InferenceError(
                f"{name}: channels {c} of input {tuple(in_shapes[0])} must be a multiple of block_size^2 = {b * b}"
            )
        shape_assign(out_shapes, 0, (n, c // (b * b), h * b, w * b), name, "output")
    if out_shapes[0] is not None:
        n, c, h, w = out_shapes[0]
        if h % b or w % b:
            raise InferenceError(f"{name}: output {tuple(out_shapes[0])} must have H and W divisible by {b}")
        shape_assign(in_shapes, 0, (n, c * b * b, h // b, w // b), name, "input")
    return in_shapes[0] is not None and 0 not in in_shapes[0]


def _space_to_depth_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    # space_to_depth's input relates to its output as depth_to_space's output to its input
    swapped_in, swapped_out = [out_shapes[0]], [in_shapes[0]]
    name, b = attrs.name, attrs.parsed.block_size
    _check_rank(name, in_shapes[0])
    if in_shapes[0] is not None:
        _, _, h, w = in_shapes[0]
        if (h and h % b) or (w and w % b):
            raise InferenceError(f"{name}: input {tuple(in_shapes[0])} must have H and W divisible by block_size = {b}")
    _depth_to_space_shape(attrs, swapped_in, swapped_out)
    out_shapes[0], in_shapes[0] = swapped_in[0], swapped_out[0]
    return in_shapes[0] is not None and 0 not in in_shapes[0]


def depth_to_space_array(x: Any, b: int) -> Any:
    """(N, C, H, W) -> (N, C / b^2, H * b, W * b), MXNet's DCR channel order."""
    n, c, h, w = x.shape
    return x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c // (b * b), h * b, w * b)


def space_to_depth_array(x: Any, b: int) -> Any:
    """(N, C, H, W) -> (N, C * b^2, H / b, W / b), the inverse of :func:`depth_to_space_array`."""
    n, c, h, w = x.shape
    return x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)


def _depth_to_space_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    put(outputs[0], req[0], depth_to_space_array(inputs[0], attrs.parsed.block_size))


def _space_to_depth_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    put(outputs[0], req[0], space_to_depth_array(inputs[0], attrs.parsed.block_size))


def _inverse_gradient(inverse: str):
    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        return [forward_node(node, inverse, {"block_size": node.attrs.parsed.block_size}, [out_grads[0]])]

    return gradient


for _name, _shape, _compute, _inverse, _text in (
    (
        "depth_to_space",
        _depth_to_space_shape,
        _depth_to_space_forward,
        "space_to_depth",
        "Moves blocks of channels into b x b spatial blocks: (N, C, H, W) -> (N, C/b^2, H*b, W*b).",
    ),
    (
        "space_to_depth",
        _space_to_depth_shape,
        _space_to_depth_forward,
        "depth_to_space",
        "Moves b x b spatial blocks into channels: (N, C, H, W) -> (N, C*b^2, H/b, W/b).",
    ),
):
    (
        register(_name)
        .describe(_text)
        .set_params(BlockParam)
        .set_num_inputs(1)
        .set_num_outputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_shape)
        .set_infer_type(same_type)
        .set_compute(_compute)
        .set_gradient(_inverse_gradient(_inverse))
    )

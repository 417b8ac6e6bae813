"""``depth_to_space`` / ``space_to_depth``: moving blocks of channels into space and back.

Each one's gradient is the other applied to the output gradient, written with the *forward*
operators so it can be differentiated again. (The other rearrangements live with their
families: ``reverse`` in ``reverse.py``, ``Pad`` in ``pad.py``, ``diag`` in ``diag.py``, the
``*_like`` readers in ``like.py``.)
"""

from __future__ import annotations

from typing import Any

from ..infer import InferenceError, ShapeT, shape_assign
from ..params import Param, ParamSet
from ..registry import register
from .common import forward_node, put, same_type


# ---------------------------------------------------------------------- depth_to_space / space_to_depth
class BlockParam(ParamSet):
    block_size = Param(int, 2, "The side of the square block moved between depth and space.", low=1)


def _block_shape(to_space: bool):
    def infer(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        shape = in_shapes[0]
        if shape is None:
            return False
        if len(shape) != 4:
            raise InferenceError(f"{attrs.name}: expects a 4-D (N, C, H, W) input, got shape {shape}")
        b = attrs.parsed.block_size
        n, c, h, w = shape
        if to_space:
            if c % (b * b):
                raise InferenceError(f"{attrs.name}: channels {c} must be a multiple of block_size**2 = {b * b}")
            out = (n, c // (b * b), h * b, w * b)
        else:
            if h % b or w % b:
                raise InferenceError(f"{attrs.name}: height {h} and width {w} must be multiples of block_size {b}")
            out = (n, c * b * b, h // b, w // b)
        shape_assign(out_shapes, 0, out, attrs.name, "output")
        return True

    return infer


def _depth_to_space(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # (N, b, b, C', H, W) -> (N, C', H, b, W, b): the channel blocks become pixel blocks (DCR order).
    x, b = inputs[0], attrs.parsed.block_size
    n, c, h, w = x.shape
    blocks = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    put(outputs[0], req[0], blocks.reshape(n, c // (b * b), h * b, w * b))


def _space_to_depth(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    # The exact inverse of _depth_to_space's permutation.
    x, b = inputs[0], attrs.parsed.block_size
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    put(outputs[0], req[0], blocks.reshape(n, c * b * b, h // b, w // b))


for _name, _inverse, _to_space, _compute in (
    ("depth_to_space", "space_to_depth", True, _depth_to_space),
    ("space_to_depth", "depth_to_space", False, _space_to_depth),
):
    (
        register(_name)
        .describe(f"Moves blocks of block_size x block_size values ({_name.replace('_', ' ')}); {_inverse} undoes it.")
        .set_params(BlockParam)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_block_shape(_to_space))
        .set_infer_type(same_type)
        .set_compute(_compute)
        .set_gradient(
            lambda node, out_grads, inverse=_inverse: [
                forward_node(node, inverse, node.attrs.parsed.as_dict(), [out_grads[0]])
            ]
        )
    )

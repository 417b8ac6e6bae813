"""``Pad`` (alias ``pad``): pads the spatial axes of a 4-d or 5-d array.

``pad_width`` gives (before, after) per axis, ``2 * ndim`` numbers; as in MXNet 1.x the
batch and channel axes cannot be padded (their four numbers must be 0). Modes:

* ``constant``: the new cells hold ``constant_value``;
* ``edge``: they repeat the nearest edge value;
* ``reflect``: they mirror the array without repeating the edge (``[1 2 3]`` padded by 2
  on the left gives ``[3 2 1 2 3]``), so a padding must be smaller than the axis.

Backward: every output cell came from one input cell (or from the constant), so the
input gradient collects, per input cell, the output gradients of the cells copied from
it. The copy map of one axis is ``np.pad(arange(length), (before, after), mode)``: the
same padding applied to the positions themselves.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..grad import elemwise_grad_use_in
from ..infer import InferenceError, ShapeT, shape_assign
from ..params import REQUIRED, Param, ParamSet, Shape
from ..registry import alias, register
from .common import put, register_backward, same_type


class PadParam(ParamSet):
    mode = Param(str, "constant", "How to fill the padding.", choices=("constant", "edge", "reflect"))
    pad_width = Param(Shape, REQUIRED, "(before, after) for every axis: 2 * ndim numbers, the first four 0.")
    constant_value = Param(float, 0.0, "The value of the padding in constant mode.")


def _pairs(attrs: Any, shape: tuple[int, ...]) -> list[tuple[int, int]]:
    """(before, after) per axis, checked against the input's shape."""
    name, width, ndim = attrs.name, attrs.parsed.pad_width, len(shape)
    if ndim not in (4, 5):
        raise InferenceError(f"{name}: Pad takes a 4-d or 5-d input, got shape {shape}")
    if len(width) != 2 * ndim:
        raise InferenceError(f"{name}: pad_width must hold 2 * ndim = {2 * ndim} numbers, got {tuple(width)}")
    if any(width[:4]):
        raise InferenceError(
            f"{name}: padding the batch and channel axes is not supported, pad_width starts with {tuple(width[:4])}"
        )
    pairs = [(int(width[2 * i]), int(width[2 * i + 1])) for i in range(ndim)]
    if any(b < 0 or a < 0 for b, a in pairs):
        raise InferenceError(f"{name}: pad_width must not be negative, got {tuple(width)}")
    if attrs.parsed.mode == "reflect":
        for axis, (before, after) in enumerate(pairs):
            if max(before, after) >= shape[axis] and (before or after):
                raise InferenceError(
                    f"{name}: reflect padding ({before}, {after}) of axis {axis} must be smaller than its length "
                    f"{shape[axis]}"
                )
    return pairs


def _pad_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape = in_shapes[0]
    if shape is None or 0 in shape:
        return False
    pairs = _pairs(attrs, tuple(shape))
    shape_assign(out_shapes, 0, tuple(d + b + a for d, (b, a) in zip(shape, pairs, strict=True)), attrs.name, "output")
    return True


def _pad_forward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p = op_ctx.xp, attrs.parsed
    pairs = _pairs(attrs, inputs[0].shape)
    if p.mode == "constant":
        padded = xp.pad(inputs[0], pairs, mode="constant", constant_values=p.constant_value)
    else:
        padded = xp.pad(inputs[0], pairs, mode=p.mode)
    put(outputs[0], req[0], padded)


def _pad_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Inputs (out_grad, data): sum each output cell's gradient into the input cell it copies."""
    xp, mode = op_ctx.xp, attrs.parsed.mode
    grad, data = inputs
    for axis, (before, after) in enumerate(_pairs(attrs, data.shape)):
        if not (before or after):
            continue
        length = data.shape[axis]
        if mode == "constant":  # the padding came from the constant: no gradient flows back
            index = [slice(None)] * grad.ndim
            index[axis] = slice(before, before + length)
            grad = grad[tuple(index)]
            continue
        source = xp.asarray(np.pad(np.arange(length), (before, after), mode=mode))
        shape = list(grad.shape)
        shape[axis] = length
        summed = xp.zeros(shape, dtype=grad.dtype)
        index = [slice(None)] * grad.ndim
        index[axis] = source
        xp.add.at(summed, tuple(index), grad)
        grad = summed
    put(outputs[0], req[0], grad)


(
    register("Pad")
    .describe("Pads the spatial axes of a 4-d or 5-d array (constant, edge or reflect).")
    .set_params(PadParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_pad_shape)
    .set_infer_type(same_type)
    .set_compute(_pad_forward)
    .set_gradient(elemwise_grad_use_in("_backward_Pad"))
)
alias("pad", "Pad")
register_backward("_backward_Pad", _pad_backward, params=PadParam)

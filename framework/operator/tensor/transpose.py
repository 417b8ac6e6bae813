"""Axis permutations: ``transpose`` and ``SwapAxis`` (alias ``swapaxes``).

Both reorder the axes of their input without arithmetic, so the gradient is the output
gradient permuted back: ``transpose`` with the inverse permutation, ``SwapAxis`` with the
same two axes swapped again. The gradient is built from the *forward* operator, so it can
itself be differentiated. Shape inference runs both ways (the input from the output too).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..infer import (
    InferenceError,
    ShapeT,
    shape_assign,
    shape_known,
)
from ..node import Entry, Node
from ..params import Param, ParamSet, Shape
from ..registry import alias, register
from .common import (
    forward_node,
    normalize_axis,
    put,
    same_type,
)


class TransposeParam(ParamSet):
    axes = Param(Shape, Shape(), "The permutation of the axes; empty reverses them.")


def _permutation(attrs: Any, ndim: int) -> tuple[int, ...]:
    axes = attrs.parsed.axes
    if len(axes) == 0:
        return tuple(range(ndim - 1, -1, -1))
    if len(axes) != ndim or sorted(axes) != list(range(ndim)):
        raise InferenceError(
            f"{attrs.name}: axes={tuple(axes)} must be a permutation of 0..{ndim - 1} for an input with {ndim} "
            "dimension(s)"
        )
    return tuple(axes)


def _transpose_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    known = in_shapes[0] if in_shapes[0] is not None else out_shapes[0]
    if known is None:
        return False
    perm = _permutation(attrs, len(known))
    if in_shapes[0] is not None:
        shape_assign(out_shapes, 0, tuple(in_shapes[0][a] for a in perm), attrs.name, "output")
    inverse = np.argsort(perm)
    shape_assign(in_shapes, 0, tuple(out_shapes[0][a] for a in inverse), attrs.name, "input")
    return shape_known(in_shapes[0])


def _transpose_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    put(outputs[0], req[0], op_ctx.xp.transpose(x, _permutation(attrs, x.ndim)))


def _transpose_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    axes = node.attrs.parsed.axes
    inverse = tuple(int(i) for i in np.argsort(axes)) if len(axes) else ()
    return [forward_node(node, "transpose", {"axes": inverse}, [out_grads[0]])]


(
    register("transpose")
    .describe("Permutes the axes (``axes`` empty reverses them); the gradient is the inverse transpose.")
    .set_params(TransposeParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_transpose_shape)
    .set_infer_type(same_type)
    .set_compute(_transpose_compute)
    .set_gradient(_transpose_gradient)
)


class SwapAxisParam(ParamSet):
    dim1 = Param(int, 0, "The first axis to swap.")
    dim2 = Param(int, 0, "The second axis to swap.")


def _swap_dims(attrs: Any, ndim: int) -> tuple[int, int]:
    p = attrs.parsed
    return normalize_axis(attrs.name, p.dim1, ndim, "dim1"), normalize_axis(attrs.name, p.dim2, ndim, "dim2")


def _swap(shape: tuple[int, ...], d1: int, d2: int) -> tuple[int, ...]:
    out = list(shape)
    out[d1], out[d2] = out[d2], out[d1]
    return tuple(out)


def _swapaxes_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    known = in_shapes[0] if in_shapes[0] is not None else out_shapes[0]
    if known is None:
        return False
    d1, d2 = _swap_dims(attrs, len(known))
    if in_shapes[0] is not None:
        shape_assign(out_shapes, 0, _swap(in_shapes[0], d1, d2), attrs.name, "output")
    shape_assign(in_shapes, 0, _swap(out_shapes[0], d1, d2), attrs.name, "input")
    return shape_known(in_shapes[0])


def _swapaxes_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    d1, d2 = _swap_dims(attrs, x.ndim)
    put(outputs[0], req[0], op_ctx.xp.swapaxes(x, d1, d2))


(
    register("SwapAxis")
    .describe("Swaps two axes; swapping them again is the gradient.")
    .set_params(SwapAxisParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_swapaxes_shape)
    .set_infer_type(same_type)
    .set_compute(_swapaxes_compute)
    .set_gradient(
        lambda node, out_grads: [
            forward_node(node, "SwapAxis", node.attrs.parsed.as_dict(), [out_grads[0]]),
        ]
    )
)
alias("swapaxes", "SwapAxis")

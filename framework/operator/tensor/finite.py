"""Whole-array checks a mixed-precision training loop runs on many gradients at once:
``all_finite``, ``multi_all_finite``, ``multi_sum_sq`` and ``reset_arrays``.

With a dynamic loss scale, every step asks "did any gradient overflow?" (``all_finite``,
``multi_all_finite``: 1.0 when every element is finite, else 0.0, as a ``(1,)`` float32 array
that stays on the device), gradient clipping and LAMB need one squared norm per array
(``multi_sum_sq``: a ``(num_arrays,)`` float32 vector), and gradient accumulation zeroes many
arrays in one engine operation (``reset_arrays``: no outputs; it *mutates* its inputs, which
is how the engine learns that it writes them). With ``init_output=False`` the finite checks
only ever write 0, so several calls can AND their answers into one output array.
None of them is differentiable.
"""

from __future__ import annotations

from typing import Any

from ..infer import ShapeT, shape_assign, type_assign
from ..params import REQUIRED, Param, ParamSet
from ..registry import register
from .common import put


def _flag_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(out_shapes, 0, (1,), attrs.name, "output")
    return all(s is not None for s in in_shapes)


def _float32_output(attrs: Any, in_types: list, out_types: list) -> bool:
    type_assign(out_types, 0, "float32", attrs.name, "output")
    return all(t is not None for t in in_types)


def _write_flag(attrs: Any, op_ctx: Any, arrays: list, req: list, out: Any) -> None:
    xp = op_ctx.xp
    finite = xp.asarray(True)
    for a in arrays:
        finite = finite & xp.isfinite(a).all()
    if attrs.parsed.init_output:
        put(out, req[0], xp.where(finite, 1.0, 0.0).reshape(1))
    else:  # only ever clear the flag: previous checks into the same output stay ANDed
        put(out, req[0], xp.where(finite, out, 0.0))


class AllFiniteParam(ParamSet):
    init_output = Param(bool, True, "Write 1 first; False only ever writes 0 (AND into an existing flag).")


class MultiAllFiniteParam(ParamSet):
    num_arrays = Param(int, 1, "Number of input arrays.", low=1)
    init_output = Param(bool, True, "Write 1 first; False only ever writes 0 (AND into an existing flag).")


(
    register("all_finite")
    .describe("1.0 when every element of the input is finite, else 0.0, as a (1,) float32 array.")
    .set_params(AllFiniteParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_flag_shape)
    .set_infer_type(_float32_output)
    .set_compute(lambda attrs, op_ctx, inputs, req, outputs: _write_flag(attrs, op_ctx, inputs, req, outputs[0]))
)


def _num_arrays(attrs: Any) -> int:
    return attrs.parsed.num_arrays


def _array_names(attrs: Any) -> list[str]:
    return [f"data_{i}" for i in range(attrs.parsed.num_arrays)]


(
    register("multi_all_finite")
    .describe("1.0 when every element of every input is finite, else 0.0, as a (1,) float32 array.")
    .set_params(MultiAllFiniteParam)
    .set_num_inputs(_num_arrays)
    .set_input_names(_array_names)
    .set_key_var_num_args("num_arrays")
    .set_infer_shape(_flag_shape)
    .set_infer_type(_float32_output)
    .set_compute(lambda attrs, op_ctx, inputs, req, outputs: _write_flag(attrs, op_ctx, inputs, req, outputs[0]))
)


class NumArraysParam(ParamSet):
    num_arrays = Param(int, REQUIRED, "Number of input arrays.", low=1)


def _sum_sq_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    shape_assign(out_shapes, 0, (attrs.parsed.num_arrays,), attrs.name, "output")
    return all(s is not None for s in in_shapes)


def _sum_sq_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp = op_ctx.xp
    sums = [xp.square(a.astype("float32")).sum() for a in inputs]  # accumulate float16 in float32
    put(outputs[0], req[0], xp.stack(sums))


(
    register("multi_sum_sq")
    .describe("The sum of squares of each input, as a (num_arrays,) float32 vector.")
    .set_params(NumArraysParam)
    .set_num_inputs(_num_arrays)
    .set_input_names(_array_names)
    .set_key_var_num_args("num_arrays")
    .set_infer_shape(_sum_sq_shape)
    .set_infer_type(_float32_output)
    .set_compute(_sum_sq_compute)
)


def _reset_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    for a in inputs:
        a[...] = 0


(
    register("reset_arrays")
    .describe("Sets every input array to zero in place (one engine operation for many arrays).")
    .set_params(NumArraysParam)
    .set_num_inputs(_num_arrays)
    .set_num_outputs(0)
    .set_input_names(_array_names)
    .set_key_var_num_args("num_arrays")
    .set_infer_shape(lambda attrs, in_shapes, out_shapes: all(s is not None for s in in_shapes))
    .set_infer_type(lambda attrs, in_types, out_types: all(t is not None for t in in_types))
    .set_compute(_reset_compute)
    .set_mutate_inputs(lambda attrs: list(range(attrs.parsed.num_arrays)))
)

"""Automatic mixed precision (AMP) casts: ``amp_cast`` and ``amp_multicast``.

AMP rewrites a float32 graph so that some operators run in float16. It inserts these casts,
which differ from ``Cast`` in one rule: only *floating-point* arrays are converted; integer
arrays (indices, labels) pass through unchanged, so a blanket "cast every input" is safe.

* ``amp_cast(data, dtype)``: a float input becomes ``dtype``;
* ``amp_multicast(*data, num_outputs)``: every float input becomes the *widest* float type
  among them (``cast_narrow=True``: the narrowest), so an operator like ``elemwise_add`` sees
  one dtype.

The gradients flow back cast to each input's own dtype (``_backward_amp_cast``,
``_backward_amp_multicast``). bfloat16, which MXNet also accepts, is not an MXLab dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..grad import elemwise_grad_use_in
from ..infer import ShapeT, shape_assign, shape_known, type_assign
from ..params import REQUIRED, DType, Param, ParamSet
from ..registry import register
from .common import put, register_backward


def _is_float(dtype: str | None) -> bool:
    return dtype is not None and np.dtype(dtype).kind == "f"


def _cast_to_output(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    """Output i is input i in output i's dtype. Forward and backward of both operators: a
    backward's outputs are typed like the forward inputs, so this casts gradients back."""
    for i, out in enumerate(outputs):
        put(out, req[i], inputs[i])


# ----------------------------------------------------------------------------- amp_cast


class AmpCastParam(ParamSet):
    dtype = Param(DType, REQUIRED, "The floating-point type float inputs are cast to.")


def _amp_cast_type(attrs: Any, in_types: list, out_types: list) -> bool:
    if in_types[0] is None:
        return False
    target = attrs.parsed.dtype if _is_float(in_types[0]) else in_types[0]
    type_assign(out_types, 0, target, attrs.name, "output")
    return True


def _same_shapes(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """Output i has input i's shape, both ways (any number of pairs)."""
    for i in range(len(out_shapes)):
        shape_assign(out_shapes, i, in_shapes[i], attrs.name, f"output {i}")
        shape_assign(in_shapes, i, out_shapes[i], attrs.name, f"input {i}")
    return all(shape_known(s) for s in in_shapes)


(
    register("amp_cast")
    .describe("Casts a floating-point input to ``dtype``; other inputs pass through unchanged.")
    .set_params(AmpCastParam)
    .set_num_inputs(1)
    .set_input_names(["data"])
    .set_infer_shape(_same_shapes)
    .set_infer_type(_amp_cast_type)
    .set_compute(_cast_to_output)
    .set_gradient(elemwise_grad_use_in("_backward_amp_cast"))
)
register_backward("_backward_amp_cast", _cast_to_output, AmpCastParam)

# ----------------------------------------------------------------------------- amp_multicast


class AmpMulticastParam(ParamSet):
    num_outputs = Param(int, REQUIRED, "Number of inputs (and outputs).", low=1)
    cast_narrow = Param(bool, False, "Cast to the narrowest float type among the inputs instead of the widest.")


def _multicast_target(attrs: Any, types: list) -> str | None:
    floats = [t for t in types if _is_float(t)]
    if not floats:
        return None
    pick = min if attrs.parsed.cast_narrow else max
    return pick(floats, key=lambda t: np.dtype(t).itemsize)


def _amp_multicast_type(attrs: Any, in_types: list, out_types: list) -> bool:
    if any(t is None for t in in_types):
        return False
    target = _multicast_target(attrs, in_types)
    for i, t in enumerate(in_types):
        type_assign(out_types, i, target if _is_float(t) else t, attrs.name, f"output {i}")
    return True


def _num(attrs: Any) -> int:
    return attrs.parsed.num_outputs


(
    register("amp_multicast")
    .describe("Casts every floating-point input to the widest (or narrowest) float type among them.")
    .set_params(AmpMulticastParam)
    .set_num_inputs(_num)
    .set_num_outputs(_num)
    .set_input_names(lambda attrs: [f"data_{i}" for i in range(attrs.parsed.num_outputs)])
    .set_key_var_num_args("num_outputs")
    .set_infer_shape(_same_shapes)
    .set_infer_type(_amp_multicast_type)
    .set_compute(_cast_to_output)
    .set_gradient(elemwise_grad_use_in("_backward_amp_multicast"))
)


def _multicast_backward_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    n = attrs.parsed.num_outputs
    for i in range(n):
        shape_assign(out_shapes, i, in_shapes[n + i], attrs.name, f"gradient of input {i}")
    return all(shape_known(s) for s in out_shapes)


def _multicast_backward_type(attrs: Any, in_types: list, out_types: list) -> bool:
    n = attrs.parsed.num_outputs
    for i in range(n):
        type_assign(out_types, i, in_types[n + i], attrs.name, f"gradient of input {i}")
    return all(t is not None for t in out_types)


(
    register("_backward_amp_multicast")
    .set_params(AmpMulticastParam)
    .set_num_inputs(lambda attrs: 2 * attrs.parsed.num_outputs)
    .set_num_outputs(_num)
    .set_infer_shape(_multicast_backward_shape)
    .set_infer_type(_multicast_backward_type)
    .set_compute(_cast_to_output)
    .set_is_backward()
)

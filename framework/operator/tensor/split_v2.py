"""``_split_v2`` (``mx.nd.split_v2``): split along an axis at given start indices, or into equal sections.

``SliceChannel`` only cuts equal pieces; ``_split_v2`` takes the start of every piece
(``indices``, the first normally 0; piece ``i`` ends where piece ``i + 1`` starts, the last
at the end of the axis), or ``sections`` equal pieces when ``sections > 0``. The pieces
tile the axis, so the gradient (``_split_v2_backward``) concatenates the output gradients.
"""

from __future__ import annotations

from typing import Any

from ..infer import InferenceError, ShapeT, elemwise_type, shape_assign, shape_known
from ..params import REQUIRED, OperatorParamError, Param, ParamSet, Shape
from ..registry import register
from .common import backward_entries, normalize_axis, put


class SplitV2Param(ParamSet):
    indices = Param(Shape, REQUIRED, "Start index of every piece along the axis (ignored when sections > 0).")
    axis = Param(int, 1, "The axis to split along.")
    squeeze_axis = Param(bool, False, "Remove the split axis from the outputs (every piece must have length 1).")
    sections = Param(int, 0, "Split into this many equal pieces instead (0: use indices).", low=0)


def split_v2_params(indices_or_sections: Any, axis: int, squeeze_axis: bool) -> dict[str, Any]:
    """The parameters of ``_split_v2`` for the front ends ``mx.nd.split_v2`` / ``mx.sym.split_v2``:
    an int is a number of equal sections, a tuple the cut points (piece starts after 0)."""
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        return {"indices": (), "sections": indices_or_sections, "axis": axis, "squeeze_axis": squeeze_axis}
    if isinstance(indices_or_sections, tuple | list):
        return {"indices": (0, *indices_or_sections), "axis": axis, "squeeze_axis": squeeze_axis}
    raise OperatorParamError(
        f"split_v2: indices_or_sections must be an int or a tuple of ints, got {indices_or_sections!r}"
    )


def _num_pieces(attrs: Any) -> int:
    p = attrs.parsed
    return p.sections if p.sections > 0 else len(p.indices)


def _bounds(attrs: Any, length: int) -> list[tuple[int, int]]:
    """(begin, end) of every piece along an axis of ``length``."""
    p, name = attrs.parsed, attrs.name
    if p.sections > 0:
        if length % p.sections:
            raise InferenceError(f"{name}: axis length {length} is not divisible into sections={p.sections}")
        size = length // p.sections
        return [(i * size, (i + 1) * size) for i in range(p.sections)]
    if not p.indices:
        raise InferenceError(f"{name}: give indices (piece starts) or sections > 0")
    starts = list(p.indices)
    ends = starts[1:] + [length]
    for b, e in zip(starts, ends, strict=True):
        if not 0 <= b < e <= length:
            raise InferenceError(f"{name}: indices {tuple(p.indices)} do not cut an axis of length {length} in order")
    return list(zip(starts, ends, strict=True))


def _piece_shape(attrs: Any, shape: tuple[int, ...], axis: int, begin: int, end: int) -> tuple[int, ...]:
    if attrs.parsed.squeeze_axis:
        if end - begin != 1:
            raise InferenceError(f"{attrs.name}: squeeze_axis=True needs pieces of length 1, got {end - begin}")
        return shape[:axis] + shape[axis + 1 :]
    return shape[:axis] + (end - begin,) + shape[axis + 1 :]


def _split_v2_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    data = in_shapes[0]
    if data is None or not shape_known(data):
        return False
    axis = normalize_axis(attrs.name, attrs.parsed.axis, len(data))
    for i, (b, e) in enumerate(_bounds(attrs, data[axis])):
        shape_assign(out_shapes, i, _piece_shape(attrs, data, axis, b, e), attrs.name, f"output {i}")
    return True


def _split_v2_compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    axis = normalize_axis(attrs.name, attrs.parsed.axis, x.ndim)
    for i, (b, e) in enumerate(_bounds(attrs, x.shape[axis])):
        piece = x[(slice(None),) * axis + (slice(b, e),)]
        put(outputs[i], req[i], piece.reshape(outputs[i].shape))


def _split_v2_backward(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, axis = op_ctx.xp, normalize_axis(attrs.name, attrs.parsed.axis, outputs[0].ndim)
    pieces = [xp.expand_dims(g, axis) for g in inputs] if attrs.parsed.squeeze_axis else list(inputs)
    put(outputs[0], req[0], xp.concatenate(pieces, axis=axis))


def _split_v2_backward_shape(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    pieces = in_shapes
    if any(s is None for s in pieces):
        return shape_known(out_shapes[0])
    p = attrs.parsed
    ndim = len(pieces[0]) + (1 if p.squeeze_axis else 0)
    axis = normalize_axis(attrs.name, p.axis, ndim)
    length = len(pieces) if p.squeeze_axis else sum(s[axis] for s in pieces)
    ref = pieces[0] if not p.squeeze_axis else pieces[0][:axis] + (1,) + pieces[0][axis:]
    shape_assign(out_shapes, 0, ref[:axis] + (length,) + ref[axis + 1 :], attrs.name, "gradient of data")
    return True


(
    register("_split_v2")
    .describe("Splits along ``axis`` at the piece starts ``indices``, or into ``sections`` equal pieces.")
    .set_params(SplitV2Param)
    .set_num_inputs(1)
    .set_num_outputs(_num_pieces)
    .set_input_names(["data"])
    .set_infer_shape(_split_v2_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_split_v2_compute)
    .set_gradient(lambda node, out_grads: backward_entries(node, "_split_v2_backward", list(out_grads)))
)
(
    register("_split_v2_backward")
    .set_params(SplitV2Param)
    .set_num_inputs(_num_pieces)
    .set_num_outputs(1)
    .set_infer_shape(_split_v2_backward_shape)
    .set_infer_type(elemwise_type)
    .set_compute(_split_v2_backward)
    .set_is_backward()
)

"""Shape and type inference helpers: mutual inference with unknowns.

Shapes: ``None`` is a completely unknown shape; a tuple may contain 0 for an unknown
dimension (MXNet 1.x's convention). Types: ``None`` is unknown, otherwise a dtype name.
An inference function receives the lists of input and output attributes, fills in what it
can *in both directions* (inputs from outputs too: seed 004's mutual inference) and
returns True when everything is known.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import MXLabError

ShapeT = tuple[int, ...] | None


class InferenceError(MXLabError, ValueError):
    """Shapes or types of an operator's inputs and outputs are inconsistent."""


_DTYPE_NAMES: dict[object, str] = {}


def dtype_name(dtype: object) -> str:
    """The canonical name of a dtype (``"float32"``), cached: ``np.dtype.name`` is slow."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
    return name


def shape_known(shape: ShapeT) -> bool:
    """True when ``shape`` has a known rank and no unknown (0) dimension."""
    return shape is not None and 0 not in shape


def merge_shapes(a: ShapeT, b: ShapeT) -> ShapeT:
    """The most known shape consistent with both, or raise ValueError when they conflict."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ValueError
    merged = []
    for x, y in zip(a, b, strict=True):
        if x and y and x != y:
            raise ValueError
        merged.append(x or y)
    return tuple(merged)


def shape_assign(shapes: list[ShapeT], index: int, value: ShapeT, op_name: str, where: str) -> None:
    """Merge ``value`` into ``shapes[index]``; a conflict names the operator and both shapes."""
    if value is None:
        return
    try:
        shapes[index] = merge_shapes(shapes[index], tuple(int(v) for v in value))
    except ValueError:
        raise InferenceError(
            f"{op_name}: shape inconsistent for {where}: expected {tuple(value)}, got {shapes[index]}"
        ) from None


def type_assign(types: list[str | None], index: int, value: str | None, op_name: str, where: str) -> None:
    """Merge a dtype into ``types[index]``; a conflict names the operator and both types."""
    if value is None:
        return
    value = dtype_name(value)
    current = types[index]
    if current is None:
        types[index] = value
    elif current != value:
        raise InferenceError(f"{op_name}: type inconsistent for {where}: expected {value}, got {current}")


def elemwise_shape(attrs: object, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
    """All inputs and outputs share one shape, inferred from whichever is known."""
    op_name = getattr(attrs, "name", "op")
    common: ShapeT = None
    for i, shape in enumerate(list(in_shapes) + list(out_shapes)):
        where = f"input {i}" if i < len(in_shapes) else f"output {i - len(in_shapes)}"
        try:
            common = merge_shapes(common, shape)
        except ValueError:
            raise InferenceError(
                f"{op_name}: shape inconsistent for {where}: expected {common}, got {shape}; "
                "element-wise operators need equal shapes (use broadcast_* to broadcast)"
            ) from None
    for i in range(len(in_shapes)):
        in_shapes[i] = common
    for i in range(len(out_shapes)):
        out_shapes[i] = common
    return shape_known(common)


def elemwise_type(attrs: object, in_types: list[str | None], out_types: list[str | None]) -> bool:
    """All inputs and outputs share one dtype, inferred from whichever is known."""
    op_name = getattr(attrs, "name", "op")
    known = [t for t in list(in_types) + list(out_types) if t is not None]
    if not known:
        return False
    first = dtype_name(known[0])
    for i, t in enumerate(list(in_types) + list(out_types)):
        if t is not None and t != first and dtype_name(t) != first:
            where = f"input {i}" if i < len(in_types) else f"output {i - len(in_types)}"
            raise InferenceError(f"{op_name}: type inconsistent for {where}: expected {first}, got {t}")
    for i in range(len(in_types)):
        in_types[i] = first
    for i in range(len(out_types)):
        out_types[i] = first
    return True


def same_ndim(shapes: Sequence[ShapeT]) -> bool:
    ranks = {len(s) for s in shapes if s is not None}
    return len(ranks) <= 1

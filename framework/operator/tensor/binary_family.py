"""The skeleton that registers a family of binary operators from ``BINARY_MATHS`` entries.

Same-shape (``elemwise_add``) and broadcasting (``broadcast_add``) operators differ only in a
few choices: how the output shape is inferred, what the backward operator is called, and
whether a gradient is summed back to an input's shape. A :class:`BinaryFamily` holds those
choices; :func:`register_binary` does the rest, the same way for every family: the forward
operator, its ``_backward_*`` operator when the maths is differentiable, and its aliases.
It is separate from :mod:`.binary_maths` (what is computed) because it is about how an
operation becomes registry records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..grad import elemwise_grad_use_in, elemwise_grad_use_none, zero_grad
from ..infer import elemwise_type
from ..registry import alias, register
from .binary_maths import BINARY_MATHS, binary_backward_compute, binary_forward_compute

InferFn = Callable[..., bool]


def inplace_binary(attrs) -> list[tuple[int, int]]:
    """The output may overwrite either input."""
    return [(0, 0), (1, 0)]


def inplace_first(attrs) -> list[tuple[int, int]]:
    """The output may overwrite the first input."""
    return [(0, 0)]


@dataclass(frozen=True)
class BinaryFamily:
    """What a family of binary operators (same-shape, broadcast) chooses; the rest is shared.

    ``backward_name(kind, name)`` names the backward operator; ``reduce`` sums a gradient
    back to an input's shape (broadcasting); ``backward_needs_input_shapes`` makes every
    backward take ``lhs`` and ``rhs`` (for their shapes) even when the maths does not.
    """

    description_suffix: str
    infer_shape: InferFn
    backward_infer_shape: InferFn
    backward_description: str
    backward_name: Callable[[str, str], str]
    reduce: Callable[[Any, Any, tuple], Any] | None = None
    backward_needs_input_shapes: bool = False
    backward_inplace: bool = True


def register_binary(family: BinaryFamily, kind: str, name: str, aliases: Sequence[str] = ()) -> None:
    """Register ``name`` computing ``BINARY_MATHS[kind]`` the way ``family`` says, with its
    backward operator (when differentiable) and its aliases."""
    maths = BINARY_MATHS[kind]
    if maths.differentiable:
        backward = family.backward_name(kind, name)
        uses_inputs = maths.grad_needs_inputs or family.backward_needs_input_shapes
        gradient = (elemwise_grad_use_in if uses_inputs else elemwise_grad_use_none)(backward)
        backward_op = (
            register(backward)
            .describe(family.backward_description.format(name=name))
            .set_num_inputs(3 if uses_inputs else 1)
            .set_num_outputs(2)
            .set_infer_shape(family.backward_infer_shape)
            .set_infer_type(elemwise_type)
            .set_compute(binary_backward_compute(kind, reduce=family.reduce))
        )
        if family.backward_inplace:
            backward_op.set_inplace_option(inplace_first)
        backward_op.set_is_backward()
    else:
        gradient = zero_grad
    (
        register(name)
        .describe(maths.description + family.description_suffix)
        .set_num_inputs(2)
        .set_num_outputs(1)
        .set_input_names(["lhs", "rhs"])
        .set_infer_shape(family.infer_shape)
        .set_infer_type(elemwise_type)
        .set_compute(binary_forward_compute(kind))
        .set_gradient(gradient)
        .set_inplace_option(inplace_binary)
    )
    for other in aliases:
        alias(other, name)

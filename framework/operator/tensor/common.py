"""Building blocks shared by the tensor operator families (this module registers no operator).

Most families need the same few pieces: writing a result as ``req`` says after casting it to
the output dtype (:func:`put`), checking an axis argument (:func:`normalize_axis`), the usual
backward operator, whose inputs are ``(out_grad, forward inputs...)`` and whose outputs are
shaped and typed like those inputs (:func:`register_backward`, built on
:func:`grads_like_inputs` and :func:`grad_types_like_inputs`), and the gradient nodes
(:func:`backward_entries`, or :func:`forward_node` when the gradient is a *forward* operator,
so that it can itself be differentiated). One definition each, imported by every family.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..grad import make_backward_node
from ..infer import (
    InferenceError,
    ShapeT,
    merge_shapes,
    shape_assign,
    shape_known,
    type_assign,
)
from ..kernel import Req, assign
from ..node import Entry, Node, NodeAttrs
from ..params import ParamSet
from ..registry import OpDef, get, register


def put(out: Any, req: Req, value: Any) -> None:
    """``assign`` after casting ``value`` to the output's dtype (int outputs, float16 accumulators)."""
    if req is Req.NULL:
        return
    if hasattr(value, "astype"):
        value = value.astype(out.dtype, copy=False)
    assign(out, req, value)


def normalize_axis(op_name: str, axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` in ``[0, ndim)`` (negative counts from the end), or an InferenceError."""
    if not -ndim <= axis < ndim:
        raise InferenceError(f"{op_name}: {what}={axis} is out of range for an input with {ndim} dimension(s)")
    return axis + ndim if axis < 0 else axis


def same_type(attrs: Any, in_types: list, out_types: list) -> bool:
    """Output 0 has input 0's dtype, in both directions (other inputs are left alone)."""
    type_assign(out_types, 0, in_types[0], attrs.name, "output")
    type_assign(in_types, 0, out_types[0], attrs.name, "input 0")
    return in_types[0] is not None


def grads_like_inputs(first_input: int) -> Callable[..., bool]:
    """Backward inference: output ``i`` (the gradient of forward input ``i``) is shaped like
    backward input ``first_input + i`` (that forward input itself)."""

    def infer(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        for i in range(len(out_shapes)):
            shape_assign(out_shapes, i, in_shapes[first_input + i], attrs.name, f"gradient of input {i}")
            shape_assign(in_shapes, first_input + i, out_shapes[i], attrs.name, f"forward input {i}")
        return all(shape_known(s) for s in out_shapes)

    return infer


def grad_types_like_inputs(first_input: int) -> Callable[..., bool]:
    """Backward type inference: gradient ``i`` has the dtype of forward input ``i``."""

    def infer(attrs: Any, in_types: list, out_types: list) -> bool:
        for i in range(len(out_types)):
            type_assign(out_types, i, in_types[first_input + i], attrs.name, f"gradient of input {i}")
        return all(t is not None for t in out_types)

    return infer


def backward_entries(node: Node, op_name: str, inputs: list[Entry], count: int | None = None) -> list[Entry]:
    """Build a backward node and return its outputs (one per forward input by default)."""
    backward = make_backward_node(node, op_name, inputs)
    return [Entry(backward, i) for i in range(len(node.inputs) if count is None else count)]


def register_backward(
    name: str,
    compute: Callable[..., None],
    params: type[ParamSet] | None = None,
    num_inputs: int | Callable[..., int] = 2,
    num_outputs: int | Callable[..., int] = 1,
) -> OpDef:
    """Register the usual backward operator of a family member and return it.

    Its inputs are ``(out_grad, forward inputs...)`` and its outputs the gradients of those
    forward inputs, each shaped and typed like its input (:func:`grads_like_inputs`,
    :func:`grad_types_like_inputs`); ``params`` are the forward operator's parameters.
    """
    op = register(name)
    if params is not None:
        op.set_params(params)
    return (
        op.set_num_inputs(num_inputs)
        .set_num_outputs(num_outputs)
        .set_infer_shape(grads_like_inputs(1))
        .set_infer_type(grad_types_like_inputs(1))
        .set_compute(compute)
        .set_is_backward()
    )


def merge_or_raise(op_name: str, a: ShapeT, b: ShapeT, what: str) -> ShapeT:
    """Merge two partial shapes, raising an InferenceError that shows both."""
    try:
        return merge_shapes(a, b)
    except ValueError:
        raise InferenceError(f"{op_name}: shape inconsistent for {what}: {a} vs {b}") from None


def forward_node(node: Node, op_name: str, params: dict[str, Any], inputs: list[Entry]) -> Entry:
    """A node of a *forward* operator (with new parameters) used as a gradient, so the
    gradient is itself differentiable (``transpose``'s gradient is a ``transpose``)."""
    op = get(op_name)
    attrs = NodeAttrs(f"{node.name}_backward", op, op.params.parse(op_name, params))
    grad_node = Node(op, attrs, inputs)
    grad_node.control_deps.append(node)
    return Entry(grad_node, 0)

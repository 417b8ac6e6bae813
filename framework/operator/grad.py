"""Gradient builders: how an operator says which backward nodes compute its input gradients.

An operator's ``gradient`` attribute is a function ``(node, out_grads) -> in_grads``: given
the forward node and one entry per output gradient, it returns one entry per input
gradient, usually outputs of a new ``_backward_<name>`` node. What that backward node
takes as inputs is what the forward pass must keep alive for backward, which is how the
memory planner learns that, say, ``relu`` needs its output but not its input.

The four helpers cover element-wise operators (seed 004's ``ElemwiseGradUseIn``):

* ``elemwise_grad_use_in``: backward inputs are the output gradients, then the forward inputs;
* ``elemwise_grad_use_out``: the output gradients, then the forward outputs;
* ``elemwise_grad_use_in_out``: the output gradients, the forward inputs, the forward outputs;
* ``elemwise_grad_use_none``: only the output gradients.

A gradient that is itself differentiated (``autograd.grad(..., create_graph=True)``) needs the
backward operator to have a ``gradient`` too. :class:`FormulaBuilder` writes such gradients
out of ordinary differentiable operators (``sin``, ``elemwise_mul``, ``_mul_scalar``, ...), as
MXNet's higher-order gradients do, so that a third derivative differentiates those in turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import registry
from .node import Entry, Node, NodeAttrs

GradFn = Callable[[Node, list[Entry]], list[Entry]]


def make_backward_node(node: Node, backward_op: str, inputs: list[Entry], suffix: str = "_backward") -> Node:
    """A node of ``backward_op`` with the forward node's parameters, named after it."""
    op = registry.get(backward_op)
    attrs = NodeAttrs(f"{node.name}{suffix}", op, node.attrs.parsed, dict(node.attrs.extra))
    backward = Node(op, attrs, inputs)
    backward.control_deps.append(node)  # the backward node belongs to this forward node
    return backward


def _outputs_of(node: Node) -> list[Entry]:
    return [Entry(node, i) for i in range(node.num_outputs())]


def _grad_entries(backward: Node, count: int) -> list[Entry]:
    return [Entry(backward, i) for i in range(count)]


def elemwise_grad_use_in(backward_op: str) -> GradFn:
    """Backward node inputs: output gradients, then the forward node's inputs."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        backward = make_backward_node(node, backward_op, list(out_grads) + list(node.inputs))
        return _grad_entries(backward, len(node.inputs))

    return gradient


def elemwise_grad_use_out(backward_op: str) -> GradFn:
    """Backward node inputs: output gradients, then the forward node's outputs."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        backward = make_backward_node(node, backward_op, list(out_grads) + _outputs_of(node))
        return _grad_entries(backward, len(node.inputs))

    return gradient


def elemwise_grad_use_in_out(backward_op: str) -> GradFn:
    """Backward node inputs: output gradients, forward inputs, forward outputs."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        inputs = list(out_grads) + list(node.inputs) + _outputs_of(node)
        backward = make_backward_node(node, backward_op, inputs)
        return _grad_entries(backward, len(node.inputs))

    return gradient


def elemwise_grad_use_none(backward_op: str) -> GradFn:
    """Backward node inputs: only the output gradients."""

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        backward = make_backward_node(node, backward_op, list(out_grads))
        return _grad_entries(backward, len(node.inputs))

    return gradient


def zero_grad(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Gradient of a non-differentiable operator: zeros shaped like each input."""
    op = registry.get("zeros_like")
    return [
        Entry(Node(op, NodeAttrs(f"{node.name}_zero_grad{i}", op, op.params.parse("zeros_like", {})), [inp]), 0)
        for i, inp in enumerate(node.inputs)
    ]


def no_gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
    """Marks an operator as having no gradient at all (its inputs get none)."""
    return []


class FormulaBuilder:
    """Builds the nodes of a gradient formula: ``f.op("sin", x)``, ``f.mul(a, b)``, ``f.scale(a, 2.0)``.

    Every node is named after the backward node it differentiates (``<name>_<op><k>``).
    """

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._count = 0

    def op(self, name: str, *inputs: Entry, **params: Any) -> Entry:
        """Output 0 of a new ``name`` node on ``inputs``."""
        op = registry.get(name)
        self._count += 1
        attrs = NodeAttrs(f"{self._prefix}_{name.strip('_')}{self._count}", op, op.params.parse(name, params))
        return Entry(Node(op, attrs, list(inputs)), 0)

    def mul(self, a: Entry, b: Entry) -> Entry:
        return self.op("elemwise_mul", a, b)

    def div(self, a: Entry, b: Entry) -> Entry:
        return self.op("elemwise_div", a, b)

    def neg(self, a: Entry) -> Entry:
        return self.op("negative", a)

    def scale(self, a: Entry, factor: float) -> Entry:
        return self.op("_mul_scalar", a, scalar=factor)

    def plus(self, a: Entry, value: float) -> Entry:
        return self.op("_plus_scalar", a, scalar=value)

    def minus_from(self, value: float, a: Entry) -> Entry:
        """``value - a``."""
        return self.op("_rminus_scalar", a, scalar=value)

    def power(self, a: Entry, exponent: float) -> Entry:
        return self.op("_power_scalar", a, scalar=exponent)

    def zeros_like(self, a: Entry) -> Entry:
        return self.op("zeros_like", a)

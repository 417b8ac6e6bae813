"""What every control-flow operator shares: the body graph it holds and the runner that runs it.

A :class:`Subgraph` is a graph given by its output entries; its inputs are its variables in
depth-first order (a Symbol's ``list_inputs()``). :class:`SubgraphParams` is the parameter
struct of a control-flow node: MXNet's string parameters plus the subgraphs, which are not
strings and so are left out of ``to_strings`` (symbol JSON writes them as ``subgraphs``).

Shape inference and execution of a body need the executor (a higher layer). It installs a
:class:`SubgraphRunner` with :func:`install_runner` when ``framework.executor`` is imported,
the same "slot" pattern as ``imperative.tape_hook`` (docs/architecture.md).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..grad import make_backward_node
from ..infer import InferenceError, ShapeT, shape_assign, type_assign
from ..kernel import OpContext
from ..node import Entry, Node, topo_sort
from ..params import OperatorParamError, ParamSet
from ..registry import register


class Subgraph:
    """A body graph: output entries, its input variables in order, and the runner's cache."""

    def __init__(self, heads: Sequence[Entry]) -> None:
        heads = list(heads)
        if not heads or not all(isinstance(e, Entry) for e in heads):
            raise TypeError(f"a subgraph is a non-empty list of output entries, got {heads!r:.80}")
        self.heads = heads
        #: The variables the body reads, depth first: the order the location parameters index.
        self.inputs: list[Node] = [n for n in topo_sort(heads) if n.is_variable]
        #: Per signature, what the runner built for this body (nested executors); under ``lock``.
        self.cache: dict[Any, Any] = {}
        self.lock = threading.Lock()

    @property
    def input_names(self) -> list[str]:
        return [n.name for n in self.inputs]

    @property
    def num_outputs(self) -> int:
        return len(self.heads)

    def __repr__(self) -> str:
        return f"<Subgraph {self.input_names} -> {self.num_outputs} output(s)>"


class SubgraphParams(ParamSet):
    """Base of the control-flow parameter structs: string parameters plus ``subgraphs``."""

    #: How many subgraphs the operator holds (body; cond and func; cond, then and else).
    num_subgraphs = 1
    #: Whether a node cannot exist without them (a library operator's subgraph is optional).
    needs_subgraphs = True
    #: A string attribute the subgraph may also be given as (a library operator's ``subgraph_sym_json``):
    #: once the node holds its subgraphs, that attribute is not written again beside them.
    subgraph_attribute: str | None = None

    def holds_subgraphs(self) -> bool:
        """Whether this node was given its subgraphs (symbol JSON writes them as ``subgraphs``)."""
        return "subgraphs" in self._values  # type: ignore[attr-defined]

    @property
    def subgraphs(self) -> tuple[Subgraph, ...]:
        graphs = self._values.get("subgraphs")  # type: ignore[attr-defined]
        if graphs is None:
            raise OperatorParamError(f"{type(self).__name__}: this control-flow node was given no subgraphs")
        return graphs

    def with_subgraphs(self, subgraphs: Sequence[Subgraph]) -> SubgraphParams:
        """The same parameters holding ``subgraphs`` (checked against the count the operator needs)."""
        graphs = tuple(subgraphs)
        if len(graphs) != self.num_subgraphs or not all(isinstance(g, Subgraph) for g in graphs):
            raise OperatorParamError(
                f"{type(self).__name__}: expects {self.num_subgraphs} subgraph(s), got {len(graphs)}"
            )
        values = {k: v for k, v in self._values.items() if k != "subgraphs"}  # type: ignore[attr-defined]
        return type(self)({**values, "subgraphs": graphs})

    @classmethod
    def parse(cls, op_name: str, kwargs: Mapping[str, Any]) -> ParamSet:
        """MXNet's string parameters, plus ``subgraphs=`` (a list of :class:`Subgraph`) when given."""
        values = dict(kwargs)
        graphs = values.pop("subgraphs", None)
        parsed = super().parse(op_name, values)
        return parsed if graphs is None else parsed.with_subgraphs(graphs)  # type: ignore[attr-defined]

    def to_strings(self) -> dict[str, str]:
        values = self._values  # type: ignore[attr-defined]
        return {name: self.fields[name].format(v) for name, v in values.items() if name != "subgraphs"}


def check_locations(op_name: str, params: ParamSet, names: Sequence[str], count: int) -> None:
    """Location parameters must index ``count`` places; ``names`` lists the parameters checked."""
    for name in names:
        bad = [i for i in getattr(params, name) if not 0 <= i < count]
        if bad:
            raise OperatorParamError(f"{op_name}: parameter {name!r} has locations {bad} outside 0..{count - 1}")


class SubgraphRunner(Protocol):
    """What the executor supplies to run a body (installed by ``framework.executor``)."""

    def infer_shapes(self, graph: Subgraph, in_shapes: list[ShapeT]) -> tuple[list[ShapeT], list[ShapeT]]:
        """The body's input and output shapes, inferred from the inputs' (None: unknown)."""
        ...

    def infer_types(self, graph: Subgraph, in_types: list[str | None]) -> tuple[list[str | None], list[str | None]]:
        """The body's input and output dtypes, inferred from the inputs'."""
        ...

    def forward(self, graph: Subgraph, op_ctx: OpContext, inputs: list[Any]) -> list[Any]:
        """Run the body on raw arrays, on the calling thread; fresh arrays of its outputs."""
        ...

    def backward(self, graph: Subgraph, op_ctx: OpContext, inputs: list[Any], head_grads: list[Any]) -> list[Any]:
        """Gradients of the body's inputs given its output gradients (one array per input)."""
        ...


_runner: list[SubgraphRunner] = []


def install_runner(runner: SubgraphRunner) -> None:
    """Called by ``framework.executor`` at import: the runner every control-flow node uses."""
    _runner[:] = [runner]


def runner(op_name: str) -> SubgraphRunner:
    if not _runner:
        raise InferenceError(f"{op_name}: no subgraph runner installed (import framework.executor first)")
    return _runner[0]


def place(locations: Sequence[int], values: Sequence[Any], into: list[Any]) -> None:
    """``into[locations[i]] = values[i]``: put a node's inputs where the body expects them."""
    for loc, value in zip(locations, values, strict=True):
        into[loc] = value


def sliced(shape: ShapeT) -> ShapeT:
    """The shape of one step of a sequence (axis 0 dropped)."""
    return None if shape is None or len(shape) == 0 else tuple(shape[1:])


def stacked(length: int, shape: ShapeT) -> ShapeT:
    """The shape of ``length`` steps stacked along a new axis 0."""
    return None if shape is None else (length, *shape)


def check_scalar_condition(op_name: str, value: Any) -> bool:
    """A condition's output as a Python bool; it must hold exactly one element."""
    if value.size != 1:
        raise InferenceError(f"{op_name}: the condition must give one element, got shape {tuple(value.shape)}")
    return bool(value.reshape(()).item())


def backward_shape(op_name: str) -> Any:
    """Inference of a ``_backward_*`` node: inputs are the output gradients, then the forward inputs,
    and each output (an input's gradient) is shaped like that forward input."""

    def infer(attrs: Any, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        for i, shape in enumerate(in_shapes[attrs.parsed.num_outputs :]):
            shape_assign(out_shapes, i, shape, op_name, f"gradient of input {i}")
            shape_assign(in_shapes, attrs.parsed.num_outputs + i, out_shapes[i], op_name, f"forward input {i}")
        return all(s is not None for s in out_shapes)

    return infer


def backward_type(op_name: str) -> Any:
    """Type inference of a ``_backward_*`` node: each gradient has its forward input's dtype."""

    def infer(attrs: Any, in_types: list, out_types: list) -> bool:
        for i, dtype in enumerate(in_types[attrs.parsed.num_outputs :]):
            type_assign(out_types, i, dtype, op_name, f"gradient of input {i}")
        return all(t is not None for t in out_types)

    return infer


def register_control_flow(
    name: str,
    description: str,
    params: type[SubgraphParams],
    infer_shape: Any,
    infer_type: Any,
    forward: Any,
    backward: Any,
    input_names: Any = None,
) -> None:
    """Register a control-flow operator ``name`` and its ``_backward`` node, wired the same way for all three.

    The node's inputs are ``num_args`` minus its ``num_subgraphs`` (the subgraphs are counted in
    ``num_args`` but are not inputs); the backward node reads the output gradients followed by the
    forward inputs and gives one gradient per forward input (see :func:`backward_shape`).
    """
    backward_name = "_backward" + name
    n_subgraphs = params.num_subgraphs

    def gradient(node: Node, out_grads: list[Entry]) -> list[Entry]:
        grad_node = make_backward_node(node, backward_name, list(out_grads) + list(node.inputs))
        return [Entry(grad_node, i) for i in range(len(node.inputs))]

    def numbered_inputs(attrs: Any) -> list[str]:
        return [f"input{i}" for i in range(attrs.parsed.num_args - n_subgraphs)]

    (
        register(name)
        .describe(description)
        .set_params(params)
        .set_num_inputs(lambda attrs: attrs.parsed.num_args - n_subgraphs)
        .set_num_outputs(lambda attrs: attrs.parsed.num_outputs)
        .set_input_names(input_names or numbered_inputs)
        .set_infer_shape(infer_shape)
        .set_infer_type(infer_type)
        .set_compute(forward)
        .set_gradient(gradient)
    )
    (
        register(backward_name)
        .set_params(params)
        .set_num_inputs(lambda attrs: attrs.parsed.num_outputs + attrs.parsed.num_args - n_subgraphs)
        .set_num_outputs(lambda attrs: attrs.parsed.num_args - n_subgraphs)
        .set_infer_shape(backward_shape(backward_name))
        .set_infer_type(backward_type(backward_name))
        .set_compute(backward)
        .set_is_backward()
    )

"""The operator registry: one record per operator, whatever front door declared it.

Seed 004 registers ``quadratic`` with NNVM's chained calls; MXLab keeps that shape::

    register("_contrib_quadratic")
        .describe("f(x) = a*x^2 + b*x + c, element-wise.")
        .set_params(QuadraticParam)
        .set_num_inputs(1).set_num_outputs(1)
        .set_input_names(["data"])
        .set_infer_shape(elemwise_shape)
        .set_infer_type(elemwise_type)
        .set_compute(quadratic_forward)
        .set_gradient(elemwise_grad_use_in("_backward_contrib_quadratic"))
        .set_inplace_option(lambda attrs: [(0, 0)])

Attributes that depend on parameters (``num_inputs`` of ``Concat``, ``input_names`` of
``FullyConnected`` with ``no_bias``) may be given as functions of the node attributes.
The NDArray and Symbol front ends look operators up here when an attribute such as
``mx.nd.quadratic`` is first used, which is how operators registered later (by a tutorial,
or loaded from a C library at run time) get their front-end functions too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..base import MXLabError
from .infer import InferenceError, ShapeT
from .params import NoParams, ParamSet

ComputeFn = Callable[..., None]


class NodeAttrs:
    """What a compute function learns about its node: name, operator, parsed parameters.

    ``extra`` holds hidden attributes (``__shape__``, ``__lr_mult__``, ...) as strings.
    """

    __slots__ = ("name", "op", "parsed", "extra", "plan")

    def __init__(self, name: str, op: OpDef | None, parsed: ParamSet | None, extra: dict[str, str] | None = None):
        self.name = name
        self.op = op
        self.parsed = parsed
        self.extra = extra if extra is not None else {}
        #: Per-attrs facts the imperative path derives once (counts, mutated inputs, ...).
        self.plan: tuple | None = None

    def __repr__(self) -> str:
        op_name = self.op.name if self.op is not None else "null"
        return f"NodeAttrs({op_name} {self.name!r}, {self.parsed!r})"


AttrFn = Callable[[NodeAttrs], Any]


class OperatorError(MXLabError, ValueError):
    """An operator is unknown, registered twice, or missing what a call needs."""


class OpDef:
    """Everything MXLab knows about one operator (NNVM's ``Op`` with its attributes)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = ""
        self.params: type[ParamSet] = NoParams
        self._num_inputs: int | AttrFn = 1
        self._num_outputs: int | AttrFn = 1
        self._num_visible_outputs: int | AttrFn | None = None
        self._input_names: Sequence[str] | AttrFn | None = None
        self._output_names: Sequence[str] | AttrFn | None = None
        self.infer_shape: Callable[..., bool] | None = None
        self.infer_type: Callable[..., bool] | None = None
        self.compute: dict[str, ComputeFn] = {}
        self.gradient: Callable[..., list] | None = None
        self._inplace_option: AttrFn | None = None
        self._resource_request: AttrFn | None = None
        self._mutate_inputs: AttrFn | None = None
        self.is_backward = False
        #: Asynchronous compute (MXNet's ``ExecType::kAsync``): see :meth:`set_is_async`.
        self.is_async = False
        #: Name of the parameter holding the number of variadic inputs (``num_args``).
        self.key_var_num_args: str | None = None
        #: Where the front door came from ("registry", "OperatorProperty", "SimpleOp", ...).
        self.front_door = "registry"
        #: The stateful operator factory of adapters, if any: ``create_state(attrs, ctx)``.
        self.create_state: Callable[..., Any] | None = None
        #: MXNet's ``ExecType::kSubgraphExec``: see :meth:`set_subgraph_exec`.
        self.subgraph_exec: Callable[..., list] | None = None
        #: Output shapes computed from the input *values*: see :meth:`set_shape_from_values`.
        self.shape_from_values: Callable[..., list] | None = None

    # ---------------------------------------------------------------- chained setters
    def describe(self, text: str) -> OpDef:
        self.description = text.strip()
        return self

    def set_params(self, params: type[ParamSet]) -> OpDef:
        if not (isinstance(params, type) and issubclass(params, ParamSet)):
            raise OperatorError(f"{self.name}: set_params expects a ParamSet subclass, got {params!r}")
        self.params = params
        return self

    def set_num_inputs(self, n: int | AttrFn) -> OpDef:
        self._num_inputs = n
        return self

    def set_num_outputs(self, n: int | AttrFn) -> OpDef:
        self._num_outputs = n
        return self

    def set_num_visible_outputs(self, n: int | AttrFn) -> OpDef:
        self._num_visible_outputs = n
        return self

    def set_input_names(self, names: Sequence[str] | AttrFn) -> OpDef:
        self._input_names = names
        return self

    def set_output_names(self, names: Sequence[str] | AttrFn) -> OpDef:
        self._output_names = names
        return self

    def set_infer_shape(self, fn: Callable[..., bool]) -> OpDef:
        self.infer_shape = fn
        return self

    def set_infer_type(self, fn: Callable[..., bool]) -> OpDef:
        self.infer_type = fn
        return self

    def set_compute(self, fn: ComputeFn, devices: Sequence[str] = ("cpu", "gpu")) -> OpDef:
        """Register ``fn`` for each device; one function serves both when it uses ``op_ctx.xp``."""
        for device in devices:
            if device not in ("cpu", "gpu"):
                raise OperatorError(f"{self.name}: set_compute device must be 'cpu' or 'gpu', got {device!r}")
            self.compute[device] = fn
        return self

    def set_gradient(self, fn: Callable[..., list]) -> OpDef:
        self.gradient = fn
        return self

    def set_inplace_option(self, fn: AttrFn) -> OpDef:
        self._inplace_option = fn
        return self

    def set_resource_request(self, fn: AttrFn) -> OpDef:
        self._resource_request = fn
        return self

    def set_mutate_inputs(self, fn: AttrFn) -> OpDef:
        self._mutate_inputs = fn
        return self

    def set_is_backward(self, flag: bool = True) -> OpDef:
        self.is_backward = flag
        return self

    def set_is_async(self, flag: bool = True) -> OpDef:
        """Make the compute function asynchronous (MXNet's ``FExecType`` = ``kAsync``).

        An async compute function only *starts* its work (typically by handing it to
        another thread) and returns; it must call ``op_ctx.async_on_complete()`` exactly
        once when everything it writes is final, or ``op_ctx.async_on_complete(error)``.
        The engine frees the worker as soon as the function returns, and runs the
        operations that depend on the outputs only after the callback. ``async_on_complete``
        is None when a caller runs the function outside the engine (then it must finish
        before returning).
        """
        self.is_async = bool(flag)
        return self

    def set_subgraph_exec(self, fn: Callable[..., list]) -> OpDef:
        """Run the operator on the calling thread instead of pushing it (MXNet's ``kSubgraphExec``).

        For operators that are whole graphs (the CachedOp): ``fn(attrs, inputs, out)`` gets
        the input NDArrays (and ``out=`` or None), pushes the graph's own operations to the
        engine, and returns the output NDArrays. The imperative path calls it in place of
        inference, allocation and the single push, then records the call on the tape as usual.
        """
        self.subgraph_exec = fn
        return self

    def set_shape_from_values(self, fn: Callable[..., list]) -> OpDef:
        """Declare that the output shapes depend on the input values (MXNet's dynamic shapes).

        ``fn(attrs, inputs) -> [shape per output]`` reads the raw input arrays (``boolean_mask``
        counts the non-zero entries of its index). Shape inference cannot know such outputs
        and leaves them unknown, so a bound graph refuses the operator, naming it, as MXNet's
        graph executor does. The imperative path instead waits until the inputs are computed,
        calls ``fn`` on their values and then allocates the outputs, before pushing the
        compute as usual; the call pattern is not cached, since the values differ per call.
        """
        self.shape_from_values = fn
        return self

    def set_key_var_num_args(self, name: str) -> OpDef:
        self.key_var_num_args = name
        return self

    # ---------------------------------------------------------------- queries
    def parse_attrs(self, kwargs: dict[str, Any], name: str | None = None) -> NodeAttrs:
        """Parse keyword arguments into node attributes (raises OperatorParamError)."""
        return NodeAttrs(name or self.name, self, self.params.parse(self.name, kwargs))

    def get_num_inputs(self, attrs: NodeAttrs) -> int:
        n = self._num_inputs
        return n if isinstance(n, int) else int(n(attrs))

    def get_num_outputs(self, attrs: NodeAttrs) -> int:
        n = self._num_outputs
        return n if isinstance(n, int) else int(n(attrs))

    def get_num_visible_outputs(self, attrs: NodeAttrs) -> int:
        n = self._num_visible_outputs
        if n is None:
            return self.get_num_outputs(attrs)
        return n if isinstance(n, int) else int(n(attrs))

    def list_input_names(self, attrs: NodeAttrs) -> list[str]:
        names = self._input_names
        if names is None:
            count = self.get_num_inputs(attrs)
            return ["data"] if count == 1 else [f"arg{i}" for i in range(count)]
        return list(names(attrs) if callable(names) else names)

    def list_output_names(self, attrs: NodeAttrs) -> list[str]:
        names = self._output_names
        if names is None:
            count = self.get_num_outputs(attrs)
            return ["output"] if count == 1 else [f"output{i}" for i in range(count)]
        return list(names(attrs) if callable(names) else names)

    def inplace_option(self, attrs: NodeAttrs) -> list[tuple[int, int]]:
        """(input index, output index) pairs whose memory the output may take over."""
        return [] if self._inplace_option is None else list(self._inplace_option(attrs))

    def resource_request(self, attrs: NodeAttrs) -> list:
        return [] if self._resource_request is None else list(self._resource_request(attrs))

    def mutate_inputs(self, attrs: NodeAttrs) -> list[int]:
        """Indices of inputs the operator writes (auxiliary states such as BatchNorm's moving mean)."""
        return [] if self._mutate_inputs is None else list(self._mutate_inputs(attrs))

    def run_infer_shape(self, attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        if self.infer_shape is None:
            raise InferenceError(f"{self.name}: operator has no shape inference function")
        return bool(self.infer_shape(attrs, in_shapes, out_shapes))

    def run_infer_type(self, attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        if self.infer_type is None:
            raise InferenceError(f"{self.name}: operator has no type inference function")
        return bool(self.infer_type(attrs, in_types, out_types))

    def get_compute(self, device_type: str) -> ComputeFn:
        fn = self.compute.get(device_type)
        if fn is None:
            have = ", ".join(self.compute) or "no device"
            raise OperatorError(f"{self.name}: no compute function for {device_type} (registered for {have})")
        return fn

    def __repr__(self) -> str:
        return f"<OpDef {self.name}>"


_registry: dict[str, OpDef] = {}
_aliases: dict[str, str] = {}


def register(name: str, override: bool = False) -> OpDef:
    """Create and register a new operator record; chain setters on the result."""
    if not isinstance(name, str) or not name:
        raise OperatorError(f"operator names must be non-empty strings, got {name!r}")
    if name in _registry and not override:
        raise OperatorError(f"operator {name!r} is already registered")
    op = OpDef(name)
    _registry[name] = op
    return op


def alias(name: str, target: str) -> None:
    """Make ``name`` another name of ``target`` (``SliceChannel`` for ``split``)."""
    _aliases[name] = target


def get(name: str) -> OpDef:
    """The operator called ``name`` (or an alias of it); unknown names raise with a hint."""
    op = _registry.get(_aliases.get(name, name))
    if op is None:
        close = sorted(n for n in list(_registry) + list(_aliases) if n.lower() == name.lower())
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise OperatorError(f"unknown operator {name!r}{hint}")
    return op


def exists(name: str) -> bool:
    return _aliases.get(name, name) in _registry


def list_operators() -> list[str]:
    """Every registered operator name, aliases included, sorted."""
    return sorted(list(_registry) + list(_aliases))


def aliases_of(name: str) -> list[str]:
    return [a for a, target in _aliases.items() if target == name]

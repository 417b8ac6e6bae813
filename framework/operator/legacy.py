"""The OperatorProperty front door (seed 000, "Operators in MXNet"): Forward/Backward classes.

Before NNVM, an MXNet operator was two C++ classes:

* an :class:`Operator` doing the computation, ``Forward`` and ``Backward`` on raw tensors
  (``in_data``, ``out_data``, ``out_grad``, ``in_grad``, ``aux_states``) with one write
  request (``req``) per output;
* an :class:`OperatorProperty` describing it: argument/output/auxiliary-state names, shape
  and type inference, the resources it needs, what backward depends on
  (``DeclareBackwardDependency``), in-place hints, and ``CreateOperator`` to build the
  computing object for a device.

MXNet 1.x still accepts operators written that way: ``legacy_op_util.cc`` turns every
registered property into an ordinary NNVM operator. :func:`register_legacy` does the same
here, so a property class becomes **one record in the same registry** as everything else,
reachable as ``mx.nd.<name>`` and differentiable by autograd::

    class ScaledReLUProp(OperatorProperty):
        params = ScaleParam
        def list_arguments(self): return ["data"]
        def infer_shape(self, in_shape, out_shape, aux_shape):   # mutual: either side
            shape = in_shape[0] or out_shape[0]
            return [shape], [shape], []
        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return [out_grad[0], out_data[0]]          # backward never needs the input
        def create_operator(self, ctx, in_shapes, in_types): return ScaledReLU(self.param)

    register_legacy("ScaledReLU", ScaledReLUProp)

How the property's methods become registry attributes:

============================== =========================================================
registry attribute             derived from
============================== =========================================================
input names                    ``list_arguments() + list_auxiliary_states()``
output names / visible outputs ``list_outputs()`` / ``num_visible_outputs()``
mutate_inputs                  the indices of the auxiliary states (the engine treats them
                               as written, so BatchNorm-style running statistics are safe)
infer_shape / infer_type       the property's, split into arguments / outputs / aux and
                               merged back; *mutual* when the method also accepts
                               ``out_shape`` / ``out_type`` (otherwise it is only called
                               once every argument is known)
compute                        ``create_operator(...).forward(...)``
gradient                       a ``_backward_<name>`` node whose inputs are exactly the
                               entries ``declare_backward_dependency`` lists, then the aux
                               states; the memory planner therefore sees the real
                               dependencies (a dropped ``out_data`` can be freed early)
inplace option                 ``forward_inplace_option`` / ``backward_inplace_option``
resource request               ``forward_resource`` / ``backward_resource``, mapped to
                               :class:`framework.resource.ResourceRequest`
============================== =========================================================

**Operator instances.** ``create_operator`` is called once per (parameters, context,
argument shapes, argument dtypes) and the instance is cached (LRU, 1024 entries): a node of
a bound graph has fixed parameters, device and shapes, so this is "one operator per node
and context", and forward and backward of one node share the instance. Imperative calls
with the same parameters and shapes share it too (autograd renames tape nodes, so the key
cannot use node names). An operator may therefore keep *caches* (a chosen algorithm, a
workspace size) but must not carry per-call data from forward to backward: what backward
needs is what ``declare_backward_dependency`` asks for, exactly as in MXNet.

**Runtime context.** ``forward``/``backward`` receive raw NumPy/CuPy arrays and
:class:`~framework.operator.kernel.Req` values; the call's
:class:`~framework.operator.kernel.OpContext` (training flag, device, requested resources,
array module) is ``self.op_ctx`` during the call (per thread), ``self.xp`` its array module.
Write outputs with ``self.assign(dst, req[i], value)`` so ``add`` and ``null`` work.

**Limitations (MXLab differences).** MXNet passes shapes to ``forward_resource`` /
``backward_resource``; MXLab's registry asks for resources by parameters only, so they
receive ``in_shape=None``. Backward runs imperatively and must infer the shapes of its
outputs (the argument gradients) from the entries it receives: when
``declare_backward_dependency`` drops ``in_data``, write ``infer_shape`` in the mutual form
``infer_shape(in_shape, out_shape, aux_shape)`` so argument shapes follow from the output
gradient (an ``infer_shape(in_shape)`` property cannot tell them, and backward then fails
with "cannot infer the shape").
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ..base import MXLabError
from ..context import Context
from ..resource import ResourceRequest
from . import registry
from .grad import make_backward_node
from .infer import InferenceError, ShapeT, shape_assign, shape_known, type_assign
from .kernel import OpContext, Req, assign
from .node import Entry, Node, NodeAttrs
from .params import NoParams, ParamSet
from .registry import OpDef, OperatorError

__all__ = ["Operator", "OperatorProperty", "register_legacy"]

_OPERATOR_CACHE_LIMIT = 1024
_current = threading.local()  # the OpContext of the call running on this thread


class Operator:
    """The computing half of a legacy operator (MXNet's ``Operator``): forward and backward.

    Subclasses implement :meth:`forward` and, if differentiable, :meth:`backward`. Both
    receive lists of raw arrays; entries that backward did not declare as dependencies
    are None.
    """

    def forward(self, is_train: bool, req: list[Req], in_data: list[Any], out_data: list[Any], aux: list[Any]) -> None:
        """Compute ``out_data`` from ``in_data`` (and update ``aux`` in place if needed)."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def backward(
        self,
        req: list[Req],
        out_grad: list[Any],
        in_data: list[Any],
        out_data: list[Any],
        in_grad: list[Any],
        aux: list[Any],
    ) -> None:
        """Compute ``in_grad`` (one per argument) from what declare_backward_dependency asked for."""
        raise NotImplementedError(f"{type(self).__name__} has no backward()")

    @staticmethod
    def assign(dst: Any, req: Req, src: Any) -> None:
        """Write ``src`` into ``dst`` as ``req`` says (MXNet's ``assign`` / ``ASSIGN_DISPATCH``)."""
        assign(dst, req, src)

    @property
    def op_ctx(self) -> OpContext:
        """The context of the running forward/backward call (training flag, device, resources)."""
        op_ctx = getattr(_current, "op_ctx", None)
        if op_ctx is None:
            raise MXLabError(f"{type(self).__name__}.op_ctx is only available inside forward()/backward()")
        return op_ctx

    @property
    def xp(self) -> Any:
        """The array module of the running call: numpy on CPU, cupy on GPU."""
        return self.op_ctx.xp


class OperatorProperty:
    """The describing half of a legacy operator (MXNet's ``OperatorProperty``).

    ``params`` is the parameter struct (a :class:`~framework.operator.params.ParamSet`);
    the adapter builds one property per parsed parameter set and passes it as ``param``
    (MXNet's ``Init(kwargs)``). The defaults describe a one-input, one-output element-wise
    operator whose backward needs everything, like MXNet's.
    """

    params: ClassVar[type[ParamSet]] = NoParams

    def __init__(self, param: ParamSet) -> None:
        self.param = param

    # ------------------------------------------------------------------ names
    def list_arguments(self) -> list[str]:
        """Names of the inputs that receive gradients."""
        return ["data"]

    def list_outputs(self) -> list[str]:
        return ["output"]

    def list_auxiliary_states(self) -> list[str]:
        """Names of the inputs the operator updates in place and that get no gradient."""
        return []

    def num_visible_outputs(self) -> int:
        return len(self.list_outputs())

    # ------------------------------------------------------------------ inference
    def infer_shape(
        self, in_shape: list[ShapeT], out_shape: list[ShapeT] | None = None, aux_shape: list[ShapeT] | None = None
    ) -> tuple[list[ShapeT], list[ShapeT], list[ShapeT]]:
        """Default: the first argument and every output share one shape (inferred either way)."""
        common = in_shape[0] if in_shape else None
        for shape in out_shape or []:
            if common is None:
                common = shape
        n_out, n_aux = len(self.list_outputs()), len(self.list_auxiliary_states())
        args = [common, *in_shape[1:]] if in_shape else []
        return args, [common] * n_out, list(aux_shape) if aux_shape is not None else [None] * n_aux

    def infer_type(
        self, in_type: list[str | None], out_type: list[str | None] | None = None, aux_type: list | None = None
    ) -> tuple[list, list, list]:
        """Default: everything takes the first known dtype (of arguments, then outputs, then aux)."""
        known = [t for t in list(in_type) + list(out_type or []) + list(aux_type or []) if t is not None]
        dtype = known[0] if known else None
        n_out, n_aux = len(self.list_outputs()), len(self.list_auxiliary_states())
        return [dtype] * len(in_type), [dtype] * n_out, [dtype] * n_aux

    # ------------------------------------------------------------------ resources, dependencies, in-place
    def forward_resource(self, in_shape: list[ShapeT] | None) -> list[ResourceRequest]:
        """Resources forward needs, in the order ``op_ctx.requested`` will hold them."""
        return []

    def backward_resource(self, in_shape: list[ShapeT] | None) -> list[ResourceRequest]:
        return []

    def declare_backward_dependency(self, out_grad: list[int], in_data: list[int], out_data: list[int]) -> list[int]:
        """The ids (taken from the three lists) backward reads; the default keeps everything alive."""
        return list(out_grad) + list(in_data) + list(out_data)

    def forward_inplace_option(self, in_data: list[int], out_data: list[int]) -> list[tuple[int, int]]:
        """Pairs (in_data id, out_data id) that may share memory; a hint only."""
        return []

    def backward_inplace_option(
        self, out_grad: list[int], in_data: list[int], out_data: list[int], in_grad: list[int]
    ) -> list[tuple[int, int]]:
        """Pairs (id of a declared dependency, in_grad id) that may share memory."""
        return []

    # ------------------------------------------------------------------ the computing object
    def create_operator(self, ctx: Context, in_shapes: list[ShapeT], in_types: list[str]) -> Operator:
        """Build the :class:`Operator` for device ``ctx`` (MXNet's ``CreateOperatorEx``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement create_operator()")


# ---------------------------------------------------------------------- the adapter
_RESOURCE_NAMES = {
    "random": ResourceRequest.RANDOM,
    "krandom": ResourceRequest.RANDOM,
    "temp_space": ResourceRequest.TEMP_SPACE,
    "tempspace": ResourceRequest.TEMP_SPACE,
    "ktempspace": ResourceRequest.TEMP_SPACE,
}


def to_resource_requests(op_name: str, requests: Sequence[Any]) -> list[ResourceRequest]:
    """Map ``ResourceRequest`` members or MXNet's names (``"kTempSpace"``) to ResourceRequest."""
    result = []
    for req in requests or []:
        if isinstance(req, ResourceRequest):
            result.append(req)
            continue
        found = _RESOURCE_NAMES.get(str(req).lower()) if isinstance(req, str) else None
        if found is None:
            raise OperatorError(
                f"{op_name}: unknown resource request {req!r}; use ResourceRequest.RANDOM or ResourceRequest.TEMP_SPACE"
            )
        result.append(found)
    return result


def _accepts_outputs(method: Callable[..., Any]) -> bool:
    """True when an infer_shape/infer_type method takes the output list too (so it can infer mutually)."""
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):
        return False
    if params and params[0].name == "self":
        params = params[1:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


class _LegacyAdapter:
    """Everything the registry records of one property class are methods of this object."""

    def __init__(self, name: str, prop_cls: type[OperatorProperty]) -> None:
        self.name = name
        self.backward_name = f"_backward_{name}"
        self.prop_cls = prop_cls
        self.mutual_shape = _accepts_outputs(prop_cls.infer_shape)
        self.mutual_type = _accepts_outputs(prop_cls.infer_type)
        self._lock = threading.Lock()
        self._props: dict[ParamSet, OperatorProperty] = {}
        self._operators: OrderedDict[tuple, Operator] = OrderedDict()

    # ------------------------------------------------------------------ property instances and ids
    def prop(self, attrs: NodeAttrs) -> OperatorProperty:
        """The property built from these parameters (one per parameter set: MXNet's ``Init``)."""
        parsed = attrs.parsed
        try:
            found = self._props.get(parsed)
        except TypeError:  # unhashable parameter values: build afresh
            return self.prop_cls(parsed)
        if found is None:
            found = self.prop_cls(parsed)
            with self._lock:
                if len(self._props) < _OPERATOR_CACHE_LIMIT:
                    self._props[parsed] = found
        return found

    def counts(self, prop: OperatorProperty) -> tuple[int, int, int]:
        """(arguments, outputs, auxiliary states)."""
        return len(prop.list_arguments()), len(prop.list_outputs()), len(prop.list_auxiliary_states())

    def ids(self, prop: OperatorProperty) -> tuple[list[int], list[int], list[int]]:
        """Ids handed to the dependency/in-place methods: out_grad, then in_data, then out_data."""
        n_args, n_out, _ = self.counts(prop)
        out_grad = list(range(n_out))
        in_data = list(range(n_out, n_out + n_args))
        out_data = list(range(n_out + n_args, 2 * n_out + n_args))
        return out_grad, in_data, out_data

    def deps(self, prop: OperatorProperty) -> list[int]:
        """The checked result of declare_backward_dependency."""
        out_grad, in_data, out_data = self.ids(prop)
        declared = [int(d) for d in prop.declare_backward_dependency(out_grad, in_data, out_data)]
        valid = len(out_grad) + len(in_data) + len(out_data)
        for dep in declared:
            if not 0 <= dep < valid:
                raise OperatorError(
                    f"{self.name}: declare_backward_dependency returned id {dep}, which is none of "
                    f"out_grad {out_grad}, in_data {in_data}, out_data {out_data}"
                )
        return declared

    def describe_dep(self, prop: OperatorProperty, dep: int) -> tuple[str, int]:
        """("out_grad" | "in_data" | "out_data", index) of a dependency id."""
        n_args, n_out, _ = self.counts(prop)
        if dep < n_out:
            return "out_grad", dep
        if dep < n_out + n_args:
            return "in_data", dep - n_out
        return "out_data", dep - n_out - n_args

    # ------------------------------------------------------------------ names and counts
    def input_names(self, attrs: NodeAttrs) -> list[str]:
        prop = self.prop(attrs)
        return list(prop.list_arguments()) + list(prop.list_auxiliary_states())

    def backward_input_names(self, attrs: NodeAttrs) -> list[str]:
        prop = self.prop(attrs)
        names = {"out_grad": prop.list_outputs(), "in_data": prop.list_arguments(), "out_data": prop.list_outputs()}
        result = []
        for dep in self.deps(prop):
            kind, index = self.describe_dep(prop, dep)
            result.append(f"{kind}_{names[kind][index]}")
        return result + list(prop.list_auxiliary_states())

    # ------------------------------------------------------------------ inference (forward)
    def _call_infer(self, attrs: NodeAttrs, method: str, mutual: bool, args: list, outs: list, aux: list) -> Any:
        prop = self.prop(attrs)
        fn = getattr(prop, method)
        try:
            return fn(list(args), list(outs), list(aux)) if mutual else fn(list(args))
        except MXLabError:
            raise
        except Exception as err:  # property code is user code: name the operator in the message
            raise InferenceError(f"{attrs.name}: {type(prop).__name__}.{method} failed: {err}") from err

    def _split_result(self, attrs: NodeAttrs, method: str, result: Any, counts: tuple[int, int, int]) -> tuple:
        if not isinstance(result, tuple | list) or len(result) not in (2, 3):
            raise InferenceError(f"{attrs.name}: {method} must return (in, out, aux) lists, got {result!r}")
        args, outs = list(result[0]), list(result[1])
        aux = list(result[2]) if len(result) == 3 else []
        for what, got, want in (("arguments", args, counts[0]), ("outputs", outs, counts[1]), ("aux", aux, counts[2])):
            if len(got) != want and not (what == "aux" and not got):
                raise InferenceError(f"{attrs.name}: {method} returned {len(got)} {what}, expected {want}")
        return args, outs, aux

    def infer_shape(self, attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        prop = self.prop(attrs)
        counts = n_args, _, _ = self.counts(prop)
        args, aux = list(in_shapes[:n_args]), list(in_shapes[n_args:])
        if not self.mutual_shape and not all(shape_known(s) for s in args):
            return False  # an in_shape-only property is called once every argument is known
        result = self._call_infer(attrs, "infer_shape", self.mutual_shape, args, list(out_shapes), aux)
        new_args, new_outs, new_aux = self._split_result(attrs, "infer_shape", result, counts)
        names = self.input_names(attrs)
        for i, shape in enumerate(new_args):
            shape_assign(in_shapes, i, shape, attrs.name, f"argument '{names[i]}'")
        for i, shape in enumerate(new_outs):
            shape_assign(out_shapes, i, shape, attrs.name, f"output {i}")
        for i, shape in enumerate(new_aux):
            shape_assign(in_shapes, n_args + i, shape, attrs.name, f"auxiliary state '{names[n_args + i]}'")
        return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))

    def infer_type(self, attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        prop = self.prop(attrs)
        counts = n_args, _, _ = self.counts(prop)
        args, aux = list(in_types[:n_args]), list(in_types[n_args:])
        if not self.mutual_type and any(t is None for t in args):
            return False
        result = self._call_infer(attrs, "infer_type", self.mutual_type, args, list(out_types), aux)
        new_args, new_outs, new_aux = self._split_result(attrs, "infer_type", result, counts)
        names = self.input_names(attrs)
        for i, dtype in enumerate(new_args):
            type_assign(in_types, i, dtype, attrs.name, f"argument '{names[i]}'")
        for i, dtype in enumerate(new_outs):
            type_assign(out_types, i, dtype, attrs.name, f"output {i}")
        for i, dtype in enumerate(new_aux):
            type_assign(in_types, n_args + i, dtype, attrs.name, f"auxiliary state '{names[n_args + i]}'")
        return all(t is not None for t in list(in_types) + list(out_types))

    # ------------------------------------------------------------------ inference (backward)
    def _backward_infer(
        self, attrs: NodeAttrs, in_attrs: list, out_attrs: list, forward: Callable, assign_fn: Callable
    ) -> None:
        """Backward inputs (deps + aux) and outputs (in_grad) -> the forward problem, solved, mapped back."""
        prop = self.prop(attrs)
        n_args, n_out, _ = self.counts(prop)
        deps = self.deps(prop)
        args = list(out_attrs)  # in_grad[i] is shaped and typed like argument i
        outs: list = [None] * n_out
        aux = list(in_attrs[len(deps) :])
        for pos, dep in enumerate(deps):
            kind, index = self.describe_dep(prop, dep)
            target = args if kind == "in_data" else outs
            assign_fn(target, index, in_attrs[pos], attrs.name, f"{kind}[{index}]")
        fwd_in = args + aux
        forward(attrs, fwd_in, outs)
        for i in range(n_args):
            assign_fn(out_attrs, i, fwd_in[i], attrs.name, f"in_grad[{i}]")
        for pos, dep in enumerate(deps):
            kind, index = self.describe_dep(prop, dep)
            assign_fn(
                in_attrs, pos, fwd_in[index] if kind == "in_data" else outs[index], attrs.name, f"{kind}[{index}]"
            )
        for i in range(len(aux)):
            assign_fn(in_attrs, len(deps) + i, fwd_in[n_args + i], attrs.name, f"aux[{i}]")

    def backward_infer_shape(self, attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        self._backward_infer(attrs, in_shapes, out_shapes, self.infer_shape, shape_assign)
        return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))

    def backward_infer_type(self, attrs: NodeAttrs, in_types: list, out_types: list) -> bool:
        self._backward_infer(attrs, in_types, out_types, self.infer_type, type_assign)
        return all(t is not None for t in list(in_types) + list(out_types))

    # ------------------------------------------------------------------ operator instances
    def operator(self, attrs: NodeAttrs, ctx: Context, arg_shapes: list, arg_types: list) -> Operator:
        """The cached operator for (parameters, context, argument shapes and dtypes)."""
        key = (attrs.parsed, ctx, tuple(tuple(s) for s in arg_shapes), tuple(arg_types))
        with self._lock:
            found = self._operators.get(key)
            if found is not None:
                self._operators.move_to_end(key)
                return found
        created = self.create_state(attrs, ctx, list(arg_shapes), list(arg_types))
        with self._lock:
            found = self._operators.setdefault(key, created)
            self._operators.move_to_end(key)
            while len(self._operators) > _OPERATOR_CACHE_LIMIT:
                self._operators.popitem(last=False)
        return found

    def create_state(
        self, attrs: NodeAttrs, ctx: Context, in_shapes: list | None = None, in_types: list | None = None
    ) -> Operator:
        """A new operator instance from the property (the registry's ``create_state``)."""
        created = self.prop(attrs).create_operator(ctx, in_shapes, in_types)
        if not isinstance(created, Operator):
            raise OperatorError(f"{self.name}: create_operator must return an Operator, got {type(created).__name__}")
        return created

    @staticmethod
    def _run(op_ctx: OpContext, call: Callable[[], None]) -> None:
        previous = getattr(_current, "op_ctx", None)
        _current.op_ctx = op_ctx
        try:
            call()
        finally:
            _current.op_ctx = previous

    # ------------------------------------------------------------------ compute
    def forward(self, attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list, outputs: list) -> None:
        n_args = len(self.prop(attrs).list_arguments())
        in_data, aux = list(inputs[:n_args]), list(inputs[n_args:])
        op = self.operator(attrs, op_ctx.ctx, [a.shape for a in in_data], [a.dtype.name for a in in_data])
        self._run(op_ctx, lambda: op.forward(op_ctx.is_train, list(req), in_data, list(outputs), aux))

    def backward(self, attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list, outputs: list) -> None:
        prop = self.prop(attrs)
        n_args, n_out, _ = self.counts(prop)
        deps = self.deps(prop)
        slots: dict[str, list] = {"out_grad": [None] * n_out, "in_data": [None] * n_args, "out_data": [None] * n_out}
        for pos, dep in enumerate(deps):
            kind, index = self.describe_dep(prop, dep)
            slots[kind][index] = inputs[pos]
        aux = list(inputs[len(deps) :])
        in_grad = list(outputs)
        op = self.operator(attrs, op_ctx.ctx, [g.shape for g in in_grad], [g.dtype.name for g in in_grad])
        self._run(
            op_ctx,
            lambda: op.backward(list(req), slots["out_grad"], slots["in_data"], slots["out_data"], in_grad, aux),
        )

    # ------------------------------------------------------------------ graph attributes
    def gradient(self, node: Node, out_grads: list[Entry]) -> list[Entry | None]:
        """A ``_backward_<name>`` node fed exactly the declared dependencies, then the aux states."""
        prop = self.prop(node.attrs)
        n_args, _, _ = self.counts(prop)
        entries = {"out_grad": list(out_grads), "in_data": list(node.inputs[:n_args])}
        entries["out_data"] = [Entry(node, i) for i in range(node.num_outputs())]
        inputs = []
        for dep in self.deps(prop):
            kind, index = self.describe_dep(prop, dep)
            inputs.append(entries[kind][index])
        inputs += list(node.inputs[n_args:])
        backward = make_backward_node(node, self.backward_name, inputs)
        # Auxiliary states get no gradient (MXNet's _NoGradient): None.
        return [Entry(backward, i) for i in range(n_args)] + [None] * (len(node.inputs) - n_args)

    def forward_inplace(self, attrs: NodeAttrs) -> list[tuple[int, int]]:
        n_args, n_out, _ = self.counts(self.prop(attrs))
        pairs = self.prop(attrs).forward_inplace_option(list(range(n_args)), list(range(n_out)))
        return [(int(i), int(o)) for i, o in pairs]

    def backward_inplace(self, attrs: NodeAttrs) -> list[tuple[int, int]]:
        prop = self.prop(attrs)
        n_args, _, _ = self.counts(prop)
        out_grad, in_data, out_data = self.ids(prop)
        deps = self.deps(prop)
        pairs = prop.backward_inplace_option(out_grad, in_data, out_data, list(range(n_args)))
        return [(deps.index(dep), int(grad)) for dep, grad in pairs if dep in deps]

    def forward_resources(self, attrs: NodeAttrs) -> list[ResourceRequest]:
        return to_resource_requests(self.name, self.prop(attrs).forward_resource(None))

    def backward_resources(self, attrs: NodeAttrs) -> list[ResourceRequest]:
        return to_resource_requests(self.backward_name, self.prop(attrs).backward_resource(None))


def register_legacy(name: str, prop_cls: type[OperatorProperty] | None = None, override: bool = False) -> Any:
    """Register an OperatorProperty class as operator ``name`` (and ``_backward_<name>``).

    MXNet's ``MXNET_REGISTER_OP_PROPERTY(name, PropertyClass)``. Returns the forward
    :class:`~framework.operator.registry.OpDef` (chain ``.describe`` on it), or, called
    with the name only, a class decorator. ``override=True`` replaces an earlier
    registration (handy when re-running a notebook cell).
    """
    if prop_cls is None:

        def decorate(cls: type[OperatorProperty]) -> type[OperatorProperty]:
            register_legacy(name, cls, override)
            return cls

        return decorate
    if not (isinstance(prop_cls, type) and issubclass(prop_cls, OperatorProperty)):
        raise OperatorError(f"{name}: register_legacy expects an OperatorProperty subclass, got {prop_cls!r}")
    adapter = _LegacyAdapter(name, prop_cls)
    op: OpDef = (
        registry.register(name, override)
        .describe(inspect.getdoc(prop_cls) or f"The {name} operator (OperatorProperty).")
        .set_params(prop_cls.params)
        .set_num_inputs(lambda attrs: len(adapter.input_names(attrs)))
        .set_num_outputs(lambda attrs: len(adapter.prop(attrs).list_outputs()))
        .set_num_visible_outputs(lambda attrs: int(adapter.prop(attrs).num_visible_outputs()))
        .set_input_names(adapter.input_names)
        .set_output_names(lambda attrs: list(adapter.prop(attrs).list_outputs()))
        .set_mutate_inputs(lambda attrs: list(range(*_aux_range(adapter, attrs))))
        .set_infer_shape(adapter.infer_shape)
        .set_infer_type(adapter.infer_type)
        .set_compute(adapter.forward)
        .set_gradient(adapter.gradient)
        .set_inplace_option(adapter.forward_inplace)
        .set_resource_request(adapter.forward_resources)
    )
    op.front_door = "OperatorProperty"
    op.create_state = adapter.create_state
    backward = (
        registry.register(adapter.backward_name, override)
        .describe(f"Backward of {name} (OperatorProperty).")
        .set_params(prop_cls.params)
        .set_num_inputs(lambda attrs: len(adapter.backward_input_names(attrs)))
        .set_num_outputs(lambda attrs: len(adapter.prop(attrs).list_arguments()))
        .set_input_names(adapter.backward_input_names)
        .set_output_names(lambda attrs: [f"{n}_grad" for n in adapter.prop(attrs).list_arguments()])
        .set_infer_shape(adapter.backward_infer_shape)
        .set_infer_type(adapter.backward_infer_type)
        .set_compute(adapter.backward)
        .set_inplace_option(adapter.backward_inplace)
        .set_resource_request(adapter.backward_resources)
        .set_is_backward()
    )
    backward.front_door = "OperatorProperty"
    backward.create_state = adapter.create_state
    return op


def _aux_range(adapter: _LegacyAdapter, attrs: NodeAttrs) -> tuple[int, int]:
    n_args, _, n_aux = adapter.counts(adapter.prop(attrs))
    return n_args, n_args + n_aux

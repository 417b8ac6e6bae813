"""The SimpleOp front door (seed 000, "SimpleOp: The Unified Operator API").

Most mathematical operators take one or two operands. SimpleOp describes such an operator
with just what the math needs, and derives everything else:

* a **function** ``f``: unary ``fn(src, env, ret, req, op_ctx)`` or binary
  ``fn(lhs, rhs, env, ret, req, op_ctx)``, writing ``ret`` through
  ``assign(ret, req, value)`` (MXNet's ``ASSIGN_DISPATCH``);
* optionally a **shape function** (``shape_fn(src_shape, env)`` or
  ``shape_fn(lhs_shape, rhs_shape, env)`` returning the output shape); without one the
  output has the input's shape and binary operands must have equal shapes;
* optionally a **gradient**, classified by what it reads besides the output gradient,
  because that is what the graph must keep alive for backward:

  ================================ ===================================================
  ``GradKind``                     unary signature (binary: two grads and two reqs)
  ================================ ===================================================
  ``OUT_GRAD`` (T0)                ``g(out_grad, env, in_grad, req, op_ctx)``
  ``OUT_GRAD_OUTPUT`` (T1)         ``g(out_grad, out_value, env, in_grad, req, op_ctx)``
  ``OUT_GRAD_INPUTS`` (T2)         ``g(out_grad, in_data0, env, in_grad, req, op_ctx)``
  ================================ ===================================================

  Binary: ``g(out_grad, [out_value | lhs, rhs,] env, lhs_grad, rhs_grad, req_lhs, req_rhs,
  op_ctx)``;
* **in-place options** (:class:`SimpleOpInplaceOption`, MXNet's ``kInplaceInOut`` etc.);
* an :class:`EnvArguments` passed to every function: ``scalar`` (``set_enable_scalar``),
  ``kwargs`` (``set_enable_kwargs``; scalar and kwargs exclude each other) and
  ``resource`` (``set_resource_request``).

``register_simple_op(name)`` creates **one record in the operator registry** and, once a
gradient is set, its ``_backward_<name>`` operator; setters may come in any order::

    (register_simple_op("smooth_l1")
        .set_function(smooth_l1_forward, kNoInplace)
        .set_gradient(smooth_l1_backward, GradKind.OUT_GRAD_INPUTS, kInplaceOutIn)
        .set_enable_scalar(True)
        .describe("Calculate Smooth L1 Loss(lhs, scalar)"))

Input names are ``data`` (unary) and ``lhs``, ``rhs`` (binary), as in MXNet 1.x.

**MXLab difference.** Backward runs imperatively here and must infer the shapes of its
outputs (the input gradients). With a custom shape function and a gradient that does not
read the inputs (T0/T1), the input gradients' shapes cannot be derived from the output
gradient, so the backward node additionally receives the forward inputs (keeping them alive
for backward) just to learn their shapes.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ..base import MXLabError
from ..resource import ResourceRequest
from . import registry
from .grad import make_backward_node
from .infer import InferenceError, ShapeT, elemwise_shape, elemwise_type, shape_assign, shape_known
from .kernel import OpContext, Req
from .legacy import to_resource_requests
from .node import Entry, Node, NodeAttrs
from .params import REQUIRED, NoParams, Param, ParamSet
from .registry import OpDef, OperatorError

__all__ = [
    "EnvArguments",
    "GradKind",
    "SimpleOpInplaceOption",
    "SimpleOpRegistry",
    "kInplaceInOut",
    "kInplaceLhsOut",
    "kInplaceOutIn",
    "kInplaceOutLhs",
    "kNoInplace",
    "register_simple_op",
]


class SimpleOpInplaceOption(enum.Enum):
    """Which buffers may be shared (MXNet's ``SimpleOpInplaceOption``); a hint to the planner."""

    NO_INPLACE = "kNoInplace"  # do not allow in-place
    INPLACE_IN_OUT = "kInplaceInOut"  # unary function: output may reuse the input
    INPLACE_OUT_IN = "kInplaceOutIn"  # unary gradient: in_grad may reuse out_grad
    INPLACE_LHS_OUT = "kInplaceLhsOut"  # binary function: output may reuse lhs
    INPLACE_OUT_LHS = "kInplaceOutLhs"  # binary gradient: lhs_grad may reuse out_grad


kNoInplace = SimpleOpInplaceOption.NO_INPLACE
kInplaceInOut = SimpleOpInplaceOption.INPLACE_IN_OUT
kInplaceOutIn = SimpleOpInplaceOption.INPLACE_OUT_IN
kInplaceLhsOut = SimpleOpInplaceOption.INPLACE_LHS_OUT
kInplaceOutLhs = SimpleOpInplaceOption.INPLACE_OUT_LHS


class GradKind(enum.Enum):
    """What a gradient function reads besides ``out_grad`` (MXNet's ``GradFunctionT0/1/2``)."""

    OUT_GRAD = "out_grad"  # T0: nothing else (e.g. negative)
    OUT_GRAD_OUTPUT = "out_grad_output"  # T1: the forward output (e.g. exp, sigmoid)
    OUT_GRAD_INPUTS = "out_grad_inputs"  # T2: the forward inputs (e.g. smooth_l1, square)


class EnvArguments:
    """Extra arguments of SimpleOp functions: the scalar, keyword arguments and resources.

    ``scalar`` is None unless ``set_enable_scalar``; ``kwargs`` maps names to MXNet's string
    values and ``params`` holds the parsed struct when ``set_enable_kwargs`` got one;
    ``resource`` lists the requested resources (random generator, temp space) in order.
    """

    __slots__ = ("scalar", "kwargs", "params", "resource")

    def __init__(
        self,
        scalar: float | None = None,
        kwargs: dict[str, str] | None = None,
        params: ParamSet | None = None,
        resource: list | None = None,
    ) -> None:
        self.scalar = scalar
        self.kwargs = kwargs if kwargs is not None else {}
        self.params = params
        self.resource = resource if resource is not None else []

    @property
    def resources(self) -> list:
        """Alias of ``resource`` (the seed uses both spellings)."""
        return self.resource

    def __repr__(self) -> str:
        return f"EnvArguments(scalar={self.scalar!r}, kwargs={self.kwargs!r}, resource={self.resource!r})"


class FreeKwargs(ParamSet):
    """Parameters of ``set_enable_kwargs`` without a struct: any keyword, kept as a string."""

    @classmethod
    def parse(cls, op_name: str, kwargs: Any) -> ParamSet:
        return cls({str(k): v if isinstance(v, str) else str(v) for k, v in kwargs.items()})

    def to_strings(self) -> dict[str, str]:
        return dict(self._values)  # type: ignore[attr-defined]


def _positional_count(fn: Callable[..., Any]) -> int | None:
    """Number of required positional parameters of ``fn`` (None when it cannot be told)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


def _parse_enum(enum_cls: type[enum.Enum], value: Any, op_name: str, what: str) -> Any:
    if isinstance(value, enum_cls):
        return value
    for member in enum_cls:
        if value in (member.value, member.name):
            return member
    allowed = ", ".join(m.name for m in enum_cls)
    raise OperatorError(f"{op_name}: {what} must be one of {allowed}; got {value!r}")


# Expected positional arity of gradient functions, by (number of operands, kind).
_GRAD_ARITY = {
    (1, GradKind.OUT_GRAD): 5,
    (1, GradKind.OUT_GRAD_OUTPUT): 6,
    (1, GradKind.OUT_GRAD_INPUTS): 6,
    (2, GradKind.OUT_GRAD): 7,
    (2, GradKind.OUT_GRAD_OUTPUT): 8,
    (2, GradKind.OUT_GRAD_INPUTS): 9,
}


class SimpleOpRegistry:
    """The chained builder ``register_simple_op`` returns (MXNet's ``SimpleOpRegEntry``).

    Every setter updates the registry records at once, so the order does not matter.
    """

    def __init__(self, name: str, override: bool = False) -> None:
        self.name = name
        self._override = override
        self.op: OpDef = registry.register(name, override)
        self.backward_op: OpDef | None = None
        self._function: Callable[..., None] | None = None
        self._num_inputs = 1
        self._function_inplace = kNoInplace
        self._shape_fn: Callable[..., Any] | None = None
        self._grad: Callable[..., None] | None = None
        self._grad_kind: GradKind | None = None
        self._grad_inplace = kNoInplace
        self._scalar_enabled = False
        self._kwargs_enabled = False
        self._kwargs_params: type[ParamSet] | None = None
        self._params: type[ParamSet] = NoParams
        self._resources: list[ResourceRequest] = []
        self.op.front_door = "SimpleOp"
        (
            self.op.set_num_inputs(lambda attrs: self._num_inputs)
            .set_num_outputs(1)
            .set_input_names(lambda attrs: self._input_names())
            .set_infer_shape(self._infer_shape)
            .set_infer_type(elemwise_type)
            .set_compute(self._forward)
            .set_inplace_option(self._forward_inplace)
            .set_resource_request(lambda attrs: list(self._resources))
        )

    # ------------------------------------------------------------------ setters
    def describe(self, text: str) -> SimpleOpRegistry:
        self.op.describe(text)
        return self

    def set_function(
        self,
        fn: Callable[..., None],
        inplace: SimpleOpInplaceOption | str = kNoInplace,
        num_inputs: int | None = None,
    ) -> SimpleOpRegistry:
        """The forward function; unary or binary is read from its signature (5 or 6 parameters)."""
        if not callable(fn):
            raise OperatorError(f"{self.name}: set_function expects a function, got {fn!r}")
        if num_inputs is None:
            count = _positional_count(fn)
            if count not in (5, 6):
                raise OperatorError(
                    f"{self.name}: set_function needs fn(src, env, ret, req, op_ctx) (unary) or "
                    f"fn(lhs, rhs, env, ret, req, op_ctx) (binary); got {count} parameters "
                    "(pass num_inputs= to say which)"
                )
            num_inputs = count - 4
        if num_inputs not in (1, 2):
            raise OperatorError(f"{self.name}: SimpleOp functions are unary or binary, got num_inputs={num_inputs}")
        inplace = _parse_enum(SimpleOpInplaceOption, inplace, self.name, "set_function's in-place option")
        allowed = (kNoInplace, kInplaceInOut) if num_inputs == 1 else (kNoInplace, kInplaceLhsOut)
        if inplace not in allowed:
            raise OperatorError(
                f"{self.name}: in-place option {inplace.value} does not apply to a "
                f"{'unary' if num_inputs == 1 else 'binary'} function; use one of {[a.value for a in allowed]}"
            )
        self._function, self._num_inputs, self._function_inplace = fn, num_inputs, inplace
        self._check_gradient_arity()
        return self

    def set_shape_function(self, fn: Callable[..., Sequence[int]]) -> SimpleOpRegistry:
        """``fn(src_shape, env)`` / ``fn(lhs_shape, rhs_shape, env)`` -> output shape (checks too)."""
        if not callable(fn):
            raise OperatorError(f"{self.name}: set_shape_function expects a function, got {fn!r}")
        self._shape_fn = fn
        return self

    def set_gradient(
        self,
        fn: Callable[..., None],
        kind: GradKind | str,
        inplace: SimpleOpInplaceOption | str = kNoInplace,
    ) -> SimpleOpRegistry:
        """The gradient function, what it reads (``kind``), and its in-place option."""
        if not callable(fn):
            raise OperatorError(f"{self.name}: set_gradient expects a function, got {fn!r}")
        kind = _parse_enum(GradKind, kind, self.name, "the gradient kind")
        inplace = _parse_enum(SimpleOpInplaceOption, inplace, self.name, "set_gradient's in-place option")
        if inplace not in (kNoInplace, kInplaceOutIn, kInplaceOutLhs):
            raise OperatorError(
                f"{self.name}: in-place option {inplace.value} does not apply to a gradient; "
                "use kNoInplace, kInplaceOutIn (unary) or kInplaceOutLhs (binary)"
            )
        self._grad, self._grad_kind, self._grad_inplace = fn, kind, inplace
        self._check_gradient_arity()
        if self.backward_op is None:
            self.backward_op = (
                registry.register(f"_backward_{self.name}", self._override)
                .describe(f"Backward of {self.name} (SimpleOp).")
                .set_params(self._params)
                .set_num_inputs(lambda attrs: len(self._backward_input_names()))
                .set_num_outputs(lambda attrs: self._num_inputs)
                .set_input_names(lambda attrs: self._backward_input_names())
                .set_output_names(lambda attrs: [f"{n}_grad" for n in self._input_names()])
                .set_infer_shape(self._backward_infer_shape)
                .set_infer_type(elemwise_type)
                .set_compute(self._backward)
                .set_inplace_option(self._backward_inplace)
                .set_resource_request(lambda attrs: list(self._resources))
                .set_is_backward()
            )
            self.backward_op.front_door = "SimpleOp"
            self.op.set_gradient(self._gradient)
        return self

    def set_enable_scalar(self, enable: bool = True, type_: type = float, default: Any = REQUIRED) -> SimpleOpRegistry:
        """Add the ``scalar`` parameter (``env.scalar``); required unless ``default`` is given."""
        if enable and self._kwargs_enabled:
            raise OperatorError(f"{self.name}: scalar and kwargs cannot be enabled at the same time")
        if type_ not in (float, int, bool):
            raise OperatorError(f"{self.name}: the scalar type must be float, int or bool, got {type_!r}")
        self._scalar_enabled = bool(enable)
        if enable:
            field = Param(type_, default, "scalar input")
            self._set_params(type(f"{self.name}_ScalarParam", (ParamSet,), {"scalar": field, "__module__": __name__}))
        else:
            self._set_params(NoParams)
        return self

    def set_enable_kwargs(self, enable: bool = True, params: type[ParamSet] | None = None) -> SimpleOpRegistry:
        """Accept keyword arguments (``env.kwargs``), checked by ``params`` if given (else free-form)."""
        if enable and self._scalar_enabled:
            raise OperatorError(f"{self.name}: scalar and kwargs cannot be enabled at the same time")
        if params is not None and not (isinstance(params, type) and issubclass(params, ParamSet)):
            raise OperatorError(f"{self.name}: set_enable_kwargs params must be a ParamSet subclass, got {params!r}")
        self._kwargs_enabled = bool(enable)
        self._kwargs_params = params if enable else None
        self._set_params((params or FreeKwargs) if enable else NoParams)
        return self

    def set_resource_request(self, req: ResourceRequest | str | Sequence[Any]) -> SimpleOpRegistry:
        """Resources for forward and backward, handed over as ``env.resource`` in this order."""
        requests = [req] if isinstance(req, ResourceRequest | str) else list(req)
        self._resources = to_resource_requests(self.name, requests)
        return self

    def _set_params(self, params: type[ParamSet]) -> None:
        self._params = params
        self.op.set_params(params)
        if self.backward_op is not None:
            self.backward_op.set_params(params)

    def _check_gradient_arity(self) -> None:
        if self._grad is None or self._grad_kind is None:
            return
        expected = _GRAD_ARITY[(self._num_inputs, self._grad_kind)]
        count = _positional_count(self._grad)
        if count is not None and count != expected:
            operands = "unary" if self._num_inputs == 1 else "binary"
            raise OperatorError(
                f"{self.name}: a {operands} gradient of kind {self._grad_kind.name} takes {expected} "
                f"parameters, the given function takes {count}"
            )
        if self._num_inputs == 1 and self._grad_inplace is kInplaceOutLhs:
            raise OperatorError(f"{self.name}: kInplaceOutLhs is for binary gradients; use kInplaceOutIn")
        if self._num_inputs == 2 and self._grad_inplace is kInplaceOutIn:
            raise OperatorError(f"{self.name}: kInplaceOutIn is for unary gradients; use kInplaceOutLhs")

    # ------------------------------------------------------------------ derived attributes
    def _input_names(self) -> list[str]:
        return ["data"] if self._num_inputs == 1 else ["lhs", "rhs"]

    def _backward_carries_inputs(self) -> bool:
        """Whether backward gets the forward inputs (it reads them, or needs their shapes)."""
        return self._grad_kind is GradKind.OUT_GRAD_INPUTS or self._shape_fn is not None

    def _backward_input_names(self) -> list[str]:
        names = ["out_grad"]
        if self._grad_kind is GradKind.OUT_GRAD_OUTPUT:
            names.append("output")
        if self._backward_carries_inputs():
            names += self._input_names()
        return names

    def _env(self, attrs: NodeAttrs, op_ctx: OpContext | None) -> EnvArguments:
        parsed = attrs.parsed
        env = EnvArguments(resource=list(op_ctx.requested) if op_ctx is not None else [])
        if self._scalar_enabled:
            env.scalar = parsed.scalar
        if self._kwargs_enabled:
            env.kwargs = parsed.to_strings()
            env.params = parsed if self._kwargs_params is not None else None
        return env

    def _call_shape_fn(self, attrs: NodeAttrs, in_shapes: list[ShapeT]) -> ShapeT:
        assert self._shape_fn is not None
        try:
            out = self._shape_fn(*[tuple(s) for s in in_shapes], self._env(attrs, None))
        except MXLabError:
            raise
        except Exception as err:  # user code: name the operator
            raise InferenceError(f"{attrs.name}: shape function failed for inputs {in_shapes}: {err}") from err
        return tuple(int(d) for d in out)

    def _infer_shape(self, attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        if self._shape_fn is None:
            return elemwise_shape(attrs, in_shapes, out_shapes)
        if not all(shape_known(s) for s in in_shapes):
            return False
        shape_assign(out_shapes, 0, self._call_shape_fn(attrs, in_shapes), attrs.name, "output")
        return shape_known(out_shapes[0])

    def _backward_infer_shape(self, attrs: NodeAttrs, in_shapes: list[ShapeT], out_shapes: list[ShapeT]) -> bool:
        if self._shape_fn is None:  # every input, output and gradient has one shape
            return elemwise_shape(attrs, in_shapes, out_shapes)
        n = self._num_inputs
        first = len(in_shapes) - n  # the forward inputs are the last n backward inputs
        for i in range(n):
            shape_assign(out_shapes, i, in_shapes[first + i], attrs.name, f"gradient of input {i}")
            shape_assign(in_shapes, first + i, out_shapes[i], attrs.name, f"input {i}")
        forward_out: list[ShapeT] = [None]
        if self._infer_shape(attrs, list(in_shapes[first:]), forward_out):
            shape_assign(in_shapes, 0, forward_out[0], attrs.name, "out_grad")
            if self._grad_kind is GradKind.OUT_GRAD_OUTPUT:
                shape_assign(in_shapes, 1, forward_out[0], attrs.name, "output")
        return all(shape_known(s) for s in list(in_shapes) + list(out_shapes))

    def _forward_inplace(self, attrs: NodeAttrs) -> list[tuple[int, int]]:
        return [(0, 0)] if self._function_inplace in (kInplaceInOut, kInplaceLhsOut) else []

    def _backward_inplace(self, attrs: NodeAttrs) -> list[tuple[int, int]]:
        return [(0, 0)] if self._grad_inplace in (kInplaceOutIn, kInplaceOutLhs) else []

    def _gradient(self, node: Node, out_grads: list[Entry]) -> list[Entry]:
        inputs = [out_grads[0]]
        if self._grad_kind is GradKind.OUT_GRAD_OUTPUT:
            inputs.append(Entry(node, 0))
        if self._backward_carries_inputs():
            inputs += list(node.inputs)
        assert self.backward_op is not None
        backward = make_backward_node(node, self.backward_op.name, inputs)
        return [Entry(backward, i) for i in range(len(node.inputs))]

    # ------------------------------------------------------------------ compute
    def _forward(self, attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
        if self._function is None:
            raise OperatorError(f"{self.name}: SimpleOp has no function (call set_function)")
        self._function(*inputs, self._env(attrs, op_ctx), outputs[0], req[0], op_ctx)

    def _backward(self, attrs: NodeAttrs, op_ctx: OpContext, inputs: list, req: list[Req], outputs: list) -> None:
        assert self._grad is not None
        env = self._env(attrs, op_ctx)
        out_grad, n = inputs[0], self._num_inputs
        if self._grad_kind is GradKind.OUT_GRAD_OUTPUT:
            extra = [inputs[1]]
        elif self._grad_kind is GradKind.OUT_GRAD_INPUTS:
            extra = list(inputs[1 : 1 + n])
        else:
            extra = []
        if n == 1:
            self._grad(out_grad, *extra, env, outputs[0], req[0], op_ctx)
        else:
            self._grad(out_grad, *extra, env, outputs[0], outputs[1], req[0], req[1], op_ctx)


def register_simple_op(name: str, override: bool = False) -> SimpleOpRegistry:
    """Register operator ``name`` through SimpleOp (MXNet's ``MXNET_REGISTER_SIMPLE_OP``).

    ``override=True`` replaces an earlier registration (handy when re-running a notebook cell).
    """
    return SimpleOpRegistry(name, override)

"""Front-end generation: a Python function per registered operator (``mx.nd.<name>``).

MXNet generates ``mx.nd.*`` from its operator registry when the library loads; MXLab
generates each function the first time it is looked up, so operators registered later (in
a tutorial, or loaded from a C library) get one too. The function's signature and
docstring come from the operator's input names and parameters
(``framework/operator/signature.py``, shared with ``mx.sym``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import MXLabError
from ..context import Context
from ..operator import registry
from ..operator.registry import OpDef
from ..operator.signature import REQUIRED_MARK, FrontEnd, Keyword, make_docstring, make_signature
from .imperative import invoke, parse_attrs
from .ndarray import NDArray

#: How ``mx.nd`` functions present their inputs and keywords (see ``operator/signature.py``).
ND_FRONT_END = FrontEnd(
    input_type="NDArray",
    input_help="An input array.",
    variadic_help="The input arrays (any number).",
    returns="NDArray or list of NDArray",
    keywords=(Keyword("out", "NDArray", "The output array to write into."),),
    params_positional=True,  # ``clip(x, 0, 1)``, ``random_normal(0, 1, (2, 3), mx.cpu())``
    required_default=REQUIRED_MARK,
)


def make_nd_function(op: OpDef) -> Callable[..., Any]:
    """The imperative front-end function of ``op``."""
    op_name = op.name

    def function(*args: Any, out: Any = None, name: str | None = None, **kwargs: Any) -> Any:
        op = registry.get(op_name)  # the current record, even after register(..., override=True)
        inputs_by_name = {}
        params = {}
        for key, value in kwargs.items():
            (inputs_by_name if isinstance(value, NDArray) else params)[key] = value
        if args and not op.key_var_num_args:
            # Positional values after the input arrays are parameters in their declared
            # order, as in MXNet's generated signatures (``clip(x, 0, 1)``).
            static_names = op._input_names if isinstance(op._input_names, list | tuple) else None
            if static_names is not None or op._num_inputs == 1:
                count = len(static_names) if static_names is not None else 1
            else:  # input names depend on parameters: the leading arrays are the inputs
                count = 0
                while count < len(args) and isinstance(args[count], NDArray):
                    count += 1
            extra, args = args[count:], args[:count]
            if any(isinstance(value, NDArray) for value in extra):
                raise MXLabError(f"{op.name}: takes {count} input array(s), got {count + len(extra)} arrays")
            fields = [f for f in op.params.fields if f not in params]
            if len(extra) > len(fields):
                raise MXLabError(f"{op.name}: too many positional arguments ({len(extra)} after the input arrays)")
            for field, value in zip(fields, extra, strict=False):
                params[field] = value
        # ctx may come positionally too (``random_normal(0, 1, (2, 3), mx.cpu())``).
        ctx = None
        if "ctx" in params:
            ctx = params["ctx"]
            if ctx is None:
                del params["ctx"]
            elif isinstance(ctx, Context):
                params["ctx"] = str(ctx)
            else:
                raise MXLabError(f"{op.name}: ctx must be a Context such as mx.cpu(0), got {ctx!r}")
        if op.key_var_num_args and op.key_var_num_args not in params:
            params[op.key_var_num_args] = len(args)
        attrs = parse_attrs(op, params)
        names = op.list_input_names(attrs)
        if len(args) > len(names):
            raise MXLabError(f"{op.name}: takes {len(names)} input array(s) ({', '.join(names)}), got {len(args)}")
        unexpected = sorted(set(inputs_by_name) - set(names[len(args) :]))
        if unexpected:
            raise MXLabError(
                f"{op.name}: unexpected array argument(s) {unexpected}; inputs are {', '.join(names)}"
                + (f" ({len(args)} given positionally)" if args else "")
            )
        inputs = list(args)
        for input_name in names[len(args) :]:
            if input_name not in inputs_by_name:
                raise MXLabError(f"{op.name}: missing input '{input_name}' (inputs: {', '.join(names)})")
            inputs.append(inputs_by_name.pop(input_name))
        outputs = invoke(op, inputs, out=out, ctx=ctx, attrs=attrs)
        return outputs[0] if len(outputs) == 1 else outputs

    function.__name__ = op.name
    function.__qualname__ = op.name
    function.__doc__ = make_docstring(op, ND_FRONT_END)
    try:
        function.__signature__ = make_signature(op, ND_FRONT_END)  # type: ignore[attr-defined]
    except (ValueError, TypeError):
        pass
    return function

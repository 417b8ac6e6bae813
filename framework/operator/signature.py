"""How a generated front-end function of an operator presents itself: input names, signature, docstring.

``mx.nd.<name>`` and ``mx.sym.<name>`` are both generated from the operator's record: the
inputs it takes, then its parameters, then a few keywords of the front end's own. They
differ only in details a :class:`FrontEnd` lists (what an input is, which keywords come
last, whether parameters may also be positional, what is returned), so one builder here
serves both, and an operator registered later gets the same help in both.
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass
from typing import Any

from ..base import MXLabError
from .params import REQUIRED, DType, Shape
from .registry import OpDef

#: Stand-in values for required parameters when asking an operator for its input names.
_PLACEHOLDERS: dict[Any, Any] = {float: 1.0, int: 1, bool: False, str: "", Shape: Shape((1,)), DType: "float32"}
_input_names_cache: dict[OpDef, list[str]] = {}


def default_input_names(op: OpDef) -> list[str]:
    """The input names a generated function takes positionally (MXNet's signature).

    They are the names for default parameters; required parameters get placeholder values
    just to ask the operator (``FullyConnected`` -> data, weight, bias): input names depend
    on switches such as ``no_bias``, never on sizes such as ``num_hidden``. An operator that
    cannot say gets ``["data"]``.
    """
    names = _input_names_cache.get(op)
    if names is None:
        values: dict[str, Any] = {}
        for key, field in op.params.fields.items():
            if field.default is REQUIRED:
                values[key] = field.choices[0] if field.choices else _PLACEHOLDERS.get(field.type, (1,))
        try:
            names = op.list_input_names(op.parse_attrs(values))
        except (MXLabError, TypeError, ValueError, AttributeError):
            names = ["data"]
        _input_names_cache[op] = names
    return names


#: Switches tried when asking which inputs an operator can take at most (2**8 combinations).
_MAX_SWITCHES = 8
_declared_names_cache: dict[OpDef, list[str]] = {}


def declared_input_names(op: OpDef) -> list[str]:
    """Every input ``op`` can take, in order: the positional input slots of its front ends.

    MXNet's generated functions list all of an operator's declared arguments, whatever the
    switches: ``Deconvolution(data, weight, bias, kernel=...)`` although ``no_bias`` defaults
    to True there. MXLab's operators name their inputs per parameter values, so this asks
    with every combination of the boolean and choice parameters and keeps the longest list
    (the defaults' list on a tie): a third positional array is always ``bias``, never
    ``kernel``.
    """
    names = _declared_names_cache.get(op)
    if names is not None:
        return names
    names = default_input_names(op)
    if isinstance(op._input_names, list | tuple) or op.key_var_num_args:
        _declared_names_cache[op] = names
        return names
    base: dict[str, Any] = {}
    switches: list[tuple[str, list[Any]]] = []
    for key, field in op.params.fields.items():
        if field.type is bool:
            switches.append((key, [False, True]))
        elif field.choices:
            switches.append((key, list(field.choices)))
        elif field.default is REQUIRED:
            base[key] = _PLACEHOLDERS.get(field.type, (1,))
    for combination in itertools.product(*(values for _, values in switches[:_MAX_SWITCHES])):
        values = dict(base)
        values.update((key, value) for (key, _), value in zip(switches, combination, strict=False))
        try:
            candidate = op.list_input_names(op.parse_attrs(values))
        except (MXLabError, TypeError, ValueError, AttributeError):
            continue
        if len(candidate) > len(names):
            names = list(candidate)
    _declared_names_cache[op] = names
    return names


class _Required:
    """Shown as the default of required parameters in generated signatures.

    Parameters follow the inputs positionally (inputs default to None), so a required
    parameter needs a stand-in default for the signature to be valid Python.
    """

    def __repr__(self) -> str:
        return "<required>"


#: The stand-in default of required parameters (``num_hidden=<required>``).
REQUIRED_MARK = _Required()


@dataclass(frozen=True)
class Keyword:
    """A keyword-only argument of the front end itself (``out``; ``name``, ``attr``), default None."""

    name: str
    type_doc: str
    help: str


@dataclass(frozen=True)
class FrontEnd:
    """What distinguishes one front end's generated functions from another's.

    ``input_help`` is the line under each input (``{name}`` is replaced by the input's
    name); ``required_default`` is what a signature shows for a required parameter.
    """

    input_type: str
    input_help: str
    variadic_help: str
    returns: str
    keywords: tuple[Keyword, ...]
    inputs_optional: bool = False
    params_positional: bool = False
    required_default: Any = inspect.Parameter.empty
    var_keyword: bool = False


def make_docstring(op: OpDef, front_end: FrontEnd, access_name: str | None = None) -> str:
    """The numpydoc help of ``op``'s function; ``access_name`` notes an alias it was reached by."""
    lines = [op.description or f"The {op.name} operator.", ""]
    if access_name is not None and access_name != op.name:
        lines += [f"``{access_name}`` is another name of ``{op.name}``.", ""]
    lines += ["Parameters", "----------"]
    if op.key_var_num_args:
        lines += [f"*data : {front_end.input_type}", f"    {front_end.variadic_help}"]
    else:
        optional = ", optional" if front_end.inputs_optional else ""
        for name in declared_input_names(op):
            lines += [f"{name} : {front_end.input_type}{optional}", "    " + front_end.input_help.format(name=name)]
    described = op.params.describe()
    if described:
        lines.append(described)
    for keyword in front_end.keywords:
        lines += [f"{keyword.name} : {keyword.type_doc}, optional", f"    {keyword.help}"]
    lines += ["", "Returns", "-------", front_end.returns]
    return "\n".join(lines)


def make_signature(op: OpDef, front_end: FrontEnd) -> inspect.Signature:
    """The signature ``help()`` and IDEs show: inputs, parameters, then the front end's keywords."""
    kind = inspect.Parameter
    params = []
    if op.key_var_num_args:
        params.append(kind("data", kind.VAR_POSITIONAL))
    else:
        params += [kind(n, kind.POSITIONAL_OR_KEYWORD, default=None) for n in declared_input_names(op)]
    # MXNet's generated symbol functions take the parameters positionally too, after the inputs.
    positional = front_end.params_positional and not op.key_var_num_args
    param_kind = kind.POSITIONAL_OR_KEYWORD if positional else kind.KEYWORD_ONLY
    for name, field in op.params.fields.items():
        if name == op.key_var_num_args:
            continue
        default = front_end.required_default if field.default is REQUIRED else field.default
        params.append(kind(name, param_kind, default=default))
    params += [kind(keyword.name, kind.KEYWORD_ONLY, default=None) for keyword in front_end.keywords]
    if front_end.var_keyword:
        params.append(kind("kwargs", kind.VAR_KEYWORD))
    return inspect.Signature(params)

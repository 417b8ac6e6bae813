"""Typed operator parameters: MXNet's ``dmlc::Parameter`` structs, in Python.

An operator declares its parameters as a :class:`ParamSet` subclass with one
:class:`Param` per field (type, default, range or choices, description)::

    class QuadraticParam(ParamSet):
        a = Param(float, 0.0, "Coefficient of the quadratic term.")
        b = Param(float, 0.0, "Coefficient of the linear term.")
        c = Param(float, 0.0, "Constant term.")

``QuadraticParam.parse("quadratic", {"a": "1.5"})`` returns a frozen instance with
``.a == 1.5``. Values may arrive as Python objects (imperative calls) or as strings (symbol
JSON stores every attribute as a string); both parse to the same value. Unknown names,
missing required values, values of the wrong type and values out of range raise
:class:`OperatorParamError` naming the operator, the parameter and what is allowed.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..base import MXLabError

REQUIRED = object()


class OperatorParamError(MXLabError, ValueError):
    """A keyword argument of an operator is unknown, missing, malformed or out of range."""


class Shape(tuple):
    """Marker type: a parameter holding a tuple of ints, like MXNet's ``TShape``."""


class FloatTuple(tuple):
    """Marker type: a parameter holding a tuple of numbers, like MXNet's ``Tuple<double>`` (``range=(0, 1.5)``)."""


class DType:
    """Marker type: a parameter holding a NumPy dtype name (``"float32"``)."""


_DTYPE_NAMES = ("float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool")


def python_scalar(value: Any) -> Any:
    """NumPy scalars (``np.int64(2)``, ``np.float32(0.5)``, ``np.bool_(True)``) and 0-d arrays as the
    Python number they hold; anything else unchanged.

    MXNet formats every parameter as a string, so a NumPy number is as good as a Python one there;
    converting up front lets the type checks below treat both alike.
    """
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    return value


class Param:
    """One declared parameter: ``Param(type, default, description, low=, high=, choices=)``.

    ``type`` is ``float``, ``int``, ``bool``, ``str``, :class:`Shape`, :class:`FloatTuple` or :class:`DType`.
    ``optional=True`` also allows None (MXNet's ``dmlc::optional``).
    """

    __slots__ = ("name", "type", "default", "description", "low", "high", "choices", "optional")

    def __init__(
        self,
        type_: type,
        default: Any = REQUIRED,
        description: str = "",
        *,
        low: float | None = None,
        high: float | None = None,
        choices: Sequence[str] | None = None,
        optional: bool = False,
    ) -> None:
        self.name = ""
        self.type = type_
        self.default = default
        self.description = description
        self.low = low
        self.high = high
        self.choices = tuple(choices) if choices is not None else None
        self.optional = optional or default is None

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: ParamSet | None, owner: type) -> Any:
        """On the class: the declaration; on a parsed struct: the value."""
        if instance is None:
            return self
        return instance.__dict__["_values"][self.name]

    def type_name(self) -> str:
        """How the parameter's type reads in generated docstrings (MXNet's style)."""
        if self.choices:
            text = "{" + ", ".join(repr(c) for c in self.choices) + "}"
        else:
            text = {
                float: "float",
                int: "int",
                bool: "boolean",
                str: "string",
                Shape: "Shape(tuple)",
                FloatTuple: "tuple of <float>",
                DType: "dtype",
            }[self.type]
        if self.default is REQUIRED:
            return f"{text}, required"
        return f"{text}, optional, default={self.default!r}"

    def parse(self, op_name: str, value: Any) -> Any:
        """Convert ``value`` (object or string) to this parameter's type, or raise clearly."""
        if value is None or (isinstance(value, str) and value == "None"):
            if self.optional:
                return None
            self._fail(op_name, value, "a value (None is not allowed)")
        try:
            parsed = self._convert(value)
        except (TypeError, ValueError, SyntaxError):
            self._fail(op_name, value, self._expected())
        if self.choices is not None and parsed not in self.choices:
            self._fail(op_name, value, f"one of {list(self.choices)}")
        if self.low is not None and parsed < self.low:
            self._fail(op_name, value, f"a value >= {self.low}")
        if self.high is not None and parsed > self.high:
            self._fail(op_name, value, f"a value <= {self.high}")
        return parsed

    def format(self, value: Any) -> str:
        """The string form stored in symbol JSON (MXNet's attribute strings)."""
        if value is None:
            return "None"
        if self.type in (Shape, FloatTuple):
            return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
        if self.type is DType:
            return str(np.dtype(value))
        return str(value)

    def _expected(self) -> str:
        return {
            float: "a number",
            int: "an integer",
            bool: "a boolean",
            str: "a string",
            Shape: "a tuple of integers such as (2, 3)",
            FloatTuple: "a tuple of numbers such as (0, 1.5)",
            DType: f"a dtype name ({', '.join(_DTYPE_NAMES)})",
        }[self.type]

    def _convert(self, value: Any) -> Any:
        kind = self.type
        value = python_scalar(value)
        if isinstance(value, str) and kind not in (str, DType):
            text = value.strip()
            if kind is bool:
                if text in ("True", "true", "1"):
                    return True
                if text in ("False", "false", "0"):
                    return False
                raise ValueError(text)
            value = ast.literal_eval(text) if kind in (Shape, FloatTuple) else text
        if kind is float:
            if isinstance(value, bool | np.bool_):
                raise TypeError("bool is not a number here")
            return float(value)
        if kind is int:
            if isinstance(value, bool | np.bool_):
                raise TypeError("bool is not an integer here")
            if isinstance(value, str):
                return int(value)
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            if not isinstance(value, int | float):
                raise TypeError(value)
            return int(value)
        if kind is bool:
            if isinstance(value, bool | np.bool_) or value in (0, 1):
                return bool(value)
            raise TypeError(value)
        if kind is str:
            if not isinstance(value, str):
                raise TypeError(value)
            return value
        if kind is Shape:
            if isinstance(value, int | np.integer) and not isinstance(value, bool):
                return Shape((int(value),))
            items = tuple(python_scalar(v) for v in value)
            if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in items):
                raise TypeError(value)
            return Shape(int(v) for v in items)
        if kind is FloatTuple:
            sequence = value if isinstance(value, list | tuple | np.ndarray) else (value,)
            items = tuple(python_scalar(v) for v in sequence)
            if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
                raise TypeError(value)
            return FloatTuple(float(v) for v in items)
        if kind is DType:
            name = np.dtype(value).name
            if name not in _DTYPE_NAMES:
                raise ValueError(name)
            return name
        raise TypeError(kind)

    def _fail(self, op_name: str, value: Any, expected: str) -> None:
        raise OperatorParamError(
            f"{op_name}: parameter '{self.name}' expects {expected}, got {value!r}"
            + (f" ({self.description})" if self.description else "")
        )


class ParamSet:
    """Base class of an operator's parameter struct; subclasses declare :class:`Param` fields."""

    fields: ClassVar[dict[str, Param]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        inherited = {}
        for base in reversed(cls.__mro__[1:]):
            inherited.update(getattr(base, "fields", {}))
        own = {k: v for k, v in vars(cls).items() if isinstance(v, Param)}
        cls.fields = {**inherited, **own}

    def __init__(self, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"operator parameters are read-only (tried to set {name!r})")

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._values == other._values  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(self._values.items(), key=lambda kv: kv[0]))))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"{type(self).__name__}({inner})"

    def as_dict(self) -> dict[str, Any]:
        """Parsed values by name."""
        return dict(self._values)

    def to_strings(self) -> dict[str, str]:
        """Every value in MXNet's string form, as stored in symbol JSON ``attrs``."""
        return {name: self.fields[name].format(value) for name, value in self._values.items()}

    @classmethod
    def parse(cls, op_name: str, kwargs: Mapping[str, Any]) -> ParamSet:
        """Build the struct from keyword arguments, filling defaults and checking everything."""
        fields = cls.fields
        unknown = [k for k in kwargs if k not in fields]
        if unknown:
            allowed = ", ".join(fields) if fields else "none"
            raise OperatorParamError(
                f"{op_name}: unknown parameter(s) {', '.join(map(repr, unknown))}; allowed parameters: {allowed}"
            )
        values = {}
        for name, field in fields.items():
            if name in kwargs:
                values[name] = field.parse(op_name, kwargs[name])
            elif field.default is REQUIRED:
                raise OperatorParamError(
                    f"{op_name}: required parameter '{name}' is missing ({field.description or field.type_name()})"
                )
            else:
                values[name] = field.default
        return cls(values)

    @classmethod
    def describe(cls) -> str:
        """The "Parameters" section of generated docstrings."""
        lines = []
        for name, field in cls.fields.items():
            lines.append(f"{name} : {field.type_name()}")
            if field.description:
                lines.append(f"    {field.description}")
        return "\n".join(lines)


class NoParams(ParamSet):
    """The parameter struct of operators that take no parameters."""

"""A Gluon ParameterDict: parameters by full name, with a prefix, sharing, and ``.params`` files.

:class:`ParameterDict` maps full names to parameters, adds its ``prefix`` to the names it is
asked for (``get('weight')`` in a ``dense0_`` dictionary is ``dense0_weight``), and can share
parameters with another dictionary. It saves and loads them in MXNet's ``.params`` format
(:mod:`framework.ndarray.io`). It is separate from :mod:`.parameter` because it is about a
collection (names, sharing, files), not about one weight's arrays.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ... import initializer
from ...context import Context
from ...ndarray import io as nd_io
from ...ndarray.ndarray import NDArray
from .constant import Constant
from .errors import ParameterError
from .parameter import Parameter


def _brief_print_list(names: Sequence[str] | Any, limit: int = 7) -> str:
    """``'a', 'b', ..., 'z'``: a long list of names, shortened."""
    names = list(names)
    if len(names) > limit:
        return (
            _brief_print_list(names[: limit // 2], limit) + ", ..., " + _brief_print_list(names[-limit // 2 :], limit)
        )
    return ", ".join(f"'{n}'" for n in names)


class ParameterDict(Mapping):
    """Parameters by full name, handing out ``prefix + name`` (MXNet's ``gluon.ParameterDict``)."""

    def __init__(self, prefix: str = "", shared: ParameterDict | None = None) -> None:
        self._prefix = prefix
        self._params: OrderedDict[str, Parameter] = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        body = "\n".join(f"  {p!r}" for p in self.values())
        return f"{self._prefix} (\n{body}\n)"

    def __getitem__(self, key: str) -> Parameter:
        return self._params[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    @property
    def prefix(self) -> str:
        return self._prefix

    def _get_impl(self, name: str) -> Parameter | None:
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name: str, **kwargs: Any) -> Parameter:  # type: ignore[override]
        """The parameter ``prefix + name``, created with ``kwargs`` if it does not exist.

        An existing parameter must agree with ``kwargs`` (unknown dimensions of its shape are
        filled in from ``shape``).
        """
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for key, value in kwargs.items():
            existing = getattr(param, key, None)
            if existing is None:
                setattr(param, key, value)
                continue
            if key == "shape" and value is not None:
                wanted = (value,) if isinstance(value, int) else tuple(value)
                if len(wanted) == len(existing):
                    merged, matched = [], True
                    for want, have in zip(wanted, existing, strict=True):
                        if want != have and want > 0 and have > 0:
                            matched = False
                            break
                        merged.append(have if want in (0, -1) else want)
                    if matched:
                        param._shape = tuple(merged)
                        continue
            elif key == "dtype" and np.dtype(value) == np.dtype(existing):
                continue
            if value is not None and value != existing:
                raise ParameterError(
                    f"Cannot retrieve Parameter '{name}' because desired attribute does not match with stored "
                    f"for attribute '{key}': desired '{value}' vs stored '{existing}'."
                )
        return param

    def get_constant(self, name: str, value: Any = None) -> Constant:
        """The constant ``prefix + name``, created from ``value`` if it does not exist."""
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(
                    f"No constant named '{name}'. Please specify value if you want to create a new constant."
                )
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise ParameterError(f"Parameter '{name}' already exists but it is not a constant.")
            values = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
            if param.shape != values.shape or not (param.value.asnumpy() == values).all():
                raise ParameterError(f"Constant '{name}' already exists but its value doesn't match new value")
        assert isinstance(param, Constant)
        return param

    def update(self, other: Mapping[str, Parameter]) -> None:
        """Add the parameters of ``other`` (a name must not stand for two different parameters)."""
        for key, value in other.items():
            if key in self._params and self._params[key] is not value:
                raise ParameterError(
                    f"Cannot update self with other because they have different Parameters with the same name '{key}'"
                )
        for key, value in other.items():
            self._params[key] = value

    def initialize(
        self,
        init: Any = None,
        ctx: Context | Sequence[Context] | None = None,
        verbose: bool = False,
        force_reinit: bool = False,
    ) -> None:
        """Initialize every parameter; ``init`` is the default for those without their own."""
        if init is None:
            init = initializer.Uniform()
        if verbose:
            initializer.create(init).set_verbosity(verbose=verbose)
        for param in self.values():
            param.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        for param in self.values():
            param.zero_grad()

    def reset_ctx(self, ctx: Context | Sequence[Context]) -> None:
        for param in self.values():
            param.reset_ctx(ctx)

    def list_ctx(self) -> list[Context]:
        contexts: list[Context] = []
        for param in self.values():
            contexts.extend(c for c in param.list_ctx() if c not in contexts)
        return contexts

    def setattr(self, name: str, value: Any) -> None:
        """Set an attribute (``grad_req``, ``lr_mult``, ...) on every parameter."""
        for param in self.values():
            setattr(param, name, value)

    def save(self, filename: str, strip_prefix: str = "") -> None:
        """Save the (averaged) values by name, without ``strip_prefix``, in MXNet's ``.params`` format."""
        arg_dict = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise ParameterError(
                    f"Prefix '{strip_prefix}' is to be striped before saving, but Parameter's name '{param.name}' "
                    f"does not start with '{strip_prefix}'. This may be due to your Block shares parameters from "
                    "other Blocks or you forgot to use 'with name_scope()' when creating child blocks."
                )
            arg_dict[param.name[len(strip_prefix) :]] = param._reduce()
        nd_io.save(filename, arg_dict)

    def load(
        self,
        filename: str,
        ctx: Context | Sequence[Context] | None = None,
        allow_missing: bool = False,
        ignore_extra: bool = False,
        restore_prefix: str = "",
        cast_dtype: bool = False,
        dtype_source: str = "current",
    ) -> None:
        """Load values saved by :meth:`save` (or an export's ``arg:``/``aux:`` file)."""
        for name in self.keys():
            if not name.startswith(restore_prefix):
                raise ParameterError(
                    f"restore_prefix is '{restore_prefix}' but Parameters name '{name}' "
                    f"does not start with '{restore_prefix}'"
                )
        loaded = nd_io.load(filename)
        if not isinstance(loaded, dict):
            raise ParameterError(f"{filename}: expected a file of named arrays, found a list of {len(loaded)} arrays")
        self.load_dict(loaded, ctx, allow_missing, ignore_extra, restore_prefix, filename, cast_dtype, dtype_source)

    def load_dict(
        self,
        param_dict: Mapping[str, NDArray],
        ctx: Context | Sequence[Context] | None = None,
        allow_missing: bool = False,
        ignore_extra: bool = False,
        restore_prefix: str = "",
        filename: str | None = None,
        cast_dtype: bool = False,
        dtype_source: str = "current",
    ) -> None:
        """Load values from a dict of arrays (names as :meth:`save` writes them)."""
        strip = len(restore_prefix)
        arg_dict = {restore_prefix + (k[4:] if k.startswith(("arg:", "aux:")) else k): v for k, v in param_dict.items()}
        where = f"file: {filename}" if filename else "param_dict"
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise ParameterError(
                        f"Parameter '{name[strip:]}' is missing in {where}, which contains parameters: "
                        f"{_brief_print_list(arg_dict)}. Please make sure source and target networks have the "
                        "same prefix (or pass allow_missing=True)."
                    )
        for name, value in arg_dict.items():
            if name not in self._params:
                if not ignore_extra:
                    raise ParameterError(
                        f"Parameter '{name[strip:]}' loaded from {where} is not present in ParameterDict, choices "
                        f"are: {_brief_print_list(self._params)}. Set ignore_extra to True to ignore. Please make "
                        "sure source and target networks have the same prefix."
                    )
                continue
            self._params[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

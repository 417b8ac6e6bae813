"""How attribute keys and parameter values of a symbol node are spelled as strings.

MXNet stores every parameter and attribute of a node as a string (they are what ``tojson``
writes). Hidden attributes (``lr_mult``) are kept as ``__lr_mult__``; these helpers decide the
spelling for node creation, ``_set_attr`` and ``list_attr`` alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..operator.params import DType
from .errors import SymbolError
from .json_format import HIDDEN_KEYS


def is_dunder(key: str) -> bool:
    return len(key) > 4 and key.startswith("__") and key.endswith("__")


def normalize_attr_key(key: str) -> str:
    """``lr_mult`` -> ``__lr_mult__`` (MXNet's hidden keys); ``weight_lr_mult`` is refused."""
    if is_dunder(key):
        return key
    for hidden in HIDDEN_KEYS:
        if key.startswith(hidden):
            return f"__{key}__"
        if key.endswith(hidden):
            raise SymbolError(
                f"setting variable attributes with {key} is deprecated; instead use "
                f"w = mx.sym.Variable(..., {hidden}=...) and pass w as the input {key[: -len(hidden) - 1]!r}"
            )
    return key


def param_string(field: Any, value: Any) -> str:
    """How a parameter value is stored (MXNet stores ``str(value)``; dtypes by name)."""
    if isinstance(value, str):
        return value
    if field is not None and field.type is DType and value is not None:
        try:
            return np.dtype(value).name
        except TypeError:
            return str(value)
    return str(value)


def expand_hidden(attrs: dict[str, str]) -> dict[str, str]:
    """``list_attr`` shows ``__lr_mult__`` also as ``lr_mult`` (MXNet's hidden keys)."""
    out = dict(attrs)
    for hidden in HIDDEN_KEYS:
        key = f"__{hidden}__"
        if key in attrs:
            out[hidden] = attrs[key]
    return out

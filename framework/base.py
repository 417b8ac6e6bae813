"""``mx.base``: the errors, the dtype table and MXNet's small helpers, shared by every layer.

The helpers are MXNet's pure-Python ones: type tuples, text conversion, the data directory,
class properties (``AttrScope.current``) and docstring builders. MXNet's ``mx.base`` also
holds its C API plumbing (``check_call``, ``c_str``...), which MXLab does not have
(docs/differences.md).

The error classes are defined in :mod:`framework.errors` (below the configuration table, which
raises them) and re-exported here, where MXNet keeps them.
"""

from __future__ import annotations

import importlib
import inspect
import os
import types
from collections.abc import Callable, Sequence

import numpy as np

from . import config
from .errors import (
    ContextError,
    EngineError,
    EngineTimeoutError,
    InternalError,
    MXLabError,
    MXNetError,
    NotImplementedForSymbol,
    SparseStorageError,
    StorageError,
)

__all__ = [
    "DTYPE_TO_FLAG",
    "FLAG_TO_DTYPE",
    "ContextError",
    "EngineError",
    "EngineTimeoutError",
    "InternalError",
    "MXLabError",
    "MXNetError",
    "NotImplementedForSymbol",
    "SparseStorageError",
    "StorageError",
    "add_fileline_to_docstring",
    "build_param_doc",
    "classproperty",
    "ClassPropertyMetaClass",
    "data_dir",
    "data_dir_default",
    "integer_types",
    "numeric_types",
    "py_str",
    "string_types",
    "with_metaclass",
]


# MXNet's type flags, as written in .params files and symbol JSON (``__dtype__``).
DTYPE_TO_FLAG: dict[np.dtype, int] = {
    np.dtype("float32"): 0,
    np.dtype("float64"): 1,
    np.dtype("float16"): 2,
    np.dtype("uint8"): 3,
    np.dtype("int32"): 4,
    np.dtype("int8"): 5,
    np.dtype("int64"): 6,
    np.dtype("bool"): 7,
}
FLAG_TO_DTYPE: dict[int, np.dtype] = {flag: dtype for dtype, flag in DTYPE_TO_FLAG.items()}


# ---------------------------------------------------------------------- MXNet's mx.base helpers
# Type tuples for isinstance checks, as MXNet 1.x defines them (integer_types also takes any
# NumPy integer, not only int32/int64).
string_types = (str,)
numeric_types = (float, int, np.generic)
integer_types = (int, np.integer)


def py_str(x: bytes | str) -> str:
    """Text from a C string (UTF-8 bytes); text passes through."""
    return x.decode("utf-8") if isinstance(x, bytes | bytearray) else x


def _as_list(obj: object) -> list | tuple:
    """``obj`` itself if it is a list or tuple, else ``[obj]``."""
    return obj if isinstance(obj, list | tuple) else [obj]


def data_dir_default() -> str:
    """``~/.mxnet`` (``%APPDATA%\\mxnet`` on Windows): where MXNet keeps downloaded models and data."""
    if os.name == "nt" and os.environ.get("APPDATA"):
        return os.path.join(os.environ["APPDATA"], "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir() -> str:
    """The data directory: ``MXLAB_DATA_DIR`` (MXNet's ``MXNET_HOME``), else :func:`data_dir_default`.

    Nothing is created and nothing is downloaded: loaders that look here name the files they expected.
    """
    return config.get("MXLAB_DATA_DIR") or data_dir_default()


# ---------------------------------------------------------------------- class properties
class _ClassPropertyDescriptor:
    """A property read (and, with ``setter``, written) on the class itself: ``AttrScope.current``."""

    def __init__(self, fget: classmethod, fset: classmethod | None = None) -> None:
        self.fget = fget
        self.fset = fset

    def __get__(self, obj: object, owner: type | None = None) -> object:
        return self.fget.__get__(obj, owner if owner is not None else type(obj))()

    def __set__(self, obj: object, value: object) -> None:
        if self.fset is None:
            raise AttributeError("can't set this class property (it has no setter)")
        owner = obj if isinstance(obj, type) else type(obj)
        self.fset.__get__(obj, owner)(value)

    def setter(self, func: Callable[..., None] | classmethod) -> _ClassPropertyDescriptor:
        self.fset = func if isinstance(func, classmethod) else classmethod(func)
        return self


class ClassPropertyMetaClass(type):
    """Routes ``Cls.name = value`` to a class property's setter (a plain descriptor only sees instances)."""

    def __setattr__(cls, key: str, value: object) -> None:
        for klass in cls.__mro__:
            found = klass.__dict__.get(key)
            if isinstance(found, _ClassPropertyDescriptor):
                found.__set__(cls, value)
                return
        super().__setattr__(key, value)


def classproperty(func: Callable[..., object] | classmethod) -> _ClassPropertyDescriptor:
    """Decorator: a read-only property of the class (settable with ``@name.setter`` on a
    class whose metaclass is :class:`ClassPropertyMetaClass`)."""
    return _ClassPropertyDescriptor(func if isinstance(func, classmethod) else classmethod(func))


def with_metaclass(meta: type, *bases: type) -> type:
    """A base class whose subclasses get metaclass ``meta`` (``class A(with_metaclass(M, B))``)."""
    return meta("_WithMetaclass", bases or (object,), {})


# ---------------------------------------------------------------------- docstrings
def build_param_doc(
    arg_names: Sequence[str], arg_types: Sequence[str], arg_descs: Sequence[str], remove_dup: bool = True
) -> str:
    """A NumPy-style ``Parameters`` section from parallel lists of names, types and descriptions.

    With ``remove_dup`` a name given twice is documented once (the first time).
    """
    lines, seen = [], set()
    for name, kind, desc in zip(arg_names, arg_types, arg_descs, strict=True):
        if remove_dup and name in seen:
            continue
        seen.add(name)
        lines.append(f"{name} : {kind}")
        if desc:
            lines.append(f"    {desc}")
    return "Parameters\n----------\n" + "\n".join(lines) + "\n"


def add_fileline_to_docstring(module: str | types.ModuleType, incursive: bool = True) -> None:
    """Append ``From:<file>:<line>`` to the docstring of each function and class of ``module``.

    With ``incursive`` the methods of its classes get the line too. A module name is imported.
    """
    if isinstance(module, str):
        module = importlib.import_module(module)

    def annotate(obj: object) -> None:
        func = getattr(obj, "__func__", obj)
        if not (inspect.isfunction(func) or inspect.isclass(func)) or not func.__doc__:
            return
        if "From:" in func.__doc__:
            return
        try:
            line = inspect.getsourcelines(func)[1]
            source = inspect.getsourcefile(func)
        except (OSError, TypeError):
            return
        func.__doc__ += f"\n\nFrom:{source}:{line}"

    for obj in vars(module).values():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        annotate(obj)
        if incursive and inspect.isclass(obj):
            for member in vars(obj).values():
                annotate(member)

"""``mx.library.load``: open a shared object, check its ABI version and register its operators.

Loading is all or nothing: every operator the library declares is named and validated
before any is registered, and a file already loaded returns the same :class:`Library`.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

from .abi import LIBRARY_VERSION, MAX_OPERATORS, Library, LibraryError, LibraryMetadataError
from .adapter import LibraryOp

_libraries: dict[str, Library] = {}
_load_lock = threading.Lock()


def loaded_libraries() -> list[Library]:
    """The libraries loaded so far, in load order."""
    return list(_libraries.values())


def _log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"[{stamp}] framework/library/loader.py: {message}", file=sys.stderr)


def load(path: str, verbose: bool = True) -> Library:
    """Load a custom-operator library and register its operators (MXNet's ``mx.library.load``).

    Checks the library's ``MX_LIBRARY_VERSION`` against :data:`LIBRARY_VERSION`, calls its
    ``initialize(version)``, then registers every operator it declared. Loading the same
    file again returns the already loaded :class:`Library`. ``verbose`` logs what was
    found, as MXNet does. Unlike MXNet, relative paths are accepted (made absolute).
    """
    if not isinstance(path, str | os.PathLike):
        raise LibraryError(f"load: path must be a string, got {type(path).__name__}")
    path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(path):
        raise LibraryError(f"load: library file {path!r} does not exist")
    with _load_lock:
        found = _libraries.get(path)
        if found is not None:
            if verbose:
                _log(f"Library {path} already loaded ({len(found.operators)} operators)")
            return found
        try:
            handle = ctypes.CDLL(path)
        except OSError as err:
            raise LibraryError(f"load: {path!r} is not a loadable shared library: {err}") from None
        if not hasattr(handle, "_opVersion"):
            raise LibraryError(
                f"load: {path!r} is not an MXLab operator library (it exports no _opVersion; "
                'build it with #include "lib_api.h" from framework/include)'
            )
        handle._opVersion.argtypes, handle._opVersion.restype = [], ctypes.c_int
        version = int(handle._opVersion())
        if version != LIBRARY_VERSION:
            raise LibraryError(
                f"load: library {os.path.basename(path)} was built against lib_api.h version {version}, but this MXLab "
                f"speaks version {LIBRARY_VERSION}; rebuild it with this MXLab's framework/include/lib_api.h"
            )
        lib = Library(path, handle)
        lib.check(lib._opInitialize(LIBRARY_VERSION), None, f"initialize({LIBRARY_VERSION})")
        count = int(lib._opRegSize())
        if not 0 <= count <= MAX_OPERATORS:
            raise LibraryMetadataError(
                f"load: library {lib.name} reports {count} operators (_opRegSize); expected 0 to {MAX_OPERATORS}"
            )
        if verbose:
            _log(f"Found {count} operators in library")
        ops = []
        for index in range(count):
            name = _operator_name(lib, index, {op.name for op in ops})
            ops.append(LibraryOp(lib, index, name, int(lib._opRegGetFlags(index))))
            if verbose:
                _log(f"\tOp[{index}] {name}")
        for op in ops:  # check everything before registering anything
            op.validate()
        for op in ops:
            op.register()
            lib.operators.append(op.name)
            lib.ops[op.name] = op
        if verbose:
            _log("Found 0 partitioners in library")
        _libraries[path] = lib
        return lib


def _operator_name(lib: Library, index: int, seen: set[str]) -> str:
    """Operator ``index``'s name as the library reports it: UTF-8, an identifier, not repeated."""
    raw = lib._opRegGetName(index)
    where = f"load: library {lib.name}: operator {index} (_opRegGetName)"
    if raw is None:
        raise LibraryMetadataError(f"{where} has no name (NULL)")
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LibraryMetadataError(f"{where}: name is not UTF-8 at byte {err.start}: {raw[:40]!r}") from None
    if not name.isidentifier():
        raise LibraryMetadataError(f"{where}: name {name!r:.60} is not a Python identifier (mx.nd.<name> must work)")
    if name in seen:
        raise LibraryMetadataError(f"{where}: name {name!r} is declared twice in the library")
    return name

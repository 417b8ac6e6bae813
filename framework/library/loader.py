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

from ..symbol.backends import list_backends, register_backend
from .abi import (
    LIBRARY_VERSION,
    LIBRARY_VERSION_1_9,
    MAX_OPERATORS,
    MXNET_VERSION,
    Library,
    LibraryError,
    LibraryMetadataError,
)
from .adapter import LibraryOp
from .partitioner import LibraryPartitioner
from .passes import LibraryPass

#: What each ABI version's initialize(version) receives: the older header gets its own ABI
#: version (as seed 003 shows), the 1.9.1 API gets MXNet's version number.
INITIALIZE_VERSION = {LIBRARY_VERSION: LIBRARY_VERSION, LIBRARY_VERSION_1_9: MXNET_VERSION}

_libraries: dict[str, Library] = {}
_load_lock = threading.Lock()


def loaded_libraries() -> list[Library]:
    """The libraries loaded so far, in load order."""
    return list(_libraries.values())


def _log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"[{stamp}] framework/library/loader.py: {message}", file=sys.stderr)


def load(path: str, verbose: bool = True) -> Library:
    """Load an extension library and register its operators, passes and partitioners (``mx.library.load``).

    Detects the API the library was built with from ``_opVersion()``: :data:`LIBRARY_VERSION`
    (the older ``lib_api.h``) or :data:`LIBRARY_VERSION_1_9` (``mxnet/lib_api.h`` + ``lib_api.cc``),
    calls its ``initialize(version)`` (1.9.1-API libraries receive 10901), then registers every
    operator it declared, and, for the 1.9.1 API, its graph passes and partitioners as
    ``optimize_for`` backends (:mod:`framework.symbol.backends`). Loading the same
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
                'build it with #include "mxnet/lib_api.h" plus framework/include/lib_api.cc, or with the older '
                '#include "lib_api.h", from framework/include)'
            )
        handle._opVersion.argtypes, handle._opVersion.restype = [], ctypes.c_int
        version = int(handle._opVersion())
        if version not in INITIALIZE_VERSION:
            raise LibraryError(
                f"load: library {os.path.basename(path)} was built against extension API version {version}, but this "
                f"MXLab speaks versions {LIBRARY_VERSION} (framework/include/lib_api.h) and {LIBRARY_VERSION_1_9} "
                "(framework/include/mxnet/lib_api.h + lib_api.cc); rebuild it against this MXLab's framework/include"
            )
        lib = Library(path, handle, version)
        init_version = INITIALIZE_VERSION[version]
        lib.check(lib._opInitialize(init_version), None, f"initialize({init_version})")
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
        passes, partitioners = _graph_components(lib) if lib.api_1_9 else ([], [])
        if verbose:
            _log(f"Found {len(partitioners)} partitioners in library")
            for part in partitioners:
                strategies = ", ".join(f"{s.name} -> {s.op_name}" for s in part.strategies)
                _log(f"\tPartitioner[{part.index}] {part.name} ({strategies})")
            _log(f"Found {len(passes)} graph passes in library")
            for graph_pass in passes:
                _log(f"\tGraph Pass[{graph_pass.index}] {graph_pass.name}")
        for op in ops:  # check everything before registering anything
            op.validate()
        for part in partitioners:
            part.validate()
        for component in [*passes, *partitioners]:
            if component.name in list_backends():
                raise LibraryError(
                    f"load: library {lib.name}: backend {component.name!r} is already registered "
                    f"({list_backends()[component.name]}); rename it in the library"
                )
        for op in ops:
            op.register()
            lib.operators.append(op.name)
            lib.ops[op.name] = op
        for graph_pass in passes:
            register_backend(graph_pass.name, "graph pass", f"library {lib.name}", graph_pass)
            lib.passes.append(graph_pass.name)
        for part in partitioners:
            register_backend(part.name, "partitioner", f"library {lib.name}", part)
            lib.partitioners.append(part.name)
        _libraries[path] = lib
        return lib


def _graph_components(lib: Library) -> tuple[list[LibraryPass], list[LibraryPartitioner]]:
    """The graph passes and partitioners a 1.9.1-API library registered, names checked."""
    passes = []
    for index in range(int(lib._passRegSize())):
        passes.append(LibraryPass(lib, index, _component_name(lib, lib._passRegGetName(index), "graph pass", index)))
    partitioners = []
    for index in range(int(lib._partRegSize())):
        name = _component_name(lib, lib._partRegGetName(index), "partitioner", index)
        partitioners.append(LibraryPartitioner(lib, index, name))
    names = [c.name for c in [*passes, *partitioners]]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise LibraryMetadataError(f"load: library {lib.name}: backend name(s) {twice} declared twice")
    return passes, partitioners


def _component_name(lib: Library, raw: bytes | None, what: str, index: int) -> str:
    if raw is None:
        raise LibraryMetadataError(f"load: library {lib.name}: {what} {index} has no name (NULL)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise LibraryMetadataError(
            f"load: library {lib.name}: {what} {index}: name is not UTF-8: {raw[:40]!r}"
        ) from None


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

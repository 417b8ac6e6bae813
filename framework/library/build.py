"""Compiling an extension library with g++: the documented one-line command, run from Python.

A 1.9.1-API library is its own source plus ``framework/include/lib_api.cc``, compiled with
``-I framework/include``::

    g++ -shared -fPIC -std=c++17 -I <include> mylib.cc <include>/lib_api.cc -o libmylib.so

:func:`build` runs exactly that (tests, the server's extension-library scenario, a learner's
notebook). The output goes to the user's cache folder (``$XDG_CACHE_HOME/mxlab/extension-libs``,
by default ``~/.cache/...``; not a shared temporary folder, where another user could plant a
library) under a name made from a hash of the sources and flags, so building the same thing twice
reuses the file, and loading it twice returns the library already loaded (``mx.library.load``
keys libraries by path).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from .abi import LibraryError

COMMAND = ("g++", "-shared", "-fPIC", "-std=c++17")


def include_dir() -> Path:
    """framework/include: mxnet/lib_api.h, lib_api.cc and the older lib_api.h."""
    return Path(__file__).resolve().parents[1] / "include"


def command(source: Path, output: Path, flags: Sequence[str] = ()) -> list[str]:
    """The g++ command line that builds ``source`` (1.9.1 API) into ``output``."""
    inc = include_dir()
    return [*COMMAND, *flags, "-I", str(inc), str(source), str(inc / "lib_api.cc"), "-o", str(output)]


def default_cache_dir() -> Path:
    """Where :func:`build` keeps compiled libraries unless told otherwise."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mxlab" / "extension-libs"


def build(source: str | os.PathLike, flags: Sequence[str] = (), cache_dir: str | os.PathLike | None = None) -> Path:
    """Compile ``source`` into a shared library (cached by content); returns the ``.so`` path.

    ``flags`` are extra g++ arguments (``-DNAME=value``, ``-O2``). Raises LibraryError when g++
    is missing or the compilation fails (with g++'s messages).
    """
    source = Path(source).resolve()
    if not source.is_file():
        raise LibraryError(f"build: source file {str(source)!r} does not exist")
    compiler = shutil.which(COMMAND[0])
    if compiler is None:
        raise LibraryError("build: g++ is not installed (needed to compile extension libraries)")
    digest = hashlib.sha256()
    for part in (source, include_dir() / "lib_api.cc", include_dir() / "mxnet" / "lib_api.h"):
        digest.update(part.read_bytes())
    digest.update("\0".join(flags).encode())
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    output = folder / f"lib{source.stem}-{digest.hexdigest()[:16]}.so"
    if output.is_file():
        return output
    partial = output.with_suffix(f".{os.getpid()}.tmp")
    done = subprocess.run(command(source, partial, flags), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise LibraryError(f"build: g++ failed for {source.name}:\n{done.stderr.strip()[-4000:]}")
    os.replace(partial, output)  # atomic: a concurrent build of the same source writes the same bytes
    return output

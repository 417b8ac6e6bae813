"""``mx.libinfo``: where the headers are, what would be the core library, and which MXNet version MXLab speaks.

MXLab has no compiled core: ``find_lib_path()`` finds a ``libmxnet`` only where the user
points ``MXNET_LIBRARY_PATH`` at one (or one lies on the usual search path), and otherwise
says that MXLab has none. ``find_include_path()`` returns ``framework/include``, which holds
the headers extension libraries for MXLab include: ``mxnet/lib_api.h`` with ``lib_api.cc``
(MXNet 1.9.1's API) and the older single header ``lib_api.h``.

``__version__`` is the version of MXNet's API that MXLab reproduces ("1.9.1"): scripts that
compare ``mx.__version__`` to choose a code path take MXNet 1.9.1's. MXLab's own release is
``MXLAB_VERSION`` (docs/differences.md).
"""

from __future__ import annotations

import logging
import os
import platform

from .base import MXLabError

__version__ = "1.9.1"
MXLAB_VERSION = "0.1.0"

_HERE = os.path.dirname(os.path.abspath(__file__))


class LibraryNotFoundError(MXLabError, RuntimeError):
    """No core shared library exists: MXLab is Python on NumPy/CuPy."""


def _from_environment(variable: str, check: str) -> str | None:
    """An absolute, existing path from ``variable`` (a warning, not an error, otherwise: as MXNet)."""
    value = os.environ.get(variable)
    if not value:
        return None
    exists = os.path.isfile(value) if check == "file" else os.path.isdir(value)
    if not exists:
        logging.warning("%s '%s' doesn't exist", variable, value)
        return None
    if not os.path.isabs(value):
        logging.warning("%s should be an absolute path, instead of: %s", variable, value)
        return None
    return value


def _search_directories() -> list[str]:
    """Where MXNet looks for its library files: ``LD_LIBRARY_PATH``, then the package and its ``lib``."""
    directories = [p.strip() for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p.strip()]
    return [*directories, _HERE, os.path.join(_HERE, "lib")]


def find_lib_path(prefix: str = "libmxnet") -> list[str]:
    """Paths of the shared library ``prefix`` (``MXNET_LIBRARY_PATH``, then the search path).

    Raises LibraryNotFoundError listing the candidates when none exists, which is the normal
    case: MXLab computes in Python and needs no ``libmxnet``.
    """
    from_env = _from_environment("MXNET_LIBRARY_PATH", "file")
    if from_env:
        return [from_env]
    suffixes = {"Windows": (".dll",), "Darwin": (".dylib", ".so")}.get(platform.system(), (".so",))
    candidates = [os.path.join(d, prefix + suffix) for suffix in suffixes for d in _search_directories()]
    found = [path for path in candidates if os.path.isfile(path)]
    if not found:
        raise LibraryNotFoundError(
            f"Cannot find the {prefix} library: MXLab is Python on NumPy/CuPy and has no compiled core "
            "(C operator libraries compile against mx.libinfo.find_include_path() alone). Candidates:\n"
            + "\n".join(candidates)
        )
    return found


def find_conf_path(prefix: str = "tvmop") -> list[str]:
    """Paths of ``<prefix>.conf``, the configuration of MXNet's TVM-compiled operators, where one exists.

    MXLab has no TVM operators and ships no such file, so this raises LibraryNotFoundError
    listing the candidates unless one was put on the search path.
    """
    candidates = [os.path.join(d, prefix + ".conf") for d in _search_directories()]
    found = [path for path in candidates if os.path.isfile(path)]
    if not found:
        raise LibraryNotFoundError(
            f"Cannot find {prefix}.conf: it configures MXNet's TVM-compiled operators, which MXLab does not "
            "have (its operators are NumPy/CuPy code). Candidates:\n" + "\n".join(candidates)
        )
    return found


def find_include_path() -> str:
    """The folder of ``mxnet/lib_api.h``, ``lib_api.cc``, ``lib_api.h`` (or ``MXNET_INCLUDE_PATH``), ending in /."""
    from_env = _from_environment("MXNET_INCLUDE_PATH", "dir")
    if from_env:
        return from_env
    return os.path.join(_HERE, "include", "")


__all__ = [
    "LibraryNotFoundError",
    "MXLAB_VERSION",
    "__version__",
    "find_conf_path",
    "find_include_path",
    "find_lib_path",
]

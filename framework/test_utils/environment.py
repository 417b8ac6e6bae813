"""The test's surroundings: environment variables, stderr, retries, expected exceptions, GPUs.

MXLab reads its settings (``MXLAB_*`` and their ``MXNET_*`` aliases, framework/config.py)
when it uses them, not once at import; so changing ``os.environ`` inside
:func:`environment` is all it takes for the code in the ``with`` block to see the change.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..backend import num_gpus
from ..context import current_context
from ..engine import Engine
from .tolerances import HelperArgumentError


def _set_environ(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(value)


@contextlib.contextmanager
def environment(*args: Any) -> Iterator[None]:
    """``with environment(name, value):`` or ``with environment({name: value, ...}):``.

    Sets the variables (``None`` unsets one) for the block and restores every one of them
    afterwards, also when the block raises. Pending engine work is finished before the
    restore, so no operation pushed in the block runs under the old settings.
    """
    if len(args) == 1 and isinstance(args[0], dict):
        values = dict(args[0])
    elif len(args) == 2:
        values = {args[0]: args[1]}
    else:
        raise HelperArgumentError("environment: pass (name, value) or one dict {name: value}")
    for name in values:
        if not isinstance(name, str):
            raise HelperArgumentError(f"environment: variable names must be strings, got {name!r}")
    saved = {name: os.environ.get(name) for name in values}
    _set_environ(values)
    try:
        yield
    finally:
        Engine.get().wait_for_all()
        _set_environ(saved)


def set_env_var(key: str, val: str, default_val: str = "") -> str:
    """Set environment variable ``key`` to ``val``; returns its previous value (``default_val`` if unset)."""
    previous = os.environ.get(key, default_val)
    os.environ[key] = str(val)
    return previous


@contextlib.contextmanager
def discard_stderr() -> Iterator[None]:
    """Silence everything written to file descriptor 2 in the block (C libraries included)."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # pytest's capture: not a real file descriptor
        with contextlib.redirect_stderr(open(os.devnull, "w")) as sink:
            try:
                yield
            finally:
                sink.close()
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as sink:
            os.dup2(sink.fileno(), fd)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, fd)
    finally:
        os.close(saved)


def assert_exception(f: Callable[..., Any], exception_type: type[BaseException], *args: Any, **kwargs: Any) -> None:
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)!s} did not raise {exception_type.__name__}")


def retry(n: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: rerun a stochastic test up to ``n`` times; it fails only if every run fails."""
    if not isinstance(n, int) or n <= 0:
        raise HelperArgumentError(f"retry: n must be a positive int, got {n!r}")

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for attempt in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
                    Engine.get().wait_for_all()
            return None

        return wrapper

    return decorate


def list_gpus() -> range:
    """The ids of the GPUs CuPy sees: ``range(num_gpus)``."""
    return range(num_gpus())


def is_cd_run() -> bool:
    """Whether the tests run in MXNet's continuous-delivery pipeline (``CD_JOB=1``)."""
    return os.environ.get("CD_JOB", "0") == "1"


def is_aarch64_run() -> bool:
    """Whether this machine is 64-bit ARM."""
    return platform.machine() == "aarch64"


def has_tvm_ops() -> bool:
    """Whether TVM-generated operators exist: never in MXLab (``mx.runtime.Features()["TVM_OP"]`` is off)."""
    return False


def is_op_runnable() -> bool:
    """Whether operators can run on the current context. MXNet asks about its TVM operators on
    GPUs; MXLab has none, so every context that exists can run every operator."""
    ctx = current_context()
    return ctx.device_type == "cpu" or ctx.device_id < num_gpus()


def get_im2rec_path(home_env: str = "MXNET_HOME") -> str:
    """The path of the im2rec tool: ``$home_env/tools/im2rec.py`` if set and present, else MXLab's own
    (``python -m framework.tools.im2rec``)."""
    home = os.environ.get(home_env)
    if home:
        candidate = Path(home) / "tools" / "im2rec.py"
        if candidate.is_file():
            return str(candidate)
    own = Path(__file__).resolve().parents[1] / "tools" / "im2rec.py"
    if own.is_file():
        return str(own)
    raise OSError(f"get_im2rec_path: no tools/im2rec.py under ${home_env} ({home!r}) nor at {own}")


__all__ = [
    "assert_exception",
    "discard_stderr",
    "environment",
    "get_im2rec_path",
    "has_tvm_ops",
    "is_aarch64_run",
    "is_cd_run",
    "is_op_runnable",
    "list_gpus",
    "retry",
    "set_env_var",
]

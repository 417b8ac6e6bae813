"""The dependency engine (seed 000, "Execution Engine"): ``mx.engine``.

``Engine.get()`` returns the process-wide engine chosen by ``MXLAB_ENGINE_TYPE``:
``NaiveEngine`` (synchronous), ``ThreadedEngine`` (one shared pool) or
``ThreadedEnginePerDevice`` (the default: pools per device). ``create`` builds a separate
instance, which is how tests and demos compare engine types side by side.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

from .. import config
from ..base import EngineError
from .base import Completion, Engine
from .naive import NaiveEngine
from .operation import FnProperty, Operation, OperatorHandle, RunContext
from .per_device import ThreadedEnginePerDevice
from .threaded import ThreadedEngine
from .var import Var

#: Every engine type by name: the one list that tests, benchmarks and the server derive theirs from.
ENGINE_TYPES: dict[str, type[Engine]] = {
    engine_class.type_name: engine_class for engine_class in (NaiveEngine, ThreadedEngine, ThreadedEnginePerDevice)
}
if tuple(ENGINE_TYPES) != config.ENGINE_TYPE_NAMES:  # the names MXLAB_ENGINE_TYPE accepts
    raise ImportError(f"engine classes {tuple(ENGINE_TYPES)} differ from config.ENGINE_TYPE_NAMES")


def create(
    engine_type: str | None = None, num_workers: int | None = None, var_class: type[Var] | None = None
) -> Engine:
    """A new engine of ``engine_type`` (default: ``MXLAB_ENGINE_TYPE`` or the per-device one).

    ``var_class`` replaces the variable queue of ``var.py`` (same interface) for this engine.
    """
    engine = _create(engine_type, num_workers)
    if var_class is not None:
        if not isinstance(var_class, type):
            raise EngineError(f"var_class must be a class with Var's interface, got {var_class!r}")
        engine.var_class = var_class
    return engine


def _create(engine_type: str | None, num_workers: int | None) -> Engine:
    if engine_type is None:
        engine_type = config.get("MXLAB_ENGINE_TYPE")
    cls = ENGINE_TYPES.get(engine_type)
    if cls is None:
        raise EngineError(f"unknown engine type {engine_type!r}; choose one of {', '.join(ENGINE_TYPES)}")
    if cls is NaiveEngine:
        if num_workers not in (None, 1):
            raise EngineError(f"NaiveEngine runs in the pushing thread; num_workers={num_workers} makes no sense")
        return NaiveEngine()
    if num_workers is not None and (
        isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1
    ):
        raise EngineError(f"num_workers must be an int >= 1, got {num_workers!r}")
    # NaiveEngine is handled above; every other engine type takes a worker count, which the
    # table's common type (type[Engine]) cannot express.
    return cls(num_workers)  # type: ignore[call-arg]


def limit_blas_threads(count: int) -> None:
    """Cap the threads of the BLAS that NumPy's matrix products call into (0: leave it as found).

    The engine's CPU workers run operators side by side, and each BLAS call may start threads of
    its own (OpenBLAS: one per core). Two workers with two BLAS threads each put four busy threads
    on two cores, and OpenBLAS's idle threads spin while they wait, so on a loaded machine a
    matrix product can take several times longer. The limit is process-wide (NumPy code of your
    own shares it), which is why it is a setting and not a default.
    """
    if count:
        threadpool_limits(limits=count, user_api="blas")


def _process_engine() -> Engine:
    """The process-wide engine, built once by ``Engine.get()``; ``MXLAB_BLAS_THREADS`` applies here."""
    limit_blas_threads(config.get("MXLAB_BLAS_THREADS"))
    return create()


Engine.default_factory = _process_engine  # what Engine.get() calls once for the process-wide engine


@contextmanager
def use(engine: Engine) -> Iterator[Engine]:
    """Make ``engine`` the process-wide engine inside the block (restores the old one)."""
    previous = Engine.set(engine)
    try:
        yield engine
    finally:
        Engine.set(previous)


def bulk(size: int) -> object:
    """``with mx.engine.bulk(n):`` fuses up to n pushes of the default engine."""
    return Engine.get().bulk(size)


def set_bulk_size(size: int) -> int:
    """Set the default engine's bulk size; returns the previous one (MXNet's API)."""
    return Engine.get().set_bulk_size(size)


__all__ = [
    "ENGINE_TYPES",
    "Completion",
    "Engine",
    "FnProperty",
    "NaiveEngine",
    "Operation",
    "OperatorHandle",
    "RunContext",
    "ThreadedEngine",
    "ThreadedEnginePerDevice",
    "Var",
    "bulk",
    "create",
    "set_bulk_size",
    "use",
]

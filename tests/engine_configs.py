"""The (engine type, worker count) pairs engine-level behaviour is checked on.

A plain module (not ``conftest``): several test directories have a conftest of their own,
so ``from conftest import ...`` would depend on which one pytest imported first.
"""

from __future__ import annotations

from framework.engine import ENGINE_TYPES, NaiveEngine

#: Worker counts every threaded engine is checked with (NaiveEngine has none: it runs in the pusher).
WORKER_COUNTS = (1, 2, 4)

# (engine type, worker count) pairs every engine-level behaviour is checked on: every engine type.
ENGINE_CONFIGS = [
    (name, workers)
    for name, engine_class in ENGINE_TYPES.items()
    for workers in ((None,) if engine_class is NaiveEngine else WORKER_COUNTS)
]
THREADED_CONFIGS = [c for c in ENGINE_CONFIGS if ENGINE_TYPES[c[0]] is not NaiveEngine]


def config_id(config: tuple[str, int | None]) -> str:
    kind, workers = config
    return kind if workers is None else f"{kind}-{workers}w"

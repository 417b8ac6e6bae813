"""The (engine type, worker count) pairs engine-level behaviour is checked on.

A plain module (not ``conftest``): several test directories have a conftest of their own,
so ``from conftest import ...`` would depend on which one pytest imported first.
"""

from __future__ import annotations

# (engine type, worker count) pairs every engine-level behaviour is checked on.
ENGINE_CONFIGS = [
    ("NaiveEngine", None),
    ("ThreadedEngine", 1),
    ("ThreadedEngine", 2),
    ("ThreadedEngine", 4),
    ("ThreadedEnginePerDevice", 1),
    ("ThreadedEnginePerDevice", 2),
    ("ThreadedEnginePerDevice", 4),
]
THREADED_CONFIGS = [c for c in ENGINE_CONFIGS if c[0] != "NaiveEngine"]


def config_id(config: tuple[str, int | None]) -> str:
    kind, workers = config
    return kind if workers is None else f"{kind}-{workers}w"

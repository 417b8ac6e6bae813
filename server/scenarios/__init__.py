"""Scenarios: small programs that put one mechanism of the framework on show.

Importing this package registers every scenario in :data:`base.REGISTRY`, in the order the
scenario picker lists them: the registry is the one list of scenario names (the API serves
it, the web UI and the tests read it). :data:`tutorials.TUTORIALS` says which tutorial
links to which of them.
"""

from __future__ import annotations

import importlib

from .base import PANELS, REGISTRY, DirectContext, RunContext, Scenario, ScenarioParams, get, register
from .tutorials import TUTORIALS, Tutorial

SCENARIO_MODULES = (
    "engine_basics",
    "rw_hazards",
    "memory_planning",
    "train_mlp",
    "kvstore_parallel",
    "hybridize",
    "extension_library",
)

for _module in SCENARIO_MODULES:
    importlib.import_module(f"{__name__}.{_module}")

__all__ = [
    "PANELS",
    "REGISTRY",
    "TUTORIALS",
    "DirectContext",
    "RunContext",
    "Scenario",
    "ScenarioParams",
    "Tutorial",
    "get",
    "register",
]

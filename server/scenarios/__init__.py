"""Scenarios: small programs that put one mechanism of the framework on show.

Importing this package registers every scenario in :data:`base.REGISTRY`, in the order the
scenario picker lists them.
"""

from __future__ import annotations

import importlib

from .base import REGISTRY, DirectContext, RunContext, Scenario, ScenarioParams, get, register

SCENARIO_MODULES = ("engine_basics", "rw_hazards", "memory_planning", "train_mlp", "kvstore_parallel")

for _module in SCENARIO_MODULES:
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["REGISTRY", "DirectContext", "RunContext", "Scenario", "ScenarioParams", "get", "register"]

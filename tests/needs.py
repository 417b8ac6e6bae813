"""What a test needs from the machine, checked in one place: a program, a Python package, an opt-in peer.

The rule: on a learner's machine a missing tool skips the test and says which tool and why, so the
rest of the suite still runs. Under CI (environment variable ``CI`` set to ``true`` or ``1``) the
machine is meant to have everything the set-up installs, so a missing tool fails the test instead of
hiding behind a skip. Optional extras that no CI machine is promised (CUDA's ``nvcc``, a real MXNet
interpreter named by ``MXNET_PYTHON``) always skip.

Tests call these functions instead of ``shutil.which`` + ``pytest.skip`` so the rule cannot drift::

    dot = needs_tool("dot", "renders the graph to SVG")
    ray = needs_module("ray", "runs the distributed KVStore")
"""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType
from typing import NoReturn

import pytest

CI_VALUES = ("true", "1")


def in_ci() -> bool:
    """True when the suite runs under CI (``CI=true`` or ``CI=1``), where every required tool must exist."""
    return os.environ.get("CI", "").strip().lower() in CI_VALUES


def missing(reason: str, *, required_in_ci: bool = True) -> NoReturn:
    """Skip the running test with ``reason``; fail it instead under CI when the tool is required there.

    Also usable at module level (a whole test file that needs the tool): there a failure is a collection error.
    """
    if required_in_ci and in_ci():
        pytest.fail(f"CI={os.environ['CI']} but {reason}", pytrace=False)
    # Reported at the test's own location, as a skip marker's would be, not at this line (pytest >= 7).
    raise pytest.skip.Exception(reason, allow_module_level=True, _use_item_location=True)


def needs_tool(name: str, why: str, *, required_in_ci: bool = True) -> str:
    """The full path of program ``name`` on PATH; skips (or fails under CI) naming it and ``why`` otherwise."""
    path = shutil.which(name)
    if path is None:
        missing(f"{name} is not installed: {why}", required_in_ci=required_in_ci)
    return path


def needs_module(name: str, why: str, *, required_in_ci: bool = True) -> ModuleType:
    """Import ``name``; skips (or fails under CI) naming the package and ``why`` when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        missing(f"the Python package {name} is not installed ({err}): {why}", required_in_ci=required_in_ci)


def needs_env_path(variable: str, why: str) -> str:
    """The value of an opt-in environment variable naming an external program (never required, not even in CI)."""
    value = os.environ.get(variable, "")
    if not value:
        missing(f"set {variable} to run this test: {why}", required_in_ci=False)
    return value

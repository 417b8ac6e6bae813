"""Every registered operator is exercised by the operator tests (as MXNet checks its tutorials).

A forward operator must be named in a test file under tests/operator or tests/ndarray that
calls ``check_req``; one with a (non-zero) gradient must also be named in a file that calls
``check_imperative_gradient`` (or the symbolic ``check_numeric_gradient``). Backward operators
are covered through their forward operator.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import framework  # noqa: F401 - registers the built-in operators
from framework.operator import registry
from framework.operator.grad import no_gradient, zero_grad

TESTS = Path(__file__).resolve().parents[1]


def _sources(marker: str) -> str:
    files = list((TESTS / "operator").glob("test_*.py")) + list((TESTS / "ndarray").glob("test_*.py"))
    return "\n".join(text for f in files if marker in (text := f.read_text()))


def _named(name: str, text: str) -> bool:
    return re.search(rf"""["']{re.escape(name)}["']""", text) is not None or f"mx.nd.{name}(" in text


def _builtin_names() -> set[str]:
    """Operators registered by importing MXLab alone (a fresh interpreter: other tests
    register operators of their own, and libraries add theirs at run time)."""
    code = "import framework; from framework.operator import registry; print(*registry.list_operators())"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return set(result.stdout.split())


def _forward_operators() -> list[str]:
    builtin = _builtin_names()
    names = []
    for name in registry.list_operators():
        if name not in builtin:
            continue
        op = registry.get(name)
        if op.name != name or op.is_backward or name.startswith("_test_"):
            continue
        if op.subgraph_exec is not None:  # a whole graph (the CachedOp): its nodes are the operators checked
            continue
        names.append(name)
    return names


def test_every_operator_is_checked_for_req_add_and_null():
    text = _sources("check_req(")
    missing = [n for n in _forward_operators() if not any(_named(a, text) for a in [n, *registry.aliases_of(n)])]
    assert not missing, f"operators never passed to check_req in the tests: {missing}"


def test_every_differentiable_operator_has_a_numeric_gradient_test():
    text = _sources("check_imperative_gradient(") + "\n" + _sources("check_numeric_gradient(")
    missing = [
        n
        for n in _forward_operators()
        if registry.get(n).gradient not in (None, zero_grad, no_gradient)
        and not any(_named(a, text) for a in [n, *registry.aliases_of(n)])
    ]
    assert not missing, f"differentiable operators without a numeric gradient test: {missing}"

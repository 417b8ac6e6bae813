"""The one rule for tests that need a tool: skip locally naming what is missing, fail under CI."""

from __future__ import annotations

import pytest
from needs import in_ci, missing, needs_env_path, needs_module, needs_tool

ABSENT_TOOL = "mxlab-no-such-program"
ABSENT_MODULE = "mxlab_no_such_package"


@pytest.mark.parametrize(
    ("value", "expected"), [("true", True), ("TRUE", True), ("1", True), ("", False), ("0", False)]
)
def test_ci_is_recognised_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("CI", value)
    assert in_ci() is expected


def test_a_present_tool_or_module_is_returned(monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert needs_tool("python3", "runs scripts").endswith("python3")
    assert needs_module("json", "parses JSON").loads("[1]") == [1]


def test_a_missing_tool_skips_locally_naming_it_and_why(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"{ABSENT_TOOL} is not installed: draws the graph"):
        needs_tool(ABSENT_TOOL, "draws the graph")
    with pytest.raises(pytest.skip.Exception, match=f"Python package {ABSENT_MODULE} is not installed"):
        needs_module(ABSENT_MODULE, "talks to the cluster")


@pytest.mark.parametrize("value", ["true", "1"])
def test_a_missing_tool_fails_under_ci(monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match=f"CI={value} but {ABSENT_TOOL} is not installed"):
        needs_tool(ABSENT_TOOL, "draws the graph")
    with pytest.raises(pytest.fail.Exception, match=f"CI={value} but the Python package {ABSENT_MODULE}"):
        needs_module(ABSENT_MODULE, "talks to the cluster")


def test_optional_extras_skip_even_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.skip.Exception, match=f"{ABSENT_TOOL} is not installed"):
        needs_tool(ABSENT_TOOL, "only where CUDA is", required_in_ci=False)
    with pytest.raises(pytest.skip.Exception, match="reason given"):
        missing("reason given", required_in_ci=False)
    monkeypatch.delenv("MXLAB_TEST_PEER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="set MXLAB_TEST_PEER to run this test: names a peer"):
        needs_env_path("MXLAB_TEST_PEER", "names a peer")
    monkeypatch.setenv("MXLAB_TEST_PEER", "/opt/peer/python")
    assert needs_env_path("MXLAB_TEST_PEER", "names a peer") == "/opt/peer/python"

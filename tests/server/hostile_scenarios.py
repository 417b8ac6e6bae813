"""Scenarios that misbehave on purpose, for the server's isolation tests (never registered).

They are passed to a test's own RunManager; the worker process imports this module by
name, which works because pytest puts this directory on ``sys.path`` and a forkserver
child receives the parent's ``sys.path``.
"""

from __future__ import annotations

import ctypes
import os
import time
from typing import Any

import numpy as np
from pydantic import Field

import framework as mx
from framework import events
from server.scenarios.base import RunContext, Scenario, ScenarioParams

GATE_TIMEOUT_S = 30.0  # a gated flood that is never opened fails instead of hanging its test


class NoParams(ScenarioParams):
    """No parameters."""


class FloodParams(ScenarioParams):
    events: int = Field(1000, ge=0, le=2_000_000)
    per_ms: int = Field(0, ge=0, description="events per millisecond at most (0: as fast as possible)")
    pad: int = Field(0, ge=0, le=1000, description="characters of a per-event note (0: no note)")
    gate: str = Field("", max_length=4096, description="a file to wait for before flooding (empty: start at once)")


class SleepParams(ScenarioParams):
    seconds: float = Field(30.0, ge=0, le=600)


def crash(params: NoParams, ctx: RunContext) -> dict[str, Any]:
    events.publish("train.metric", epoch=0, batch=0, name="before_crash", value=1.0)
    time.sleep(0.3)  # the forwarder sends every 50 ms: this event leaves before the crash
    os._exit(3)


def segfault(params: NoParams, ctx: RunContext) -> dict[str, Any]:
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return {}


def boom(params: NoParams, ctx: RunContext) -> dict[str, Any]:
    raise RuntimeError("the scenario failed on purpose")


def not_a_dict(params: NoParams, ctx: RunContext) -> Any:
    return [1, 2, 3]


def hang(params: SleepParams, ctx: RunContext) -> dict[str, Any]:
    time.sleep(params.seconds)
    return {"slept": params.seconds}


def _wait_for_gate(path: str, timeout_s: float = GATE_TIMEOUT_S) -> None:
    """Return once the file ``path`` exists, so that a test can attach its clients first."""
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"flood: the gate file {path!r} did not appear within {timeout_s} s")
        time.sleep(0.01)


def flood(params: FloodParams, ctx: RunContext) -> dict[str, Any]:
    """``events`` train.metric events as fast as the bus takes them (plus a graph and a log line),
    once the ``gate`` file exists if one is named."""
    ctx.set_graph("digraph flood { a -> b; }")
    ctx.log("flooding")
    if params.gate:
        _wait_for_gate(params.gate)
    start = time.perf_counter()
    for i in range(params.events):
        note = {"note": f"{i:0{params.pad}d}"} if params.pad else {}  # differs per event: not sent once per frame
        events.publish("train.metric", epoch=0, batch=i, name="flood", value=float(i), **note)
        if params.per_ms and i % params.per_ms == 0:
            ahead = i / params.per_ms / 1000 - (time.perf_counter() - start)
            if ahead > 0:
                time.sleep(ahead)
    return {"published": params.events, "nan": float("nan"), "tuple": (1, 2), "context": mx.cpu(0)}


def monitor_nan(params: NoParams, ctx: RunContext) -> dict[str, Any]:
    """An ``mx.mon.Monitor`` over a diverged layer: its statistics are NaN, +inf and -inf."""

    def diverged(x: mx.nd.NDArray) -> mx.nd.NDArray:
        # one NaN for the two-element arrays (fc_output, fc_bias), three values for the others
        return mx.nd.array([np.nan]) if x.size == 2 else mx.nd.array([np.nan, np.inf, -np.inf])

    exe = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc").simple_bind(mx.cpu(), data=(1, 3))
    monitor = mx.mon.Monitor(1, stat_func=diverged)
    monitor.install(exe)
    lines = []
    for _ in range(2):
        monitor.tic()
        exe.forward()
        lines += monitor.toc()
    return {"lines": len(lines)}


def _scenario(name: str, run: Any, params: type[ScenarioParams] = NoParams) -> Scenario:
    return Scenario(name=name, title=name, description=f"test scenario {name}", params=params, run=run)


HOSTILE = {
    s.name: s
    for s in (
        _scenario("crash", crash),
        _scenario("segfault", segfault),
        _scenario("boom", boom),
        _scenario("not_a_dict", not_a_dict),
        _scenario("hang", hang, SleepParams),
        _scenario("flood", flood, FloodParams),
        _scenario("monitor_nan", monitor_nan),
    )
}

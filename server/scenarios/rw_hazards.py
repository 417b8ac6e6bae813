"""Scenario "read/write hazards": many readers of one variable, and the writes between them.

The program works on one variable ``v``: a write, then ``readers`` reads, then a write,
then ``readers`` reads, ... for ``phases`` phases. Each read writes its own output
variable, so reads of the same phase share nothing they mutate. The engine's contract
(seed 000) says:

* reads of ``v`` between two writes may run at the same time (up to the worker count);
* a write waits for every earlier read and write of ``v`` (write-after-read,
  write-after-write), and the reads after it wait for it (read-after-write).

The result lists, per phase, which reads overlapped in time, and checks from the recorded
events that no write of ``v`` overlapped any other operation on ``v``.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from pydantic import Field

import framework as mx
from framework import events
from framework.engine import create

from .base import RunContext, Scenario, ScenarioParams, register
from .engine_basics import EngineType


class RwHazardsParams(ScenarioParams):
    """Parameters of the read/write hazards scenario."""

    readers: int = Field(3, ge=1, le=8, description="reads of the variable between two writes")
    phases: int = Field(3, ge=1, le=8, description="how many write-then-reads phases")
    op_ms: float = Field(15.0, ge=0, le=200, description="how long each operation sleeps, in ms")
    workers: int = Field(2, ge=1, le=8, description="worker threads per pool (NaiveEngine has none)")
    engine_type: EngineType = Field("ThreadedEnginePerDevice", description="which engine runs the program")


def _sleep(op_ms: float):
    def kernel(run_ctx: object) -> None:
        time.sleep(op_ms / 1000.0)

    return kernel


def push_program(engine: mx.engine.Engine, params: RwHazardsParams) -> None:
    """W1, R1.1 .. R1.n, W2, R2.1 .. R2.n, ...: the program the scenario shows."""
    v = engine.new_variable("v")
    for phase in range(1, params.phases + 1):
        engine.push_sync(_sleep(params.op_ms), mx.cpu(), mutable_vars=[v], name=f"W{phase}")
        for reader in range(1, params.readers + 1):
            out = engine.new_variable(f"out{phase}.{reader}")
            engine.push_sync(
                _sleep(params.op_ms), mx.cpu(), const_vars=[v], mutable_vars=[out], name=f"R{phase}.{reader}"
            )


def _spans(recorded: list[dict]) -> dict[str, tuple[int, int]]:
    """Operation name -> (start, end) in ns, from engine.push/start/end events."""
    names = {e["op"]: e["name"] for e in recorded if e["kind"] == "engine.push"}
    starts = {e["op"]: e["t_ns"] for e in recorded if e["kind"] == "engine.start"}
    ends = {e["op"]: e["t_ns"] for e in recorded if e["kind"] == "engine.end"}
    return {names[op]: (starts[op], ends[op]) for op in names if op in starts and op in ends}


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def run(params: RwHazardsParams, ctx: RunContext) -> dict[str, Any]:
    """Push the program on a fresh engine, then judge the recorded timeline."""
    engine = create(params.engine_type, None if params.engine_type == "NaiveEngine" else params.workers)
    try:
        with events.record(("engine.push", "engine.start", "engine.end")) as recorder:
            start = time.perf_counter()
            push_program(engine, params)
            engine.wait_for_all()
            seconds = time.perf_counter() - start
    finally:
        engine.stop()
    spans = _spans(recorder.events)
    phases = []
    for phase in range(1, params.phases + 1):
        reads = [f"R{phase}.{r}" for r in range(1, params.readers + 1)]
        pairs = [[a, b] for a, b in itertools.combinations(reads, 2) if _overlap(spans[a], spans[b])]
        phases.append({"phase": phase, "write": f"W{phase}", "reads": reads, "overlapping_reads": pairs})
    writes = [f"W{p}" for p in range(1, params.phases + 1)]
    violations = [
        [w, other] for w in writes for other in spans if other != w and _overlap(spans[w], spans[other])
    ]  # every operation touches v, so a write must overlap none of them
    ctx.log(f"{len(spans)} operations, {sum(len(p['overlapping_reads']) for p in phases)} overlapping read pairs")
    return {
        "engine_type": params.engine_type,
        "seconds": seconds,
        "operations": len(spans),
        "phases": phases,
        "write_conflicts": violations,
        "writes_exclusive": not violations,
    }


SCENARIO = register(
    Scenario(
        name="rw_hazards",
        title="Read/write hazards on one variable",
        description=(
            "A write, then several reads, then a write, ... all on one variable. Reads between two writes "
            "run together; every write waits for the reads before it, and the reads after it wait for it."
        ),
        params=RwHazardsParams,
        run=run,
        tutorial="tutorials/02-dependency-engine.md",
        panels=("timeline", "dag"),
    )
)

"""Scenario "engine basics": dependent versus independent chains on every engine type.

Two programs are pushed to the engine, each made of two chains of ``chain_length``
operations that sleep ``op_ms`` (a stand-in for a kernel: like BLAS, sleeping releases the
GIL, so two workers really overlap):

* **dependent chains**: step i of chain Y reads chain X's variable, so X and Y alternate
  (X1, Y1, X2, Y2, ...) whatever the number of workers;
* **independent chains**: P and Q touch disjoint variables, so with two workers they run
  side by side and the program takes about half the time.

With ``loop`` the chosen program(s) repeat, round after round on one engine with a short
pause between rounds, until the run is stopped (or :data:`LOOP_MAX_S` has passed): that is
the run ``mxlab`` starts at launch, so the live view has something to show until the learner
stops it or picks another scenario.

Two front doors use the same programs: :func:`run` is the registered scenario (typed
parameters, one engine type, called by the server's worker process), and
:func:`compare_engines` is the terminal demo (``mxlab demo``), which runs both programs on
every engine type and keeps the events of each run for a text timeline.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

import framework as mx
from framework import events
from framework.engine import ENGINE_TYPES, create

from .base import RunContext, Scenario, ScenarioParams, register

EngineType = Literal[*ENGINE_TYPES]  # the form offers exactly the engine types framework.engine defines

#: A looping run ends by itself after this long; the learner normally stops it long before.
LOOP_MAX_S = 3600.0
#: Pause between two rounds of a looping run, so that rounds stand apart on the timeline.
LOOP_PAUSE_S = 0.25
#: The server's limit for a looping run: its own maximum plus time to wind down.
LOOP_TIME_LIMIT_S = LOOP_MAX_S + 60.0


@dataclass
class ProgramResult:
    """What one program did on one engine: wall time and its engine events."""

    engine_type: str
    program: str
    seconds: float
    events: list[dict] = field(default_factory=list)


def _kernel(op_ms: float):
    def run(run_ctx: object) -> None:
        time.sleep(op_ms / 1000.0)

    return run


def push_dependent_chains(engine: mx.engine.Engine, chain_length: int, op_ms: float) -> None:
    """X writes x; Y reads x and writes y: every Y step waits for X, every X step for Y's read."""
    x, y = engine.new_variable("x"), engine.new_variable("y")
    for i in range(1, chain_length + 1):
        engine.push_sync(_kernel(op_ms), mx.cpu(), mutable_vars=[x], name=f"X{i}")
        engine.push_sync(_kernel(op_ms), mx.cpu(), const_vars=[x], mutable_vars=[y], name=f"Y{i}")


def push_independent_chains(engine: mx.engine.Engine, chain_length: int, op_ms: float) -> None:
    """P and Q each write their own variable: nothing orders one against the other."""
    p, q = engine.new_variable("p"), engine.new_variable("q")
    for i in range(1, chain_length + 1):
        engine.push_sync(_kernel(op_ms), mx.cpu(), mutable_vars=[p], name=f"P{i}")
        engine.push_sync(_kernel(op_ms), mx.cpu(), mutable_vars=[q], name=f"Q{i}")


PROGRAMS = {"dependent": push_dependent_chains, "independent": push_independent_chains}


def run_program(engine_type: str, num_workers: int, program: str, chain_length: int, op_ms: float) -> ProgramResult:
    """Run one program on a fresh engine of ``engine_type``; the engine is stopped afterwards."""
    engine = create(engine_type, None if engine_type == "NaiveEngine" else num_workers)
    try:
        with events.record() as recorder:
            start = time.perf_counter()
            PROGRAMS[program](engine, chain_length, op_ms)
            engine.wait_for_all()
            seconds = time.perf_counter() - start
    finally:
        engine.stop()
    return ProgramResult(engine_type, program, seconds, recorder.events)


def loop_programs(
    engine_type: str, num_workers: int, programs: list[str], chain_length: int, op_ms: float, max_s: float
) -> int:
    """Push ``programs`` round after round on one engine until ``max_s`` has passed; returns the rounds run."""
    engine = create(engine_type, None if engine_type == "NaiveEngine" else num_workers)
    deadline = time.monotonic() + max_s
    rounds = 0
    try:
        while time.monotonic() < deadline:
            for program in programs:
                PROGRAMS[program](engine, chain_length, op_ms)
                engine.wait_for_all()
            rounds += 1
            time.sleep(LOOP_PAUSE_S)
    finally:
        engine.stop()
    return rounds


def compare_engines(
    engine_types: list[str] | None = None, num_workers: int = 2, chain_length: int = 4, op_ms: float = 20.0
) -> list[ProgramResult]:
    """The terminal demo: both programs on each engine type, one fresh engine per program."""
    if not 1 <= chain_length <= 1000:
        raise ValueError(f"engine_basics: chain_length must be in [1, 1000], got {chain_length}")
    if not 0 <= op_ms <= 10_000:
        raise ValueError(f"engine_basics: op_ms must be in [0, 10000], got {op_ms}")
    results = []
    for engine_type in engine_types or list(ENGINE_TYPES):
        for program in PROGRAMS:
            results.append(run_program(engine_type, num_workers, program, chain_length, op_ms))
    return results


def max_overlap(program_events: list[dict]) -> int:
    """The largest number of operations running at the same moment (1 = strictly one by one)."""
    starts = {e["op"]: e["t_ns"] for e in program_events if e["kind"] == "engine.start"}
    ends = {e["op"]: e["t_ns"] for e in program_events if e["kind"] == "engine.end"}
    spans = [(starts[op], ends[op]) for op in starts if op in ends]
    return max((sum(1 for s, e in spans if s <= t < e) for t, _ in spans), default=0)


class EngineBasicsParams(ScenarioParams):
    """Parameters of the engine basics scenario (ranges keep a single pass well under 10 s; ``loop`` repeats it)."""

    engine_type: EngineType = Field("ThreadedEnginePerDevice", description="which engine runs the programs")
    workers: int = Field(2, ge=1, le=8, description="worker threads per pool (NaiveEngine has none)")
    chain_length: int = Field(4, ge=1, le=64, description="operations per chain")
    op_ms: float = Field(20.0, ge=0, le=200, description="how long each operation sleeps, in ms")
    program: Literal["both", "dependent", "independent"] = Field("both", description="which program(s) to run")
    loop: bool = Field(False, description="repeat the program(s) until the run is stopped (at most an hour)")


def run(params: EngineBasicsParams, ctx: RunContext) -> dict[str, Any]:
    """The registered scenario: the chosen program(s) on one engine type."""
    programs = list(PROGRAMS) if params.program == "both" else [params.program]
    workers = 1 if params.engine_type == "NaiveEngine" else params.workers
    if params.loop:
        ctx.log(f"{' and '.join(programs)} chains on {params.engine_type}, round after round until stopped")
        rounds = loop_programs(
            params.engine_type, params.workers, programs, params.chain_length, params.op_ms, LOOP_MAX_S
        )
        return {
            "engine_type": params.engine_type,
            "workers": workers,
            "rounds": rounds,
            "operations_pushed": rounds * len(programs) * 2 * params.chain_length,
        }
    serial_s = 2 * params.chain_length * params.op_ms / 1000.0
    summary = {}
    for program in programs:
        ctx.log(f"{program} chains on {params.engine_type}")
        result = run_program(params.engine_type, params.workers, program, params.chain_length, params.op_ms)
        summary[program] = {
            "seconds": result.seconds,
            "operations": 2 * params.chain_length,
            "max_overlap": max_overlap(result.events),
            "speedup_over_serial": serial_s / result.seconds if result.seconds > 0 else None,
        }
    return {
        "engine_type": params.engine_type,
        "workers": workers,
        "programs": summary,
        "operations_pushed": sum(p["operations"] for p in summary.values()),
    }


def time_limit(params: EngineBasicsParams) -> float | None:
    """A looping run may last :data:`LOOP_TIME_LIMIT_S`; a single one keeps the server's limit."""
    return LOOP_TIME_LIMIT_S if params.loop else None


SCENARIO = register(
    Scenario(
        name="engine_basics",
        title="Engine basics: dependent vs independent chains",
        description=(
            "Two chains of sleeping operations pushed to the dependency engine. When one chain reads the "
            "other's variable they alternate; when they share nothing, two workers run them side by side."
        ),
        params=EngineBasicsParams,
        run=run,
        tutorial="tutorials/02-dependency-engine.md",
        panels=("timeline", "dag"),
        # Paced for watching: 100 ms operations keep each bar wide enough to label on the
        # timeline's live window, and the alternation of the dependent chains easy to follow.
        launch_params={"loop": True, "op_ms": 100.0},
        time_limit=time_limit,
    )
)

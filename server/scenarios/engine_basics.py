"""Scenario "engine basics": dependent versus independent chains on every engine type.

Two programs are pushed to the engine, each made of two chains of ``chain_length``
operations that sleep ``op_ms`` (a stand-in for a kernel: like BLAS, sleeping releases the
GIL, so two workers really overlap):

* **dependent chains**: step i of chain Y reads chain X's variable, so X and Y alternate
  (X1, Y1, X2, Y2, ...) whatever the number of workers;
* **independent chains**: P and Q touch disjoint variables, so with two workers they run
  side by side and the program takes about half the time.

The result holds every engine event, so a caller can draw the timeline or write a trace.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import framework as mx
from framework import events
from framework.engine import ENGINE_TYPES, create


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


def run(
    engine_types: list[str] | None = None, num_workers: int = 2, chain_length: int = 4, op_ms: float = 20.0
) -> list[ProgramResult]:
    """Run both programs on each engine type; one fresh engine per program."""
    if not 1 <= chain_length <= 1000:
        raise ValueError(f"engine_basics: chain_length must be in [1, 1000], got {chain_length}")
    if not 0 <= op_ms <= 10_000:
        raise ValueError(f"engine_basics: op_ms must be in [0, 10000], got {op_ms}")
    results = []
    for engine_type in engine_types or list(ENGINE_TYPES):
        for program, push_program in PROGRAMS.items():
            engine = create(engine_type, None if engine_type == "NaiveEngine" else num_workers)
            try:
                with events.record() as recorder:
                    start = time.perf_counter()
                    push_program(engine, chain_length, op_ms)
                    engine.wait_for_all()
                    seconds = time.perf_counter() - start
            finally:
                engine.stop()
            results.append(ProgramResult(engine_type, program, seconds, recorder.events))
    return results

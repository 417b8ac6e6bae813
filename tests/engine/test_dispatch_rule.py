"""The dispatch rule docs/engine.md states: a worker keeps the operation its completion made ready.

Each program starts with ``A``, which blocks its worker on a gate: the test waits until
``A`` is running, pushes the rest, then opens the gate. The engine's state when ``A``
completes is then known exactly, and with one worker the order in which the rest runs is
determined by the rule alone, not by timing.
"""

from __future__ import annotations

import threading

import pytest

import framework as mx
from framework import events

ONE_WORKER_ENGINES = ["ThreadedEngine", "ThreadedEnginePerDevice"]


def recorder(log: list[str], name: str):
    def run(rc: object) -> None:
        log.append(name)

    return run


class Gate:
    """A function that holds its worker until ``open()``; ``running`` is set once it has started."""

    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name
        self.running, self.opened = threading.Event(), threading.Event()

    def __call__(self, rc: object) -> None:
        self.running.set()
        assert self.opened.wait(10), "the test never opened the gate"
        self.log.append(self.name)

    def push_and_wait_until_running(self, engine, var) -> None:
        engine.push_sync(self, mx.cpu(), mutable_vars=[var], name=self.name)
        assert self.running.wait(10), f"{self.name} never started"

    def open(self) -> None:
        self.opened.set()


@pytest.mark.parametrize("kind", ONE_WORKER_ENGINES)
def test_a_completion_keeps_the_operation_it_made_ready_ahead_of_an_earlier_ready_one(make_engine, kind):
    """B is ready (waiting in the heap) before C; C is made ready by A's completion: C runs before B."""
    engine = make_engine(kind, 1)
    x, y = engine.new_variable("x"), engine.new_variable("y")
    log = []
    gate = Gate(log, "A")
    gate.push_and_wait_until_running(engine, x)
    engine.push_sync(recorder(log, "B"), mx.cpu(), mutable_vars=[y], name="B")  # ready now: into the heap
    engine.push_sync(recorder(log, "C"), mx.cpu(), mutable_vars=[x], name="C")  # waits for A's write of x
    gate.open()
    engine.wait_for_all()
    assert log == ["A", "C", "B"]  # "priority, then arrival" alone would give A, B, C


@pytest.mark.parametrize("kind", ONE_WORKER_ENGINES)
def test_a_waiting_operation_of_higher_priority_still_goes_first(make_engine, kind):
    engine = make_engine(kind, 1)
    x, y = engine.new_variable("x"), engine.new_variable("y")
    log = []
    gate = Gate(log, "A")
    gate.push_and_wait_until_running(engine, x)
    engine.push_sync(recorder(log, "B"), mx.cpu(), mutable_vars=[y], name="B", priority=1)
    engine.push_sync(recorder(log, "C"), mx.cpu(), mutable_vars=[x], name="C")
    gate.open()
    engine.wait_for_all()
    assert log == ["A", "B", "C"]


@pytest.mark.parametrize("kind", ONE_WORKER_ENGINES)
def test_only_the_first_operation_a_completion_makes_ready_is_kept(make_engine, kind):
    """A's write of x grants R1 and R2 (two reads) at once: R1 is the continuation, R2 joins the heap after B."""
    engine = make_engine(kind, 1)
    x, y = engine.new_variable("x"), engine.new_variable("y")
    log = []
    gate = Gate(log, "A")
    gate.push_and_wait_until_running(engine, x)
    engine.push_sync(recorder(log, "B"), mx.cpu(), mutable_vars=[y], name="B")
    engine.push_sync(recorder(log, "R1"), mx.cpu(), const_vars=[x], name="R1")
    engine.push_sync(recorder(log, "R2"), mx.cpu(), const_vars=[x], name="R2")
    gate.open()
    engine.wait_for_all()
    assert log == ["A", "R1", "B", "R2"]


def test_ready_operations_in_the_heap_run_by_priority_then_by_the_order_they_became_ready(make_engine):
    engine = make_engine("ThreadedEngine", 1)
    x = engine.new_variable("x")
    log = []
    gate = Gate(log, "A")
    gate.push_and_wait_until_running(engine, x)
    for name, priority in [("P0", 0), ("P2", 2), ("Q0", 0), ("P1", 1)]:
        engine.push_sync(
            recorder(log, name), mx.cpu(), mutable_vars=[engine.new_variable(name)], name=name, priority=priority
        )
    gate.open()
    engine.wait_for_all()
    assert log == ["A", "P2", "P1", "P0", "Q0"]


def test_a_dependent_chain_stays_on_the_worker_that_started_it(make_engine):
    """Two workers, two chains pushed while their first steps run: each chain stays on its first step's lane."""
    engine = make_engine("ThreadedEngine", 2)
    chains = {"X": engine.new_variable("x"), "Y": engine.new_variable("y")}
    with events.record() as rec:
        gates = [Gate([], f"{chain}0") for chain in chains]
        for gate, var in zip(gates, chains.values(), strict=True):
            gate.push_and_wait_until_running(engine, var)  # the two workers are both busy now
        for step in range(1, 5):
            for chain, var in chains.items():
                engine.push_sync(recorder([], chain), mx.cpu(), mutable_vars=[var], name=f"{chain}{step}")
        for gate in gates:
            gate.open()
        engine.wait_for_all()
    worker = {e["op"]: e["worker"] for e in rec.events if e["kind"] == "engine.start"}
    names = {e["op"]: e["name"] for e in rec.events if e["kind"] == "engine.push"}
    lanes = {chain: {worker[op] for op, name in names.items() if name.startswith(chain)} for chain in chains}
    assert all(len(lane) == 1 for lane in lanes.values()), lanes
    assert lanes["X"] != lanes["Y"]

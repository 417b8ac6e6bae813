"""Checks of the ``engine_var`` exercise: the learner's ``ExerciseVar`` alone, then inside an engine.

1. ``queue_rules``: scripted sequences of appends and completions on one variable, each
   result compared with the rule it follows (deterministic; the precise failures).
2. ``engine_programs``: random programs of reads and writes on a ``ThreadedEngine`` whose
   variables are ``ExerciseVar``s. Every operation watches its variables while it runs: a
   write overlapping anything, or a read overlapping a write, on the same variable is a
   failure; so is a program that does not finish (a lost grant) or whose per-variable
   histories differ from sequential execution (the engine's own property test).
3. ``timeline``: a write, four reads, a write on one variable, on four workers: the
   reads must overlap each other and nothing else. The text timeline is shown.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import framework as mx
from framework import events, profiler
from framework.engine import create

from ..checker import Check, CheckFailure, Passed

# ----------------------------------------------------------------------------- 1. queue rules
# Each step: ("read" | "write", op name, expected grant) or ("done_read" | "done_write", None, expected ops).
SCENARIOS: list[tuple[str, str, list[tuple[str, str | None, Any]]]] = [
    (
        "consecutive reads run together",
        "reads share a variable: with no write before them, every read is granted at once",
        [
            ("read", "R1", True),
            ("read", "R2", True),
            ("read", "R3", True),
            ("done_read", None, []),
            ("done_read", None, []),
            ("done_read", None, []),
        ],
    ),
    (
        "a write waits for the reads before it",
        "a write may start only when no read is running; the last completing read grants it",
        [
            ("read", "R1", True),
            ("read", "R2", True),
            ("write", "W1", False),
            ("done_read", None, []),
            ("done_read", None, ["W1"]),
            ("done_write", None, []),
        ],
    ),
    (
        "reads after a write wait for it, then run together",
        "a read queued behind a running write waits; completing the write grants every read at the head "
        "of the queue at once",
        [
            ("write", "W1", True),
            ("read", "R1", False),
            ("read", "R2", False),
            ("done_write", None, ["R1", "R2"]),
            ("done_read", None, []),
            ("done_read", None, []),
        ],
    ),
    (
        "a read never overtakes a waiting write",
        "once a write is queued, later reads queue behind it even though the variable is only being read "
        "(otherwise a stream of reads could starve the writer)",
        [
            ("read", "R1", True),
            ("write", "W1", False),
            ("read", "R2", False),
            ("done_read", None, ["W1"]),
            ("done_write", None, ["R2"]),
            ("done_read", None, []),
        ],
    ),
    (
        "writes run one at a time, in push order",
        "a write waits for the write before it; completing a write with only a write queued grants that write",
        [
            ("write", "W1", True),
            ("write", "W2", False),
            ("done_write", None, ["W2"]),
            ("done_write", None, []),
        ],
    ),
    (
        "docs/engine.md's example: W1 R1 R2 W2 R3",
        "W1 runs; R1 and R2 are granted together when W1 completes; W2 when both reads are done; R3 after W2",
        [
            ("write", "W1", True),
            ("read", "R1", False),
            ("read", "R2", False),
            ("write", "W2", False),
            ("read", "R3", False),
            ("done_write", None, ["R1", "R2"]),
            ("done_read", None, []),
            ("done_read", None, ["W2"]),
            ("done_write", None, ["R3"]),
            ("done_read", None, []),
        ],
    ),
]


class _Op:
    """A stand-in operation: the queue only stores and returns it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


def _step_text(step: tuple[str, str | None, Any]) -> str:
    action, name, _ = step
    return {
        "read": f"append_read({name})",
        "write": f"append_write({name})",
        "done_read": "complete_read()",
        "done_write": "complete_write()",
    }[action]


def _names(ops: Any) -> Any:
    if not isinstance(ops, list | tuple):
        return ops
    return [getattr(op, "name", op) for op in ops]


def check_queue_rules(attempt: Any) -> None:
    var_class = _var_class(attempt)
    for title, rule, steps in SCENARIOS:
        var = var_class(0, "x")
        ops: dict[str, _Op] = {}
        history: list[str] = []
        for step in steps:
            action, name, expected = step
            if action in ("read", "write"):
                ops[name] = _Op(name)
                got = (var.append_read if action == "read" else var.append_write)(ops[name])
                ok = got is expected or (isinstance(got, bool | int) and bool(got) == expected and got in (0, 1))
                shown_got, shown_expected = repr(got), repr(expected)
            else:
                got = _names((var.complete_read if action == "done_read" else var.complete_write)())
                ok = got == expected
                shown_got, shown_expected = repr(got), repr(expected)
            if not ok:
                before = ", ".join(history) if history else "nothing"
                raise CheckFailure(
                    f"{title}: on a fresh variable, after {before}, {_step_text(step)}",
                    f"{_step_text(step)} to return {shown_expected}",
                    shown_got,
                    rule,
                )
            history.append(_step_text(step))
        if not var.idle():
            raise CheckFailure(
                f"{title}: after {', '.join(history)}",
                "the variable idle (nothing queued, running or granted)",
                f"queue {list(var._queue)!r}, running reads {var._running_reads}, write granted {var._write_granted}",
                "every completion must undo the bookkeeping of its grant: count reads out, clear the write flag",
            )


def _var_class(attempt: Any) -> type:
    var_class = getattr(attempt, "ExerciseVar", None)
    if not isinstance(var_class, type):
        raise CheckFailure(
            "looking up ExerciseVar in your file",
            "a class named ExerciseVar",
            "nothing" if var_class is None else repr(var_class),
            "keep the class name of the stub: the checker plugs ExerciseVar into an engine",
        )
    return var_class


def _smoke(var_class: type) -> None:
    """Call every gap once outside the engine, so an unfilled gap is reported as such, not as a hang."""
    var = var_class(0, "probe")
    op = _Op("probe")
    var.append_read(op)
    var.complete_read()
    var.append_write(op)
    var.complete_write()


# ----------------------------------------------------------------------------- 2. engine programs
class _Monitor:
    """Watches which operations hold each variable while they run; records the first violation."""

    def __init__(self, num_vars: int) -> None:
        self.lock = threading.Lock()
        self.readers: list[set[str]] = [set() for _ in range(num_vars)]
        self.writer: list[str | None] = [None] * num_vars
        self.violation: str | None = None

    def enter(self, name: str, reads: tuple[int, ...], writes: tuple[int, ...]) -> None:
        with self.lock:
            for v in writes:
                if self.violation is None and (self.writer[v] or self.readers[v]):
                    holders = sorted(self.readers[v]) + ([self.writer[v]] if self.writer[v] else [])
                    self.violation = f"{name} started writing v{v} while {', '.join(holders)} still held it"
            for v in reads:
                if self.violation is None and self.writer[v]:
                    self.violation = f"{name} started reading v{v} while {self.writer[v]} was writing it"
            for v in writes:
                self.writer[v] = name
            for v in reads:
                self.readers[v].add(name)

    def leave(self, name: str, reads: tuple[int, ...], writes: tuple[int, ...]) -> None:
        with self.lock:
            for v in writes:
                self.writer[v] = None
            for v in reads:
                self.readers[v].discard(name)


def _program(rng: random.Random, num_vars: int, num_ops: int) -> list[tuple[tuple[int, ...], tuple[int, ...], int]]:
    ops = []
    for _ in range(num_ops):
        touched = rng.sample(range(num_vars), rng.randint(1, min(3, num_vars)))
        split = rng.randint(0, len(touched))
        ops.append((tuple(touched[:split]), tuple(touched[split:]), rng.choice([0, 0, 50, 300])))
    return ops


def _describe_program(ops: list) -> str:
    parts = []
    for i, (reads, writes, _) in enumerate(ops[:12]):
        text = " ".join([*(f"r{v}" for v in reads), *(f"w{v}" for v in writes)])
        parts.append(f"op{i}({text})")
    more = f", ... ({len(ops)} operations)" if len(ops) > 12 else ""
    return ", ".join(parts) + more


def _sequential(num_vars: int, ops: list) -> tuple[list, dict]:
    logs: list[list] = [[] for _ in range(num_vars)]
    observed: dict[int, tuple] = {}
    for index, (reads, writes, _) in enumerate(ops):
        seen = tuple((r, len(logs[r])) for r in reads)
        for w in writes:
            logs[w].append((index, seen))
        if not writes:
            observed[index] = seen
    return logs, observed


def _run_program(engine: Any, num_vars: int, ops: list, timeout: float) -> tuple[list, dict, _Monitor, bool]:
    variables = [engine.new_variable(f"v{i}") for i in range(num_vars)]
    logs: list[list] = [[] for _ in range(num_vars)]
    observed: dict[int, tuple] = {}
    monitor = _Monitor(num_vars)

    def make(index: int, reads: tuple, writes: tuple, sleep_us: int) -> Any:
        name = f"op{index}"

        def fn(run_ctx: Any) -> None:
            monitor.enter(name, reads, writes)
            seen = tuple((r, len(logs[r])) for r in reads)
            if sleep_us:
                time.sleep(sleep_us / 1e6)
            for w in writes:
                logs[w].append((index, seen))
            if not writes:
                observed[index] = seen
            monitor.leave(name, reads, writes)

        return fn

    for index, (reads, writes, sleep_us) in enumerate(ops):
        engine.push_sync(
            make(index, reads, writes, sleep_us),
            mx.cpu(0),
            const_vars=[variables[r] for r in reads],
            mutable_vars=[variables[w] for w in writes],
            name=f"op{index}",
        )
    finished = engine._wait_idle(timeout)
    return logs, observed, monitor, finished


def check_engine_programs(attempt: Any) -> None:
    var_class = _var_class(attempt)
    _smoke(var_class)
    rng = random.Random(2024)
    for engine_type in ("ThreadedEngine", "ThreadedEnginePerDevice"):
        engine = create(engine_type, 2, var_class=var_class)
        for trial in range(13):
            if trial == 0:  # a slow write, a read, a write on one variable: any overlap shows at once
                num_vars, ops = 1, [((), (0,), 20000), ((0,), (), 20000), ((), (0,), 20000)]
            else:
                num_vars = rng.randint(1, 5)
                ops = _program(rng, num_vars, 4 * trial)
            where = f"{engine_type} with 2 workers, program {_describe_program(ops)}"
            logs, observed, monitor, finished = _run_program(engine, num_vars, ops, timeout=10.0)
            if monitor.violation is not None:
                raise CheckFailure(
                    where,
                    "no write overlapping anything, no read overlapping a write, on the same variable",
                    monitor.violation,
                    "a grant must wait for every conflicting operation before it: check the conditions of "
                    "_grant_read/_grant_write and what _read_done/_write_done hand out",
                )
            if not finished:
                pending = ", ".join(op.name for op in engine.pending_operations()[:8])
                raise CheckFailure(
                    where,
                    "every operation to run within 10 s",
                    f"the engine got stuck; still pending: {pending}",
                    "an operation was queued and never granted: every completion must grant what it unblocks "
                    "(the next write after the last read, every leading read after a write)",
                )
            expected_logs, expected_observed = _sequential(num_vars, ops)
            if logs != expected_logs or observed != expected_observed:
                bad = next((v for v in range(num_vars) if logs[v] != expected_logs[v]), None)
                got = (
                    f"variable v{bad} saw writes in order {[i for i, _ in logs[bad]]}"
                    if bad is not None
                    else ("some read saw a different number of earlier writes than in push order")
                )
                expected = (
                    f"writes in order {[i for i, _ in expected_logs[bad]]}"
                    if bad is not None
                    else ("every read to see exactly the writes pushed before it")
                )
                raise CheckFailure(
                    where,
                    f"the histories of sequential execution: {expected}",
                    got,
                    "operations on a variable must take effect in push order: grant from the head of the queue",
                )
        engine.stop()


# ----------------------------------------------------------------------------- 3. the timeline
def check_timeline(attempt: Any) -> None:
    var_class = _var_class(attempt)
    _smoke(var_class)
    engine = create("ThreadedEngine", 4, var_class=var_class)
    x = engine.new_variable("x")
    spans: dict[str, tuple[float, float]] = {}

    def kernel(name: str, seconds: float) -> Any:
        def fn(run_ctx: Any) -> None:
            start = time.perf_counter()
            time.sleep(seconds)
            spans[name] = (start, time.perf_counter())

        return fn

    program = [("W1", True), ("R1", False), ("R2", False), ("R3", False), ("R4", False), ("W2", True)]
    with events.record() as recorder:
        for name, is_write in program:
            engine.push_sync(
                kernel(name, 0.03),
                mx.cpu(0),
                const_vars=[] if is_write else [x],
                mutable_vars=[x] if is_write else [],
                name=name,
            )
        finished = engine._wait_idle(10.0)
    where = "on ThreadedEngine with 4 workers: W1 writes x, R1..R4 read x, W2 writes x (30 ms each)"
    if not finished:
        raise CheckFailure(
            where, "the program to finish", "the engine got stuck", "every completion must grant what it unblocks"
        )
    engine.stop()
    reads = [spans[f"R{i}"] for i in range(1, 5)]
    w1, w2 = spans["W1"], spans["W2"]
    timeline = profiler.text_timeline(recorder.events, width=60)
    if min(start for start, _ in reads) < w1[1] or w2[0] < max(end for _, end in reads):
        raise CheckFailure(
            where,
            "R1..R4 after W1 ends, W2 after every read ends",
            "a read overlapped a write:\n" + timeline,
            "reads must wait for the write before them, and a write for every read before it",
        )
    overlap = max(sum(1 for s, e in reads if s <= start < e) for start, _ in reads)
    if overlap < 2:
        raise CheckFailure(
            where,
            "the four reads to overlap (they only read x)",
            "they ran one after another:\n" + timeline,
            "completing a write must grant *every* read at the head of the queue, not just one; "
            "and a read may start while other reads run",
        )
    raise Passed(f"the reads ran side by side ({overlap} at once), the writes alone:\n{timeline}")


CHECKS = [
    Check("queue_rules", "one variable's queue against scripted sequences", check_queue_rules),
    Check("engine_programs", "random programs on threaded engines using your variable", check_engine_programs),
    Check("timeline", "reads overlap, writes run alone (a timeline run)", check_timeline),
]

"""Runs: one scenario execution each, in its own worker process, watched by a supervisor thread.

Why a process per run: a scenario is ordinary framework code with parameters chosen in a
browser. If it crashes the interpreter (a segfault in a C library), hangs, or eats memory,
only its process goes; the server kills it and reports the run ``failed`` or ``timeout``.

Processes come from the ``forkserver`` start method: a clean helper process, started once
with ``framework`` and the scenarios already imported, forks each worker. Plain ``fork``
from a server that runs threads could copy a lock held by another thread into the child.

Lifecycle of a :class:`Run` (``status``)::

    queued -> running -> done | failed | cancelled | timeout

A supervisor thread per run starts the process, reads its messages (``server.worker``),
encodes event batches into frames, appends them to the run's history and offers them to every connected client
(``server.streaming``), enforces the wall-clock limit, carries out cancellation and, at
the end, decides the final status. A run is ``done`` only once its result has arrived.
"""

from __future__ import annotations

import json
import marshal
import multiprocessing
import secrets
import signal
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Mapping
from multiprocessing import forkserver
from typing import Any

from pydantic import ValidationError

from framework.events import RawEvent

from .frames import Frame, PackedFrame, StoredFrame, as_raw, encode_blocks, json_safe
from .scenarios import REGISTRY
from .scenarios.base import Scenario
from .streaming import BATCH_MAX_EVENTS, FINAL_STATUSES, ClientQueue
from .worker import worker_main

STATUSES = ("queued", "running", "done", "failed", "cancelled", "timeout")
MAX_HISTORY_EVENTS = 500_000
MAX_STORED_HISTORY_BYTES = 256 * 1024 * 1024  # finished runs' compressed histories, all runs together
MAX_LOG_LINES = 200
POLL_S = 0.05
PRELOAD = ["framework", "server.scenarios", "server.worker"]


class RunError(Exception):
    """A request about runs that cannot be honoured; ``status`` is the HTTP status to answer."""

    status = 400


class UnknownScenarioError(RunError):
    status = 404


class UnknownRunError(RunError):
    status = 404


class TooManyRunsError(RunError):
    status = 429


class RunsDisabledError(RunError):
    status = 409


class Run:
    """One run: its parameters, status, result and the history of its events.

    The history keeps the first ``max_history`` events (as encoded frames, compressed once
    the run has finished: :class:`~server.frames.PackedFrame`); later events
    still reach connected clients but are only counted in ``dropped_history``, so a run
    that floods events cannot exhaust the server's memory. Events the publishing process
    could not keep (its :class:`~framework.events.EventBuffer` was full) never reach the
    run; they are counted in ``dropped_at_source``.
    """

    def __init__(
        self,
        run_id: str,
        scenario: str,
        params: dict[str, Any],
        *,
        max_history: int = MAX_HISTORY_EVENTS,
        time_limit_s: float | None = None,
    ) -> None:
        self.id = run_id
        self.scenario = scenario
        self.params = params
        #: Wall-clock seconds the run may take before it is stopped (None: no worker, no limit).
        self.time_limit_s = time_limit_s
        self.status = "queued"
        self.error: str | None = None
        self.result: dict[str, Any] | None = None
        self.graph: str | None = None
        self.log: deque[str] = deque(maxlen=MAX_LOG_LINES)
        self.created = time.time()
        self.started: float | None = None
        self.ended: float | None = None
        self.max_history = max_history
        self.history: list[StoredFrame] = []
        self.history_events = 0
        self.dropped_history = 0
        self.dropped_at_source: Counter[str] = Counter()
        self.history_evicted = False
        self.total_events = 0
        self.event_counts: Counter[str] = Counter()
        self.cancel_requested = threading.Event()
        self._clients: set[ClientQueue] = set()
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- events
    def publish_raw(self, events: list[RawEvent]) -> None:
        """Encode raw events into frames of at most 2000 events and publish them.

        An ``engine.op`` (one quick operation, from the watched process's buffer) becomes its
        engine.push, engine.start and engine.end in the frame (:func:`~server.frames.encode_blocks`):
        clients and histories see only those.
        """
        step = BATCH_MAX_EVENTS // 3 if any(raw[0] == "engine.op" for raw in events) else BATCH_MAX_EVENTS
        for start in range(0, len(events), step):
            chunk = events[start : start + step]
            blocks = encode_blocks(chunk)  # the costly part, outside the lock
            with self._lock:
                frame = Frame(self.total_events, sum(block.count for block in blocks), blocks)
                self._publish_locked(frame, frame.kind_counts())

    def publish_forwarded(self, payload: bytes | list[Any]) -> None:
        """Publish one batch as an :class:`~server.worker.EventForwarder` sent it down a pipe:
        ``marshal`` bytes of raw events, or a list of raw events or event dicts."""
        self.publish_raw(marshal.loads(payload) if isinstance(payload, bytes) else list(map(as_raw, payload)))

    def publish_events(self, events: list[dict[str, Any]]) -> None:
        """Encode and publish event dicts (replays, tests), in frames."""
        self.publish_raw([as_raw(event) for event in events])

    def publish_packed(self, frame: PackedFrame, kinds: Mapping[str, int]) -> None:
        """Append a compressed frame that continues the stream (a replay's, built elsewhere) to the history."""
        with self._lock:
            if frame.seq != self.total_events:
                raise ValueError(f"publish_packed: frame starts at event {frame.seq}, the run has {self.total_events}")
            self._publish_locked(frame, kinds)

    def count_dropped_at_source(self, kinds: Mapping[str, int]) -> None:
        """Count events the publishing process dropped because its buffer was full."""
        with self._lock:
            self.dropped_at_source.update(kinds)

    def _publish_locked(self, frame: StoredFrame, kinds: Mapping[str, int]) -> None:
        """Count ``frame``, keep it within the history bound, offer it to the clients (lock held)."""
        self.total_events += frame.count
        self.event_counts.update(kinds)
        if self.history_events + frame.count <= self.max_history:
            self.history.append(frame)
            self.history_events += frame.count
        else:
            self.dropped_history += frame.count
        for client in self._clients:
            client.offer(frame)

    def attach(self, client: ClientQueue) -> list[StoredFrame]:
        """Register ``client`` for live frames; returns the history it has not seen (all of it)."""
        with self._lock:
            self._clients.add(client)
            return list(self.history)

    def detach(self, client: ClientQueue) -> None:
        with self._lock:
            self._clients.discard(client)

    @property
    def clients(self) -> list[ClientQueue]:
        with self._lock:
            return list(self._clients)

    def events(self) -> list[dict[str, Any]]:
        """Every event in the history, decoded (for the Chrome trace download)."""
        with self._lock:
            frames = list(self.history)
        return [event for frame in frames for event in frame.decode()]

    # ----------------------------------------------------------------- status
    def set_running(self) -> None:
        with self._lock:
            if self.status == "queued":
                self.status, self.started = "running", time.time()

    def finish(self, status: str, error: str | None = None) -> None:
        """Enter a final status (once: later calls are ignored)."""
        if status not in FINAL_STATUSES:
            raise ValueError(f"finish: {status!r} is not a final status")
        with self._lock:
            if self.status in FINAL_STATUSES:
                return
            self.status, self.error, self.ended = status, error, time.time()
            history = list(self.history)
        # A finished run's history only is read again (late joiners, downloads): keep it compressed.
        # Nothing is appended any more, so the packed list replaces the frames one for one.
        packed = [frame.packed() for frame in history]
        with self._lock:
            self.history[: len(packed)] = packed

    def stored_bytes(self) -> int:
        """What the history holds: compressed bytes of packed frames, characters of the others."""
        with self._lock:
            return sum(len(f.data) if isinstance(f, PackedFrame) else f.chars for f in self.history)

    def evict_history(self) -> None:
        """Forget the events (the server's budget is spent); counts and result stay, ``history_evicted`` says so."""
        with self._lock:
            self.history = []
            self.history_events = 0
            self.history_evicted = True

    @property
    def finished(self) -> bool:
        return self.status in FINAL_STATUSES

    def summary(self) -> dict[str, Any]:
        """The JSON description every run endpoint returns."""
        with self._lock:
            return {
                "id": self.id,
                "scenario": self.scenario,
                "params": self.params,
                "status": self.status,
                "error": self.error,
                "result": self.result,
                "events": self.total_events,
                "event_counts": dict(self.event_counts),
                "created": self.created,
                "started": self.started,
                "ended": self.ended,
                "time_limit_s": self.time_limit_s,
                "has_graph": self.graph is not None,
                "dropped_history": self.dropped_history,
                "dropped_at_source": sum(self.dropped_at_source.values()),
                "history_evicted": self.history_evicted,
                "log": list(self.log),
            }


def _exit_description(exitcode: int | None) -> str:
    if exitcode is None:
        return "the worker process did not exit"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the worker process was killed by {name} (exit code {exitcode})"
    return f"the worker process exited with code {exitcode} before sending a result"


class RunManager:
    """Starts scenario runs in worker processes and keeps the most recent ``max_runs`` of them.

    Args:
        scenarios: name -> Scenario; defaults to every registered scenario.
        max_running: runs allowed at the same time (queued or running); more get 429.
        max_runs: runs kept; when a new run would exceed it, the oldest finished run goes.
        run_timeout_s: wall-clock limit per run; the process is killed -> ``timeout``. A scenario
            may give some runs a limit of their own (``Scenario.time_limit``: a looping run).
        max_history: events kept per run.
        max_stored_bytes: the finished runs' histories together; beyond it the oldest finished
            runs lose their events first (their summaries stay, with ``history_evicted``).
        start_method: ``"forkserver"`` (default) or ``"spawn"``; never ``"fork"``.
        allow_runs: False in attach mode (a worker would re-import the user's script).
    """

    def __init__(
        self,
        scenarios: Mapping[str, Scenario] | None = None,
        *,
        max_running: int = 4,
        max_runs: int = 50,
        run_timeout_s: float = 120.0,
        max_history: int = MAX_HISTORY_EVENTS,
        max_stored_bytes: int = MAX_STORED_HISTORY_BYTES,
        start_method: str = "forkserver",
        allow_runs: bool = True,
    ) -> None:
        if scenarios is None:
            scenarios = REGISTRY
        if start_method not in ("forkserver", "spawn"):
            raise ValueError(f"start_method must be 'forkserver' or 'spawn', got {start_method!r}")
        if max_running < 1 or max_runs < max_running:
            raise ValueError(f"need 1 <= max_running <= max_runs, got {max_running} and {max_runs}")
        if run_timeout_s <= 0:
            raise ValueError(f"run_timeout_s must be > 0, got {run_timeout_s}")
        self.scenarios = scenarios
        self.max_running = max_running
        self.max_runs = max_runs
        self.run_timeout_s = run_timeout_s
        self.max_history = max_history
        self.max_stored_bytes = max_stored_bytes
        self.allow_runs = allow_runs
        self._mp = multiprocessing.get_context(start_method)
        if start_method == "forkserver":
            self._mp.set_forkserver_preload(PRELOAD)
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._supervisors: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- queries
    def get(self, run_id: str) -> Run:
        with self._lock:
            run = self._runs.get(run_id)
        if run is None:
            raise UnknownRunError(f"unknown run {run_id!r}")
        return run

    def list(self) -> list[Run]:
        """Every kept run, newest first."""
        with self._lock:
            return list(reversed(self._runs.values()))

    def _busy_locked(self) -> int:
        """Runs holding (or about to hold) a worker process; attach mode's live feed is not one."""
        return sum(1 for r in self._runs.values() if r.status in ("queued", "running") and r.scenario != "attach")

    # ----------------------------------------------------------------- new runs
    def _add(self, run: Run, *, counts_as_running: bool) -> None:
        """Keep ``run``, evicting the oldest finished runs beyond ``max_runs``."""
        with self._lock:
            if counts_as_running:
                busy = self._busy_locked()
                if busy >= self.max_running:
                    raise TooManyRunsError(
                        f"{busy} runs are already running (the limit is {self.max_running}); "
                        "wait for one to finish or cancel one"
                    )
            while len(self._runs) >= self.max_runs:
                oldest = next((r for r in self._runs.values() if r.finished), None)
                if oldest is None:
                    raise TooManyRunsError(f"all {len(self._runs)} kept runs are still running")
                del self._runs[oldest.id]
            self._runs[run.id] = run

    def new_id(self) -> str:
        return secrets.token_hex(6)

    def start(self, scenario_name: str, raw_params: Mapping[str, Any] | None = None) -> Run:
        """Validate, then start ``scenario_name`` in a worker process; returns the queued run.

        Raises UnknownScenarioError, pydantic's ValidationError (bad parameters),
        TooManyRunsError, or RunsDisabledError (attach mode).
        """
        if not self.allow_runs:
            raise RunsDisabledError(
                "this server is attached to a script (server.attach) and shows that process only; "
                "start scenarios with `python -m server`"
            )
        scenario = self.scenarios.get(scenario_name)
        if scenario is None:
            raise UnknownScenarioError(f"unknown scenario {scenario_name!r}; known scenarios: {sorted(self.scenarios)}")
        params = scenario.validate(dict(raw_params or {}))
        time_limit_s = scenario.time_limit_s(params) or self.run_timeout_s
        run = Run(
            self.new_id(),
            scenario.name,
            params.model_dump(mode="json"),
            max_history=self.max_history,
            time_limit_s=time_limit_s,
        )
        self._add(run, counts_as_running=True)
        supervisor = threading.Thread(
            target=self._supervise, args=(run, scenario), name=f"mxlab-run-{run.id}", daemon=True
        )
        with self._lock:
            self._supervisors[run.id] = supervisor
        supervisor.start()
        return run

    def add_finished(
        self,
        scenario: str,
        params: dict[str, Any],
        frames: list[tuple[PackedFrame, Mapping[str, int]]],
        result: dict[str, Any],
    ) -> Run:
        """A run made of compressed frames and their kind counts (a replayed trace): already ``done``."""
        run = Run(self.new_id(), scenario, params, max_history=self.max_history)
        run.set_running()
        for frame, kinds in frames:
            run.publish_packed(frame, kinds)
        run.result = {**result, "event_counts": dict(run.event_counts)}
        run.finish("done")
        self._add(run, counts_as_running=False)
        self.enforce_history_budget()
        return run

    def add_live(self, run: Run) -> Run:
        """Keep an externally fed run (attach mode's ``live`` run)."""
        self._add(run, counts_as_running=False)
        return run

    def enforce_history_budget(self) -> None:
        """Evict the histories of the oldest finished runs until the finished ones fit ``max_stored_bytes``.

        The newest finished run keeps its history even if it alone exceeds the budget (it was
        just asked for); runs still going are not counted (their history is bounded per run).
        """
        with self._lock:
            finished = [r for r in self._runs.values() if r.finished and not r.history_evicted]  # oldest first
        sizes = [run.stored_bytes() for run in finished]
        total = sum(sizes)
        for run, size in zip(finished[:-1], sizes[:-1], strict=True):
            if total <= self.max_stored_bytes:
                break
            run.evict_history()
            total -= size

    def cancel(self, run_id: str) -> Run:
        """Ask a run to stop (idempotent; a finished run is returned unchanged)."""
        run = self.get(run_id)
        if not run.finished:
            run.cancel_requested.set()
            supervisor = self._supervisors.get(run_id)
            if supervisor is not None:
                supervisor.join(timeout=5.0)  # the supervisor kills the process within a poll interval
            else:
                run.finish("cancelled")
        return run

    def shutdown(self) -> None:
        """Cancel every unfinished run and wait for the supervisors."""
        for run in self.list():
            if not run.finished:
                run.cancel_requested.set()
        with self._lock:
            supervisors = list(self._supervisors.values())
        for supervisor in supervisors:
            supervisor.join(timeout=5.0)

    def warm_up(self) -> None:
        """Start the fork server now (it imports the framework), so the first run starts fast."""
        if self._mp.get_start_method() == "forkserver":
            threading.Thread(target=forkserver.ensure_running, name="mxlab-forkserver-warmup", daemon=True).start()

    # ----------------------------------------------------------------- the supervisor
    def _supervise(self, run: Run, scenario: Scenario) -> None:
        try:
            self._supervise_process(run, scenario)
        except Exception as err:  # a bug here must still end the run, never leave it "running"
            run.finish("failed", f"server error while supervising the run: {type(err).__name__}: {err}")
        finally:
            with self._lock:
                self._supervisors.pop(run.id, None)
            self.enforce_history_budget()

    def _supervise_process(self, run: Run, scenario: Scenario) -> None:
        if run.cancel_requested.is_set():
            run.finish("cancelled")
            return
        reader, writer = self._mp.Pipe(duplex=False)
        process = self._mp.Process(
            target=worker_main, args=(writer, scenario, run.params), name=f"mxlab-run-{run.id}", daemon=True
        )
        try:
            process.start()
        except Exception as err:
            run.finish("failed", f"could not start a worker process: {type(err).__name__}: {err}")
            return
        finally:
            writer.close()  # the child holds the only writing end: its exit means end of file
        run.set_running()
        limit_s = run.time_limit_s or self.run_timeout_s
        deadline = time.monotonic() + limit_s
        error: str | None = None
        got_result = False
        final: tuple[str, str | None] | None = None
        try:
            while final is None:
                if run.cancel_requested.is_set():
                    final = ("cancelled", None)
                elif time.monotonic() > deadline:
                    final = ("timeout", f"the run took longer than the {limit_s:g} s limit and was stopped")
                elif reader.poll(POLL_S):
                    try:
                        message = reader.recv()
                    except (EOFError, OSError):
                        break  # the worker exited (or died)
                    tag = message[0]
                    if tag == "events":  # raw events, marshalled (server.worker); or pickled, or event dicts
                        run.publish_forwarded(message[1])
                    elif tag == "dropped":
                        run.count_dropped_at_source(message[1])
                    elif tag == "graph":
                        run.graph = message[1]
                    elif tag == "log":
                        run.log.append(message[1])
                    elif tag == "result":
                        run.result, got_result = message[1], True
                    elif tag == "error":
                        error = message[1]
                elif not process.is_alive() and not reader.poll(0):
                    break
        finally:
            reader.close()
        if final is not None:
            _stop_process(process)
            run.finish(*final)
            return
        process.join(timeout=5.0)
        if process.is_alive():  # sent everything but does not exit (e.g. a non-daemon thread)
            _stop_process(process)
        if got_result:
            run.finish("done")
        elif error is not None:
            run.finish("failed", error)
        else:
            run.finish("failed", _exit_description(process.exitcode))


def _stop_process(process: Any) -> None:
    """SIGTERM, then SIGKILL if it is still there a second later."""
    if process.is_alive():
        process.terminate()
        process.join(timeout=1.0)
    if process.is_alive():
        process.kill()
        process.join(timeout=1.0)


def validation_errors(err: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's error list, JSON-safe and without documentation links.

    The offending ``input`` is echoed when JSON can say it; when it cannot (an infinite
    float, a lone surrogate from some other entry point) the error is given without it.
    """
    try:
        return json.loads(err.json(include_url=False))
    except ValueError:
        errors = err.errors(include_url=False, include_input=False, include_context=False)
        return [json_safe({key: error[key] for key in ("type", "loc", "msg")}) for error in errors]

#!/usr/bin/env python3
"""What watching costs: engine dispatch with the server streaming every event to a browser-like
client, against no subscriber at all. Prints JSON lines.

Usage::

    python benchmarks/server_overhead.py             # the full run (about half a minute)
    python benchmarks/server_overhead.py --quick     # a few seconds (what the test runs)
    python benchmarks/server_overhead.py --cpu-split # CPU time per operation in one process
    python benchmarks/server_overhead.py --collector # the same, with the imports frozen (gc.freeze) or not

The workload is ``benchmarks/engine.py``'s dispatch measurement: tiny Python functions pushed
through ThreadedEnginePerDevice (2 workers) round robin on 4 variables, push loop plus
``wait_for_all``, in microseconds per operation (kernel ``noop``, the worst case: nothing
but dispatch). Each operation is three events (push, start, end) as the client sees them;
a watched process whose only subscriber is the server's buffer publishes a quick one as a
single ``engine.op`` that the server expands (docs/engine.md, "Events"). The same with
each operation doing a 128x128 float32 matmul (kernel ``matmul128``, tens of microseconds,
a small layer) shows the overhead next to real work. Three configurations alternate rep by
rep, so that drift hits all alike:

* ``no_subscriber`` -- nobody listens: publishing costs one attribute check;
* ``recorder`` -- a ``framework.events`` recorder appends every event to a list: the
  framework's own cost of building events, without any server;
* ``buffer`` -- an :class:`~framework.events.EventBuffer` emptied every 10 ms by a thread
  that throws the events away: the floor of any live watcher (the engine's event fields,
  one ``engine.op`` per quick operation, the collector scanning waiting events), without
  encoding, pipe or client;
* ``served`` -- the server is subscribed (an event buffer emptied every 10 ms), encodes the
  events into frames and streams them over a WebSocket to one client in another process
  that, like the browser, receives and JSON-parses every message.

The target (issues 5 and 19): ``served`` at most 20% slower than ``no_subscriber``
(``ratios["served/no_subscriber"] <= 1.2``). The client reports how many events it
received: at several hundred thousand events a second a Python client (like a browser)
may not keep up, and then the server thins frames for it (``client_events_dropped``)
rather than slow the run. The served records also carry what competes with the watched
program for the cores: the CPU per operation of the server (``server_cpu_us_per_op``: the
attach server process, or for the worker-process set-up this process, which serves) and of
the client (``client_cpu_us_per_op``), from ``/proc`` (``None`` elsewhere).
"""

from __future__ import annotations

import argparse
import functools
import gc
import marshal
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Literal

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import httpx
import numpy as np
import uvicorn
from pydantic import Field

import framework as mx
import server
from benchmarks.engine import emit, summarize  # the JSON-line helpers of the dispatch benchmark
from framework import events
from framework.engine import create
from server.app import create_app
from server.runs import RunManager
from server.scenarios.base import DirectContext, Scenario, ScenarioParams
from server.worker import EventForwarder

TARGET_RATIO = 1.2
EVENTS_PER_OP = 3  # engine.push, engine.start, engine.end

# The browser-like client: runs in its own process and, like the browser, receives and
# JSON-parses every message. With a URL argument it follows that run (attach mode's
# "live") until stdin closes; without one it reads WebSocket URLs from stdin, follows each
# run to its end and prints how many events it received.
CLIENT = r"""
import json, sys, threading
from websockets.sync.client import connect

def follow(url, stop=None):
    received = 0
    with connect(url, max_size=None) as ws:
        print("connected", flush=True)
        while stop is None or not stop.is_set():
            try:
                text = ws.recv(timeout=0.2)
            except TimeoutError:
                continue
            except Exception:
                break
            message = json.loads(text)
            if message["type"] == "frames":
                received += sum(block["n"] for frame in message["frames"] for block in frame["blocks"])
    print(received, flush=True)

if len(sys.argv) > 1:
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    follow(sys.argv[1], stop)
else:
    for line in sys.stdin:
        follow(line.strip())
"""


def make_kernels(kernel: str) -> list[Any]:
    """One function per variable: a no-op, or a 128x128 float32 matmul into that variable's buffer."""
    if kernel == "noop":

        def tiny(run_ctx: Any) -> None:
            pass

        return [tiny] * 4
    rng = np.random.default_rng(0)
    a, b = (rng.random((128, 128), dtype=np.float32) for _ in range(2))
    outs = [np.empty((128, 128), np.float32) for _ in range(4)]
    return [lambda run_ctx, out=out: np.matmul(a, b, out=out) for out in outs]


def time_dispatch(engine: Any, variables: list[Any], n: int, kernel: str = "noop") -> float:
    """Push ``n`` operations round robin on ``variables``, wait; microseconds per operation."""
    kernels = make_kernels(kernel)
    push, ctx = engine.push_sync, mx.cpu(0)
    t0 = time.perf_counter()
    for i in range(n):
        push(kernels[i & 3], ctx, mutable_vars=(variables[i & 3],))
    engine.wait_for_all(timeout=300)
    return (time.perf_counter() - t0) / n * 1e6


class DispatchParams(ScenarioParams):
    """How many operations to push."""

    n: int = Field(5_000, ge=1, le=1_000_000)
    kernel: Literal["noop", "matmul128"] = "noop"


def dispatch_scenario(params: DispatchParams, ctx: Any) -> dict[str, Any]:
    """The dispatch workload on a fresh engine (after a short warm-up); us/op in the result."""
    engine = create("ThreadedEnginePerDevice", 2)
    try:
        variables = [engine.new_variable(f"v{i}") for i in range(4)]
        time_dispatch(engine, variables, min(params.n, 2_000), params.kernel)
        return {"us_per_op": time_dispatch(engine, variables, params.n, params.kernel)}
    finally:
        engine.stop()


DISPATCH = Scenario(
    name="dispatch",
    title="dispatch benchmark",
    description="tiny no-ops pushed round robin",
    params=DispatchParams,
    run=dispatch_scenario,
)


def with_discarding_buffer(measure: Any) -> float:
    """``measure()`` while an event buffer is subscribed and emptied by a forwarder that sends nowhere."""
    return with_forwarder(lambda tag, payload: None, measure)


def with_forwarder(send: Any, measure: Any) -> float:
    """``measure()`` while an event buffer is subscribed and emptied by a forwarder calling ``send``."""
    forwarder = EventForwarder(send)
    subscription = forwarder.subscribe()
    forwarder.start()
    try:
        return measure()
    finally:
        events.unsubscribe(subscription)
        forwarder.stop()


def start_server(app: Any) -> tuple[Any, threading.Thread, int]:
    """``app`` on uvicorn in a daemon thread, on a free loopback port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    return server, thread, sock.getsockname()[1]


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) that process ``pid`` has used so far, from ``/proc`` (Linux);
    ``None`` where there is no ``/proc``. Clock ticks: 10 ms on most kernels, so only sums over a
    whole rep (20 000 operations) say anything."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuOfOthers:
    """The CPU that the server and the client use per operation during the served reps: what
    competes with the watched program for the machine's cores (``--cpu-split`` counts the
    program's own). ``server`` is a process id, or ``None`` for this process (the worker-process
    set-up serves from here while the main thread only waits; its figure also holds each run's
    fixed costs, starting the worker and packing the finished history, which weigh most in
    the short matmul reps)."""

    def __init__(self, server: int | None, client: int) -> None:
        self.server, self.client = server, client
        self.samples: dict[str, list[float]] = {"server_cpu_us_per_op": [], "client_cpu_us_per_op": []}

    def _now(self) -> tuple[float | None, float | None]:
        server = time.process_time() if self.server is None else process_cpu_s(self.server)
        return server, process_cpu_s(self.client)

    def measure(self, served: Any, n: int) -> float:
        """``served()``, adding the two processes' CPU per operation over it to the samples."""
        before = self._now()
        result = served()
        after = self._now()
        for name, start, end in zip(self.samples, before, after, strict=True):
            if start is not None and end is not None:
                self.samples[name].append((end - start) / n * 1e6)
        return result

    def reset(self) -> None:
        """Forget the samples so far (the warm-up's)."""
        for samples in self.samples.values():
            samples.clear()

    def medians(self) -> dict[str, float | None]:
        return {name: statistics.median(v) if v else None for name, v in self.samples.items()}


def client_counts(streamed: int, received: int) -> dict[str, Any]:
    """What the client got of the served reps: all of it unless it could not keep up (then the
    server dropped events for it, as designed, instead of slowing the run)."""
    return {
        "events_streamed": streamed,
        "client_events_received": received,
        "client_events_dropped": streamed - received,
        "client_events_ok": received == streamed,
    }


def report(mode: str, kernel: str, times: dict[str, list[float]], n: int, extra: dict[str, Any]) -> None:
    """One JSON line per configuration; the served line carries the target and the client check."""
    medians = {name: statistics.median(samples) for name, samples in times.items()}
    for name, samples in times.items():
        record = {
            "workload": "server_overhead",
            "engine": "ThreadedEnginePerDevice",
            "case": f"{mode}/{kernel}/{name}",
            "unit": "us/op",
            **summarize(samples),
            "ratios": {f"{name}/no_subscriber": medians[name] / medians["no_subscriber"]},
            "n_ops": n,
            "kernel": kernel,
            "events_per_op": EVENTS_PER_OP,
        }
        if name == "served":
            ratio = medians["served"] / medians["no_subscriber"]
            paired = [a / b for a, b in zip(samples, times["no_subscriber"], strict=True)]
            record["ratios"].update(
                {
                    "served/recorder": medians["served"] / medians["recorder"],
                    "served/buffer": medians["served"] / medians["buffer"],
                    "paired_median": statistics.median(paired),
                    "of_minimums": min(samples) / min(times["no_subscriber"]),
                }
            )
            record.update({"target": TARGET_RATIO, "meets_target": ratio <= TARGET_RATIO, **extra})
        emit(record)


def server_mode(n: int, reps: int, kernel: str) -> None:
    """``python -m server``'s path: the workload runs as a scenario in a worker process."""
    manager = RunManager({"dispatch": DISPATCH}, run_timeout_s=300)
    server, thread, port = start_server(create_app(manager))
    client = subprocess.Popen([sys.executable, "-c", CLIENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    streamed, received = 0, 0
    others = CpuOfOthers(None, client.pid)

    def in_process(subscribe: bool) -> float:
        if subscribe:
            with events.record():
                return dispatch_scenario(DispatchParams(n=n, kernel=kernel), DirectContext())["us_per_op"]
        return dispatch_scenario(DispatchParams(n=n, kernel=kernel), DirectContext())["us_per_op"]

    def served() -> float:
        nonlocal streamed, received
        run = manager.start("dispatch", {"n": n, "kernel": kernel})
        client.stdin.write(f"ws://127.0.0.1:{port}/api/runs/{run.id}/events\n")
        client.stdin.flush()
        if client.stdout.readline().strip() != "connected":
            raise RuntimeError("the benchmark client could not connect")
        received += int(client.stdout.readline())  # the run's socket closed: it is over
        summary = run.summary()
        if summary["status"] != "done":
            raise RuntimeError(f"benchmark run ended {summary['status']}: {summary['error']}")
        streamed += summary["events"]
        return summary["result"]["us_per_op"]

    configs = {
        "no_subscriber": lambda: in_process(False),
        "recorder": lambda: in_process(True),
        "buffer": lambda: with_discarding_buffer(lambda: in_process(False)),
        "served": lambda: others.measure(served, n),
    }
    try:
        for measure in configs.values():  # warm-up (and the fork server's start)
            measure()
        streamed = received = 0
        others.reset()
        times: dict[str, list[float]] = {name: [] for name in configs}
        for _ in range(reps):
            for name, measure in configs.items():
                times[name].append(measure())
    finally:
        client.stdin.close()
        client.wait(timeout=30)
        manager.shutdown()
        server.should_exit = True
        thread.join(10)
    report("worker_process", kernel, times, n, {**client_counts(streamed, received), **others.medians()})


def attach_mode(n: int, reps: int, kernel: str) -> None:
    """``server.attach()``'s path: the workload in this process, which only buffers and marshals its
    events; the server (frames, WebSockets) in the server process that ``attach`` starts."""
    engine = create("ThreadedEnginePerDevice", 2)
    variables = [engine.new_variable(f"v{i}") for i in range(4)]
    handle = server.attach(port=0)
    handle.pause()
    base = handle.url.split("/?")[0]
    ws_url = base.replace("http://", "ws://") + "/api/runs/live/events"
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, ws_url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    others = CpuOfOthers(handle.process.pid, client.pid)
    try:
        if client.stdout.readline().strip() != "connected":
            raise RuntimeError("the benchmark client could not connect")

        def recorder() -> float:
            with events.record():
                return time_dispatch(engine, variables, n, kernel)

        def served() -> float:
            handle.resume()
            try:
                return time_dispatch(engine, variables, n, kernel)
            finally:
                handle.pause()
                # as the worker-process set-up's served() does by waiting for its run's end: the next
                # rep starts once the server process has taken in this rep's events, not while it and
                # the client still work through them on the cores the next rep is timed on
                settled_event_count(f"{base}/api/runs/live", quiet_s=0.2)

        configs = {
            "no_subscriber": lambda: time_dispatch(engine, variables, n, kernel),
            "recorder": recorder,
            "buffer": lambda: with_discarding_buffer(lambda: time_dispatch(engine, variables, n, kernel)),
            "served": lambda: others.measure(served, n),
        }
        for measure in configs.values():  # warm-up
            measure()
        others.reset()
        times: dict[str, list[float]] = {name: [] for name in configs}
        for _ in range(reps):
            for name, measure in configs.items():
                times[name].append(measure())
        streamed = settled_event_count(f"{base}/api/runs/live")
        time.sleep(0.5)  # the last batches reach the client
    finally:
        client.stdin.close()
        received_lines = client.stdout.read().strip().splitlines()
        client.wait(timeout=30)
        handle.stop()
        engine.stop()
    received = int(received_lines[-1]) if received_lines else -1
    report("attach", kernel, times, n, {**client_counts(streamed, received), **others.medians()})


def settled_event_count(run_url: str, quiet_s: float = 0.3, timeout_s: float = 60.0) -> int:
    """The run's event count once it has stopped growing for ``quiet_s`` (the server process
    encodes what the forwarder sent while this process goes on)."""
    count, since, deadline = -1, time.monotonic(), time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = httpx.get(run_url, timeout=10).json()["events"]
        if now != count:
            count, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
        time.sleep(0.05)
    return count


def cpu_time_dispatch(engine: Any, variables: list[Any], n: int) -> float:
    """:func:`time_dispatch` in process CPU time: microseconds of this process's CPU per operation."""
    start = time.process_time()
    time_dispatch(engine, variables, n)
    return (time.process_time() - start) / n * 1e6


def cpu_split(n: int, reps: int) -> None:
    """Process CPU time per no-op operation in this one process: no subscriber, an event buffer
    emptied by a forwarder that sends nowhere, one that sends ``marshal`` bytes into a pipe
    (what a worker process does), and ``server.attach()`` (the same forwarder, its server
    process encoding and serving on the other core: that process's CPU is not counted here).
    Steadier than wall time on a shared machine: other programs slow the process down but do
    not add to its CPU time. ``gc.freeze()`` first, as the worker does.
    """
    gc.freeze()
    engine = create("ThreadedEnginePerDevice", 2)
    variables = [engine.new_variable(f"v{i}") for i in range(4)]
    receiver, sender = multiprocessing.Pipe(duplex=False)

    def drain() -> None:
        try:
            while True:
                receiver.recv_bytes()
        except EOFError:
            pass

    threading.Thread(target=drain, daemon=True).start()

    cpu_us_per_op = functools.partial(cpu_time_dispatch, engine, variables, n)

    def to_pipe(tag: str, payload: Any) -> None:
        if tag == "events":
            sender.send_bytes(marshal.dumps(payload))

    handle = server.attach(port=0)
    handle.pause()

    def attached() -> float:
        handle.resume()
        try:
            return cpu_us_per_op()
        finally:
            handle.pause()

    configs = {
        "no_subscriber": cpu_us_per_op,
        "buffer": lambda: with_discarding_buffer(cpu_us_per_op),
        "pipe": lambda: with_forwarder(to_pipe, cpu_us_per_op),
        "attach": attached,
    }
    try:
        for measure in configs.values():  # warm-up
            measure()
        times: dict[str, list[float]] = {name: [] for name in configs}
        for _ in range(reps):
            for name, measure in configs.items():
                times[name].append(measure())
    finally:
        handle.stop()
        sender.close()
        engine.stop()
    base = statistics.median(times["no_subscriber"])
    for name, samples in times.items():
        emit(
            {
                "workload": "server_overhead",
                "engine": "ThreadedEnginePerDevice",
                "case": f"cpu_split/noop/{name}",
                "unit": "cpu us/op",
                **summarize(samples),
                "ratios": {f"{name}/no_subscriber": statistics.median(samples) / base},
                "n_ops": n,
            }
        )


class FullCollections:
    """Counts the cyclic collector's full (generation 2) collections and the time they take."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.count += 1
            self.seconds += time.perf_counter() - self._started


def collector(n: int, reps: int) -> None:
    """Process CPU time per no-op operation, unwatched and with a discarding event buffer, with
    the objects loaded so far frozen (``gc.freeze()``, what ``server.attach()`` and a scenario's
    worker do) and not (``gc.unfreeze()``): the four alternate rep by rep in this one process.

    Watching allocates a few tuples per operation, so young collections come more often, each
    promotes the operations in flight, and full collections follow several times as often; each
    rescans every tracked object that is not frozen: the framework's import alone leaves about
    100 000. The records carry the full collections
    of each configuration and their milliseconds per 1000 operations.
    """
    engine = create("ThreadedEnginePerDevice", 2)
    variables = [engine.new_variable(f"v{i}") for i in range(4)]
    gc.unfreeze()

    cpu_us_per_op = functools.partial(cpu_time_dispatch, engine, variables, n)

    configs = [(frozen, watched) for frozen in (False, True) for watched in (False, True)]
    full = {config: FullCollections() for config in configs}
    times: dict[tuple[bool, bool], list[float]] = {config: [] for config in configs}
    try:
        cpu_us_per_op()  # warm-up
        for _ in range(reps):
            for frozen, watched in configs:
                if frozen:
                    gc.freeze()
                else:
                    gc.unfreeze()
                gc.callbacks.append(full[(frozen, watched)])
                try:
                    times[(frozen, watched)].append(
                        with_discarding_buffer(cpu_us_per_op) if watched else cpu_us_per_op()
                    )
                finally:
                    gc.callbacks.remove(full[(frozen, watched)])
    finally:
        gc.unfreeze()
        engine.stop()
    for frozen in (False, True):
        base = statistics.median(times[(frozen, False)])
        for watched in (False, True):
            config, name = (frozen, watched), "buffer" if watched else "no_subscriber"
            emit(
                {
                    "workload": "server_overhead",
                    "engine": "ThreadedEnginePerDevice",
                    "case": f"collector/noop/{'frozen' if frozen else 'not_frozen'}/{name}",
                    "unit": "cpu us/op",
                    **summarize(times[config]),
                    "ratios": {f"{name}/no_subscriber": statistics.median(times[config]) / base},
                    "full_collections": full[config].count,
                    "full_collection_ms_per_1000_ops": 1e6 * full[config].seconds / (n * reps),
                    "n_ops": n,
                }
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds), for tests")
    parser.add_argument(
        "--cpu-split", action="store_true", help="only the process CPU time per operation, in this process"
    )
    parser.add_argument(
        "--collector",
        action="store_true",
        help="the CPU time per operation with the loaded objects frozen (gc.freeze) and not, in this process",
    )
    args = parser.parse_args(argv)
    n, reps = (5_000, 3) if args.quick else (20_000, 7)
    if args.cpu_split:
        cpu_split(n, reps)
        return
    if args.collector:
        collector(n, reps * 2)
        return
    for kernel, ops in (("noop", n), ("matmul128", n // 5)):
        server_mode(ops, reps, kernel)
        attach_mode(ops, reps, kernel)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The server under hostile load: does it stay small, responsive and 5xx-free? Prints JSON lines.

Usage::

    python benchmarks/server_load.py           # 20 s of load (about 40 s in all)
    python benchmarks/server_load.py --quick   # 6 s of load (what the test runs)

``python -m server --no-default-run`` runs as a subprocess on a free loopback port (nothing
leaves the machine), and for a fixed time, all at once:

* **10 streaming clients** read every message of scenario runs started one after another
  (the events they receive and the ``dropped`` counts the server reports are summed);
* **100 clients that never read** open a WebSocket on a replayed trace's run and never read a
  byte, not even the handshake answer (the server caps clients per run and in total, and drops
  a stalled one when a send stays blocked);
* **trace uploads of the largest allowed size** (16 MiB, 100 000 events), 4 in parallel, over and
  over (the server replays at most 2 at once and answers 429 to the rest);
* **hostile bodies** (``1e999``, lone surrogates, ``ts`` of ``1e308``, 400-digit integers, form
  bodies, a foreign ``Host`` or ``Origin``, over-long file names) in a loop;
* a **prober** asking ``/api/health`` every 50 ms and timing the answer.

Every 250 ms the server's RSS and open descriptors are read from ``/proc``. Then every client
stops, and the script prints one JSON line per figure: ``rss_mb`` and ``open_fds`` (peak,
and at the end, after the stalled clients are gone), ``health_latency`` (p50/p90/p99/max in
ms), ``status_counts`` (every answer by status code; ``5xx`` must be 0), ``streamed_events``
(delivered and dropped) and ``stalled_clients``. Targets (issue 20): RSS under 300 MB, health
p99 under 100 ms, no 5xx.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"rss_mb": 300.0, "health_p99_ms": 100.0, "5xx": 0}
STREAMING_CLIENTS = 10
STALLED_CLIENTS = 100
PARALLEL_UPLOADS = 4
TRACE_EVENTS = 100_000  # the server's limit (server.traces.MAX_TRACE_EVENTS)
TRACE_BYTES = 16 * 1024 * 1024  # the server's limit (server.traces.MAX_TRACE_BYTES)
JSON = {"content-type": "application/json"}
HOSTILE: list[tuple[str, str, bytes, dict[str, str]]] = [
    ("POST", "/api/runs", b'{"scenario": "engine_basics", "params": {"op_ms": 1e999}}', JSON),
    ("POST", "/api/runs", b'{"scenario": "\\ud800"}', JSON),
    ("POST", "/api/runs", b"scenario=engine_basics", {"content-type": "application/x-www-form-urlencoded"}),
    ("POST", "/api/runs", b'{"scenario": "engine_basics"}', {"content-type": "text/plain"}),
    ("POST", "/api/traces", b'[{"ph": "X", "ts": 1e308, "dur": 1}]', JSON),
    ("POST", "/api/traces", b'[{"ph": "B", "ts": ' + b"9" * 400 + b"}]", JSON),
    ("POST", "/api/traces", b'[{"ph": "X", "ts": 1, "dur": 1, "name": "\\ud800"}]', JSON),
    ("GET", "/app/" + "x" * 300, b"", {}),
    ("GET", "/api/runs", b"", {"host": "evil.example"}),
    ("GET", "/api/runs", b"", {"origin": "http://evil.example"}),
]


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def largest_trace() -> bytes:
    """A Chrome trace of exactly the event limit, padded by its names to just under the byte limit."""
    pad = (TRACE_BYTES - 200) // TRACE_EVENTS - 70  # ~70 bytes of JSON per event besides the name
    events = [
        {"ph": "X", "name": f"op{i % 97}-" + "p" * pad, "ts": i, "dur": 1, "pid": 1, "tid": i % 4}
        for i in range(TRACE_EVENTS)
    ]
    data = json.dumps({"traceEvents": events}, separators=(",", ":")).encode()
    if len(data) > TRACE_BYTES:
        raise AssertionError(f"the generated trace is {len(data)} bytes, over the limit")
    return data


class ServerProcess:
    """``python -m server`` on a free loopback port; RSS and descriptors read from /proc."""

    def __init__(self) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "server", "--port", str(self.port), "--no-default-run"],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base}/api/health", timeout=1).status_code == 200:
                    return
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.process.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("the server did not answer /api/health within 60 s")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Load:
    """The clients, each a thread that runs until ``stop`` is set; results gathered under a lock."""

    def __init__(self, server: ServerProcess, trace: bytes) -> None:
        self.server = server
        self.trace = trace
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.statuses: Counter[str] = Counter()
        self.health_ms: list[float] = []
        self.delivered = 0
        self.dropped = 0
        self.stream_closes: Counter[str] = Counter()
        self.rss: list[float] = []
        self.fds: list[int] = []
        self.errors: Counter[str] = Counter()

    def count(self, response: httpx.Response) -> None:
        with self.lock:
            self.statuses[str(response.status_code)] += 1

    def failed(self, where: str, err: Exception) -> None:
        with self.lock:
            self.errors[f"{where}: {type(err).__name__}"] += 1

    # ------------------------------------------------------------------ the clients
    def probe_health(self, seconds: float) -> None:
        """Time /api/health from a process of its own (this one is busy with the other clients)."""
        done = subprocess.run(
            [sys.executable, __file__, "--probe", self.server.base, str(seconds)],
            capture_output=True,
            text=True,
            timeout=seconds + 120,
            check=True,
        )
        report = json.loads(done.stdout)
        with self.lock:
            self.health_ms.extend(report["latencies_ms"])
            self.statuses.update(report["statuses"])

    def upload_traces(self) -> None:
        with httpx.Client(timeout=120) as client:
            while not self.stop.is_set():
                try:
                    response = client.post(f"{self.server.base}/api/traces", content=self.trace, headers=JSON)
                except httpx.HTTPError as err:
                    self.failed("upload", err)
                    continue
                self.count(response)
                if response.status_code == 429:  # two replays at a time: wait a little
                    self.stop.wait(0.2)

    def send_hostile(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                for method, path, body, headers in HOSTILE:
                    try:
                        self.count(client.request(method, self.server.base + path, content=body, headers=headers))
                    except httpx.HTTPError as err:
                        self.failed("hostile", err)
                self.stop.wait(0.05)

    def stream(self) -> None:
        """Start a small scenario run and read its WebSocket to the end; again until stopped."""
        params = {"chain_length": 16, "op_ms": 2, "workers": 2}  # a run of about 0.2 s
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                response = client.post(
                    f"{self.server.base}/api/runs", json={"scenario": "engine_basics", "params": params}
                )
                self.count(response)
                if response.status_code != 201:  # 429: four runs at a time
                    self.stop.wait(0.2)
                    continue
                self.read_run(response.json()["id"])

    def read_run(self, run_id: str) -> None:
        url = f"ws://127.0.0.1:{self.server.port}/api/runs/{run_id}/events"
        delivered = dropped = 0
        try:
            with connect(url, max_size=None, open_timeout=30) as ws:
                for text in ws:
                    message = json.loads(text)
                    if message["type"] == "frames":  # events held by the frames (thinned ones hold fewer)
                        delivered += sum(block["n"] for frame in message["frames"] for block in frame["blocks"])
                        dropped = message["dropped"]
            close = str(ws.close_code)
        except Exception as err:  # a refused or broken stream is a figure, not a crash
            close = type(err).__name__
        with self.lock:
            self.delivered += delivered
            self.dropped += dropped
            self.stream_closes[close] += 1

    def stall(self, run_id: str) -> list[socket.socket]:
        """Open STALLED_CLIENTS WebSockets on ``run_id`` that never read a byte."""
        sockets = []
        request = (
            f"GET /api/runs/{run_id}/events HTTP/1.1\r\nHost: 127.0.0.1:{self.server.port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
        for _ in range(STALLED_CLIENTS):
            raw = socket.create_connection(("127.0.0.1", self.server.port))
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            raw.sendall(request)
            sockets.append(raw)
        return sockets

    def sample(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(OSError):
                rss, fds = self.server.rss_mb(), self.server.open_fds()
                with self.lock:
                    self.rss.append(rss)
                    self.fds.append(fds)
            self.stop.wait(0.25)


def probe(base: str, seconds: float) -> None:
    """``--probe``: GET /api/health every 50 ms for ``seconds``; print the latencies and statuses."""
    latencies, statuses = [], Counter()
    ends = time.monotonic() + seconds
    with httpx.Client(timeout=30) as client:
        while time.monotonic() < ends:
            started = time.perf_counter()
            try:
                response = client.get(f"{base}/api/health")
            except httpx.HTTPError as err:
                statuses[type(err).__name__] += 1
                continue
            latencies.append((time.perf_counter() - started) * 1000)
            statuses[str(response.status_code)] += 1
            time.sleep(0.05)
    print(json.dumps({"latencies_ms": latencies, "statuses": statuses}))


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6 s of load instead of 20 s")
    parser.add_argument("--probe", nargs=2, metavar=("URL", "SECONDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe(args.probe[0], float(args.probe[1]))
        return 0
    seconds = 6.0 if args.quick else 20.0
    trace = largest_trace()
    server = ServerProcess()
    stalled: list[socket.socket] = []
    try:
        load = Load(server, trace)
        baseline_rss, baseline_fds = server.rss_mb(), server.open_fds()
        first = httpx.post(f"{server.base}/api/traces", content=trace, headers=JSON, timeout=120)
        load.count(first)
        stalled = load.stall(first.json()["id"])
        threads = [threading.Thread(target=load.sample), threading.Thread(target=load.probe_health, args=(seconds,))]
        threads += [threading.Thread(target=load.stream) for _ in range(STREAMING_CLIENTS)]
        threads += [threading.Thread(target=load.upload_traces) for _ in range(PARALLEL_UPLOADS)]
        threads.append(threading.Thread(target=load.send_hostile))
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        load.stop.set()
        for thread in threads:
            thread.join(timeout=150)
        for raw in stalled:
            raw.close()
        time.sleep(1.0)  # let the server notice the closed sockets
        end_rss, end_fds = server.rss_mb(), server.open_fds()
    finally:
        for raw in stalled:
            raw.close()
        server.stop()
    fives = sum(n for code, n in load.statuses.items() if code.startswith("5"))
    p99 = percentile(load.health_ms, 0.99)
    common = {"workload": "server_load", "seconds": seconds}
    emit({**common, "case": "rss_mb", "baseline": round(baseline_rss, 1), "peak": round(max(load.rss), 1),
          "end": round(end_rss, 1), "target": TARGETS["rss_mb"], "met": max(load.rss) < TARGETS["rss_mb"]})  # fmt: skip
    emit({**common, "case": "open_fds", "baseline": baseline_fds, "peak": max(load.fds), "end": end_fds})
    emit(
        {
            **common,
            "case": "health_latency",
            "unit": "ms",
            "count": len(load.health_ms),
            "median": round(statistics.median(load.health_ms), 2),
            "p90": round(percentile(load.health_ms, 0.90), 2),
            "p99": round(p99, 2),
            "max": round(max(load.health_ms), 2),
            "target_p99": TARGETS["health_p99_ms"],
            "met": p99 < TARGETS["health_p99_ms"],
        }
    )
    emit({**common, "case": "status_counts", "counts": dict(load.statuses), "5xx": fives, "met": fives == 0,
          "client_errors": dict(load.errors)})  # fmt: skip
    emit({**common, "case": "streamed_events", "clients": STREAMING_CLIENTS, "delivered": load.delivered,
          "dropped": load.dropped, "closes": dict(load.stream_closes)})  # fmt: skip
    emit({**common, "case": "stalled_clients", "opened": STALLED_CLIENTS})
    return 0


if __name__ == "__main__":
    sys.exit(main())

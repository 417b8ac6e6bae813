"""Trace uploads off the event loop: parse, replay and encode in a fresh process.

Replaying the largest allowed trace (16 MiB, 100 000 events) is seconds of CPU work, and
much of it inside single C calls that hold the GIL throughout (``json.loads`` of the whole
body): in a thread of the server process it would still stall every other request and
WebSocket for hundreds of milliseconds at a time. So in server mode it runs in a worker
process from the fork server (as scenario runs do), one process per upload
(``max_tasks_per_child=1``: the memory of the parsed document goes back to the system with
the process). The process returns the events already encoded and compressed as a finished
run keeps them (:class:`~server.frames.PackedFrame`), so the server only appends them to a
new run and never holds the uncompressed replay.

In attach mode a worker process would re-import the user's script (see server.live), so
uploads replay in a thread there.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from .frames import Frame, PackedFrame, as_raw
from .streaming import BATCH_MAX_EVENTS
from .traces import MAX_TRACE_EVENTS, Deadline, parse_trace, replay_events

EncodedBatch = tuple[PackedFrame, dict[str, int]]  # (the events, compressed; how many of each kind)


def replay_to_batches(
    data: bytes, time_limit_s: float | None, max_events: int = MAX_TRACE_EVENTS
) -> tuple[list[EncodedBatch], dict[str, Any]]:
    """The replay of the trace in ``data`` as compressed frames (the history of a finished run), and
    its summary (raises TraceError)."""
    deadline = Deadline(time_limit_s)
    events, summary = replay_events(parse_trace(data, max_events, deadline), deadline)
    batches = []
    for start in range(0, len(events), BATCH_MAX_EVENTS):
        frame = Frame.of(start, [as_raw(event) for event in events[start : start + BATCH_MAX_EVENTS]])
        batches.append((frame.packed(), frame.kind_counts()))
    return batches, summary


def _replay_in_child(data: bytes, time_limit_s: float | None) -> tuple[list[EncodedBatch], dict[str, Any]]:
    # The process ends after this one task: the cyclic collector would only rescan the
    # hundreds of thousands of fresh dicts again and again (it tripled the replay's time).
    gc.disable()
    return replay_to_batches(data, time_limit_s)


class TraceReplayer:
    """Runs :func:`replay_to_batches` in worker processes (or threads), at most ``workers`` at once."""

    def __init__(self, workers: int, in_processes: bool, time_limit_s: float) -> None:
        if workers < 1:
            raise ValueError(f"TraceReplayer: workers must be >= 1, got {workers}")
        self.time_limit_s = time_limit_s
        self.in_processes = in_processes
        self._workers = workers
        self._executor: Executor | None = None

    def _pool(self) -> Executor:
        if self._executor is None:  # created on first use: an app that never replays starts nothing
            if self.in_processes:
                self._executor = ProcessPoolExecutor(
                    self._workers, mp_context=multiprocessing.get_context("forkserver"), max_tasks_per_child=1
                )
            else:
                self._executor = ThreadPoolExecutor(self._workers, thread_name_prefix="mxlab-replay")
        return self._executor

    async def replay(self, data: bytes) -> tuple[list[EncodedBatch], dict[str, Any]]:
        """Replay ``data`` without blocking the event loop (raises TraceError as the replay does)."""
        target = _replay_in_child if self.in_processes else replay_to_batches
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), target, data, self.time_limit_s)

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

"""The pool of threads Python ``forward``/``backward`` code runs on, apart from the engine's workers.

Kept apart from the operator so the growth rule (one more thread only when a job waits and
none is idle) can be read and tested on its own.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from .. import config


class CustomOpThreads:
    """The threads Python ``forward``/``backward`` run on (MXNet's ``CustomOperator`` worker).

    ``Custom`` is an asynchronous operator: its compute function, called by the engine in
    whatever thread made it ready, only queues a job here and returns, so no engine worker
    ever waits for Python code. One thread takes the jobs in order. Because user code may
    itself wait for another custom operator (a ``forward`` that calls ``mx.nd.Custom`` and
    reads the result), a further thread is started when a job is queued and no thread is
    idle, up to ``MXLAB_CUSTOM_OP_NUM_THREADS`` (default 16).
    """

    def __init__(self, max_threads: int) -> None:
        self.max_threads = max_threads
        self._jobs: queue.SimpleQueue[Callable[[], Callable[[], None]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a job
        self._queued = 0  # jobs not taken yet

    def submit(self, job: Callable[[], Callable[[], None]]) -> None:
        """Queue ``job``: it runs the user code and returns the completion to call."""
        with self._lock:
            self._queued += 1
            if self._queued > self._idle and len(self._threads) < self.max_threads:
                name = f"mxlab-custom-op/{len(self._threads)}"
                thread = threading.Thread(target=self._loop, name=name, daemon=True)
                self._threads.append(thread)
                self._idle += 1
                thread.start()
        self._jobs.put(job)

    @property
    def num_threads(self) -> int:
        return len(self._threads)

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            with self._lock:
                self._queued -= 1
                self._idle -= 1
            complete = job()
            # Idle again *before* completing: the completion may make the next custom
            # operator of a chain ready, and its job should go to this thread, not a new one.
            with self._lock:
                self._idle += 1
            complete()


_threads: CustomOpThreads | None = None
_threads_lock = threading.Lock()


def custom_op_threads() -> CustomOpThreads:
    global _threads
    with _threads_lock:
        if _threads is None:
            _threads = CustomOpThreads(config.get("MXLAB_CUSTOM_OP_NUM_THREADS"))
        return _threads

"""The decoding threads of the record iterators, and a batch whose pieces they work on.

``ImageRecordIter`` cuts each batch into pieces of a few images (:func:`piece_bounds` in
:mod:`framework.io.image_record_iter`); :class:`PieceWorkers` runs them on its threads in the
order they were put in, and a :class:`PendingBatch` tells the consumer when the last piece of
its batch is done.

Why not ``concurrent.futures.ThreadPoolExecutor``: a future per piece costs a condition
variable taken four times (running, result, the idle-thread semaphore, the consumer's wait),
and the consumer waits for each future in turn, so it may wake once per piece. All of that
runs with the GIL held, on the threads that decode, and on 2 cores the consumer's wake-ups
compete with both decoders. Here a worker takes a piece from a ``queue.SimpleQueue`` (C code),
and a batch counts its pieces down under one lock: one wake-up of the consumer per batch.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable


def _run_pieces(tasks: queue.SimpleQueue) -> None:
    """A worker thread's loop: run pieces until the stop mark (None)."""
    while (piece := tasks.get()) is not None:
        piece()


def _stop(tasks: queue.SimpleQueue, count: int) -> None:
    for _ in range(count):
        tasks.put(None)  # one stop mark per thread, behind the pieces already queued


class PieceWorkers:
    """``count`` threads named ``name_0``, ``name_1``, ... running the callables given to :meth:`submit`.

    The threads refer to the queue only, not to this object: when it is dropped without
    :meth:`shutdown` (an iterator garbage-collected), its finalizer queues the stop marks and
    the threads end once the pieces queued before are done.
    """

    def __init__(self, count: int, name: str) -> None:
        if count < 1:
            raise ValueError(f"PieceWorkers: count must be >= 1, got {count}")
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [
            threading.Thread(target=_run_pieces, args=(self._tasks,), name=f"{name}_{i}", daemon=True)
            for i in range(count)
        ]
        for thread in self.threads:
            thread.start()
        self._finalizer = weakref.finalize(self, _stop, self._tasks, count)

    def submit(self, piece: Callable[[], None]) -> None:
        """Queue ``piece`` (it must not raise: :meth:`PendingBatch.run` keeps its errors)."""
        if not self._finalizer.alive:
            raise RuntimeError("PieceWorkers: submit after shutdown")
        self._tasks.put(piece)

    def shutdown(self) -> None:
        """Let the queued pieces run, then stop the threads and wait for them."""
        self._finalizer()  # queues the stop marks once; later calls do nothing
        for thread in self.threads:
            if thread is not threading.current_thread():
                thread.join()


class PendingBatch:
    """The pieces of one batch in flight: each reports to the batch, the consumer waits for the last.

    An error raised by a piece is kept and raised by :meth:`wait`; with several, the one of the
    first piece in batch order, whichever thread met it first. After :meth:`cancel` the pieces
    not yet started are skipped (an epoch stopped early).
    """

    def __init__(self, pieces: int) -> None:
        self._left = pieces
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._errors: dict[int, BaseException] = {}
        self.cancelled = False
        if pieces == 0:
            self._done.set()

    def run(self, number: int, work: Callable[[], None]) -> None:
        """Run piece ``number`` of the batch (on a worker thread), unless the batch was cancelled."""
        error = None
        if not self.cancelled:
            try:
                work()
            except BaseException as err:  # handed to the consumer by wait()
                error = err
        with self._lock:
            if error is not None:
                self._errors[number] = error
            self._left -= 1
            last = self._left == 0
        if last:
            self._done.set()

    def cancel(self) -> None:
        self.cancelled = True

    def wait(self) -> None:
        """Block until every piece has run; raise the error of the first failed piece."""
        self._done.wait()
        if self._errors:
            raise self._errors[min(self._errors)]

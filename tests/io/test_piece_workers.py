"""PieceWorkers and PendingBatch: the decoding threads of the record iterators and a batch's pieces."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from framework.io.piece_workers import PendingBatch, PieceWorkers


def test_the_pieces_of_a_batch_run_on_the_workers_and_the_consumer_waits_for_the_last():
    workers = PieceWorkers(2, "test-workers")
    ran, lock = [], threading.Lock()
    pending = PendingBatch(5)

    def piece(k: int) -> None:
        with lock:
            ran.append((k, threading.current_thread().name))

    for k in range(5):
        workers.submit(lambda k=k: pending.run(k, lambda: piece(k)))
    pending.wait()
    assert sorted(k for k, _ in ran) == [0, 1, 2, 3, 4]
    assert {name for _, name in ran} <= {"test-workers_0", "test-workers_1"}
    workers.shutdown()
    assert not any(t.is_alive() for t in workers.threads)
    with pytest.raises(RuntimeError, match="submit after shutdown"):
        workers.submit(lambda: None)
    with pytest.raises(ValueError, match="count must be >= 1"):
        PieceWorkers(0, "none")


def test_the_error_of_the_first_failed_piece_in_batch_order_is_raised():
    pending = PendingBatch(3)
    second_failed = threading.Event()

    def first() -> None:
        second_failed.wait(10)  # fails after the later piece did
        raise KeyError("piece 0")

    def second() -> None:
        second_failed.set()
        raise ValueError("piece 2")

    runs = [
        threading.Thread(target=pending.run, args=(2, second)),
        threading.Thread(target=pending.run, args=(1, lambda: None)),
        threading.Thread(target=pending.run, args=(0, first)),
    ]
    for run in runs:
        run.start()
    with pytest.raises(KeyError, match="piece 0"):
        pending.wait()
    for run in runs:
        run.join()


def test_a_cancelled_batch_skips_the_pieces_not_yet_started():
    pending = PendingBatch(2)
    ran = []
    pending.run(0, lambda: ran.append(0))
    pending.cancel()
    pending.run(1, lambda: ran.append(1))
    pending.wait()  # every piece accounted for, the skipped one too
    assert ran == [0]
    PendingBatch(0).wait()  # nothing to wait for


def test_dropped_workers_finish_the_queued_pieces_and_stop():
    workers = PieceWorkers(2, "dropped-workers")
    threads, done = workers.threads, threading.Event()
    workers.submit(lambda: (time.sleep(0.05), done.set()))
    del workers
    gc.collect()
    for thread in threads:
        thread.join(10)
    assert done.is_set() and not any(t.is_alive() for t in threads)

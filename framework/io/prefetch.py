"""``PrefetchingIter``: read the next batch on a background thread while this one trains.

One thread per wrapped iterator. Each thread owns a *slot* with two events: ``taken``
(the consumer took the previous batch: fetch another) and ``ready`` (a batch, or the end
of the epoch, is waiting). So every iterator is always one batch ahead of the consumer,
and the batches of several iterators are fetched in parallel and joined into one
``DataBatch`` (their data lists, then their label lists, concatenated in order).

``rename_data`` / ``rename_label`` (one ``{old: new}`` dict per iterator) rename the
inputs, so two iterators that both call their input ``data`` can feed one network.

An exception raised by a wrapped iterator on the background thread is re-raised by the
consumer's ``next()``. The threads hold no reference to the ``PrefetchingIter``, so
dropping it (or calling ``close()``) stops them.
"""

from __future__ import annotations

import threading
from typing import Any

from .base import DataBatch, DataDesc, DataIter, DataIterError


class _Slot:
    """What one prefetch thread shares with the consumer."""

    def __init__(self, it: DataIter) -> None:
        self.it = it
        self.ready = threading.Event()
        self.taken = threading.Event()
        self.taken.set()  # start fetching at once
        self.stop = False
        self.batch: DataBatch | None = None
        self.error: BaseException | None = None


def _prefetch(slot: _Slot) -> None:
    while True:
        slot.taken.wait()
        if slot.stop:
            return
        try:
            slot.batch, slot.error = slot.it.next(), None
        except StopIteration:
            slot.batch, slot.error = None, None
        except BaseException as err:  # handed to the consumer
            slot.batch, slot.error = None, err
        slot.taken.clear()
        slot.ready.set()


class PrefetchingIter(DataIter):
    """Prefetch batches of one or more iterators on background threads (``mx.io.PrefetchingIter``)."""

    def __init__(
        self,
        iters: DataIter | list[DataIter],
        rename_data: list[dict[str, str]] | None = None,
        rename_label: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise DataIterError("PrefetchingIter: needs at least one iterator")
        for what, renames in (("rename_data", rename_data), ("rename_label", rename_label)):
            if renames is not None and len(renames) != len(iters):
                raise DataIterError(
                    f"PrefetchingIter: {what} needs one dict per iterator: {len(iters)} iterators, {len(renames)} dicts"
                )
        self.iters = iters
        self.n_iter = len(iters)
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0].shape[0]
        self.current_batch: DataBatch | None = None
        self._slots = [_Slot(it) for it in iters]
        self._threads = [
            threading.Thread(target=_prefetch, args=(slot,), name=f"PrefetchingIter-{id(self):x}-{i}", daemon=True)
            for i, slot in enumerate(self._slots)
        ]
        for thread in self._threads:
            thread.start()

    # ---------------------------------------------------------------- description
    @staticmethod
    def _renamed(descs_per_iter: list[list[Any]], renames: list[dict[str, str]] | None) -> list[DataDesc]:
        out = []
        for k, descs in enumerate(descs_per_iter):
            for desc in descs:
                d = desc if isinstance(desc, DataDesc) else DataDesc(*desc)
                name = d.name if renames is None else renames[k].get(d.name, d.name)
                out.append(DataDesc(name, d.shape, d.dtype, d.layout))
        return out

    @property
    def provide_data(self) -> list[DataDesc]:
        """The data descriptions of all iterators, in order, renamed."""
        return self._renamed([it.provide_data for it in self.iters], self.rename_data)

    @property
    def provide_label(self) -> list[DataDesc]:
        """The label descriptions of all iterators, in order, renamed."""
        return self._renamed([it.provide_label for it in self.iters], self.rename_label)

    # ---------------------------------------------------------------- the protocol
    def reset(self) -> None:
        """Wait for the fetches in flight, reset every iterator, start fetching the new epoch."""
        for slot in self._slots:
            slot.ready.wait()
        for it in self.iters:
            it.reset()
        for slot in self._slots:
            slot.ready.clear()
            slot.error = None
            slot.taken.set()

    def iter_next(self) -> bool:
        if not self._threads:
            raise DataIterError("PrefetchingIter: used after close()")
        for slot in self._slots:
            slot.ready.wait()
        for slot in self._slots:
            if slot.error is not None:
                error, slot.error = slot.error, None
                slot.ready.clear()  # the next call fetches from this iterator again
                slot.taken.set()
                raise error
        batches = [slot.batch for slot in self._slots]
        if all(b is None for b in batches):
            return False
        if any(b is None for b in batches):
            ended = [i for i, b in enumerate(batches) if b is None]
            raise DataIterError(
                f"PrefetchingIter: the iterators have different numbers of batches: iterator(s) {ended} ended "
                "before the others"
            )
        pads = [b.pad for b in batches]
        if len(set(pads)) > 1:
            raise DataIterError(f"PrefetchingIter: the iterators disagree on the batch's pad: {pads}")
        first = batches[0]
        self.current_batch = DataBatch(
            [array for b in batches for array in b.data],
            [array for b in batches for array in b.label or []],
            first.pad,
            first.index,
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )
        for slot in self._slots:
            slot.ready.clear()
            slot.taken.set()
        return True

    def next(self) -> DataBatch:
        if self.iter_next():
            assert self.current_batch is not None
            return self.current_batch
        raise StopIteration

    def getdata(self) -> list[Any]:
        return self.current_batch.data if self.current_batch else []

    def getlabel(self) -> list[Any]:
        return self.current_batch.label if self.current_batch else []

    def getindex(self) -> Any:
        return self.current_batch.index if self.current_batch else None

    def getpad(self) -> int:
        return self.current_batch.pad if self.current_batch else 0

    # ---------------------------------------------------------------- shutdown
    def close(self) -> None:
        """Stop the prefetch threads (waits for a fetch in flight)."""
        for slot in self._slots:
            slot.stop = True
            slot.taken.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()
        self._threads = []

    def __del__(self) -> None:
        # Garbage collection may run this on any thread: signal the threads, never wait here.
        for slot in getattr(self, "_slots", []):
            slot.stop = True
            slot.taken.set()

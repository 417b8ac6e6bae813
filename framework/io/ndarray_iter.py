"""``NDArrayIter``: batches from arrays already in memory.

The iterator keeps one host copy of every input and an *order* (a permutation of the
examples, reshuffled at each ``reset()`` when ``shuffle=True``). A batch is a gather of
``batch_size`` positions of that order, shipped to the input's context as new NDArrays.

Inputs are named: a single array is ``data`` (``softmax_label`` for labels), a list gets
``_0_data, _1_data, ...``, a dict keeps its keys; names are then sorted, so
``provide_data`` lists them alphabetically, as MXNet does. NumPy inputs become float32
(MXNet's ``mx.nd.array`` default); NDArray inputs keep their dtype.

``last_batch_handle`` decides what happens to the examples that do not fill a batch (say
10 examples, batch size 3), reproducing MXNet 1.9.1 batch for batch:

- ``pad`` (default): the last batch is ``[9, 0, 1]``, completed from the start of the
  data; ``batch.pad == 2``.
- ``discard``: the short batch is dropped (3 batches per epoch).
- ``roll_over``: the short batch is kept for the next epoch: after ``reset()`` the first
  batch is ``[9, 0, 1]`` and ``batch.pad`` counts the carried-over examples (1), and so on
  (epoch 2 starts ``[8, 9, 0]``). ``hard_reset()`` forgets the carried-over examples.

The position arithmetic uses MXNet's ``cursor``: the start of the current batch, negative
while the carried-over examples are being served.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..context import Context, current_context
from ..ndarray import NDArray
from .base import DataBatch, DataDesc, DataIter, DataIterError, check_batch_size, to_ndarray

LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")


def _named_inputs(data: Any, default_name: str, allow_empty: bool, what: str) -> list[tuple[str, Any]]:
    """``(name, array)`` pairs, sorted by name, from an array, a list or a dict of arrays."""
    if data is None:
        if not allow_empty:
            raise DataIterError(f"NDArrayIter: {what} is required")
        return []
    if isinstance(data, np.ndarray | NDArray):
        data = [data]
    if isinstance(data, list | tuple):
        if not data and not allow_empty:
            raise DataIterError(f"NDArrayIter: {what} is an empty list")
        if len(data) == 1:
            data = {default_name: data[0]}
        else:
            data = {f"_{i}_{default_name}": d for i, d in enumerate(data)}
    if not isinstance(data, Mapping):
        raise DataIterError(
            f"NDArrayIter: {what} must be an NDArray, a numpy.ndarray, a list of them or a dict of them, "
            f"got {type(data).__name__}"
        )
    return sorted(data.items(), key=lambda item: item[0])


def _host_copy(name: str, value: Any) -> tuple[np.ndarray, Context]:
    """The values of one input as a NumPy array, and the context its batches go to."""
    if isinstance(value, NDArray):
        return value.asnumpy(), value.context
    try:
        return np.asarray(value, dtype=np.float32), current_context()
    except (TypeError, ValueError) as err:
        raise DataIterError(
            f"NDArrayIter: input {name!r} of type {type(value).__name__} is not an array: {err}"
        ) from None


class NDArrayIter(DataIter):
    """Iterate over NDArrays or NumPy arrays in batches (``mx.io.NDArrayIter``)."""

    def __init__(
        self,
        data: Any,
        label: Any = None,
        batch_size: int = 1,
        shuffle: bool = False,
        last_batch_handle: str = "pad",
        data_name: str = "data",
        label_name: str = "softmax_label",
        layout: str = "NCHW",
    ) -> None:
        batch_size = check_batch_size("NDArrayIter", batch_size)
        super().__init__(batch_size)
        if last_batch_handle not in LAST_BATCH_HANDLES:
            raise DataIterError(
                f"NDArrayIter: last_batch_handle must be one of {', '.join(LAST_BATCH_HANDLES)}, "
                f"got {last_batch_handle!r}"
            )
        self.layout = layout
        self.batch_axis = DataDesc.get_batch_axis(layout)
        if self.batch_axis < 0:
            raise DataIterError(f"NDArrayIter: layout {layout!r} has no batch axis 'N'")
        self.data = [(k, *_host_copy(k, v)) for k, v in _named_inputs(data, data_name, False, "data")]
        self.label = [(k, *_host_copy(k, v)) for k, v in _named_inputs(label, label_name, True, "label")]
        first_name, first, _ = self.data[0]
        lengths = {}
        for name, values, _ in self.data + self.label:
            if values.ndim <= self.batch_axis:
                raise DataIterError(
                    f"NDArrayIter: input {name!r} of shape {values.shape} has no batch axis {self.batch_axis} "
                    f"(layout {layout!r})"
                )
            lengths[name] = values.shape[self.batch_axis]
        self.num_data = lengths[first_name]
        for name, length in lengths.items():
            if length != self.num_data:
                raise DataIterError(
                    f"NDArrayIter: every input needs the same number of examples: {first_name!r} has "
                    f"{self.num_data}, {name!r} has {length}"
                )
        if last_batch_handle == "roll_over" and batch_size > self.num_data:
            raise DataIterError(
                f"NDArrayIter: roll_over needs batch_size ({batch_size}) <= number of examples ({self.num_data})"
            )
        del first
        self.shuffle = bool(shuffle)
        self.last_batch_handle = last_batch_handle
        self.idx = np.arange(self.num_data)  # MXNet's shuffled index (shuffled in place each epoch)
        self._order = np.arange(self.num_data)  # position -> example
        self._carried: np.ndarray | None = None  # examples rolled over from the last epoch
        self.cursor = -batch_size
        self.reset()

    # ---------------------------------------------------------------- description
    def _describe(self, inputs: list[tuple[str, np.ndarray, Context]]) -> list[DataDesc]:
        descs = []
        for name, values, _ in inputs:
            shape = list(values.shape)
            shape[self.batch_axis] = self.batch_size
            descs.append(DataDesc(name, tuple(shape), values.dtype.type, layout=self.layout))
        return descs

    @property
    def provide_data(self) -> list[DataDesc]:
        """Name, batch shape, dtype and layout of each data input."""
        return self._describe(self.data)

    @property
    def provide_label(self) -> list[DataDesc]:
        """Name, batch shape, dtype and layout of each label input."""
        return self._describe(self.label)

    # ---------------------------------------------------------------- epochs
    def _shuffle(self) -> None:
        # As MXNet: shuffle the index in place, then reorder the (already reordered) data by it,
        # so np.random.seed(s) gives the same batches as MXNet 1.9.1.
        np.random.shuffle(self.idx)
        self._order = self._order[self.idx]

    def hard_reset(self) -> None:
        """Start a fresh epoch, forgetting examples carried over by ``roll_over``."""
        if self.shuffle:
            self._shuffle()
        self.cursor = -self.batch_size
        self._carried = None

    def reset(self) -> None:
        """Start the next epoch (``roll_over`` serves the carried-over examples first)."""
        if self.shuffle:
            self._shuffle()
        if (
            self.last_batch_handle == "roll_over"
            and self.num_data - self.batch_size < self.cursor < self.num_data
            and self._carried is not None
        ):
            # the short batch at `cursor` was carried over: leave room for it before position 0
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self) -> bool:
        self.cursor += self.batch_size
        if self.cursor >= self.num_data:
            return False
        short = self.cursor + self.batch_size > self.num_data
        if short and self.last_batch_handle == "discard":
            return False
        if short and self.last_batch_handle == "roll_over":
            self._carried = self._order[self.cursor :].copy()
            return False
        return True

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(), index=None)

    # ---------------------------------------------------------------- the current batch
    def _examples(self) -> np.ndarray:
        """Which examples the current batch holds, in order."""
        if self.cursor < 0:  # roll_over: the carried examples, then the start of this epoch
            assert self._carried is not None, "NDArrayIter: no carried-over examples"
            return np.concatenate([self._carried, self._order[: self.cursor + self.batch_size]])
        if self.cursor + self.batch_size > self.num_data:  # pad: wrap around to the start
            return self._order[(self.cursor + np.arange(self.batch_size)) % self.num_data]
        return self._order[self.cursor : self.cursor + self.batch_size]

    def _batch(self, inputs: list[tuple[str, np.ndarray, Context]]) -> list[Any]:
        if not inputs:
            return []
        if not -self.batch_size < self.cursor < self.num_data:
            raise DataIterError("NDArrayIter: no current batch: call reset() and iter_next() first")
        examples = self._examples()
        return [to_ndarray(np.take(values, examples, axis=self.batch_axis), ctx) for _, values, ctx in inputs]

    def getdata(self) -> list[Any]:
        return self._batch(self.data)

    def getlabel(self) -> list[Any]:
        return self._batch(self.label)

    def getpad(self) -> int:
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

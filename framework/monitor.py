"""``mx.mon.Monitor``: statistics of every layer's outputs, weights and states while training.

A monitor is installed on executors (``Module.install_monitor(mon)`` or ``mon.install(exe)``);
it registers :meth:`Executor.set_monitor_callback`, so each forward pass hands it every node
output by name. Only every ``interval``-th batch is recorded: ``tic()`` before the batch
decides whether this one counts, ``toc()`` after it adds the arguments and auxiliary states
(weights, running means) and returns one line per array: ``(batch, name, statistic)``.
``Module.fit(monitor=mon)`` calls ``tic``/``toc_print`` around each batch.

The default statistic is ``norm(x) / sqrt(x.size)``, the root mean square of the elements: a
layer whose value drifts towards 0 or explodes shows it at a glance, whatever its size.
The statistic is computed with NDArray operators, pushed right after the array's node, so it
reads the value that node wrote even if a later node reuses the memory.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from typing import Any

from . import ndarray as nd
from .base import MXLabError
from .ndarray.ndarray import NDArray

StatFunc = Callable[[NDArray], Any]


def rms(x: NDArray) -> NDArray:
    """MXNet's default monitor statistic: ``norm(x) / sqrt(x.size)``."""
    return nd.norm(x) / math.sqrt(x.size)


class Monitor:
    """Collect ``stat_func`` of the arrays whose names match ``pattern``, every ``interval`` batches."""

    def __init__(
        self,
        interval: int,
        stat_func: StatFunc | None = None,
        pattern: str = ".*",
        sort: bool = False,
        monitor_all: bool = False,
    ) -> None:
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise MXLabError(f"Monitor: interval must be a positive int (every how many batches), got {interval!r}")
        self.interval = interval
        self.stat_func: StatFunc = rms if stat_func is None else stat_func
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all
        self.activated = False
        self.queue: list[tuple[int, str, Any]] = []
        self.step = 0
        self.exes: list[Any] = []

    def stat_helper(self, name: str, array: NDArray) -> None:
        """The executor's callback: record ``stat_func(array)`` when this batch is monitored."""
        if self.activated and self.re_prog.match(name):
            self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe: Any) -> None:
        """Watch executor ``exe`` (its forward outputs, and at ``toc`` its arguments and states)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def _wait_for_parameters(self) -> None:
        for exe in self.exes:
            for array in [*exe.arg_arrays, *exe.aux_arrays]:
                array.wait_to_read()

    def tic(self) -> None:
        """Start a batch: it is recorded if it is the ``interval``-th since the last recorded one."""
        if self.step % self.interval == 0:
            self._wait_for_parameters()
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self) -> list[tuple[int, str, str]]:
        """End a batch: ``(batch, name, statistic as text)`` for each recorded array, then the
        arguments and auxiliary states; ``[]`` when this batch was not recorded."""
        if not self.activated:
            return []
        self._wait_for_parameters()
        for exe in self.exes:
            symbol = exe._symbol
            named = [
                *zip(symbol.list_arguments(), exe.arg_arrays, strict=True),
                *zip(symbol.list_auxiliary_states(), exe.aux_arrays, strict=True),
            ]
            for name, array in named:
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        queue = sorted(self.queue, key=lambda item: item[1]) if self.sort else self.queue
        self.queue = []
        return [(step, name, _as_text(value)) for step, name, value in queue]

    def toc_print(self) -> None:
        """:meth:`toc`, logged one line per array (``logging.info``) as MXNet prints it."""
        for step, name, text in self.toc():
            logging.info("Batch: %7d %30s %s", step, name, text)


def _as_text(value: Any) -> str:
    """A statistic (an NDArray or a list of them) as MXNet prints it: scalars plainly, arrays as NumPy."""
    values = value if isinstance(value, list | tuple) else [value]
    parts = []
    for v in values:
        if not isinstance(v, NDArray):
            raise MXLabError(f"Monitor: stat_func must return an NDArray or a list of NDArrays, got {type(v).__name__}")
        parts.append(str(v.asscalar()) if v.shape in ((1,), ()) else str(v.asnumpy()))
    return "".join(p + "\t" for p in parts)


__all__ = ["Monitor", "rms"]

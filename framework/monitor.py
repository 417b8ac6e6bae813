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

While someone subscribes to the event bus (the server, a ``Recorder``), ``toc()`` also
publishes each line as a ``monitor.stat`` event -- its batch, name, role, the statistic's
name and its value as plain floats -- which the web UI folds into a live table per layer.
Nobody listening costs one attribute check per ``toc``.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from . import events
from . import ndarray as nd
from .base import MXLabError
from .ndarray.ndarray import NDArray

StatFunc = Callable[[NDArray], Any]

#: A ``monitor.stat`` event carries at most this many values of a statistic with several
#: elements (the first ones, flattened): enough for a per-channel glance, never a whole tensor.
MAX_EVENT_VALUES = 16


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
        # The role of each queued entry, in step with ``queue`` (only the events use it).
        self._roles: list[str] = []
        # Names the executors call node outputs (``fc1_output``) and their variables (``fc1_weight``):
        # a name the callback reports is an output if it is the first and not the second.
        self._node_outputs: set[str] = set()
        self._variables: set[str] = set()

    def stat_helper(self, name: str, array: NDArray) -> None:
        """The executor's callback: record ``stat_func(array)`` when this batch is monitored."""
        if self.activated and self.re_prog.match(name):
            self.queue.append((self.step, name, self.stat_func(array)))
            is_output = name in self._node_outputs and name not in self._variables
            self._roles.append("output" if is_output else "input")

    def install(self, exe: Any) -> None:
        """Watch executor ``exe`` (its forward outputs, and at ``toc`` its arguments and states)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)
        symbol = exe._symbol
        self._variables.update(symbol.list_arguments(), symbol.list_auxiliary_states())
        self._node_outputs.update(symbol.get_internals().list_outputs())

    def _wait_for_parameters(self) -> None:
        for exe in self.exes:
            for array in [*exe.arg_arrays, *exe.aux_arrays]:
                array.wait_to_read()

    def tic(self) -> None:
        """Start a batch: it is recorded if it is the ``interval``-th since the last recorded one."""
        if self.step % self.interval == 0:
            self._wait_for_parameters()
            self.queue = []
            self._roles = []
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
            named = [(n, a, "argument") for n, a in zip(symbol.list_arguments(), exe.arg_arrays, strict=True)]
            named += [(n, a, "auxiliary") for n, a in zip(symbol.list_auxiliary_states(), exe.aux_arrays, strict=True)]
            for name, array, role in named:
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
                    self._roles.append(role)
        self.activated = False
        entries = list(zip(self.queue, self._roles, strict=True))
        if self.sort:
            entries.sort(key=lambda entry: entry[0][1])
        self.queue = []
        self._roles = []
        lines = [(step, name, _as_text(value)) for (step, name, value), _ in entries]
        if events.enabled:
            self._publish(entries)
        return lines

    def _publish(self, entries: list[tuple[tuple[int, str, Any], str]]) -> None:
        """One ``monitor.stat`` event per line, in the order ``toc`` returns them."""
        stat = getattr(self.stat_func, "__name__", type(self.stat_func).__name__)
        for (step, name, value), role in entries:
            events.publish("monitor.stat", batch=step, name=name, role=role, stat=stat, value=_as_numbers(value))

    def toc_print(self) -> None:
        """:meth:`toc`, logged one line per array (``logging.info``) as MXNet prints it."""
        for step, name, text in self.toc():
            logging.info("Batch: %7d %-30s %s", step, name, text)


def _as_numbers(value: Any) -> float | list[float]:
    """A statistic as plain floats for an event: one float, or the first :data:`MAX_EVENT_VALUES`
    values of all its arrays flattened (NaN and infinities stay floats; the server's JSON
    encoder writes them as the strings ``"nan"``, ``"inf"``, ``"-inf"``)."""
    values = value if isinstance(value, list | tuple) else [value]
    arrays = [np.asarray(v.asnumpy(), dtype=np.float64).ravel() for v in values]
    flat = np.concatenate(arrays) if arrays else np.empty(0)
    if flat.size == 1:
        return float(flat[0])
    return [float(x) for x in flat[:MAX_EVENT_VALUES]]


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

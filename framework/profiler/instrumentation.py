"""The user instrumentation of ``mx.profiler``: your own ranges, counters and markers in the trace.

MXNet lets a program mark what *it* is doing next to what the engine does::

    domain = mx.profiler.Domain("training")
    step = domain.new_task("step")        # a named range: start() ... stop()
    loss_counter = domain.new_counter("batches", 0)
    step.start(); ...; step.stop()
    loss_counter += 1                     # a value over time
    domain.new_marker("epoch end").mark() # an instant

Each call publishes one event on the bus (``profiler.task_begin``/``_end``,
``profiler.frame_*``, ``profiler.event_*``, ``profiler.counter``, ``profiler.marker``), the
same way the engine reports its operations. So they need no profiler of their own: the
recorder keeps them while it runs, :func:`~framework.profiler.trace.chrome_trace` draws them as
their own tracks, the aggregate table counts them, and the web UI's timeline shows them next
to the engine's lanes. With nobody subscribed, a call costs one attribute check.

A Task and a Frame belong to a :class:`Domain` (a group shown together); an :class:`Event`
has none. Tasks, Frames and Events are the same thing to MXLab, a range; MXNet files them in
different categories, and so do the trace and the table.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator

from .. import events as _events_bus
from ..base import MXLabError

_range_ids = itertools.count(1)
MARKER_SCOPES = ("global", "process", "thread", "task", "marker")


class ProfilerError(MXLabError, ValueError):
    """The profiler's API was called wrongly (a bad state, scope or value)."""


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise ProfilerError(f"profiler.{what}: the name must be a non-empty string, got {name!r}")
    return name


def _publish(kind: str, domain: str | None, name: str, **fields: object) -> None:
    if _events_bus.enabled:
        _events_bus.publish(kind, domain=domain, name=name, thread=threading.current_thread().name, **fields)


class Domain:
    """A named group of tasks, frames, counters and markers (one track group in the trace)."""

    def __init__(self, name: str) -> None:
        self.name = _check_name(name, "Domain")

    def new_task(self, name: str) -> Task:
        return Task(self, name)

    def new_frame(self, name: str) -> Frame:
        return Frame(self, name)

    def new_counter(self, name: str, value: int | None = None) -> Counter:
        return Counter(self, name, value)

    def new_marker(self, name: str) -> Marker:
        return Marker(self, name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Domain({self.name!r})"


class _Range:
    """A named interval: ``start()`` publishes its begin, ``stop()`` its end."""

    category = "event"

    def __init__(self, domain: Domain | None, name: str) -> None:
        if domain is not None and not isinstance(domain, Domain):
            raise ProfilerError(f"profiler.{type(self).__name__}: domain must be a Domain, got {domain!r}")
        self.domain = domain
        self.name = _check_name(name, type(self).__name__)
        self._open: int | None = None

    def start(self) -> None:
        """Begin the range (from now until :meth:`stop`)."""
        if self._open is not None:
            raise ProfilerError(f"profiler.{type(self).__name__} {self.name!r}: start() twice without stop()")
        self._open = next(_range_ids)
        _publish(f"profiler.{self.category}_begin", self._domain_name(), self.name, range=self._open)

    def stop(self) -> None:
        """End the range begun by :meth:`start`."""
        if self._open is None:
            raise ProfilerError(f"profiler.{type(self).__name__} {self.name!r}: stop() without start()")
        _publish(f"profiler.{self.category}_end", self._domain_name(), self.name, range=self._open)
        self._open = None

    def __enter__(self) -> _Range:  # MXLab's addition: `with task:` is start() ... stop()
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _domain_name(self) -> str | None:
        return None if self.domain is None else self.domain.name

    def __str__(self) -> str:
        return self.name


class Task(_Range):
    """A unit of work of a domain (a data-loading step, a forward pass...)."""

    category = "task"

    def __init__(self, domain: Domain, name: str) -> None:
        super().__init__(domain, name)


class Frame(_Range):
    """A repeated period of a domain (an iteration of the training loop)."""

    category = "frame"

    def __init__(self, domain: Domain, name: str) -> None:
        super().__init__(domain, name)


class Event(_Range):
    """A range of no domain."""

    category = "event"

    def __init__(self, name: str) -> None:
        super().__init__(None, name)


class Counter:
    """An integer of a domain whose every change is recorded (``+=``, ``-=``, ``set_value``)."""

    def __init__(self, domain: Domain, name: str, value: int | None = None) -> None:
        if not isinstance(domain, Domain):
            raise ProfilerError(f"profiler.Counter: domain must be a Domain, got {domain!r}")
        self.domain = domain
        self.name = _check_name(name, "Counter")
        self.value = 0
        if value is not None:
            self.set_value(value)

    @staticmethod
    def _check(number: object, what: str) -> int:
        if isinstance(number, bool) or not isinstance(number, int):
            raise ProfilerError(f"profiler.Counter.{what}: expected an int, got {number!r}")
        return number

    def set_value(self, value: int) -> None:
        self.value = self._check(value, "set_value")
        _publish("profiler.counter", self.domain.name, self.name, value=self.value)

    def increment(self, delta: int = 1) -> None:
        self.set_value(self.value + self._check(delta, "increment"))

    def decrement(self, delta: int = 1) -> None:
        self.set_value(self.value - self._check(delta, "decrement"))

    def __iadd__(self, delta: int) -> Counter:
        self.increment(delta)
        return self

    def __isub__(self, delta: int) -> Counter:
        self.decrement(delta)
        return self

    def __str__(self) -> str:
        return self.name


class Marker:
    """A named instant of a domain, drawn as a vertical line over ``scope``."""

    def __init__(self, domain: Domain, name: str) -> None:
        if not isinstance(domain, Domain):
            raise ProfilerError(f"profiler.Marker: domain must be a Domain, got {domain!r}")
        self.domain = domain
        self.name = _check_name(name, "Marker")

    def mark(self, scope: str = "process") -> None:
        """Record the instant; ``scope`` is one of ``global``, ``process``, ``thread``, ``task``, ``marker``."""
        if scope not in MARKER_SCOPES:
            raise ProfilerError(f"profiler.Marker.mark: scope must be one of {MARKER_SCOPES}, got {scope!r}")
        _publish("profiler.marker", self.domain.name, self.name, scope=scope)


_scope = threading.local()


def current_scope() -> str:
    """The name of the innermost :func:`scope` block of this thread (``"<unk>:"`` outside any)."""
    return getattr(_scope, "name", "<unk>:")


@contextlib.contextmanager
def scope(name: str = "<unk>:", append_mode: bool = False) -> Iterator[None]:
    """A named region of the program (MXNet 2.x's ``profiler.scope``): recorded as an
    :class:`Event` named after the scope, and readable as :func:`current_scope` inside.

    With ``append_mode`` the name is appended to the enclosing scope's (``outer:inner:``).
    """
    _check_name(name, "scope")
    if not name.endswith(":"):
        name += ":"
    previous = current_scope()
    full = previous + name if append_mode and previous != "<unk>:" else name
    _scope.name = full
    event = Event(full)
    event.start()
    try:
        yield
    finally:
        event.stop()
        _scope.name = previous


__all__ = [
    "MARKER_SCOPES",
    "Counter",
    "Domain",
    "Event",
    "Frame",
    "Marker",
    "ProfilerError",
    "Task",
    "current_scope",
    "scope",
]

"""The MXNet API of the profiler: configuration, state, recording, dumping.

This is the only part of the profiler with state. While the state is ``"run"`` (and not
paused), a subscription to the event bus appends every event of the configured kinds to
a list; ``set_config`` chooses the kinds, ``dump`` writes the list as a Chrome trace
(:mod:`.trace`) and ``dumps`` prints it as the aggregate table (:mod:`.table`). Events
arrive from engine worker threads, so the list and the state are guarded by one lock.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
from typing import Any

from .. import config as _settings
from .. import events as _events_bus
from ..atomic_file import atomic_write
from ..events import Event
from .table import aggregate, format_table
from .trace import chrome_trace

_FLAGS = (
    "profile_all",
    "profile_symbolic",
    "profile_imperative",
    "profile_memory",
    "profile_api",
    "aggregate_stats",
    "continuous_dump",
)
_DEFAULT_CONFIG: dict[str, Any] = {
    "filename": "profile.json",
    "profile_all": False,
    "profile_symbolic": True,
    "profile_imperative": True,
    "profile_memory": True,
    "profile_api": True,
    "aggregate_stats": False,
    "continuous_dump": False,
}
_STATES = ("run", "stop")

_lock = threading.Lock()
_config: dict[str, Any] = dict(_DEFAULT_CONFIG)
_state = "stop"
_paused = False
_recording = False  # state == "run" and not paused; checked by _record under _lock
_recorded: list[Event] = []
_subscription: _events_bus.Subscription | None = None
_aggregate_since_ns: int | None = None  # set by dumps(reset=True)


def _kinds_for(config: dict[str, Any]) -> frozenset[str]:
    """Which event kinds a configuration records (see :func:`set_config`)."""
    if config["profile_all"]:
        return frozenset(_events_bus.KINDS)
    kinds: set[str] = set()
    if config["profile_imperative"] or config["profile_symbolic"]:
        kinds |= {"engine.push", "engine.start", "engine.end"}
    if config["profile_symbolic"]:
        kinds.add("executor.plan")
    if config["profile_memory"]:
        kinds |= {"storage.alloc", "storage.free"}
    if config["profile_api"]:
        kinds |= {"engine.wait_begin", "engine.wait_end", "engine.var_new", "engine.var_delete"}
        kinds |= {"kvstore.push", "kvstore.pull"}
    return frozenset(kinds)


def _record(event: Event) -> None:
    """The subscriber callback; runs in whichever thread published (often a worker)."""
    with _lock:
        if _recording:
            _recorded.append(event)


def _subscribe_locked() -> None:
    global _subscription, _recording
    kinds = _kinds_for(_config)
    _subscription = _events_bus.subscribe(_record, kinds) if kinds else None
    _recording = True


def _unsubscribe_locked() -> None:
    global _subscription, _recording
    _recording = False
    if _subscription is not None:
        _events_bus.unsubscribe(_subscription)
        _subscription = None


def set_config(
    *,
    filename: str | os.PathLike[str] = "profile.json",
    profile_all: bool = False,
    profile_symbolic: bool = True,
    profile_imperative: bool = True,
    profile_memory: bool = True,
    profile_api: bool = True,
    aggregate_stats: bool = False,
    continuous_dump: bool = False,
    **unknown: Any,
) -> None:
    """Configure the profiler (keyword arguments only; omitted ones take their defaults).

    MXLab publishes fewer kinds of events than MXNet instruments, so the flags map as:

    * ``profile_imperative`` / ``profile_symbolic``: engine operations (push, start, end);
      the engine cannot tell which front end pushed an operation, so either flag turns
      them on. ``profile_symbolic`` also records ``executor.plan``.
    * ``profile_memory``: ``storage.alloc`` / ``storage.free`` (counters in the trace).
    * ``profile_api``: the API-level calls: waits, variable creation and deletion,
      kvstore push/pull.
    * ``profile_all``: every event kind, including ``train.metric``.
    * ``aggregate_stats``: accepted for compatibility; :func:`dumps` always works here
      because the table is computed from the recorded events.
    * ``continuous_dump``: ``set_state("stop")`` and :func:`pause` also write the trace
      file (keeping the events), so the file is always current.

    Raises:
        TypeError: for an unknown argument, a non-path filename or a non-bool flag.
    """
    if unknown:
        raise TypeError(
            f"profiler.set_config: unknown argument(s) {', '.join(sorted(unknown))}; "
            f"accepted: filename, {', '.join(_FLAGS)}"
        )
    if not isinstance(filename, (str, os.PathLike)) or not os.fspath(filename):
        raise TypeError(f"profiler.set_config: filename must be a non-empty str or path, got {filename!r}")
    new = {
        "filename": os.fspath(filename),
        "profile_all": profile_all,
        "profile_symbolic": profile_symbolic,
        "profile_imperative": profile_imperative,
        "profile_memory": profile_memory,
        "profile_api": profile_api,
        "aggregate_stats": aggregate_stats,
        "continuous_dump": continuous_dump,
    }
    for flag in _FLAGS:
        if not isinstance(new[flag], bool):
            raise TypeError(f"profiler.set_config: {flag} must be True or False, got {new[flag]!r}")
    global _config
    with _lock:
        _config = new
        if _recording:  # switch to the new set of kinds without losing what was recorded
            _unsubscribe_locked()
            _subscribe_locked()


def get_config() -> dict[str, Any]:
    """A copy of the current configuration."""
    with _lock:
        return dict(_config)


def set_state(state: str = "stop") -> None:
    """``"run"`` starts recording events, ``"stop"`` stops (the recorded events stay).

    Raises:
        ValueError: for anything but ``"run"`` or ``"stop"``.
    """
    if state not in _STATES:
        raise ValueError(f"profiler.set_state: state must be one of {_STATES}, got {state!r}")
    global _state, _paused
    with _lock:
        if state == _state:
            return
        _state, _paused = state, False
        if state == "run":
            _subscribe_locked()
        else:
            _unsubscribe_locked()
        write_now = state == "stop" and _config["continuous_dump"]
    if write_now:
        dump(finished=False)


def state() -> str:
    """The current state: ``"run"`` or ``"stop"`` (paused still counts as ``"run"``)."""
    return _state


def get_state() -> str:
    """Same as :func:`state`."""
    return _state


def pause() -> None:
    """Stop recording for a while without leaving the ``"run"`` state; see :func:`resume`."""
    global _paused
    with _lock:
        if _state != "run" or _paused:
            return
        _paused = True
        _unsubscribe_locked()
        write_now = _config["continuous_dump"]
    if write_now:
        dump(finished=False)


def resume() -> None:
    """Record again after :func:`pause`; does nothing unless paused."""
    global _paused
    with _lock:
        if _state != "run" or not _paused:
            return
        _paused = False
        _subscribe_locked()


def recorded_events() -> list[Event]:
    """A copy of the events recorded so far (the input of the view functions)."""
    with _lock:
        return list(_recorded)


def clear() -> None:
    """Forget the recorded events (the configuration and state stay)."""
    global _aggregate_since_ns
    with _lock:
        _recorded.clear()
        _aggregate_since_ns = None


def dump(finished: bool = True) -> str:
    """Write the Chrome trace of the recorded events to the configured filename.

    With ``finished=True`` the recorded events are cleared afterwards, so the next dump
    starts a new trace; with ``False`` they are kept and the next dump includes them
    again. Returns the file name.
    """
    global _aggregate_since_ns
    with _lock:
        recorded = list(_recorded)
        filename = _config["filename"]
        if finished:
            _recorded.clear()
            _aggregate_since_ns = None
    with atomic_write(filename, "w") as f:
        json.dump(chrome_trace(recorded), f)
    return filename


def dumps(reset: bool = False) -> str:
    """The aggregate "Profile Statistics" table of the operations recorded so far.

    With ``reset=True``, the next table counts only operations that start after this
    call (the recorded events themselves stay, for :func:`dump`).
    """
    global _aggregate_since_ns
    with _lock:
        recorded = list(_recorded)
        since = _aggregate_since_ns
        if reset:
            _aggregate_since_ns = time.perf_counter_ns()
    return format_table(aggregate(recorded, since_ns=since))


def _dump_at_exit() -> None:
    """Write what an autostarted profiler is still recording when the process ends."""
    if _state == "run":
        set_state("stop")
        dump()


if _settings.get("MXLAB_PROFILER_AUTOSTART"):
    set_state("run")
    atexit.register(_dump_at_exit)

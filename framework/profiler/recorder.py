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
from .instrumentation import ProfilerError
from .table import aggregate_sections, check_format, format_stats
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
    "dump_period": 1.0,
    "profile_process": "worker",
}
_STATES = ("run", "stop")
_PROCESSES = ("worker", "server")
#: The user instrumentation's events (mx.profiler.Domain...): recorded whenever the profiler runs.
_USER_KINDS = frozenset(k for k in _events_bus.KINDS if k.startswith("profiler."))

_lock = threading.Lock()
_config: dict[str, Any] = dict(_DEFAULT_CONFIG)
_state = "stop"
_paused = False
_recording = False  # state == "run" and not paused; checked by _record under _lock
_recorded: list[Event] = []
_subscription: _events_bus.Subscription | None = None
_aggregate_since_ns: int | None = None  # set by dumps(reset=True)
_dump_timer: threading.Timer | None = None  # continuous_dump: the next periodic dump


def _kinds_for(config: dict[str, Any]) -> frozenset[str]:
    """Which event kinds a configuration records (see :func:`set_config`)."""
    if config["profile_all"]:
        return frozenset(_events_bus.KINDS)
    kinds: set[str] = set(_USER_KINDS)
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
    if _config["continuous_dump"]:
        _schedule_dump_locked()


def _unsubscribe_locked() -> None:
    global _subscription, _recording
    _recording = False
    if _subscription is not None:
        _events_bus.unsubscribe(_subscription)
        _subscription = None
    _cancel_dump_locked()


def _schedule_dump_locked() -> None:
    """continuous_dump: write the trace every ``dump_period`` seconds while recording."""
    global _dump_timer
    _cancel_dump_locked()
    _dump_timer = threading.Timer(_config["dump_period"], _periodic_dump)
    _dump_timer.daemon = True
    _dump_timer.start()


def _cancel_dump_locked() -> None:
    global _dump_timer
    if _dump_timer is not None:
        _dump_timer.cancel()
        _dump_timer = None


def _periodic_dump() -> None:
    with _lock:
        if not _recording:
            return
    dump(finished=False)
    with _lock:
        if _recording:
            _schedule_dump_locked()


def _check_process(profile_process: object, who: str) -> None:
    """MXLab profiles this process (MXNet's ``worker``); kvstore server processes are not instrumented."""
    if profile_process not in _PROCESSES:
        raise ProfilerError(f"profiler.{who}: profile_process must be 'worker' or 'server', got {profile_process!r}")
    if profile_process == "server":
        raise ProfilerError(
            f"profiler.{who}: profile_process='server' profiles MXNet's parameter-server processes; MXLab's "
            "kvstore servers are not instrumented, so only 'worker' (this process) can be profiled"
        )


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
    dump_period: float = 1.0,
    profile_process: str = "worker",
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
    * ``continuous_dump``: while recording, the trace file is rewritten every
      ``dump_period`` seconds (keeping the events); ``set_state("stop")`` and :func:`pause`
      write it too, so the file is always current.
    * ``profile_process``: ``"worker"`` (this process); ``"server"`` raises, MXLab's kvstore
      servers are not instrumented.
    * The user instrumentation (``Domain``, ``Task``, ``Counter``...) is recorded whatever
      the flags.

    Raises:
        TypeError: for an unknown argument, a non-path filename or a non-bool flag.
    """
    if unknown:
        raise TypeError(
            f"profiler.set_config: unknown argument(s) {', '.join(sorted(unknown))}; "
            f"accepted: filename, {', '.join(_FLAGS)}, dump_period, profile_process"
        )
    if not isinstance(filename, (str, os.PathLike)) or not os.fspath(filename):
        raise TypeError(f"profiler.set_config: filename must be a non-empty str or path, got {filename!r}")
    _check_process(profile_process, "set_config")
    if isinstance(dump_period, bool) or not isinstance(dump_period, int | float) or not dump_period > 0:
        raise TypeError(f"profiler.set_config: dump_period must be a positive number of seconds, got {dump_period!r}")
    new = {
        "filename": os.fspath(filename),
        "dump_period": float(dump_period),
        "profile_process": profile_process,
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


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """``"run"`` starts recording events, ``"stop"`` stops (the recorded events stay).

    Raises:
        ValueError: for anything but ``"run"`` or ``"stop"``.
    """
    _check_process(profile_process, "set_state")
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


def pause(profile_process: str = "worker") -> None:
    """Stop recording for a while without leaving the ``"run"`` state; see :func:`resume`."""
    _check_process(profile_process, "pause")
    global _paused
    with _lock:
        if _state != "run" or _paused:
            return
        _paused = True
        _unsubscribe_locked()
        write_now = _config["continuous_dump"]
    if write_now:
        dump(finished=False)


def resume(profile_process: str = "worker") -> None:
    """Record again after :func:`pause`; does nothing unless paused."""
    _check_process(profile_process, "resume")
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


def dump(finished: bool = True, profile_process: str = "worker") -> str:
    """Write the Chrome trace of the recorded events to the configured filename.

    With ``finished=True`` the recorded events are cleared afterwards, so the next dump
    starts a new trace; with ``False`` they are kept and the next dump includes them
    again. Returns the file name.
    """
    _check_process(profile_process, "dump")
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


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total", ascending: bool = False) -> str:
    """The aggregate "Profile Statistics" of what was recorded so far, as MXNet prints them.

    Sections: ``Device Storage``, ``operator`` and the user instrumentation's (one per
    domain, ``<domain>,frame``, ``event``, ``<domain>,counter``). ``format`` is ``"table"``
    or ``"json"``; the rows of each time section are sorted by ``sort_by`` (``total``,
    ``avg``, ``min``, ``max``, ``count``), largest first unless ``ascending``. With
    ``reset=True``, the next call counts only what starts after this one (the recorded
    events themselves stay, for :func:`dump`).
    """
    check_format(format, sort_by, ascending)  # argument errors before any reset
    global _aggregate_since_ns
    with _lock:
        recorded = list(_recorded)
        since = _aggregate_since_ns
        if reset:
            _aggregate_since_ns = time.perf_counter_ns()
    return format_stats(aggregate_sections(recorded, since_ns=since), format, sort_by, ascending)


def dump_profile() -> str:
    """MXNet's deprecated name of :func:`dump`."""
    return dump(True)


def profiler_set_config(mode: str = "symbolic", filename: str = "profile.json") -> None:
    """MXNet's deprecated configuration: ``mode`` ``"symbolic"`` or ``"all"``."""
    if mode not in ("symbolic", "all"):
        raise ProfilerError(f"profiler.profiler_set_config: mode must be 'symbolic' or 'all', got {mode!r}")
    set_config(
        profile_symbolic=True,
        profile_imperative=mode == "all",
        profile_memory=mode == "all",
        profile_api=mode == "all",
        filename=filename,
    )


def profiler_set_state(state: str = "stop") -> None:
    """MXNet's deprecated name of :func:`set_state`."""
    set_state(state)


def _dump_at_exit() -> None:
    """Write what an autostarted profiler is still recording when the process ends."""
    if _state == "run":
        set_state("stop")
        dump()


if _settings.get("MXLAB_PROFILER_AUTOSTART"):
    set_state("run")
    atexit.register(_dump_at_exit)

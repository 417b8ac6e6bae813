"""The profiler (``mx.profiler``): one more subscriber to the event stream.

MXNet's profiler is wired into its C++ engine. MXLab's needs no hooks at all, because every
mechanism already reports what it does on the event bus (:mod:`framework.events`): the
engine publishes ``engine.push`` when it receives an operation, ``engine.start`` and
``engine.end`` when a worker runs it, ``engine.wait_begin``/``wait_end`` around waits; the
storage manager publishes ``storage.alloc``/``storage.free``. The profiler is just a
subscriber that turns those events into pictures:

1. **Recording** (:mod:`.recorder`, the MXNet API): while the state is ``"run"``, every
   event is appended to a list. Events arrive from engine worker threads, so the list is
   guarded by a lock.
2. **Views** (pure functions of a list of event dicts, usable on any recording, e.g. one
   made with ``framework.events.record()``), each drawn from the operations that
   :func:`collect_operations` (:mod:`.operations`) pairs up from the engine's events:

   * :func:`chrome_trace` (:mod:`.trace`) -- Chrome trace JSON that
     https://ui.perfetto.dev and ``chrome://tracing`` open: one process per device, one
     thread per engine worker;
   * :func:`aggregate` and :func:`format_table` (:mod:`.table`) -- MXNet's "Profile
     Statistics" table (:func:`aggregate_sections` / :func:`format_stats`: all its sections,
     as text or JSON);
   * :func:`text_timeline` (:mod:`.timeline`) -- an ASCII picture of which worker ran
     what, and when.

3. **User instrumentation** (:mod:`.instrumentation`, MXNet's ``Domain``, ``Task``,
   ``Frame``, ``Event``, ``Counter``, ``Marker``): the program's own ranges, counters and
   markers, published as events like the engine's, so every view shows them.

This package re-exports the public names of its modules, so ``mx.profiler.X`` and
``from framework import profiler`` reach all of them.

Usage, as in MXNet::

    from framework import profiler
    profiler.set_config(filename="trace.json", profile_all=True)
    profiler.set_state("run")
    ...                        # push work
    profiler.set_state("stop")
    profiler.dump()            # then open trace.json in Perfetto
    print(profiler.dumps())    # the aggregate table

With ``MXLAB_PROFILER_AUTOSTART=1`` (MXNet's ``MXNET_PROFILER_AUTOSTART``) the profiler is
already running when ``framework`` is imported, and whatever it is still recording when the
process exits is written to the configured file (``profile.json`` unless ``set_config``
named another), so an unmodified script can be profiled from the shell (:mod:`.recorder`).
"""

from __future__ import annotations

from .instrumentation import (
    Counter,
    Domain,
    Event,
    Frame,
    Marker,
    ProfilerError,
    Task,
    current_scope,
    scope,
)
from .operations import OpRecord, collect_operations
from .recorder import (
    clear,
    dump,
    dump_profile,
    dumps,
    get_config,
    get_state,
    pause,
    profiler_set_config,
    profiler_set_state,
    recorded_events,
    resume,
    set_config,
    set_state,
    state,
)
from .table import aggregate, aggregate_sections, format_stats, format_table
from .timeline import stable_hash, text_timeline, timeline_symbols
from .trace import chrome_trace

__all__ = [
    "Counter",
    "Domain",
    "Event",
    "Frame",
    "Marker",
    "OpRecord",
    "ProfilerError",
    "Task",
    "aggregate",
    "aggregate_sections",
    "current_scope",
    "dump_profile",
    "format_stats",
    "profiler_set_config",
    "profiler_set_state",
    "scope",
    "chrome_trace",
    "clear",
    "collect_operations",
    "dump",
    "dumps",
    "format_table",
    "get_config",
    "get_state",
    "pause",
    "recorded_events",
    "resume",
    "set_config",
    "set_state",
    "state",
    "stable_hash",
    "text_timeline",
    "timeline_symbols",
]

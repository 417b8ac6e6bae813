"""Which shape semantics are active: MXNet 1.x's legacy ones, or NumPy's.

MXNet 1.x began with *legacy* shape semantics: a 0 in a shape means "unknown, infer it",
so zero-size arrays and 0-d arrays cannot be written down. NumPy shape semantics make
``()`` a scalar's shape and ``(0, 3)`` an empty array's. MXNet keeps the switch per thread
(``set_np_shape(True)`` affects only the calling thread) plus a process-wide override
(``set_np_shape(2)``), and so does MXLab. The flag lives in this low module, which imports
nothing else of MXLab, so that ndarray, symbol and the executor can all consult it;
``mx.util`` is the public front door.
"""

from __future__ import annotations

import threading

from .base import MXLabError

# MXNet's three states, as set_np_shape's integer argument gives them.
OFF = 0
THREAD_LOCAL_ON = 1
GLOBAL_ON = 2

_global_on = False
_thread = threading.local()  # .on: this thread's own switch (absent means off)


def is_np_shape() -> bool:
    """True when NumPy shape semantics apply in the calling thread."""
    return _global_on or getattr(_thread, "on", False)


def set_np_shape(active: bool | int) -> bool:
    """Switch NumPy shape semantics for this thread (``True``/1), every thread (2) or off (``False``/0).

    Switching off clears both the thread's switch and the process-wide one, as in MXNet.
    Returns whether the semantics were active in this thread before the call.
    """
    global _global_on
    if isinstance(active, bool) or hasattr(active, "__index__"):
        state = int(active)
    else:
        raise MXLabError(f"set_np_shape: active must be a bool or 0, 1, 2; got {active!r}")
    if state not in (OFF, THREAD_LOCAL_ON, GLOBAL_ON):
        raise MXLabError(
            f"set_np_shape: active must be False/0 (off), True/1 (this thread) or 2 (every thread); got {state}"
        )
    previous = is_np_shape()
    if state == OFF:
        _global_on = False
        _thread.on = False
    else:
        _thread.on = True
        if state == GLOBAL_ON:
            _global_on = True
    return previous

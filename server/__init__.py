"""MXLab's server side: scenarios that exercise the framework, run in worker processes and
watched live in the browser.

* :mod:`server.scenarios` -- the registered scenarios (typed, range-checked parameters);
* :mod:`server.runs` -- a worker process per run, supervised (timeouts, crashes, cancel);
* :mod:`server.worker` -- what runs inside that process: the scenario, its events batched back;
* :mod:`server.frames` -- events as frames: column arrays per kind, in strict JSON;
* :mod:`server.streaming` -- bounded per-client queues that thin when a client falls behind, the sender;
* :mod:`server.traces` -- strict Chrome trace parsing, replay of uploaded traces;
* :mod:`server.app` -- the FastAPI app: REST routes, WebSocket, static UI, token guard;
* :mod:`server.addresses` -- loopback check, listening socket and printed URL of both entry points;
* :mod:`server.live` -- attach mode, :func:`server.attach`: the same app showing the calling process,
  which only buffers its events and sends them to...
* :mod:`server.live_server` -- ...attach mode's server process, which encodes them and serves the app;
* ``python -m server`` (:mod:`server.__main__`) -- the command line (``mxlab``).

docs/server.md describes the routes, the WebSocket protocol and the security model.
"""

from .live import attach

__all__ = ["attach"]

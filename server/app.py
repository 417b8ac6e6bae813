"""The web application: REST routes, the event WebSocket, the static UI, and the token guard.

``create_app()`` builds a FastAPI app around a :class:`~server.runs.RunManager`. Every
route answers JSON; every refusal is a 4xx with ``{"detail": "..."}`` saying what was
wrong (the route table and the WebSocket protocol are in docs/server.md). Nothing the
browser sends is ever executed: a run names a registered scenario and passes parameters
that its pydantic model checks; an uploaded trace is data, parsed strictly.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from framework import profiler

from . import strict_json
from .addresses import is_loopback
from .runs import Run, RunError, RunManager, validation_errors
from .scenarios.tutorials import TUTORIALS
from .streaming import (
    CLIENT_QUEUE_BYTES,
    CLIENT_QUEUE_EVENTS,
    FLUSH_INTERVAL_S,
    MAX_CLIENTS,
    MAX_CLIENTS_PER_RUN,
    SEND_TIMEOUT_S,
    ClientLimits,
    stream_run,
)
from .traces import MAX_TRACE_BYTES, TRACE_TIME_LIMIT_S, TraceError
from .uploads import TraceReplayer

MAX_BODY_BYTES = 64 * 1024
MAX_CONCURRENT_REPLAYS = 2  # trace uploads parsed and replayed at the same time; more get 429
MAX_CONCURRENT_DOWNLOADS = 1  # /trace downloads in progress at once (~300 MB for the largest run); more get 429
DEFAULT_WEBUI_DIR = Path(__file__).resolve().parents[1] / "webui"
TOKEN_COOKIE = "mxlab_token"
# Media types by suffix (Python's table varies between systems; ES modules need a JS type).
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".wasm": "application/wasm",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".md": "text/markdown; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}

_log = logging.getLogger(__name__)


def _version() -> str:
    try:
        return metadata.version("mxlab")
    except metadata.PackageNotFoundError:
        return "0.1.0"


class RunRequest(BaseModel):
    """The body of ``POST /api/runs``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    scenario: str = Field(description="a name from GET /api/scenarios", max_length=100)
    params: dict[str, Any] = Field(default_factory=dict, description="the scenario's parameters; missing = default")


class ApiError(Exception):
    """Answer the current request with ``status`` and ``{"detail": detail}``."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


# ----------------------------------------------------------------------------- the token guard
class TokenGuard:
    """ASGI middleware: with a token set, every HTTP request and WebSocket must present it.

    Accepted as ``Authorization: Bearer T``, a ``?token=T`` query parameter, or the
    ``mxlab_token`` cookie; compared in constant time. A refused request gets 401; a refused
    WebSocket is accepted and closed at once with code 4401 (so a browser can see why).
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    def presented(self, scope: Scope) -> bool:
        connection = HTTPConnection(scope)
        candidates = [connection.query_params.get("token"), connection.cookies.get(TOKEN_COOKIE)]
        authorization = connection.headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):
            candidates.append(authorization[7:].strip())
        return any(c is not None and hmac.compare_digest(c.encode(), self.token.encode()) for c in candidates)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.presented(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            response = JSONResponse(
                {"detail": "missing or wrong token (use ?token=, a Bearer header or the cookie)"}, 401
            )
            await response(scope, receive, send)
            return
        message = await receive()
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": 4401, "reason": "missing or wrong token"})


# ----------------------------------------------------------------------------- the loopback guard
def host_name(host_header: str) -> str | None:
    """The name in a Host header (``127.0.0.1:8000`` -> ``127.0.0.1``, ``[::1]:80`` -> ``::1``); None if malformed."""
    if host_header.startswith("["):
        name, bracket, rest = host_header[1:].partition("]")
        return name if bracket and (not rest or (rest[0] == ":" and rest[1:].isdigit())) else None
    name, colon, port = host_header.partition(":")
    return name if name and (not colon or port.isdigit()) else None


class LoopbackGuard:
    """ASGI middleware for a server without a token: only pages the server itself served may use it.

    Without a token, what keeps a learner's runs private is that only this machine can reach
    the loopback port. A web page on another site runs on this machine too, though, in the
    browser, so three checks refuse what only such a page would send:

    * **Host** must name a loopback address (``127.0.0.1``, ``localhost``, ``[::1]``, with any
      port) or one of ``extra_hosts``: a DNS-rebinding page reaches us as ``Host: evil.example``;
    * **Origin**, when present (browsers send it on every cross-origin request and WebSocket),
      must be this server's own (``http://`` + the Host header);
    * a **POST** body must be ``application/json`` (a cross-site form can send ``text/plain``
      and form bodies without asking the server first; JSON needs a CORS preflight).

    Refused HTTP requests get 403 (415 for the body) with a JSON reason; a refused WebSocket is
    accepted and closed at once with code 4403 and the reason (so a browser can see why).
    """

    def __init__(self, app: ASGIApp, extra_hosts: tuple[str, ...] = ()) -> None:
        self.app = app
        self.extra_hosts = frozenset(h.lower() for h in extra_hosts)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """``(status, reason)`` when the request must be refused, else None."""
        headers = HTTPConnection(scope).headers
        host = headers.get("host", "")
        name = host_name(host)
        if name is None or not (is_loopback(name.lower()) or name.lower() in self.extra_hosts):
            return 403, (
                f"this server answers only to loopback host names (127.0.0.1, localhost, [::1]), not Host "
                f"{host[:100]!r}; to serve other names start it with --token"
            )
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in (f"http://{host}".lower(), f"https://{host}".lower()):
            return (
                403,
                f"cross-origin request from {origin[:100]!r} refused: only pages served by this server may call it",
            )
        if scope["type"] == "http" and scope["method"] == "POST":
            media_type = media_type_of(headers)
            if media_type not in ("", "application/json"):
                return 415, f"a POST body must be application/json, got {media_type[:100]!r}"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = self.refusal(scope) if scope["type"] in ("http", "websocket") else None
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, reason = refused
        if scope["type"] == "http":
            await JSONResponse({"detail": reason}, status)(scope, receive, send)
            return
        message = await receive()
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
            # A close reason may hold at most 123 bytes of UTF-8.
            short = reason.encode("utf-8")[:120].decode("utf-8", "ignore")
            await send({"type": "websocket.close", "code": 4403, "reason": short})


# ----------------------------------------------------------------------------- helpers
async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing (413) more than ``limit`` bytes without reading them all."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, f"invalid Content-Length header {declared[:40]!r}")
        if int(declared) > limit:
            raise ApiError(413, f"request body of {int(declared)} bytes exceeds the limit of {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(body: bytes) -> Any:
    """Strict JSON (:mod:`server.strict_json`); malformed input is a 400 naming the position."""
    try:
        return strict_json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ApiError(400, f"malformed JSON: body is not UTF-8 (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ApiError(400, f"malformed JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    except (ValueError, RecursionError) as err:
        raise ApiError(400, f"malformed JSON: {err}") from None


def media_type_of(headers: Any) -> str:
    """The request's media type, lower case, without parameters ('' when absent)."""
    return headers.get("content-type", "").split(";")[0].strip().lower()


def require_json_body(request: Request) -> None:
    """415 unless the request says its body is ``application/json``."""
    media_type = media_type_of(request.headers)
    if media_type != "application/json":
        raise ApiError(415, f"the body must be sent as application/json, got {media_type or 'no content type'!r}")


def safe_file(base: Path, relative: str) -> Path | None:
    """``base/relative`` if it is a regular file inside ``base``; None for anything else.

    Refused before touching the disk: empty, absolute or backslashed paths, NUL bytes,
    segments longer than 255 characters, and any ``.``/``..``/hidden segment (the ASGI
    server has already decoded ``%2e%2e``); then
    the resolved path (symlinks followed) must still lie inside ``base``.
    """
    if not relative or relative.startswith("/") or "\\" in relative or "\x00" in relative:
        return None
    if any(part == "" or part.startswith(".") or len(part) > 255 for part in relative.split("/")):
        return None
    try:
        root = base.resolve()
        candidate = (root / relative).resolve()
        if not candidate.is_relative_to(root) or not candidate.is_file():
            return None
    except (OSError, RuntimeError, ValueError):  # e.g. a name too long for the file system
        return None
    return candidate


TRACE_CHUNK_EVENTS = 2000  # trace events per chunk of a streamed download


def chrome_trace_json(run: Run) -> Iterator[str]:
    """The run's Chrome trace as JSON text, in chunks of a few thousand trace events.

    The document is built when the first chunk is asked for (Starlette iterates a plain
    generator in a worker thread, off the event loop) and encoded piece by piece, so no
    download holds a second, fully encoded copy of the trace in memory.
    """
    document = profiler.chrome_trace(run.events())
    trace_events = document.pop("traceEvents")
    others = json.dumps(document)  # the other keys, e.g. {"displayTimeUnit": "ms"}
    yield (others[:-1] + ', "traceEvents": [') if document else '{"traceEvents": ['
    for start in range(0, len(trace_events), TRACE_CHUNK_EVENTS):
        chunk = ", ".join(json.dumps(e) for e in trace_events[start : start + TRACE_CHUNK_EVENTS])
        yield (", " if start else "") + chunk
    yield "]}"


class ReleasingIterator:
    """Iterates ``chunks`` and calls ``release`` once: when they end, fail, are closed, or the
    iterator is dropped unstarted (a client that left before the first chunk); a plain
    generator's ``finally`` would not run in that last case and the slot would leak."""

    def __init__(self, chunks: Iterator[str], release: Callable[[], None]) -> None:
        self._chunks = chunks
        self._release: Callable[[], None] | None = release

    def __iter__(self) -> ReleasingIterator:
        return self

    def __next__(self) -> str:
        try:
            return next(self._chunks)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()

    def __del__(self) -> None:
        self.close()


def _static(path: Path) -> FileResponse:
    media_type = MEDIA_TYPES.get(path.suffix.lower(), "application/octet-stream")
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"}
    return FileResponse(path, media_type=media_type, headers=headers)


def _not_found(detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=404)


# ----------------------------------------------------------------------------- the app
def create_app(
    runs: RunManager | None = None,
    *,
    webui_dir: Path | str | None = None,
    token: str | None = None,
    mode: str = "server",
    max_body_bytes: int = MAX_BODY_BYTES,
    max_trace_bytes: int = MAX_TRACE_BYTES,
    client_queue_events: int = CLIENT_QUEUE_EVENTS,
    client_queue_bytes: int = CLIENT_QUEUE_BYTES,
    flush_interval: float = FLUSH_INTERVAL_S,
    send_timeout: float = SEND_TIMEOUT_S,
    max_clients: int = MAX_CLIENTS,
    max_clients_per_run: int = MAX_CLIENTS_PER_RUN,
    trace_time_limit: float = TRACE_TIME_LIMIT_S,
    max_concurrent_replays: int = MAX_CONCURRENT_REPLAYS,
    max_concurrent_downloads: int = MAX_CONCURRENT_DOWNLOADS,
    extra_hosts: tuple[str, ...] = (),
) -> FastAPI:
    """The MXLab web app.

    Args:
        runs: the run manager (default: a new one over every registered scenario).
        webui_dir: where ``index.html``, ``src/``, ``package.json`` and ``node_modules/`` are.
        token: when set, required by every route and the WebSocket (see :class:`TokenGuard`).
        mode: ``"server"`` or ``"attach"`` (reported by ``/api/health``).
        send_timeout: seconds a WebSocket send may stay blocked before the connection is dropped.
        max_clients, max_clients_per_run: WebSockets open at once, in all and on one run.
        client_queue_events, client_queue_bytes: what one client's queue may hold.
        trace_time_limit: seconds one trace upload may spend being parsed and replayed.
        max_concurrent_replays, max_concurrent_downloads: trace uploads and /trace downloads in
            progress at once (each holds a run's events decoded: hundreds of MB for the largest).
        extra_hosts: Host names accepted without a token besides the loopback ones
            (:class:`LoopbackGuard`; the test client's ``testserver``, for instance).
    """
    if mode not in ("server", "attach"):
        raise ValueError(f"mode must be 'server' or 'attach', got {mode!r}")
    if token is not None and not token:
        raise ValueError("token must be a non-empty string (or None for no token)")
    runs = runs if runs is not None else RunManager()
    webui = Path(webui_dir) if webui_dir is not None else DEFAULT_WEBUI_DIR

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        replayer.shutdown()
        runs.shutdown()

    app = FastAPI(
        title="MXLab",
        version=_version(),
        description="Run framework scenarios in worker processes and watch their events (docs/server.md).",
        lifespan=lifespan,
    )
    app.state.runs = runs
    app.state.mode = mode
    app.state.webui_dir = webui
    if token is not None:
        app.add_middleware(TokenGuard, token=token)
    else:
        app.add_middleware(LoopbackGuard, extra_hosts=tuple(extra_hosts))
    client_limits = ClientLimits(max_clients, max_clients_per_run)
    replays = asyncio.Semaphore(max_concurrent_replays)
    downloads = threading.BoundedSemaphore(max_concurrent_downloads)  # taken in a threadpool route
    replayer = TraceReplayer(max_concurrent_replays, in_processes=mode == "server", time_limit_s=trace_time_limit)

    # ------------------------------------------------------------------ errors
    @app.exception_handler(ApiError)
    async def api_error(request: Request, err: ApiError) -> JSONResponse:
        return JSONResponse({"detail": err.detail}, status_code=err.status)

    @app.exception_handler(RunError)
    async def run_error(request: Request, err: RunError) -> JSONResponse:
        return JSONResponse({"detail": str(err)}, status_code=err.status)

    @app.exception_handler(ValidationError)
    async def invalid_params(request: Request, err: ValidationError) -> JSONResponse:
        return JSONResponse({"detail": validation_errors(err)}, status_code=422)

    @app.exception_handler(TraceError)
    async def bad_trace(request: Request, err: TraceError) -> JSONResponse:
        return JSONResponse({"detail": str(err)}, status_code=400)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, err: Exception) -> JSONResponse:
        # A bug, not the client's fault: logged with its traceback, answered without one.
        _log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": f"internal server error ({type(err).__name__})"}, status_code=500)

    # ------------------------------------------------------------------ REST
    @app.get("/api/health", tags=["server"])
    def health() -> dict[str, str]:
        """Liveness, version, and whether this is the server or attached to a script."""
        return {"status": "ok", "version": _version(), "mode": mode}

    @app.get("/api/scenarios", tags=["scenarios"])
    def list_scenarios() -> list[dict[str, Any]]:
        """Every scenario with its parameters' JSON schema and defaults."""
        return [scenario.describe() for scenario in runs.scenarios.values()]

    @app.get("/api/tutorials", tags=["scenarios"])
    def list_tutorials() -> list[dict[str, Any]]:
        """Every numbered tutorial: title, path in the repository, and the scenarios it links to."""
        return [tutorial.describe() for tutorial in TUTORIALS]

    # The documented body names the scenarios this server runs (the registry is their one list);
    # an unknown name is still answered 404 by the run manager, not 422 by the model.
    run_schema = RunRequest.model_json_schema()
    run_schema["properties"]["scenario"]["enum"] = list(runs.scenarios)
    run_body = {"required": True, "content": {"application/json": {"schema": run_schema}}}

    @app.post("/api/runs", status_code=201, tags=["runs"], openapi_extra={"requestBody": run_body})
    async def start_run(request: Request) -> JSONResponse:
        """Start a scenario: 404 unknown scenario, 422 bad parameters, 429 too many running."""
        require_json_body(request)
        body = parse_json(await read_body(request, max_body_bytes))
        parsed = RunRequest.model_validate(body)
        run = runs.start(parsed.scenario, parsed.params)
        return JSONResponse(run.summary(), status_code=201)

    @app.get("/api/runs", tags=["runs"])
    def list_runs() -> list[dict[str, Any]]:
        """Every kept run, newest first."""
        return [run.summary() for run in runs.list()]

    @app.get("/api/runs/{run_id}", tags=["runs"])
    def get_run(run_id: str) -> dict[str, Any]:
        """One run's status, result and event counts."""
        return runs.get(run_id).summary()

    @app.post("/api/runs/{run_id}/cancel", tags=["runs"])
    def cancel_run(run_id: str) -> dict[str, Any]:
        """Stop a run (its process is terminated); a finished run is returned unchanged."""
        return runs.cancel(run_id).summary()

    @app.get("/api/runs/{run_id}/trace", tags=["runs"])
    def download_trace(run_id: str) -> Response:
        """The run's events as a Chrome trace (open it in https://ui.perfetto.dev), streamed;
        429 while ``max_concurrent_downloads`` others are being built."""
        run = runs.get(run_id)
        filename = f"mxlab-{run.scenario}-{run.id}.json"
        if not downloads.acquire(blocking=False):
            raise ApiError(
                429, f"{max_concurrent_downloads} trace download(s) are being prepared already; try again shortly"
            )
        return StreamingResponse(
            ReleasingIterator(chrome_trace_json(run), downloads.release),
            media_type="application/json",
            headers={"Content-Disposition": f'attachment; filename="{filename}"'},
        )

    @app.get("/api/runs/{run_id}/graph.dot", tags=["runs"])
    def run_graph(run_id: str) -> Response:
        """The symbol graph the run built, as Graphviz DOT source."""
        run = runs.get(run_id)
        if run.graph is None:
            raise ApiError(404, f"run {run_id} has no symbol graph")
        return Response(run.graph, media_type="text/vnd.graphviz")

    trace_body = {
        "required": True,
        "content": {"application/json": {"schema": {"description": "a Chrome trace: {traceEvents: [...]} or [...]"}}},
    }

    @app.post("/api/traces", status_code=201, tags=["runs"], openapi_extra={"requestBody": trace_body})
    async def upload_trace(request: Request) -> JSONResponse:
        """Replay a Chrome trace as a finished run (400 malformed or too slow, 413 too large, 415 not JSON,
        429 too many uploads at once)."""
        require_json_body(request)
        if replays.locked():
            raise ApiError(429, f"{max_concurrent_replays} traces are being replayed already; try again shortly")
        async with replays:
            try:
                async with asyncio.timeout(trace_time_limit):
                    data = await read_body(request, max_trace_bytes)
            except TimeoutError:
                raise ApiError(408, f"the trace did not arrive within {trace_time_limit:g} s") from None
            # Seconds of CPU work: in another process (server.uploads), the event loop carries on.
            batches, summary = await replayer.replay(data)
            run = await run_in_threadpool(runs.add_finished, "replay", {"bytes": len(data)}, batches, summary)
        return JSONResponse(run.summary(), status_code=201)

    # ------------------------------------------------------------------ WebSocket
    @app.websocket("/api/runs/{run_id}/events")
    async def run_events(websocket: WebSocket, run_id: str) -> None:
        """hello, the history, live event batches and status changes; closed after the end."""
        await websocket.accept()
        try:
            run = runs.get(run_id)
        except RunError:
            await websocket.close(code=4404, reason=f"unknown run {run_id[:64]}")
            return
        refusal = client_limits.enter(run.id)
        if refusal is not None:
            await websocket.close(code=1013, reason=refusal)  # 1013: try again later
            return
        try:
            await stream_run(
                websocket,
                run,
                flush_interval=flush_interval,
                queue_bound=client_queue_events,
                queue_bytes=client_queue_bytes,
                send_timeout=send_timeout,
            )
        finally:
            client_limits.leave(run.id)

    # ------------------------------------------------------------------ static UI
    missing_ui = f"the web UI is missing ({webui / 'index.html'} not found); the REST API still works: see /docs"

    @app.get("/", include_in_schema=False)
    def index(request: Request) -> Response:
        page = safe_file(webui, "index.html")
        if page is None:
            return _not_found(missing_ui)
        response = _static(page)
        if token is not None and request.query_params.get("token") is not None:
            # Reaching here means the guard accepted it: later requests can use the cookie.
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
        return response

    @app.get("/app/{path:path}", include_in_schema=False)
    def app_file(path: str) -> Response:
        found = safe_file(webui / "src", path)
        if found is None and path == "style.css":
            found = safe_file(webui, "style.css")
        return _static(found) if found is not None else _not_found(f"no UI file {path[:200]!r}")

    @app.get("/vendor/{path:path}", include_in_schema=False)
    def vendor_file(path: str) -> Response:
        dependencies = _dependencies(webui)
        package = next((d for d in dependencies if path.startswith(d + "/")), None)
        if package is None:
            return _not_found(f"/vendor/ serves only the packages in webui/package.json dependencies: {dependencies}")
        if not (webui / "node_modules" / package).is_dir():
            return _not_found(f"webui/node_modules/{package} is missing: run `npm ci` in webui/ (or `make install`)")
        found = safe_file(webui / "node_modules" / package, path[len(package) + 1 :])
        return _static(found) if found is not None else _not_found(f"no file {path[:200]!r} in package {package}")

    return app


def _dependencies(webui: Path) -> list[str]:
    """The package names in webui/package.json's "dependencies" (empty when unreadable)."""
    try:
        document = json.loads((webui / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    dependencies = document.get("dependencies") if isinstance(document, dict) else None
    if not isinstance(dependencies, dict):
        return []
    return sorted(name for name in dependencies if isinstance(name, str) and ".." not in name and name)

"""The web application: REST routes, the event WebSocket, the static UI, and the token guard.

``create_app()`` builds a FastAPI app around a :class:`~server.runs.RunManager`. Every
route answers JSON; every refusal is a 4xx with ``{"detail": "..."}`` saying what was
wrong (the route table and the WebSocket protocol are in docs/server.md). Nothing the
browser sends is ever executed: a run names a registered scenario and passes parameters
that its pydantic model checks; an uploaded trace is data, parsed strictly.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import FileResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from framework import profiler

from .runs import RunError, RunManager, validation_errors
from .scenarios.tutorials import TUTORIALS
from .streaming import CLIENT_QUEUE_EVENTS, FLUSH_INTERVAL_S, stream_run
from .traces import MAX_TRACE_BYTES, TraceError, parse_trace, replay_events

MAX_BODY_BYTES = 64 * 1024
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


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(body: bytes) -> Any:
    """Strict JSON (no NaN/Infinity); malformed input is a 400 naming the position."""
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError as err:
        raise ApiError(400, f"malformed JSON: body is not UTF-8 (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ApiError(400, f"malformed JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    except (ValueError, RecursionError) as err:
        raise ApiError(400, f"malformed JSON: {err}") from None


def safe_file(base: Path, relative: str) -> Path | None:
    """``base/relative`` if it is a regular file inside ``base``; None for anything else.

    Refused before touching the disk: empty, absolute or backslashed paths, NUL bytes, and
    any ``.``/``..``/hidden segment (the ASGI server has already decoded ``%2e%2e``); then
    the resolved path (symlinks followed) must still lie inside ``base``.
    """
    if not relative or relative.startswith("/") or "\\" in relative or "\x00" in relative:
        return None
    if any(part == "" or part.startswith(".") for part in relative.split("/")):
        return None
    try:
        root = base.resolve()
        candidate = (root / relative).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    if not candidate.is_relative_to(root) or not candidate.is_file():
        return None
    return candidate


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
    flush_interval: float = FLUSH_INTERVAL_S,
) -> FastAPI:
    """The MXLab web app.

    Args:
        runs: the run manager (default: a new one over every registered scenario).
        webui_dir: where ``index.html``, ``src/``, ``package.json`` and ``node_modules/`` are.
        token: when set, required by every route and the WebSocket (see :class:`TokenGuard`).
        mode: ``"server"`` or ``"attach"`` (reported by ``/api/health``).
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
        """The run's events as a Chrome trace (open it in https://ui.perfetto.dev)."""
        run = runs.get(run_id)
        document = profiler.chrome_trace(run.events())
        filename = f"mxlab-{run.scenario}-{run.id}.json"
        return Response(
            json.dumps(document),
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
        """Replay a Chrome trace as a finished run (400 malformed, 413 too large, 415 not JSON)."""
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise ApiError(415, f"a trace must be sent as application/json, got {content_type or 'no content type'!r}")
        data = await read_body(request, max_trace_bytes)
        trace_events = parse_trace(data)
        events, summary = replay_events(trace_events)
        run = runs.add_finished("replay", {"bytes": len(data)}, events, summary)
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
        await stream_run(websocket, run, flush_interval=flush_interval, queue_bound=client_queue_events)

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

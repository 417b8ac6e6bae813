"""``python -m server`` / ``mxlab``: the MXLab server, the terminal demo, and the exercise tools.

* ``mxlab [serve] [--host H] [--port P] [--token T | --token-file F] [--scenario NAME] [--no-default-run]``
  serves the REST API, the event WebSocket and the browser UI (default 127.0.0.1:8000),
  starts the default scenario's launch run (engine_basics, looping until stopped) and prints the URL;
* ``mxlab attach [--host H] [--port P] [--token T] [--open] script.py [args...]`` runs a
  script with the live view of its events (attach mode) and keeps serving after it ends;
* ``mxlab demo [...]`` prints text timelines of the engine scenario and writes a Chrome trace;
* ``mxlab check|hint|solution|exercises ...`` are the operator exercises' commands.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

import uvicorn

from exercises.cli import main as exercises_main
from framework import profiler
from framework.engine import ENGINE_TYPES

from .addresses import is_loopback, listen, url_for
from .app import create_app
from .live import attach as attach_live_view
from .runs import RunManager
from .scenarios import engine_basics
from .serving import uvicorn_config
from .token_source import TokenSourceError, resolve_token

EXERCISE_COMMANDS = ("check", "hint", "solution", "exercises")


# ----------------------------------------------------------------------------- serve
def add_token_options(parser: argparse.ArgumentParser) -> None:
    """``--token`` and ``--token-file`` (``MXLAB_TOKEN`` when neither: see server.token_source)."""
    parser.add_argument(
        "--token", default=None, help="secret every request must present (required beyond loopback; visible in ps)"
    )
    parser.add_argument(
        "--token-file", type=Path, default=None, help="read the token from the first line of this file instead"
    )


def token_from(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """The token the options (or MXLAB_TOKEN) give; a bad combination or file exits 2 saying why."""
    try:
        return resolve_token(args.token, args.token_file)
    except TokenSourceError as err:
        parser.error(str(err))


def build_serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mxlab serve", description="Serve MXLab's web UI and API.")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0 picks a free one)")
    add_token_options(parser)
    parser.add_argument("--scenario", default="engine_basics", help="scenario of the first run (default engine_basics)")
    parser.add_argument("--no-default-run", action="store_true", help="do not start a run at startup")
    parser.add_argument(
        "--run-timeout", type=float, default=120.0, help="seconds a run may take (default 120; a looping run: 1 h)"
    )
    parser.add_argument("--max-running", type=int, default=4, help="runs allowed at the same time (default 4)")
    return parser


def stop_like_ctrl_c(signum: int, frame: Any) -> None:
    """SIGTERM (``kill``, a service manager, a test harness) stops the server as Ctrl+C does.

    uvicorn shuts down gracefully on SIGTERM, then raises the signal again under the handler that
    was there before it started. Python's default for SIGTERM ends the process on the spot: the
    runs would not be stopped and the interpreter's exit, which stops the trace replayer's worker
    processes, would not happen, so a looping run's worker, idle replay workers and the fork
    server they keep alive would outlive the server. Raising KeyboardInterrupt takes the Ctrl+C
    path instead: ``runs.shutdown()``, then a normal exit.
    """
    raise KeyboardInterrupt


def serve(argv: list[str]) -> int:
    parser = build_serve_parser()
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be in [0, 65535], got {args.port}")
    args.token = token_from(parser, args)
    if not is_loopback(args.host):
        if args.token is None:
            parser.error(
                f"--host {args.host} is reachable from other machines: add --token <secret> "
                "(every request must then present it), or keep the default 127.0.0.1"
            )
        print(
            f"WARNING: listening on {args.host}: anyone who can reach this machine and knows the token "
            "can start runs and read their events",
            file=sys.stderr,
        )
    runs = RunManager(run_timeout_s=args.run_timeout, max_running=max(1, args.max_running))
    if not args.no_default_run and args.scenario not in runs.scenarios:
        parser.error(f"unknown scenario {args.scenario!r}; known scenarios: {', '.join(runs.scenarios)}")
    try:
        sock = listen(args.host, args.port)
    except OSError as err:
        print(f"mxlab: {err.strerror or err}", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]
    app = create_app(runs, token=args.token)
    runs.warm_up()
    query = []
    if not args.no_default_run:
        query.append(f"run={runs.start(args.scenario, runs.scenarios[args.scenario].launch_params).id}")
    if args.token is not None:
        query.append(f"token={args.token}")
    print(f"MXLab is running at {url_for(args.host, port, '&'.join(query))}", flush=True)
    print("API documentation at " + url_for(args.host, port).rstrip("/") + "/docs; press Ctrl+C to stop", flush=True)
    config = uvicorn_config(app, timeout_graceful_shutdown=2)
    signal.signal(signal.SIGTERM, stop_like_ctrl_c)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises Ctrl+C, and SIGTERM (stop_like_ctrl_c), after its graceful shutdown
        pass
    finally:
        runs.shutdown()
    print("MXLab stopped", flush=True)
    return 0


# ----------------------------------------------------------------------------- attach
def build_attach_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mxlab attach",
        description="Run a Python script with MXLab's live view of its events; keep serving after it ends.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0 picks a free one)")
    add_token_options(parser)
    parser.add_argument("--open", action="store_true", help="open the live view in the default browser")
    parser.add_argument("script", type=Path, help="the Python script to run as __main__")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script (its sys.argv[1:])")
    return parser


def run_script(script: Path, args: list[str]) -> int:
    """Run ``script`` as ``__main__`` in this process, as ``python script.py args...`` would; its exit code.

    The script's directory goes first on ``sys.path`` and ``sys.argv`` is the script's own;
    both are restored afterwards. An exception in the script is printed, not raised: the live
    view stays up so the events that led to it can be inspected.
    """
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


def attach(argv: list[str]) -> int:
    """Serve the live view, run the script under it, then keep serving until Ctrl+C."""
    parser = build_attach_parser()
    args = parser.parse_args(argv)
    if not args.script.is_file():
        parser.error(f"script {str(args.script)!r} is not a file")
    args.token = token_from(parser, args)
    try:
        handle = attach_live_view(port=args.port, host=args.host, token=args.token, open_browser=args.open)
    except ValueError as err:
        parser.error(str(err))
    except OSError as err:
        print(f"mxlab: {err.strerror or err}", file=sys.stderr)
        return 2
    except RuntimeError as err:  # the server process could not start; the reason is in the message
        print(f"mxlab: {err}", file=sys.stderr)
        return 2
    code = 130  # the shell's code for Ctrl+C, if it comes while the script runs
    try:
        code = run_script(args.script, args.args)
        handle.finish("done" if code == 0 else "failed", None if code == 0 else f"the script exited with code {code}")
        print(
            f"mxlab attach: {args.script} ended (exit code {code}); its events stay at {handle.url}; "
            "press Ctrl+C to stop",
            flush=True,
        )
        threading.Event().wait()  # until Ctrl+C: KeyboardInterrupt is raised in this, the main thread
    except KeyboardInterrupt:
        pass
    finally:
        handle.stop()
    print("MXLab stopped", flush=True)
    return code


# ----------------------------------------------------------------------------- demo
def build_demo_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mxlab demo", description="Text timelines of the engine scenario plus a Chrome trace file."
    )
    parser.add_argument("--workers", type=int, default=2, help="worker threads per pool (default 2)")
    parser.add_argument("--chain-length", type=int, default=4, help="operations per chain (default 4)")
    parser.add_argument("--op-ms", type=float, default=20.0, help="duration of each operation in ms (default 20)")
    parser.add_argument(
        "--engine", action="append", choices=list(ENGINE_TYPES), help="engine type(s) to run (default: all)"
    )
    parser.add_argument("--trace", type=Path, default=Path("mxlab-engine-demo.json"), help="Chrome trace output file")
    parser.add_argument("--width", type=int, default=72, help="timeline width in characters")
    return parser


def demo(argv: list[str]) -> int:
    """For every engine type, a text timeline of dependent and independent chains."""
    args = build_demo_parser().parse_args(argv)
    if args.workers < 1:
        print("mxlab: --workers must be >= 1", file=sys.stderr)
        return 2
    try:
        results = engine_basics.compare_engines(args.engine, args.workers, args.chain_length, args.op_ms)
    except ValueError as err:
        print(f"mxlab: {err}", file=sys.stderr)
        return 2
    print(
        f"Engine basics: 2 chains x {args.chain_length} ops of {args.op_ms:g} ms, {args.workers} worker(s) per pool\n"
    )
    all_events = []
    for result in results:
        serial = 2 * args.chain_length * args.op_ms / 1000.0
        print(
            f"== {result.engine_type}, {result.program} chains: {result.seconds * 1000:.0f} ms "
            f"({serial / result.seconds:.2f}x the speed of running them one by one)"
        )
        print(profiler.text_timeline(result.events, width=args.width))
        print()
        all_events.extend(result.events)
    args.trace.write_text(json.dumps(profiler.chrome_trace(all_events)))
    print(f"Chrome trace of all runs written to {args.trace} (open it in https://ui.perfetto.dev)")
    return 0


# ----------------------------------------------------------------------------- dispatch
def main(argv: list[str] | None = None) -> int:
    """Run one ``mxlab`` command; a reader that closes the pipe early (``mxlab exercises | head``) is not an error."""
    try:
        return dispatch(argv)
    except BrokenPipeError:
        return reader_went_away()


def reader_went_away() -> int:
    """Exit quietly like other Unix tools when stdout's reader has gone: status 128 + SIGPIPE.

    Python ignores SIGPIPE, so a write to a closed pipe raises BrokenPipeError instead of
    ending the process. Pointing stdout at /dev/null stops the interpreter's final flush
    from raising (and printing) the same error again on the way out.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


def dispatch(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and not argv[0].startswith("-") else "serve"
    if command == "demo":
        return demo(argv[1:])
    if command == "attach":
        return attach(argv[1:])
    if command in EXERCISE_COMMANDS:
        return exercises_main(argv)
    if command == "serve":
        return serve(argv[1:] if argv and argv[0] == "serve" else argv)
    print(
        f"mxlab: unknown command {command!r}; choose serve (the default), attach, demo, "
        + ", ".join(EXERCISE_COMMANDS),
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""The ``mxlab`` / ``python -m server`` command line."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from server import __main__ as cli
from server import live
from server.__main__ import main
from server.addresses import is_loopback, url_for
from server.token_source import TokenSourceError, resolve_token

ROOT = Path(__file__).resolve().parents[2]
JSON = {"content-type": "application/json"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_non_loopback_host_without_token_exits_2_with_a_clear_message(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--host", "0.0.0.0"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--host 0.0.0.0 is reachable from other machines: add --token" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "--port", "70000"], "--port must be in [0, 65535]"),
        (["--port", "eighty"], "invalid int value"),
        (["--token", "  "], "--token must not be empty"),
        (["--token", "a", "--token-file", "f"], "give --token or --token-file, not both"),
        (["--token-file", "/no/such/file"], "cannot read --token-file '/no/such/file'"),
        (["--scenario", "nope"], "unknown scenario 'nope'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_serve_arguments_exit_2(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and message in capsys.readouterr().err


def test_unknown_command_exits_2(capsys):
    assert main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err


def test_port_in_use_is_reported(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        assert main(["--port", str(port), "--no-default-run"]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_loopback_detection_and_urls():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1") and is_loopback("127.8.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("example.com")
    assert url_for("::1", 8000, "run=x") == "http://[::1]:8000/?run=x"
    assert url_for("127.0.0.1", 80) == "http://127.0.0.1:80/"


def _serve(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """Start ``python -m server`` and return it with the URL it printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "server", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    line = process.stdout.readline()
    match = re.search(r"MXLab is running at (\S+)", line)
    if match is None:
        process.kill()
        raise AssertionError(f"no URL printed: {line!r} {process.stderr.read()}")
    return process, match.group(1)


def _stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_python_dash_m_server_serves_the_api_and_starts_the_looping_default_run():
    port = free_port()
    process, url = _serve("--port", str(port))
    try:
        assert url.startswith(f"http://127.0.0.1:{port}/?run=")
        run_id = url.rsplit("run=", 1)[1]
        # The default run loops until stopped: after two rounds (32 operations) it is still running.
        deadline = time.monotonic() + 60
        while True:
            run = httpx.get(f"http://127.0.0.1:{port}/api/runs/{run_id}", timeout=5).json()
            ended = run["event_counts"].get("engine.end", 0)
            if ended >= 32 or run["status"] not in ("queued", "running") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert run["scenario"] == "engine_basics" and run["params"]["loop"] is True, run
        assert run["status"] == "running" and ended >= 32, run
        assert run["time_limit_s"] > 120  # the scenario's own limit, not the server's 120 s
        assert httpx.get(f"http://127.0.0.1:{port}/api/health").json()["mode"] == "server"
    finally:
        _stop(process)
    assert process.returncode == 0


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (Linux's /proc/<pid>/task/<tid>/children)."""
    found: set[int] = set()
    parents = [pid]
    while parents:
        for children in Path(f"/proc/{parents.pop()}/task").glob("*/children"):
            try:
                below = {int(child) for child in children.read_text().split()} - found
            except OSError:  # the process ended meanwhile
                continue
            found |= below
            parents.extend(below)
    return found


def _running(pid: int) -> str | None:
    """The command line of process ``pid`` if it still runs (a zombie has ended), else None."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    return None if state == "Z" else command


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from Linux's /proc")
def test_sigterm_stops_the_server_and_every_process_it_started():
    # The looping default run has a worker process; a trace upload starts the replayer's; the fork
    # server and the resource tracker serve them. None may outlive the server (a looping run's
    # worker would otherwise go on for an hour, idle replay workers and the fork server forever).
    port = free_port()
    process, url = _serve("--port", str(port))
    try:
        run_id = url.rsplit("run=", 1)[1]
        deadline = time.monotonic() + 60
        while httpx.get(f"http://127.0.0.1:{port}/api/runs/{run_id}", timeout=5).json()["status"] != "running":
            assert time.monotonic() < deadline, "the default run did not start"
            time.sleep(0.1)
        trace = b'[{"ph": "X", "ts": 1, "dur": 1, "name": "op"}]'
        replay = httpx.post(f"http://127.0.0.1:{port}/api/traces", content=trace, headers=JSON, timeout=60)
        assert replay.status_code == 201, replay.text
        started = _descendants(process.pid)
        assert len(started) >= 3, started  # the fork server, the run's worker, a replay worker (and more)
        process.terminate()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    deadline = time.monotonic() + 30
    while (left := {pid: command for pid in started if (command := _running(pid))}) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes outlived the server: {left}"
    assert process.returncode == 0, process.stderr.read()  # stopped as by Ctrl+C, not killed by the signal


def test_token_guards_the_command_line_server():
    port = free_port()
    process, url = _serve("--port", str(port), "--no-default-run", "--token", "s3cret")
    try:
        assert url == f"http://127.0.0.1:{port}/?token=s3cret"
        assert httpx.get(f"http://127.0.0.1:{port}/api/health").status_code == 401
        ok = httpx.get(f"http://127.0.0.1:{port}/api/health", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
    finally:
        _stop(process)


@pytest.mark.parametrize("source", ["file", "environment"])
def test_the_token_can_stay_out_of_the_command_line(tmp_path, source):
    """--token-file or MXLAB_TOKEN: the secret is not in the process's arguments (ps shows those)."""
    secret = "f1le-s3cret"
    if source == "file":
        (tmp_path / "token").write_text(secret + "\nignored second line\n")
        process, url = _serve("--port", str(free_port()), "--no-default-run", "--token-file", str(tmp_path / "token"))
    else:
        process, url = _serve("--port", str(free_port()), "--no-default-run", env={"MXLAB_TOKEN": secret})
    try:
        assert url.endswith(f"?token={secret}")
        assert secret not in " ".join(process.args)
        base = url.split("/?")[0]
        assert httpx.get(f"{base}/api/health").status_code == 401
        assert httpx.get(f"{base}/api/health", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    finally:
        _stop(process)


def test_resolve_token_prefers_the_flag_then_the_file_then_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MXLAB_TOKEN", "from-env")
    (tmp_path / "t").write_text("  from-file  \n")
    assert resolve_token("from-flag", None) == "from-flag"
    assert resolve_token(None, tmp_path / "t") == "from-file"
    assert resolve_token(None, None) == "from-env"
    monkeypatch.delenv("MXLAB_TOKEN")
    assert resolve_token(None, None) is None
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "binary").write_bytes(b"\xff\xfe")
    (tmp_path / "huge").write_text("x" * 5000)
    for name, message in [("empty", "is empty"), ("binary", "not UTF-8"), ("huge", "over 4096 bytes")]:
        with pytest.raises(TokenSourceError, match=message):
            resolve_token(None, tmp_path / name)


def test_exercise_commands_are_handed_to_the_exercises_package(monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "exercises_main", lambda argv: calls.append(argv) or 7)
    assert main(["check", "relu", "--verbose"]) == 7
    assert main(["hint", "relu"]) == 7
    assert calls == [["check", "relu", "--verbose"], ["hint", "relu"]]


# ----------------------------------------------------------------------------- mxlab attach
SCRIPT = """
    import sys

    import framework as mx

    a = mx.nd.ones((8, 8))
    (mx.nd.dot(a, a) + 1).wait_to_read()
    print("script", __name__, sys.argv[1:], flush=True)
    sys.exit(int(sys.argv[-1]))
"""


def _attach(script: Path, *args: str) -> tuple[subprocess.Popen, str, list[str]]:
    """Start ``python -m server attach`` on ``script``; the process, its URL and its lines up to the wait."""
    process = subprocess.Popen(
        [sys.executable, "-m", "server", "attach", "--port", "0", str(script), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines = []
    while not lines or "press Ctrl+C" not in lines[-1]:
        line = process.stdout.readline()
        if not line:
            process.kill()
            raise AssertionError(f"mxlab attach ended early: {lines} {process.stderr.read()}")
        lines.append(line.strip())
    match = re.search(r"MXLab is showing this process at (\S+)", lines[0])
    assert match is not None, lines
    return process, match.group(1), lines


@pytest.mark.parametrize(("exit_code", "status"), [(0, "done"), (3, "failed")])
def test_mxlab_attach_runs_the_script_live_and_keeps_serving(tmp_path, exit_code, status):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    process, url, lines = _attach(script, "--lr", "0.1", str(exit_code))
    try:
        assert url.endswith("/?run=live")
        assert lines[1] == f"script __main__ ['--lr', '0.1', '{exit_code}']"  # the script's own argv
        assert f"ended (exit code {exit_code})" in lines[2]
        run = httpx.get(url.split("?")[0] + "api/runs/live", timeout=5).json()
        assert run["status"] == status and run["event_counts"].get("engine.push", 0) >= 2, run
    finally:
        _stop(process)
    assert process.returncode == exit_code
    assert "MXLab stopped" in process.stdout.read()


def test_mxlab_attach_refuses_bad_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["attach", str(tmp_path / "missing.py")])
    assert exited.value.code == 2 and "missing.py' is not a file" in capsys.readouterr().err
    script = tmp_path / "ok.py"
    script.write_text("")
    with pytest.raises(SystemExit) as exited:
        main(["attach", "--host", "0.0.0.0", str(script)])
    assert exited.value.code == 2 and "pass token=<secret>" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["attach"])
    assert exited.value.code == 2 and "the following arguments are required: script" in capsys.readouterr().err


SIGPIPE_STATUS = 128 + signal.SIGPIPE


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["-m", "server", "exercises"], SIGPIPE_STATUS),
        (["-m", "server", "hint", "quadratic"], SIGPIPE_STATUS),
        (["-m", "server", "solution", "quadratic"], SIGPIPE_STATUS),
        (["-m", "server", "demo", "--engine", "NaiveEngine", "--chain-length", "1", "--op-ms", "0"], SIGPIPE_STATUS),
        (["-m", "server", "serve", "--help"], 0),  # argparse ignores a failed write of its help text
        (["-m", "exercises", "exercises"], SIGPIPE_STATUS),
    ],
)
def test_every_command_exits_quietly_when_its_reader_closes_the_pipe(tmp_path, argv, status):
    """`mxlab exercises | head`: the reader is gone before the command writes; no traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write now fails with EPIPE, like a `head` that has finished
    try:
        result = subprocess.run(
            [sys.executable, *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr
    assert result.returncode == status, result.stderr


def test_mxlab_attach_reports_a_server_process_that_cannot_start(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(live, "SERVER_PROCESS_MAIN", "import sys; sys.exit(3)")
    script = tmp_path / "ok.py"
    script.write_text("")
    assert main(["attach", "--port", "0", str(script)]) == 2
    assert "mxlab: attach: the server process exited with code 3 before serving" in capsys.readouterr().err

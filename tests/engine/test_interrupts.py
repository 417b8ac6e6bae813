"""Interrupts are the program's, not an operation's; timeouts and bulk sizes behave per engine and thread.

* A KeyboardInterrupt or SystemExit raised by a pushed function is never stored as the
  operation's error: NaiveEngine raises it from ``push`` at once, the threaded engines at the
  program's next push or wait (their functions run on worker threads).
* The engine's ``wait_timeout`` bounds NaiveEngine's wait for an async ``on_complete``.
* ``bulk(n)`` is per thread, so overlapping blocks in several threads leave every size right.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

import framework as mx
from framework.base import EngineError, EngineTimeoutError, MXLabError
from framework.engine import create

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INTERRUPTS = [KeyboardInterrupt, SystemExit]


def _raise(kind):
    def fn(run_ctx):
        raise kind()

    return fn


def _interrupt_surfaces(engine, kind, push):
    """``push()`` (or, on a threaded engine, the next wait) raises ``kind``, once."""
    with pytest.raises(kind):
        push()
        engine.wait_for_all(timeout=10)
    engine.wait_for_all(timeout=10)  # raised once: the engine carries on


@pytest.mark.parametrize("kind", INTERRUPTS)
def test_an_interrupt_in_a_function_propagates_and_poisons_nothing(engine, kind):
    v = engine.new_variable("v")
    _interrupt_surfaces(engine, kind, lambda: engine.push_sync(_raise(kind), mx.cpu(), mutable_vars=[v], name="ctrl_c"))
    assert v.exception_record is None  # never stored as the operation's error
    ran = []
    engine.push_sync(lambda rc: ran.append("next"), mx.cpu(), mutable_vars=[v], name="next")
    engine.wait_for_var(v, timeout=10)  # no stored error on v
    assert ran == ["next"]


@pytest.mark.parametrize("kind", INTERRUPTS)
def test_an_interrupt_in_an_async_function_propagates(engine, kind):
    v = engine.new_variable("v")
    _interrupt_surfaces(engine, kind, lambda: engine.push_async(lambda rc, done: _raise(kind)(rc), mx.cpu(), [], [v]))
    _interrupt_surfaces(engine, kind, lambda: engine.push_async(lambda rc, done: done(kind()), mx.cpu(), [], [v]))
    engine.wait_for_var(v, timeout=10)
    assert v.exception_record is None


def test_an_interrupt_after_on_complete_is_not_swallowed(engine):
    def completes_then_interrupted(rc, done):
        done()
        raise KeyboardInterrupt

    _interrupt_surfaces(engine, KeyboardInterrupt, lambda: engine.push_async(completes_then_interrupted, mx.cpu()))


def test_an_interrupt_inside_a_bulk_segment_propagates(threaded_engine):
    engine = threaded_engine
    v = engine.new_variable("v")
    ran = []
    with pytest.raises(KeyboardInterrupt):
        with engine.bulk(4):
            engine.push_sync(lambda rc: ran.append(1), mx.cpu(), mutable_vars=[v])
            engine.push_sync(_raise(KeyboardInterrupt), mx.cpu(), mutable_vars=[v])
            engine.push_sync(lambda rc: ran.append(3), mx.cpu(), mutable_vars=[v])
        engine.wait_for_all(timeout=10)
    assert ran == [1]  # the segment stopped at the interrupt
    engine.wait_for_var(v, timeout=10)


def test_a_real_ctrl_c_under_naive_engine_ends_the_program():
    """The signal arrives while an operation runs: the script must die of it, not exit 0."""
    script = textwrap.dedent(
        """
        import os, signal, time
        os.environ["MXLAB_ENGINE_TYPE"] = "NaiveEngine"
        import framework as mx
        from framework.engine import Engine
        engine = Engine.get()
        v = engine.new_variable("v")
        def slow_kernel(rc):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        engine.push_sync(slow_kernel, mx.cpu(), mutable_vars=[v], name="slow_kernel")
        print("the loop carried on")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": ROOT},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "KeyboardInterrupt" in result.stderr
    assert "the loop carried on" not in result.stdout
    assert "never reported" not in result.stderr


# --------------------------------------------------------------------------- timeouts
def test_naive_push_async_that_never_completes_times_out_naming_the_operation(make_engine):
    engine = make_engine("NaiveEngine")
    engine.set_wait_timeout(0.2)
    with pytest.raises(EngineTimeoutError, match=r"'forgetful' .*did not call on_complete within 0.2s"):
        engine.push_async(lambda rc, done: None, mx.cpu(), name="forgetful")
    engine._inflight.clear()  # the forgotten operation would otherwise keep the engine busy forever


def test_the_engine_timeout_is_the_default_of_waits(make_engine):
    engine = make_engine("ThreadedEnginePerDevice", 2)
    v = engine.new_variable("v")
    held = []
    engine.push_async(lambda rc, done: held.append(done), mx.cpu(), mutable_vars=[v], name="forgetful")
    assert engine.set_wait_timeout(0.2) is None
    with pytest.raises(EngineTimeoutError, match=r"'forgetful'"):
        engine.wait_for_var(v)
    with pytest.raises(EngineTimeoutError, match=r"'forgetful'"):
        engine.wait_for_all()
    held[0]()
    engine.wait_for_var(v)


@pytest.mark.parametrize("bad", [-1, -0.5, "5", True])
def test_set_wait_timeout_refuses_bad_values(make_engine, bad):
    engine = make_engine("NaiveEngine")
    with pytest.raises(EngineError, match="set_wait_timeout: seconds must be a number >= 0 or None"):
        engine.set_wait_timeout(bad)


def test_the_wait_timeout_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("MXLAB_ENGINE_WAIT_TIMEOUT", "7")
    engine = create("NaiveEngine")
    assert engine.wait_timeout == 7
    monkeypatch.setenv("MXLAB_ENGINE_WAIT_TIMEOUT", "soon")
    with pytest.raises(MXLabError, match="MXLAB_ENGINE_WAIT_TIMEOUT.*'soon'"):
        create("NaiveEngine")


# --------------------------------------------------------------------------- per-thread bulk
def test_overlapping_bulk_blocks_in_threads_keep_their_own_sizes(threaded_engine):
    engine = threaded_engine
    step = threading.Barrier(2, timeout=10)
    seen: dict[str, list[int]] = {"a": [], "b": []}
    v = {name: engine.new_variable(name) for name in "ab"}

    def worker(name, size, enter_first):
        if not enter_first:
            step.wait()  # b enters after a ...
        with engine.bulk(size):
            if enter_first:
                step.wait()
            step.wait()  # ... both inside ...
            for _ in range(size):
                engine.push_sync(lambda rc: None, mx.cpu(), mutable_vars=[v[name]])
            seen[name].append(engine.bulk_size())
            if enter_first:
                step.wait()  # ... a leaves first
        if not enter_first:
            step.wait()
        seen[name].append(engine.bulk_size())

    threads = [
        threading.Thread(target=worker, args=("a", 4, True)),
        threading.Thread(target=worker, args=("b", 8, False)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == {"a": [4, 1], "b": [8, 1]}
    assert engine.bulk_size() == 1  # the main thread never bulked
    engine.wait_for_all(timeout=10)


def test_a_threads_bulk_size_does_not_fuse_another_threads_pushes(threaded_engine):
    engine = threaded_engine
    v = engine.new_variable("v")
    seen = []

    def other_thread():
        engine.push_sync(lambda rc: None, mx.cpu(), mutable_vars=[v], name="other_thread")
        # with an engine-wide size this push would sit in an open segment of this thread
        seen.append((engine.bulk_size(), threading.get_ident() in engine._bulk._open))

    with engine.bulk(16):
        other = threading.Thread(target=other_thread)
        other.start()
        other.join(10)
    engine.wait_for_all(timeout=10)
    assert seen == [(1, False)]


def test_an_interrupt_nobody_re_raised_is_reported_at_exit():
    script = textwrap.dedent(
        """
        import sys
        import framework as mx
        from framework.engine import Engine
        engine = Engine.get()
        engine.push_sync(lambda rc: sys.exit(3), mx.cpu(), mutable_vars=[engine.new_variable("v")], name="quits")
        """
    )
    env = {**os.environ, "PYTHONPATH": ROOT, "MXLAB_ENGINE_TYPE": "ThreadedEnginePerDevice"}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert "SystemExit(3)" in result.stderr and "no push or wait re-raised it" in result.stderr

"""Property: any program of reads and writes gives sequential execution's per-variable history.

Each generated operation reads some variables, writes others, sleeps briefly and maybe
raises; some ask to run inline when their variables are free (``inline_if_ready``), and
some programs run with an events subscriber (the inline path then builds Operations).
Every write appends (op index, what the op observed of its reads) to the written
variable's log, so a log records exactly the order of writes and what each writer saw;
read-only operations record their observations too. Sequential execution (with MXNet's
skip-on-poisoned-input rule) is the reference.
"""

from __future__ import annotations

import time

import pytest
from engine_configs import ENGINE_CONFIGS, config_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import framework as mx
from framework import events
from framework.engine import create


@st.composite
def programs(draw):
    num_vars = draw(st.integers(1, 10))
    num_ops = draw(st.integers(1, 200))
    ops = []
    for _ in range(num_ops):
        touched = draw(st.lists(st.integers(0, num_vars - 1), min_size=1, max_size=min(4, num_vars), unique=True))
        split = draw(st.integers(0, len(touched)))
        reads, writes = touched[:split], touched[split:]
        sleep_us = draw(st.sampled_from([0, 0, 0, 20, 100]))
        fails = draw(st.integers(0, 30)) == 0
        device = draw(st.integers(0, 1))
        inline = draw(st.booleans())  # inline_if_ready: run in the pusher when every variable is free
        ops.append((tuple(reads), tuple(writes), sleep_us, fails, device, inline))
    bulk = draw(st.sampled_from([1, 1, 4, 16]))
    # With a subscriber, inline runs are Operations with events; without, the quiet path runs them.
    listening = draw(st.booleans())
    return num_vars, ops, bulk, listening


class OpFailed(Exception):
    pass


def make_fn(index, reads, writes, sleep_us, fails, logs, observations):
    def fn(run_ctx):
        seen = tuple((r, len(logs[r]), logs[r][-1][0] if logs[r] else None) for r in reads)
        if sleep_us:
            time.sleep(sleep_us / 1e6)
        if fails:
            raise OpFailed(index)
        if writes:
            for w in writes:
                logs[w].append((index, seen))
        else:
            observations[index] = seen

    return fn


def run_sequentially(num_vars, ops):
    logs = [[] for _ in range(num_vars)]
    observations = {}
    poison = [None] * num_vars
    raised = []
    for index, (reads, writes, _sleep_us, fails, _device, _inline) in enumerate(ops):
        upstream = next((poison[v] for v in reads + writes if poison[v] is not None), None)
        if upstream is not None:
            for w in writes:
                poison[w] = upstream
            continue
        if fails:
            raised.append(index)
            for w in writes:
                poison[w] = index
            continue
        make_fn(index, reads, writes, 0, False, logs, observations)(None)
    return logs, observations, poison, raised


_engines = {}


def engine_for(config):
    if config not in _engines:
        kind, workers = config
        _engines[config] = create(kind, workers)
    return _engines[config]


@pytest.fixture(scope="module", autouse=True)
def stop_engines():
    yield
    for engine in _engines.values():
        engine.stop()
    _engines.clear()


@pytest.mark.parametrize("config", ENGINE_CONFIGS, ids=config_id)
@pytest.mark.slow  # 25 random programs on every engine configuration
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=programs())
def test_random_programs_match_sequential_execution(config, program):
    num_vars, ops, bulk, listening = program
    engine = engine_for(config)
    variables = [engine.new_variable(f"v{i}") for i in range(num_vars)]
    logs = [[] for _ in range(num_vars)]
    observations = {}
    engine.set_bulk_size(bulk)
    recorder = events.record(["engine.start"]).start() if listening else None
    try:
        for index, (reads, writes, sleep_us, fails, device, inline) in enumerate(ops):
            engine.push_sync(
                make_fn(index, reads, writes, sleep_us, fails, logs, observations),
                mx.cpu(device),
                const_vars=[variables[r] for r in reads],
                mutable_vars=[variables[w] for w in writes],
                name=f"op{index}",
                inline_if_ready=inline,
            )
    finally:
        engine.set_bulk_size(1)
        if recorder is not None:
            recorder.stop()
    assert engine._wait_idle(60), "engine did not finish the program within 60 s"

    expected_logs, expected_observations, poison, raised = run_sequentially(num_vars, ops)
    assert logs == expected_logs
    assert observations == expected_observations
    for var, upstream in zip(variables, poison, strict=True):
        got = var.exception
        assert (got.args[0] if got is not None else None) == upstream
    if raised:  # even a failing read-only op is reported by wait_for_all
        with pytest.raises(OpFailed) as info:
            engine.wait_for_all()
        assert info.value.args[0] in raised
    engine.wait_for_all()  # everything reported once: a second wait is clean

"""Executor.set_monitor_callback and mx.mon.Monitor, against the numbers MXNet 1.9.1's Monitor reports."""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import numpy as np
import pytest

import framework as mx

REFERENCE_DIR = Path(__file__).resolve().parent / "data" / "mxnet_1_9_1" / "module"
_spec = importlib.util.spec_from_file_location("monitor_reference", REFERENCE_DIR / "make_monitor_reference.py")
reference_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference_script)
REFERENCE = json.loads((REFERENCE_DIR / "monitor_reference.json").read_text())


def test_outputs_match_mxnet_names_order_and_default_statistic():
    got = reference_script.run(mx, monitor_all=False)
    assert [row[1] for row in got] == [row[1] for row in REFERENCE["outputs"]]
    for (step, name, values), (want_step, _, want) in zip(got, REFERENCE["outputs"], strict=True):
        assert step == want_step
        np.testing.assert_allclose(values, want, rtol=1e-5, err_msg=name)


def test_monitor_all_reports_inputs_as_mxnet_does():
    got = reference_script.run(mx, monitor_all=True)
    # MXNet's Activation does not name its input (relu1_input0); MXLab's calls it data.
    want = [[s, "relu1_data" if n == "relu1_input0" else n, v] for s, n, v in REFERENCE["all"]]
    assert [row[1] for row in got] == [row[1] for row in want]
    for (_, name, values), (_, _, expected) in zip(got, want, strict=True):
        np.testing.assert_allclose(values, expected, rtol=1e-5, err_msg=name)


def test_callback_sees_each_output_before_its_memory_is_reused():
    x = mx.sym.var("x")
    net = mx.sym.relu(mx.sym.relu(mx.sym.relu(x * 2, name="a"), name="b") - 1, name="c")
    exe = net.simple_bind(mx.cpu(), grad_req="null", x=(4,))
    exe.arg_dict["x"][:] = np.array([1.0, 2.0, 3.0, 4.0])
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, arr.copy()))
    exe.forward()
    np.testing.assert_allclose(seen["a_output"].asnumpy(), [2, 4, 6, 8])
    np.testing.assert_allclose(seen["c_output"].asnumpy(), [1, 3, 5, 7])
    assert set(seen) == {n for n in net.get_internals().list_outputs() if n != "x"}
    exe.set_monitor_callback(None)
    seen.clear()
    exe.forward()
    assert not seen
    with pytest.raises(mx.executor.ExecutorError, match="callback must be callable"):
        exe.set_monitor_callback("print")


def test_monitor_interval_pattern_sort_and_stat_func():
    net = reference_script.network(mx)
    exe = net.simple_bind(mx.cpu(), grad_req="null", data=(3, 5), softmax_label=(3,))
    mon = mx.mon.Monitor(2, stat_func=mx.nd.max, pattern=".*weight", sort=True)
    mon.install(exe)
    recorded = []
    for _ in range(4):
        mon.tic()
        exe.forward()
        recorded.append(mon.toc())
    assert [len(r) for r in recorded] == [2, 0, 2, 0]  # every 2nd batch; weights only
    assert [row[1] for row in recorded[0]] == ["fc1_weight", "fc2_weight"]
    assert [row[0] for row in recorded[2]] == [3, 3]
    with pytest.raises(mx.base.MXLabError, match="interval must be a positive int"):
        mx.mon.Monitor(0)


def test_module_install_monitor_and_fit_print(caplog):
    data = np.random.rand(6, 5).astype(np.float32)
    label = np.array([0, 1, 0, 1, 1, 0], dtype=np.float32)
    it = mx.io.NDArrayIter(data, label, batch_size=3)
    mod = mx.mod.Module(reference_script.network(mx), context=mx.cpu())
    mon = mx.mon.Monitor(1, pattern="fc2_output")
    with caplog.at_level(logging.INFO):
        mod.fit(it, num_epoch=1, monitor=mon, optimizer="sgd")
    lines = [r.getMessage() for r in caplog.records if "fc2_output" in r.getMessage()]
    assert len(lines) == 2 and lines[0].startswith("Batch:       1 fc2_output" + " " * 21)  # MXNet's {:30s}


# ----------------------------------------------------------------------------- monitor.stat events
def _bound_reference_net():
    """The reference network bound with fixed inputs and weights (every statistic is known)."""
    net = reference_script.network(mx)
    exe = net.simple_bind(mx.cpu(), grad_req="null", data=(3, 5), softmax_label=(3,))
    for i, name in enumerate(net.list_arguments()):
        exe.arg_dict[name][:] = reference_script.values(exe.arg_dict[name].shape, i)
    return net, exe


def _monitored_batches(mon, exe, batches):
    lines = []
    for _ in range(batches):
        mon.tic()
        exe.forward(is_train=False)
        lines.append(mon.toc())
    return lines


def test_toc_publishes_one_monitor_stat_event_per_line_at_the_interval():
    _, exe = _bound_reference_net()
    mon = mx.mon.Monitor(2)
    mon.install(exe)
    with mx.events.record(["monitor.stat"]) as rec:
        lines = _monitored_batches(mon, exe, 4)
    got = rec.of_kind("monitor.stat")
    assert [len(batch) for batch in lines] == [10, 0, 10, 0]  # 4 outputs and 6 arguments, every 2nd batch
    flat = [line for batch in lines for line in batch]
    assert [(e["batch"], e["name"]) for e in got] == [(step, name) for step, name, _ in flat]
    assert {e["batch"] for e in got} == {1, 3}
    for event, (_, _, text) in zip(got, flat, strict=True):
        assert set(event) == {"kind", "t_ns", *mx.events.KINDS["monitor.stat"]}
        assert event["stat"] == "rms"
        assert type(event["value"]) is float and event["value"] == pytest.approx(float(text), rel=1e-6)
    roles = {e["name"]: e["role"] for e in got}
    assert roles["fc1_output"] == roles["softmax_output"] == "output"
    assert roles["fc1_weight"] == roles["data"] == roles["softmax_label"] == "argument"
    # The first rows are the outputs in forward order, then the arguments (sort=False, as MXNet prints).
    assert [e["name"] for e in got[:4]] == ["fc1_output", "relu1_output", "fc2_output", "softmax_output"]


def test_events_follow_sort_pattern_and_name_the_stat_function():
    _, exe = _bound_reference_net()
    mon = mx.mon.Monitor(1, stat_func=mx.nd.max, pattern=".*(weight|output)", sort=True, monitor_all=True)
    mon.install(exe)
    with mx.events.record(["monitor.stat"]) as rec:
        (lines,) = _monitored_batches(mon, exe, 1)
    got = rec.of_kind("monitor.stat")
    names = [e["name"] for e in got]
    assert names == sorted(names) == [name for _, name, _ in lines]
    assert {e["stat"] for e in got} == {"max"}
    # monitor_all reports each layer's weight as an input too; toc adds it as an argument.
    assert sorted(e["role"] for e in got if e["name"] == "fc1_weight") == ["argument", "input", "input"]


def test_no_event_is_built_without_subscribers(monkeypatch):
    _, exe = _bound_reference_net()
    mon = mx.mon.Monitor(1)
    mon.install(exe)
    published = []
    monkeypatch.setattr(mx.events, "publish", lambda kind, **fields: published.append(kind))
    assert not mx.events.enabled
    (lines,) = _monitored_batches(mon, exe, 1)
    assert lines and not published
    with mx.events.record(["train.metric"]):  # a subscriber of other kinds: events are built, none delivered
        (lines,) = _monitored_batches(mon, exe, 1)
    assert [kind for kind in published if kind == "monitor.stat"] == ["monitor.stat"] * len(lines)


def test_several_values_are_a_short_list_and_nan_inf_stay_floats():
    _, exe = _bound_reference_net()

    def spread(x):
        """NaN, +inf, -inf, then the array's first 17 values (more than an event carries)."""
        flat = x.reshape((-1,))
        weird = mx.nd.array([np.nan, np.inf, -np.inf])
        return [weird, mx.nd.concat(flat, flat, flat, flat, dim=0)[:17]]

    mon = mx.mon.Monitor(1, stat_func=spread, pattern="fc1_weight")
    mon.install(exe)
    with mx.events.record(["monitor.stat"]) as rec:
        (lines,) = _monitored_batches(mon, exe, 1)
    (event,) = rec.of_kind("monitor.stat")
    value = event["value"]
    assert len(lines) == 1 and event["stat"] == "spread"
    assert isinstance(value, list) and len(value) == mx.mon.MAX_EVENT_VALUES == 16
    assert all(type(v) is float for v in value)
    assert np.isnan(value[0]) and value[1:3] == [np.inf, -np.inf]
    weight = exe.arg_dict["fc1_weight"].asnumpy().ravel()
    np.testing.assert_allclose(value[3:], weight[:13], rtol=1e-6)
    lambda_mon = mx.mon.Monitor(1, stat_func=lambda x: mx.nd.min(mx.nd.abs(x)), pattern="fc2_bias")
    lambda_mon.install(exe)
    with mx.events.record(["monitor.stat"]) as rec:
        _monitored_batches(lambda_mon, exe, 1)
    assert [e["stat"] for e in rec.events] == ["<lambda>"]


def test_a_stat_func_that_returns_no_ndarray_fails_before_publishing():
    _, exe = _bound_reference_net()
    mon = mx.mon.Monitor(1, stat_func=lambda x: 1.5, pattern="fc2_bias")
    mon.install(exe)
    with mx.events.record(["monitor.stat"]) as rec:
        mon.tic()
        exe.forward(is_train=False)
        with pytest.raises(mx.base.MXLabError, match="stat_func must return an NDArray"):
            mon.toc()
    assert rec.events == []


def test_a_reshaped_executor_keeps_the_monitor_so_fit_reports_outputs_after_validation():
    data = reference_script.values((12, 5), 0)
    label = np.array([0, 1] * 6, dtype=np.float32)
    train = mx.io.NDArrayIter(data, label, batch_size=3)
    val = mx.io.NDArrayIter(data[:4], label[:4], batch_size=4)  # another batch size: the module reshapes
    mod = mx.mod.Module(reference_script.network(mx), context=mx.cpu())
    mon = mx.mon.Monitor(2, pattern=".*_output")
    with mx.events.record(["monitor.stat"]) as rec:
        mod.fit(train, eval_data=val, num_epoch=2, monitor=mon, optimizer="sgd")
    batches = {}
    for event in rec.events:
        batches.setdefault(event["batch"], []).append(event["name"])
    outputs = ["fc1_output", "relu1_output", "fc2_output", "softmax_output"]
    assert batches == {1: outputs, 3: outputs, 5: outputs, 7: outputs}  # epoch 2 (batches 5-8) too
    exe = mod._exec_group.execs[0]
    seen = []
    exe.set_monitor_callback(lambda name, array: seen.append(name))
    exe.reshape(data=(2, 5), softmax_label=(2,)).forward()
    assert seen == outputs

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
    assert len(lines) == 2 and lines[0].startswith("Batch:       1")

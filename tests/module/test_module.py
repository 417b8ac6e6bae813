"""mx.mod.Module: the step-by-step API, fit/score/predict, data parallelism and the aggregation seam.

Numbers are checked against NumPy written out in the test (one SGD step of a softmax
layer), against a single-device run (data parallelism must not change the result), and
against the executor the module wraps (input gradients).
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import framework as mx
import framework.io
import framework.symbol as sym
from framework import events
from framework.callback import Speedometer
from framework.executor import simple_bind
from framework.module import (
    AggregationError,
    Module,
    ModuleError,
    TrainingDivergedError,
)
from framework.module.base_module import progress_enabled
from framework.module.executor_group import split_input_slice

NDArrayIter = mx.io.NDArrayIter
DataBatch = mx.io.DataBatch


def softmax_layer(num_hidden: int = 3) -> sym.Symbol:
    return sym.SoftmaxOutput(sym.FullyConnected(sym.Variable("data"), num_hidden=num_hidden, name="fc"), name="softmax")


def mlp(hidden: int = 16) -> sym.Symbol:
    x = sym.Activation(sym.FullyConnected(sym.Variable("data"), num_hidden=hidden, name="fc1"), act_type="relu")
    return sym.SoftmaxOutput(sym.FullyConnected(x, num_hidden=4, name="fc2"), name="softmax")


def blobs(n: int = 96, dim: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Four separable clusters: a net learns them in a few epochs."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    centers = rng.standard_normal((4, dim)) * 3
    x = (centers[y] + rng.standard_normal((n, dim))).astype(np.float32)
    return x, y.astype(np.float32)


def trained(contexts: list, kvstore: object = "local", epochs: int = 2, **kwargs: object) -> Module:
    mx.random.seed(7)
    np.random.seed(7)
    x, y = blobs()
    mod = Module(mlp(), context=contexts, **kwargs)
    mod.fit(
        NDArrayIter(x, y, batch_size=24),
        num_epoch=epochs,
        kvstore=kvstore,
        initializer=mx.init.Xavier(),
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
    )
    return mod


# ----------------------------------------------------------------------------- step by step
def test_one_sgd_step_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    y = np.array([0, 2, 1, 2, 0], dtype=np.float32)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    b0 = np.array([0.1, -0.2, 0.3], dtype=np.float32)
    mod = Module(softmax_layer(), data_names=["data"], label_names=["softmax_label"], context=mx.cpu())
    mod.bind(data_shapes=[("data", (5, 4))], label_shapes=[("softmax_label", (5,))])
    mod.init_params(arg_params={"fc_weight": mx.nd.array(w0), "fc_bias": mx.nd.array(b0)})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    mod.forward(DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
    mod.backward()
    mod.update()

    logits = x @ w0.T + b0
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), p, rtol=1e-5, atol=1e-6)
    d = p - np.eye(3, dtype=np.float32)[y.astype(int)]  # SoftmaxOutput's gradient, summed over the batch
    arg, aux = mod.get_params()
    assert aux == {}
    np.testing.assert_allclose(arg["fc_weight"].asnumpy(), w0 - 0.5 * (d.T @ x) / 5, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arg["fc_bias"].asnumpy(), b0 - 0.5 * d.sum(0) / 5, rtol=1e-5, atol=1e-6)
    assert mod._optimizer.rescale_grad == pytest.approx(1 / 5)

    metric = mx.metric.create("acc")
    mod.update_metric(metric, [mx.nd.array(y)])
    assert metric.get()[1] == pytest.approx(float(np.mean(p.argmax(1) == y)))
    assert mod.output_shapes == [("softmax_output", (5, 3))]
    assert [(d.name, d.shape) for d in mod.data_shapes] == [("data", (5, 4))]


def test_life_cycle_errors_name_the_missing_step():
    mod = Module(softmax_layer())
    batch = DataBatch([mx.nd.zeros((2, 4))], [mx.nd.zeros((2,))])
    with pytest.raises(ModuleError, match="call bind"):
        mod.forward(batch)
    mod.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    with pytest.raises(ModuleError, match="call init_params"):
        mod.get_params()
    mod.init_params()
    mod.forward_backward(batch)
    with pytest.raises(ModuleError, match="call init_optimizer"):
        mod.update()
    with pytest.raises(ModuleError, match="inputs_need_grad=True"):
        mod.get_input_grads()
    with pytest.warns(UserWarning, match="already initialized"):
        mod.init_params()


def test_bad_names_and_shapes_are_reported():
    with pytest.raises(ModuleError, match=r"input with name 'image' is not found.*\n\tdata\n\tsoftmax_label"):
        Module(softmax_layer(), data_names=["image"])
    with pytest.warns(UserWarning, match="label_names"):
        Module(softmax_layer(), label_names=["lbl"])
    mod = Module(softmax_layer())
    with pytest.raises(ModuleError, match=r"data_shapes don't match.*\('x', \(2, 4\)\)"):
        mod.bind(data_shapes=[("x", (2, 4))])
    with pytest.raises(ModuleError, match="\\(name, shape\\) pair"):
        mod.bind(data_shapes=[("data",)])
    with pytest.raises(ModuleError, match="work_load_list has 1 entries for 2 contexts"):
        Module(softmax_layer(), context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1])
    mod.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    mod.init_params()
    with pytest.raises(ModuleError, match=r"'fc_weight' has shape \(2, 2\).*needs \(3, 4\)"):
        mod.set_params({"fc_weight": mx.nd.zeros((2, 2)), "fc_bias": mx.nd.zeros((3,))}, {})
    with pytest.raises(ModuleError, match="'fc_bias' is not presented"):
        mod.set_params({"fc_weight": mx.nd.zeros((3, 4))}, {})
    mod.set_params({"fc_weight": mx.nd.ones((3, 4))}, {}, allow_missing=True)
    assert mod.get_params()[0]["fc_weight"].asnumpy().sum() == 12
    with pytest.raises(ModuleError, match="optimizer must be a name"):
        mod.init_optimizer(optimizer=42)


def test_bad_batches_are_refused_and_leave_the_module_usable():
    mod = Module(softmax_layer())
    mod.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    mod.init_params()
    with pytest.raises(mx.MXLabError, match=r"fc_weight changed from \(3, 4\) to \(3, 5\)"):
        mod.forward(DataBatch([mx.nd.zeros((2, 5))], [mx.nd.zeros((2,))]))
    with pytest.raises(ModuleError, match=r"'softmax_label': the batch gives shape \(3,\).*batch of 2"):
        mod.forward(DataBatch([mx.nd.zeros((2, 4))], [mx.nd.zeros((3,))]))
    with pytest.raises(ModuleError, match=r"the batch has 2 data arrays, the module expects 1 \(\['data'\]\)"):
        mod.forward(DataBatch([mx.nd.zeros((2, 4)), mx.nd.zeros((2, 4))], [mx.nd.zeros((2,))]))
    assert [d.shape for d in mod.data_shapes] == [(2, 4)]
    mod.forward(DataBatch([mx.nd.ones((2, 4))], [mx.nd.zeros((2,))]))
    assert mod.get_outputs()[0].shape == (2, 3)


def test_fixed_params_inputs_need_grad_and_grad_req_add():
    x, y = blobs(8)
    batch = DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    mod = Module(mlp(), fixed_param_names=["fc1_weight"])
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", y.shape)], inputs_need_grad=True)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    mod.forward_backward(batch)
    mod.update()
    after = mod.get_params()[0]
    np.testing.assert_array_equal(after["fc1_weight"].asnumpy(), before["fc1_weight"])
    assert not np.allclose(after["fc2_weight"].asnumpy(), before["fc2_weight"])
    assert mod._exec_group.grad_req["fc1_weight"] == "null"
    assert mod._exec_group.grad_req["softmax_label"] == "null"

    # the input gradient is the executor's
    exe = simple_bind(mlp(), mx.cpu(), grad_req={"data": "write"}, data=x.shape, softmax_label=y.shape)
    exe.copy_params_from({k: v for k, v in after.items()})
    exe.forward(is_train=True, data=mx.nd.array(x), softmax_label=mx.nd.array(y))
    exe.backward()
    mod.forward_backward(batch)
    np.testing.assert_allclose(
        mod.get_input_grads()[0].asnumpy(), exe.grad_dict["data"].asnumpy(), rtol=1e-5, atol=1e-6
    )

    acc = Module(mlp())
    acc.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", y.shape)], grad_req="add")
    acc.init_params(mx.init.Xavier())
    acc.forward_backward(batch)
    once = acc._exec_group.grad_arrays[0][0].asnumpy()
    acc.forward_backward(batch)
    np.testing.assert_allclose(acc._exec_group.grad_arrays[0][0].asnumpy(), 2 * once, rtol=1e-5, atol=1e-6)


def test_inference_binding_and_reshape_on_a_different_batch():
    x, _ = blobs(10)
    mod = Module(mlp())
    with pytest.warns(UserWarning, match=r"label_shapes don't match.*\[\] vs. \['softmax_label'\]"):
        mod.bind(data_shapes=[("data", (4, 8))], for_training=False)  # as MXNet: labels named, none bound
    mod.init_params(mx.init.Xavier())
    with pytest.raises(ModuleError, match="for_training=False"):
        mod.backward()
    out = mod.predict(x)  # 10 rows through executors bound for 4: reshaped
    assert out.shape == (10, 4)
    mod.forward(DataBatch([mx.nd.array(x[:4])]))
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), out.asnumpy()[:4], rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- fit, score, predict
def test_fit_logs_like_mxnet_calls_callbacks_and_learns(caplog):
    x, y = blobs()
    train = NDArrayIter(x[:72], y[:72], batch_size=12)
    val = NDArrayIter(x[72:], y[72:], batch_size=12)
    seen = []
    epochs_seen = []
    mx.random.seed(1)
    mod = Module(mlp())
    with caplog.at_level(logging.INFO):
        mod.fit(
            train,
            eval_data=val,
            num_epoch=4,
            initializer=mx.init.Xavier(),
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            batch_end_callback=[Speedometer(12, frequent=2), lambda p: seen.append((p.epoch, p.nbatch))],
            epoch_end_callback=lambda epoch, s, arg, aux: epochs_seen.append((epoch, sorted(arg))),
        )
    text = caplog.text
    for line in ("Epoch[0] Train-accuracy=", "Epoch[0] Time cost=", "Epoch[3] Validation-accuracy=", "Speed:"):
        assert line in text
    assert seen[:7] == [(0, i) for i in range(6)] + [(1, 0)]
    assert epochs_seen[0] == (0, ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"])
    assert dict(mod.score(val, "acc"))["accuracy"] >= 0.9
    with pytest.raises(ModuleError, match="num_epoch"):
        mod.fit(train)


def test_fit_publishes_train_metric_events():
    x, y = blobs(48)
    with events.record(["train.metric"]) as rec:
        Module(mlp()).fit(NDArrayIter(x, y, batch_size=16), eval_data=NDArrayIter(x, y, batch_size=16), num_epoch=2)
    got = rec.of_kind("train.metric")
    train = [e for e in got if e["phase"] == "train"]
    assert [(e["epoch"], e["batch"]) for e in train] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert all(e["name"] == "train-accuracy" and 0 <= e["value"] <= 1 for e in train)
    val = [e for e in got if e["phase"] == "validation"]
    assert [(e["epoch"], e["name"]) for e in val] == [(0, "validation-accuracy"), (1, "validation-accuracy")]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's overflow warnings from the diverging run
def test_fit_stops_with_a_clear_message_on_nan():
    x, y = blobs(32)
    x[5, 0] = np.nan
    mod = Module(mlp())
    with pytest.raises(TrainingDivergedError, match=r"Epoch\[0\] Batch\[0\]: the loss is NaN.*'softmax_output'"):
        mod.fit(NDArrayIter(x, y, batch_size=16), num_epoch=1, optimizer_params={"learning_rate": 0.5})
    diverging = Module(mlp())
    x, y = blobs(32)
    with pytest.raises(TrainingDivergedError, match="lower the learning rate \\(it is 1e\\+06\\)"):
        diverging.fit(NDArrayIter(x * 100, y, batch_size=8), num_epoch=20, optimizer_params={"learning_rate": 1e6})


def test_predict_score_and_iter_predict_drop_the_padding():
    x, y = blobs(10)
    mod = Module(mlp())
    mod.bind(data_shapes=[("data", (4, 8))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    it = NDArrayIter(x, y, batch_size=4)  # 3 batches, the last padded with 2 rows
    out = mod.predict(it)
    assert out.shape == (10, 4)
    np.testing.assert_allclose(out.asnumpy(), mod.predict(x).asnumpy(), rtol=1e-5, atol=1e-6)
    sizes = [(outs[0].shape[0], i) for outs, i, _ in mod.iter_predict(it)]
    assert sizes == [(4, 0), (4, 1), (2, 2)]
    per_batch = mod.predict(it, merge_batches=False)
    assert [len(b) for b in per_batch] == [1, 1, 1] and per_batch[2][0].shape == (2, 4)
    assert isinstance(mod.predict(it, always_output_list=True), list)
    assert len(mod.predict(it, num_batch=1)) == 4
    name, value = mod.score(it, mx.metric.create("acc"))[0]
    assert name == "accuracy" and 0 <= value <= 1
    with pytest.raises(ModuleError, match="eval_data must be an NDArray"):
        mod.predict([1, 2, 3])


def test_progress_bar_switches(capsys, monkeypatch):
    monkeypatch.delenv("MXLAB_PROGRESS", raising=False)
    assert progress_enabled(None) is None
    monkeypatch.setenv("MXLAB_PROGRESS", "0")
    assert progress_enabled(None) is False
    assert progress_enabled(True) is True
    monkeypatch.setenv("MXLAB_PROGRESS", "1")
    assert progress_enabled(None) is True
    assert progress_enabled(False) is False

    x, y = blobs(32)
    Module(mlp()).fit(NDArrayIter(x, y, batch_size=8), num_epoch=1, progress_bar=True)
    err = capsys.readouterr().err
    assert "Epoch[0]" in err and "samples/s" in err and "accuracy=" in err and "4/4" in err
    monkeypatch.setenv("MXLAB_PROGRESS", "0")
    Module(mlp()).fit(NDArrayIter(x, y, batch_size=8), num_epoch=1)
    assert "samples/s" not in capsys.readouterr().err
    monkeypatch.delenv("MXLAB_PROGRESS")
    Module(mlp()).fit(NDArrayIter(x, y, batch_size=8), num_epoch=1)  # stderr is not a terminal here
    assert "samples/s" not in capsys.readouterr().err


def test_optimizer_states_round_trip(tmp_path):
    x, y = blobs(24)
    batch = DataBatch([mx.nd.array(x)], [mx.nd.array(y)])

    def fresh() -> Module:
        mod = Module(mlp())
        mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", y.shape)])
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        return mod

    mx.random.seed(3)
    a = fresh()
    a.forward_backward(batch)
    a.update()
    a.save_optimizer_states(str(tmp_path / "a.states"))
    b = fresh()
    b.set_params(*a.get_params())
    b.load_optimizer_states(str(tmp_path / "a.states"))
    for m in (a, b):
        m.forward_backward(batch)
        m.update()
    for name, value in a.get_params()[0].items():
        np.testing.assert_allclose(b.get_params()[0][name].asnumpy(), value.asnumpy(), rtol=1e-6)


# ----------------------------------------------------------------------------- data parallelism
def test_two_devices_train_like_one():
    one = trained([mx.cpu(0)])
    two = trained([mx.cpu(0), mx.cpu(1)])
    assert isinstance(two._kvstore, mx.kvstore.KVStore) and two._update_on_kvstore
    assert one._kvstore is None
    for name, value in one.get_params()[0].items():
        np.testing.assert_allclose(two.get_params()[0][name].asnumpy(), value.asnumpy(), rtol=1e-4, atol=1e-5)
    # the batch is split 12 + 12 and merged back in order
    execs = two._exec_group.execs
    assert [e.arg_dict["data"].shape[0] for e in execs] == [12, 12]
    assert [e._ctx for e in execs] == [mx.cpu(0), mx.cpu(1)]
    x, _ = blobs()
    np.testing.assert_allclose(two.predict(x).asnumpy(), one.predict(x).asnumpy(), rtol=1e-4, atol=1e-5)


def test_device_store_uneven_work_load_and_per_device_updates():
    reference = trained([mx.cpu(0)])
    device = trained([mx.cpu(0), mx.cpu(1)], kvstore="device", work_load_list=[3, 1])
    assert [e.arg_dict["data"].shape[0] for e in device._exec_group.execs] == [18, 6]
    for name, value in reference.get_params()[0].items():
        np.testing.assert_allclose(device.get_params()[0][name].asnumpy(), value.asnumpy(), rtol=1e-4, atol=1e-5)
    # the optimizer on every device, the store only summing gradients: still the same step

    os.environ["MXLAB_UPDATE_ON_KVSTORE"] = "0"
    try:
        local_update = trained([mx.cpu(0), mx.cpu(1)])
    finally:
        del os.environ["MXLAB_UPDATE_ON_KVSTORE"]
    assert local_update._kvstore is not None and not local_update._update_on_kvstore
    for name, value in reference.get_params()[0].items():
        np.testing.assert_allclose(local_update.get_params()[0][name].asnumpy(), value.asnumpy(), rtol=1e-4, atol=1e-5)


def test_a_kvstore_like_object_is_used_through_init_push_pull_only():
    class Minimal:
        """Only the KVStore verbs: any other attribute the Module touched would raise."""

        def __init__(self) -> None:
            self._inner = mx.kv.create("local")
            self.calls: list[str] = []

        def init(self, key, value):
            self.calls.append("init")
            self._inner.init(key, value)

        def push(self, key, value, priority=0):
            self.calls.append("push")
            self._inner.push(key, value, priority)

        def pull(self, key, out=None, priority=0):
            self.calls.append("pull")
            self._inner.pull(key, out, priority)

        def set_optimizer(self, optimizer):
            self.calls.append("set_optimizer")
            self._inner.set_optimizer(optimizer)

    store = Minimal()
    reference = trained([mx.cpu(0)], epochs=1)
    mod = trained([mx.cpu(0), mx.cpu(1)], kvstore=store, epochs=1)
    assert mod._kvstore is store and mod._update_on_kvstore
    assert store.calls[:5] == ["set_optimizer", "init", "pull", "init", "pull"]
    assert store.calls.count("init") == 4  # one per parameter
    assert store.calls.count("push") == store.calls.count("pull") - 4 == 4 * 4  # 4 batches x 4 parameters
    for name, value in reference.get_params()[0].items():
        np.testing.assert_allclose(mod.get_params()[0][name].asnumpy(), value.asnumpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(AggregationError, match="kvstore must be a string"):
        trained([mx.cpu(0), mx.cpu(1)], kvstore=3.5, epochs=1)


def test_split_input_slice():
    assert split_input_slice(10, [1, 1]) == [slice(0, 5), slice(5, 10)]
    assert split_input_slice(10, [1, 1, 1]) == [slice(0, 3), slice(3, 6), slice(6, 10)]
    assert split_input_slice(8, [3, 1]) == [slice(0, 6), slice(6, 8)]
    with pytest.raises(ModuleError, match="cannot split a batch of 2 samples over 3 devices"):
        split_input_slice(2, [1, 1, 1])
    with pytest.raises(ModuleError, match="positive"):
        split_input_slice(4, [1, 0])


def test_reshape_rebinds_for_new_shapes_and_keeps_the_parameters():
    mod = Module(mlp())
    mod.bind(data_shapes=[("data", (4, 8))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    mod.reshape(data_shapes=[("data", (2, 8))], label_shapes=[("softmax_label", (2,))])
    assert mod.data_shapes[0].shape == (2, 8) and mod.label_shapes[0].shape == (2,)
    mod.forward(DataBatch([mx.nd.ones((2, 8))], [mx.nd.zeros((2,))]), is_train=False)
    assert mod.get_outputs()[0].shape == (2, 4)
    after = mod.get_params()[0]
    assert all(np.array_equal(before[k], after[k].asnumpy()) for k in before)
    with pytest.raises(mx.MXNetError):
        mod.reshape(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])  # weight is (16, 8)
    assert mod.data_shapes[0].shape == (2, 8)  # a refused reshape changes nothing

"""mx.metric against MXNet 1.9.1, and the training callbacks of mx.callback.

Each metric is updated with the same batches MXNet 1.9.1 was given; the expected values
were read off ``pip install mxnet==1.9.1`` and are written here (the tests never import
MXNet). The callbacks are checked through the log lines they write.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

import framework as mx
from framework import callback
from framework import metric as M

nd = mx.nd

P1 = np.array([[0.3, 0.7], [0.9, 0.1], [0.4, 0.6], [0.2, 0.8], [0.55, 0.45]], dtype=np.float32)
L1 = np.array([0, 0, 1, 1, 1], dtype=np.float32)
P2 = np.array([[0.6, 0.4], [0.1, 0.9], [0.8, 0.2]], dtype=np.float32)
L2 = np.array([1, 1, 0], dtype=np.float32)
P3 = np.array(
    [[0.1, 0.2, 0.3, 0.4], [0.5, 0.1, 0.3, 0.1], [0.25, 0.25, 0.4, 0.1], [0.05, 0.6, 0.15, 0.2]], dtype=np.float32
)
L3 = np.array([2, 0, 3, 1], dtype=np.float32)
P3B = np.array([[0.7, 0.1, 0.1, 0.1], [0.2, 0.2, 0.5, 0.1]], dtype=np.float32)
L3B = np.array([1, 3], dtype=np.float32)
R_L = np.array([1.0, 2.0, 3.5, -1.0], dtype=np.float32)
R_P = np.array([1.5, 1.0, 3.0, 0.0], dtype=np.float32)
R_L2 = np.array([[0.5, 1.0], [2.0, -2.0]], dtype=np.float32)
R_P2 = np.array([[0.0, 1.5], [2.5, -1.0]], dtype=np.float32)

BINARY = [(L1, P1), (L2, P2)]
BINARY3 = [*BINARY, (np.array([1, 1, 0], np.float32), np.array([[0.2, 0.8], [0.9, 0.1], [0.3, 0.7]], np.float32))]
MULTI = [(L3, P3), (L3B, P3B)]
REGRESSION = [(R_L, R_P), (R_L2, R_P2)]

# (metric factory, batches, expected (name, value)): MXNet 1.9.1.
MXNET_VALUES = {
    "acc": (lambda: M.create("acc"), BINARY, ("accuracy", 0.625)),
    "acc_multi": (M.Accuracy, MULTI, ("accuracy", 0.3333333333333333)),
    "acc_axis0": (lambda: M.Accuracy(axis=0), [(np.array([1, 0], np.float32), P1[:2].T.copy())], ("accuracy", 1.0)),
    "acc_index_preds": (M.Accuracy, [(L1, np.array([0, 1, 1, 1, 0], np.float32))], ("accuracy", 0.6)),
    "topk2": (lambda: M.TopKAccuracy(top_k=2), MULTI, ("top_k_accuracy_2", 0.5)),
    "topk3": (lambda: M.create("top_k_acc", top_k=3), MULTI, ("top_k_accuracy_3", 0.5)),
    "ce": (M.CrossEntropy, MULTI, ("cross-entropy", 1.552616834640503)),
    "ce_eps": (lambda: M.create("ce", eps=0.1), MULTI, ("cross-entropy", 1.1020175218582153)),
    "nll": (lambda: M.create("nll_loss"), MULTI, ("nll-loss", 1.552616834640503)),
    "mse": (M.MSE, REGRESSION, ("mse", 0.53125)),
    "mae": (lambda: M.create("mae"), REGRESSION, ("mae", 0.6875)),
    "rmse": (M.RMSE, REGRESSION, ("rmse", 0.7260036170482635)),
    "f1_macro": (M.F1, BINARY3, ("f1", 0.611111111111111)),
    "f1_micro": (lambda: M.F1(average="micro"), BINARY3, ("f1", 0.6153846153846153)),
    "perplexity_none": (lambda: M.Perplexity(ignore_label=None), MULTI, ("perplexity", 4.723815466710948)),
    "perplexity_ignore": (lambda: M.Perplexity(ignore_label=3), MULTI, ("perplexity", 3.246679200414018)),
}


@pytest.mark.parametrize("case", list(MXNET_VALUES))
def test_values_match_mxnet(case):
    make, batches, (name, value) = MXNET_VALUES[case]
    metric = make()
    for label, pred in batches:
        metric.update([nd.array(label)], [nd.array(pred)])
    got_name, got_value = metric.get()
    assert got_name == name
    assert got_value == pytest.approx(value, rel=1e-6)
    assert metric.get_name_value() == [(got_name, got_value)]
    metric.reset_local()
    assert math.isnan(metric.get()[1])
    assert metric.get_global()[1] == pytest.approx(value, rel=1e-6)  # global sums survive reset_local
    metric.reset()
    assert math.isnan(metric.get_global()[1])


def test_local_and_global_sums():
    acc = M.Accuracy()
    acc.update([nd.array(L1)], [nd.array(P1)])  # 3 of 5
    acc.reset_local()
    acc.update([nd.array(L2)], [nd.array(P2)])  # 2 of 3
    assert acc.get() == ("accuracy", pytest.approx(2 / 3))
    assert acc.get_global() == ("accuracy", pytest.approx(5 / 8))
    assert (acc.num_inst, acc.sum_metric, acc.global_num_inst) == (3, 2, 8)
    assert acc.get_global_name_value() == [("accuracy", pytest.approx(5 / 8))]


def test_single_arrays_numpy_inputs_and_several_outputs():
    acc = M.Accuracy()
    acc.update(nd.array(L1), nd.array(P1))  # bare arrays are wrapped, as in MXNet
    acc.update([L2], [P2])  # NumPy arrays are accepted too (MXLab)
    acc.update([nd.array(L1), nd.array(L2)], [nd.array(P1), nd.array(P2)])
    assert acc.get()[1] == pytest.approx(0.625)


def test_loss_composite_and_custom_metrics_match_mxnet():
    loss = M.Loss()
    loss.update(None, [nd.array(R_P), nd.array(R_P2)])
    assert loss.get() == ("loss", pytest.approx(1.0625))

    composite = M.create(["acc", "ce", M.F1()])
    assert isinstance(composite, M.CompositeEvalMetric)
    for label, pred in BINARY:
        composite.update([nd.array(label)], [nd.array(pred)])
    names, values = composite.get()
    assert names == ["accuracy", "cross-entropy", "f1"]
    assert values == pytest.approx([0.625, 0.5108256340026855, 0.6666666666666666])
    assert composite.get_name_value()[1] == ("cross-entropy", pytest.approx(0.5108256340026855))
    assert isinstance(composite.get_metric(2), M.F1)
    with pytest.raises(M.MetricError, match="Metric index 3 is out of range 0 and 3"):
        composite.get_metric(3)
    composite.reset()
    assert all(math.isnan(v) for v in composite.get()[1])

    def mae(label, pred):
        return np.abs(label - pred).mean()

    custom = M.create(mae)
    for label, pred in REGRESSION:
        custom.update([nd.array(label)], [nd.array(pred)])
    assert custom.get() == ("mae", pytest.approx(0.6875))
    tuple_metric = M.np(lambda label, pred: (float(np.abs(label - pred).sum()), label.size))
    tuple_metric.update([nd.array(R_L)], [nd.array(R_P)])
    assert tuple_metric.get() == ("custom(<lambda>)", pytest.approx(0.75))
    extra = M.CustomMetric(mae, name="first", allow_extra_outputs=True)
    extra.update([nd.array(R_L)], [nd.array(R_P), nd.array(R_P2)])  # the state output is ignored
    assert extra.get() == ("first", pytest.approx(0.75))


def test_configs_names_and_registry():
    assert M.Accuracy(axis=0).get_config() == {
        "axis": 0, "metric": "Accuracy", "name": "accuracy", "output_names": None, "label_names": None,
    }  # fmt: skip
    config = M.TopKAccuracy(top_k=3).get_config()
    assert config == {
        "top_k": 3, "metric": "TopKAccuracy", "name": "top_k_accuracy_3", "output_names": None, "label_names": None,
    }  # fmt: skip
    assert isinstance(M.create(M.Accuracy(axis=0).get_config()), M.Accuracy)
    assert str(M.Accuracy()) == "EvalMetric: {'accuracy': nan}"
    for name, klass in [("composite", M.CompositeEvalMetric), ("top_k_accuracy", M.TopKAccuracy),
                        ("perplexity", M.Perplexity), ("loss", M.Loss), ("f1", M.F1)]:  # fmt: skip
        assert M._REGISTRY[name] is klass
    with pytest.raises(NotImplementedError, match="CustomMetric cannot be serialized"):
        M.create(lambda label, pred: 0.0).get_config()


def test_update_dict_picks_names():
    acc = M.Accuracy(output_names=["softmax_output"], label_names=["softmax_label"])
    acc.update_dict({"softmax_label": nd.array(L1), "other": nd.array(L2)},
                    {"softmax_output": nd.array(P1), "aux": nd.array(P2)})  # fmt: skip
    assert acc.get()[1] == pytest.approx(0.6)
    composite = M.CompositeEvalMetric([M.Accuracy(), M.MSE()], label_names=["y"], output_names=["p"])
    composite.update_dict({"y": nd.array(L1), "z": nd.array(L2)}, {"p": nd.array(P1), "q": nd.array(P2)})
    assert composite.get()[1][0] == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: M.create("accuracyy"), "metric 'accuracyy' is not registered; registered metrics: "),
        (lambda: M.create(3.5), "expected a name, list, callable or EvalMetric, got float"),
        (lambda: M.create(M.Accuracy(), axis=0), "accuracy is already an instance"),
        (lambda: M.TopKAccuracy(top_k=1), "TopKAccuracy: top_k must be an int > 1 \\(use Accuracy for top 1\\)"),
        (lambda: M.F1(average="weighted"), "F1: average must be 'macro' or 'micro', got 'weighted'"),
        (lambda: M.Accuracy().update([nd.array(L1)], [nd.array(P1), nd.array(P2)]),
         "Shape of labels 1 does not match shape of predictions 2"),
        (lambda: M.Accuracy().update([nd.array(L2)], [nd.array(P1)]),
         "Shape of labels 3 does not match shape of predictions 5"),
        (lambda: M.Accuracy(axis=2).update([nd.array(L1)], [nd.array(P1)]), "Accuracy: axis 2 is out of range"),
        (lambda: M.Accuracy().update([[0, 1]], [nd.array(P2)]), "Accuracy: label must be an NDArray"),
        (lambda: M.F1().update([nd.array(L3)], [nd.array(P3)]), "F1 currently only supports binary classification"),
        (lambda: M.CrossEntropy().update([nd.array([0, 5])], [nd.array(P3B)]),
         "CrossEntropy: labels must be class indices in \\[0, 4\\)"),
        (lambda: M.NegativeLogLikelihood().update([nd.array(L3)], [nd.array(P3B)]),
         "expected predictions \\(N, classes\\) and N labels, got predictions \\(2, 4\\) and 4 labels"),
        (lambda: M.Perplexity(None).update([nd.array(L3)], [nd.array(P3B)]), "Perplexity: shape mismatch"),
        (lambda: M.MSE().update([nd.array(R_L)], [nd.array(R_P2)]), "MSE: labels \\(4, 1\\) and predictions"),
        (lambda: M.TopKAccuracy(top_k=2).update([nd.array([1.0])], [nd.zeros((1, 2, 2))]),
         "predictions should be no more than 2 dims"),
        (lambda: M.CustomMetric("f"), "CustomMetric: feval must be callable"),
    ],
)  # fmt: skip
def test_bad_inputs_raise_clearly(call, message):
    with pytest.raises(M.MetricError, match=message):
        call()


# ------------------------------------------------------------------ callbacks
class _Metric:
    """A metric stub recording reset_local calls."""

    def __init__(self):
        self.resets = 0

    def get_name_value(self):
        return [("accuracy", 0.5), ("ce", 1.25)]

    def reset_local(self):
        self.resets += 1


def _param(nbatch, eval_metric=None, epoch=0):
    return callback.BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=None)


class _Clock:
    """Stands in for the ``time`` module inside framework.callback only (logging keeps the real one)."""

    def __init__(self, *ticks):
        self._ticks = iter(ticks)

    def time(self):
        return next(self._ticks)


def test_speedometer_logs_speed_and_metrics(caplog, monkeypatch):
    monkeypatch.setattr(callback, "time", _Clock(100.0, 102.0, 103.0, 104.0, 105.0))
    metric = _Metric()
    speedometer = callback.Speedometer(batch_size=8, frequent=2)
    with caplog.at_level(logging.INFO):
        for nbatch in range(5):  # first call starts the clock at t=100; reports at batches 2 and 4
            speedometer(_param(nbatch, metric))
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "Epoch[0] Batch [0-2]\tSpeed: 8.00 samples/sec\taccuracy=0.500000\tce=1.250000",
        "Epoch[0] Batch [2-4]\tSpeed: 16.00 samples/sec\taccuracy=0.500000\tce=1.250000",
    ]
    assert metric.resets == 2 and speedometer.last_speed == 16.0


def test_speedometer_without_reset_and_without_metric(caplog, monkeypatch):
    monkeypatch.setattr(callback, "time", _Clock(0.0, 4.0, 10.0, 12.0, 14.0, 15.0))
    metric = _Metric()
    cumulative = callback.Speedometer(batch_size=4, frequent=1, auto_reset=False)
    with caplog.at_level(logging.INFO):
        cumulative(_param(0, metric))
        cumulative(_param(1, metric))
        cumulative(_param(0, None, epoch=1))  # a new epoch restarts the clock
        cumulative(_param(1, None, epoch=1))
    assert [r.getMessage() for r in caplog.records] == [
        "Epoch[0] Batch [0-1]\tSpeed: 1.00 samples/sec\taccuracy=0.500000\tce=1.250000",
        "Iter[1] Batch [1]\tSpeed: 2.00 samples/sec",
    ]
    assert metric.resets == 0


def test_log_train_metric_progress_bar_and_validation_log(caplog):
    metric = _Metric()
    log = callback.log_train_metric(period=2, auto_reset=True)
    bar = callback.ProgressBar(total=4, length=8)
    with caplog.at_level(logging.INFO):
        for nbatch in (1, 2):
            log(_param(nbatch, metric, epoch=3))
        bar(_param(2))
        callback.LogValidationMetricsCallback()(_param(4, metric, epoch=3))
    assert [r.getMessage() for r in caplog.records] == [
        "Iter[3] Batch[2] Train-accuracy=0.500000",
        "Iter[3] Batch[2] Train-ce=1.250000",
        "[====----] 50%\r",
        "Epoch[3] Validation-accuracy=0.500000",
        "Epoch[3] Validation-ce=1.250000",
    ]
    assert metric.resets == 1
    assert bar.render(3) == "[======--] 75%"


def test_callbacks_work_with_real_metrics(caplog):
    acc = M.Accuracy()
    acc.update([nd.array(L1)], [nd.array(P1)])
    with caplog.at_level(logging.INFO):
        callback.log_train_metric(1)(_param(1, acc))
    assert caplog.records[-1].getMessage() == "Iter[0] Batch[1] Train-accuracy=0.600000"


def test_do_checkpoint_calls_the_registered_saver_every_period():
    saved = []
    check = callback.do_checkpoint("model", period=2)
    registered = callback._save_checkpoint  # the Module layer's saver, restored at the end
    callback.set_save_checkpoint(lambda *args: saved.append(args))
    try:
        for epoch in range(4):
            check(epoch, "sym", {"w": 1}, {"a": 2})
        assert saved == [("model", 2, "sym", {"w": 1}, {"a": 2}), ("model", 4, "sym", {"w": 1}, {"a": 2})]
        direct = []
        callback.do_checkpoint("m", save_fn=lambda *args: direct.append(args[:2]))(0, None, {}, {})
        assert direct == [("m", 1)]
        callback.set_save_checkpoint(None)
        with pytest.raises(callback.CallbackError, match="no save_checkpoint function is registered"):
            callback.do_checkpoint("model")(0, None, {}, {})
    finally:
        callback.set_save_checkpoint(registered)


def test_module_checkpoint_uses_the_module():
    class Module:
        def __init__(self):
            self.calls = []

        def save_checkpoint(self, prefix, epoch, save_optimizer_states):
            self.calls.append((prefix, epoch, save_optimizer_states))

    mod = Module()
    check = callback.module_checkpoint(mod, "net", period=3, save_optimizer_states=True)
    for epoch in range(6):
        check(epoch)
    assert mod.calls == [("net", 3, True), ("net", 6, True)]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: callback.Speedometer(0), "Speedometer: batch_size must be a positive int, got 0"),
        (lambda: callback.Speedometer(8, frequent=2.5), "Speedometer: frequent must be a positive int, got 2.5"),
        (lambda: callback.ProgressBar(total=0), "ProgressBar: total must be a positive int"),
        (lambda: callback.log_train_metric(0), "log_train_metric: period must be a positive int"),
        (lambda: callback.do_checkpoint(""), "do_checkpoint: prefix must be a non-empty string"),
        (lambda: callback.set_save_checkpoint("save"), "set_save_checkpoint expects a callable or None"),
    ],
)
def test_bad_callback_parameters_raise_clearly(call, message):
    with pytest.raises(callback.CallbackError, match=message):
        call()


def test_float32_batch_values_are_summed_in_float64_as_in_mxnet():
    metric = mx.metric.CrossEntropy()
    rng = np.random.default_rng(0)
    for _ in range(300):
        probs = rng.dirichlet(np.ones(5), size=64).astype(np.float32)
        metric.update([mx.nd.array(rng.integers(0, 5, 64))], [mx.nd.array(probs)])
    assert isinstance(metric.sum_metric, float) and not isinstance(metric.sum_metric, np.float32)
    accuracy = mx.metric.Accuracy()
    accuracy.update([mx.nd.array([0, 1])], [mx.nd.array([[0.9, 0.1], [0.8, 0.2]])])
    assert accuracy.sum_metric == 1 and accuracy.get() == ("accuracy", 0.5)

"""Every mx.metric against MXNet 1.9.1's numbers on the same batches, and the edge cases.

tests/data/mxnet_1_9_1/metrics/reference.json holds what MXNet 1.9.1 returned for the
batches in inputs.npz (make_metric_reference.py, run with MXNet, wrote both). The tests
never import MXNet. The API itself (names, signatures) is checked against MXNet's list in
tests/test_api_names.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework import metric as M

HERE = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "metrics"
REFERENCE = json.loads((HERE / "reference.json").read_text())
INPUTS = np.load(HERE / "inputs.npz")
CASES = {case["id"]: case for case in REFERENCE["cases"]}

# Results where MXLab differs from MXNet on purpose (docs/differences.md): PearsonCorrelation
# "micro" keeps local statistics apart from global ones; MXNet's reset_local leaves them
# together and its get_global returns 0.
DELIBERATE = {
    ("pearsonr_micro", "all", "get_global"),
    ("pearsonr_micro", "all", "get_global_name_value"),
    ("pearsonr_micro", "after_reset_local", "get"),
    ("pearsonr_micro", "after_reset_local", "get_name_value"),
    ("pearsonr_micro", "after_reset_local", "get_global"),
    ("pearsonr_micro", "after_reset_local", "get_global_name_value"),
}


def batches(case):
    return [
        (mx.nd.array(INPUTS[f"{case['data']}_{i}_label"]), mx.nd.array(INPUTS[f"{case['data']}_{i}_pred"]))
        for i in range(case["batches"])
    ]


def agreement(label, pred):
    """The reference script's user function of the same name."""
    return float((pred.argmax(axis=1) == label).mean())


def squared_error_sum(label, pred):
    """The reference script's user function of the same name (a (sum, count) pair)."""
    return float(((label - pred) ** 2).sum()), label.size


FUNCTIONS = {"agreement": agreement, "squared_error_sum": squared_error_sum}


def make(case):
    if isinstance(case["metric"], list):
        return M.CompositeEvalMetric([M.create(name, **options) for name, options in case["metric"]])
    if isinstance(case["metric"], dict):
        ((how, function),) = case["metric"].items()
        return (M.np if how == "np" else M.create)(FUNCTIONS[function], **case["kwargs"])
    return M.create(case["metric"], **case["kwargs"])


def results(metric):
    return {
        "get": metric.get(),
        "get_global": metric.get_global(),
        "get_name_value": metric.get_name_value(),
        "get_global_name_value": metric.get_global_name_value(),
    }


def assert_same(got, expected, where):
    """Names equal, numbers within rtol 1e-5 (NaN as MXNet's "nan")."""
    if isinstance(expected, list):
        got = list(got)
        assert len(got) == len(expected), where
        for g, e in zip(got, expected, strict=True):
            assert_same(g, e, where)
    elif expected == "nan":
        assert math.isnan(got), where
    elif isinstance(expected, str):
        assert got == expected, where
    else:
        assert got == pytest.approx(expected, rel=1e-5, abs=1e-7), where


@pytest.mark.parametrize("case_id", list(CASES))
def test_metric_matches_mxnet(case_id):
    case = CASES[case_id]
    data = batches(case)
    metric = make(case)
    for label, pred in data:
        metric.update([label], [pred])
    runs = {"all": results(metric)}
    metric = make(case)
    for label, pred in data[:-1]:
        metric.update([label], [pred])
    metric.reset_local()
    metric.update([data[-1][0]], [data[-1][1]])
    runs["after_reset_local"] = results(metric)
    for run, values in runs.items():
        for getter, value in values.items():
            if (case_id, run, getter) not in DELIBERATE:
                assert_same(value, case[run][getter], (case_id, run, getter))


@pytest.mark.parametrize("case_id", [c for c in CASES if CASES[c]["config"] is not None])
def test_config_matches_mxnet_and_recreates_the_metric(case_id):
    case = CASES[case_id]
    config = make(case).get_config()
    expected = dict(case["config"])
    if case["metric"] in ("f1", "mcc", "pearsonr", "pearsoncorrelation"):
        # MXLab keeps `average` in the config so that create(config) recreates the metric.
        assert config.pop("average") == case["kwargs"].get("average", "macro")
    if isinstance(case["metric"], list):
        for child in config["metrics"]:
            child.pop("average", None)
    assert config == expected
    if not isinstance(case["metric"], list):
        # As in MXNet, TopKAccuracy's recreated name gains a second "_k" suffix; the rest round-trips.
        again = M.create(make(case).get_config()).get_config()
        original = make(case).get_config()
        assert again.pop("metric") == original.pop("metric") and again.pop("name").startswith(original.pop("name"))
        assert again == original


def test_pearson_micro_is_the_correlation_of_everything_seen():
    case = CASES["pearsonr_micro"]
    data = batches(case)
    labels = np.concatenate([label.asnumpy() for label, _ in data])
    preds = np.concatenate([pred.asnumpy() for _, pred in data])
    metric = M.PearsonCorrelation(average="micro")
    for label, pred in data[:-1]:
        metric.update([label], [pred])
    metric.reset_local()
    metric.update([data[-1][0]], [data[-1][1]])
    last_label, last_pred = (a.asnumpy().astype(np.float64) for a in data[-1])
    assert metric.get()[1] == pytest.approx(np.corrcoef(last_pred, last_label)[0, 1], rel=1e-9)
    assert metric.get_global()[1] == pytest.approx(np.corrcoef(preds, labels)[0, 1], rel=1e-9)
    assert metric.get_global()[1] == pytest.approx(case["all"]["get"][1], rel=1e-5)


def test_every_mxnet_name_and_alias_creates_the_same_class():
    needs = {"perplexity": {"ignore_label": None}, "custommetric": {"feval": lambda label, pred: 0.0}}
    needs.update({name: {"top_k": 2} for name in ("top_k_acc", "top_k_accuracy", "topkaccuracy")})
    assert set(M._REGISTRY) == set(REFERENCE["registry"])
    for name, class_name in REFERENCE["registry"].items():
        for spelling in (name, name.upper()):
            metric = M.create(spelling, **needs.get(name, {}))
            assert type(metric).__name__ == class_name, spelling


def test_pcc_on_two_classes_equals_mcc_micro():
    metric, mcc = M.PCC(), M.MCC(average="micro")
    for label, pred in batches(CASES["pcc_binary"]):
        metric.update([label], [pred])
        mcc.update([label], [pred])
    assert metric.get()[1] == pytest.approx(mcc.get()[1], rel=1e-12)


def test_pcc_grows_for_new_classes_and_is_nan_while_a_marginal_is_constant():
    metric = M.PCC()
    metric.update([mx.nd.array([0, 0, 0])], [mx.nd.array([0, 0, 0])])
    assert math.isnan(metric.get()[1])
    metric.update([mx.nd.array([4, 1])], [mx.nd.array([4, 2])])
    assert metric.k == 5 and metric.lcm.shape == (5, 5)
    assert metric.lcm.sum() == 5 and metric.gcm[4, 4] == 1 and metric.gcm[2, 1] == 1


def test_torch_and_caffe_are_losses_with_their_names():
    for klass, name in ((M.Torch, "torch"), (M.Caffe, "caffe")):
        metric = klass()
        assert isinstance(metric, M.Loss)
        metric.update(None, [mx.nd.array([1.0, 2.0, 6.0])])
        assert metric.get() == (name, pytest.approx(3.0))


def test_np_wraps_a_numpy_function_and_keeps_its_name():
    def agreement(label, pred):
        return float((label == pred.argmax(axis=1)).mean())

    metric = M.np(agreement)
    assert isinstance(metric, M.CustomMetric) and metric.name == "agreement"
    metric.update([mx.nd.array([1, 0])], [mx.nd.array([[0.2, 0.8], [0.1, 0.9]])])
    assert metric.get() == ("agreement", pytest.approx(0.5))
    extra = M.np(agreement, name="agree", allow_extra_outputs=True)
    extra.update([mx.nd.array([1])], [mx.nd.array([[0.0, 1.0]]), mx.nd.array([5.0])])
    assert extra.get() == ("agree", pytest.approx(1.0))


# ---------------------------------------------------------------------- edge cases
@pytest.mark.parametrize("factory", [M.Accuracy, M.F1, M.MCC, M.PCC, M.MAE, M.PearsonCorrelation, M.Loss])
def test_no_update_gives_nan_from_every_getter(factory):
    metric = factory()
    assert math.isnan(metric.get()[1]) and math.isnan(metric.get_global()[1])
    assert len(metric.get_name_value()) == 1 and len(metric.get_global_name_value()) == 1


def test_empty_batches_add_nothing():
    metric = M.Accuracy()
    metric.update([mx.nd.array(np.zeros(0, np.float32))], [mx.nd.array(np.zeros((0, 3), np.float32))])
    assert metric.num_inst == 0 and math.isnan(metric.get()[1])
    pcc = M.PCC()
    pcc.update([np.zeros(0, np.float32)], [np.zeros(0, np.float32)])
    assert pcc.lcm.sum() == 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: M.PearsonCorrelation().update([mx.nd.zeros((4,))], [mx.nd.zeros((5,))]),
         r"Shape of labels \(4,\) does not match shape of predictions \(5,\)"),
        (lambda: M.MCC().update([mx.nd.zeros((4,))], [mx.nd.zeros((3, 2))]),
         "Shape of labels 4 does not match shape of predictions 3"),
        (lambda: M.PCC().update([mx.nd.zeros((4,))], [mx.nd.zeros((3, 2))]), "PCC: 4 labels but 3 predicted classes"),
        (lambda: M.PCC().update([mx.nd.zeros((4,))], [mx.nd.zeros((4, 2, 2))]),
         r"got predictions \(4, 2, 2\) and labels \(4,\)"),
        (lambda: M.PCC().update([mx.nd.array([-1, 0])], [mx.nd.array([0, 0])]), "non-negative"),
        (lambda: M.MCC().update([mx.nd.array([0, 1, 2])], [mx.nd.zeros((3, 3))]),
         "MCC currently only supports binary classification"),
        (lambda: M.MCC(average="weighted"), "MCC: average must be 'macro' or 'micro', got 'weighted'"),
        (lambda: M.PearsonCorrelation(average="x"), "PearsonCorrelation: average must be 'macro' or 'micro'"),
        (lambda: M.Accuracy().update([mx.nd.zeros((2,))], [mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3))]),
         "Shape of labels 1 does not match shape of predictions 2"),
        (lambda: M.create("pearson"), "metric 'pearson' is not registered; registered metrics: .*pearsonr"),
    ],
)  # fmt: skip
def test_mismatched_inputs_raise_metric_error_naming_both(call, message):
    with pytest.raises(M.MetricError, match=message):
        call()

"""Write inputs.npz and reference.json: every mx.metric of MXNet 1.9.1 on fixed random batches.

Run with an interpreter that has ``mxnet==1.9.1`` (and ``numpy<1.24``)::

    /work/mxvenv/bin/python tests/data/mxnet_1_9_1/metrics/make_metric_reference.py

(on the lead's machine the interpreter is ``/work/main/.peers/mxvenv/bin/python``).

It writes, next to this script:

* ``inputs.npz``: float32 batches from a seeded generator: binary and 5-class probabilities
  with their labels, regression targets (1-d and 2-d), sequence predictions for perplexity,
  loss values; each dataset is a list of (label, prediction) batches named
  ``<dataset>_<i>_label`` / ``<dataset>_<i>_pred``;
* ``reference.json``: for every case (a metric created by name with keyword arguments, a
  composite of such, or a user function through ``mx.metric.np``/``create``, fed one
  dataset), what MXNet returns from ``get``, ``get_global``, ``get_name_value`` and
  ``get_global_name_value`` after all batches (``"all"``), and after all batches but the
  last, ``reset_local()``, and the last one (``"after_reset_local"``); ``get_config()`` where
  MXNet can serialise the metric; and MXNet's registry: every name and alias ``create``
  accepts, with the class it makes.

tests/training/test_metric_reference.py compares MXLab's metrics with these numbers; it
never imports this script.
"""

from __future__ import annotations

import json
import math
import os
import warnings

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def softmax(logits: np.ndarray) -> np.ndarray:
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (exp / exp.sum(axis=-1, keepdims=True)).astype(np.float32)


def datasets(rng: np.random.Generator) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    def classes(sizes, k):
        return [
            (rng.integers(0, k, n).astype(np.float32), softmax(rng.standard_normal((n, k)).astype(np.float32) * 2))
            for n in sizes
        ]

    regression = []
    for n in (6, 4, 9):
        label = rng.standard_normal(n).astype(np.float32)
        regression.append((label, (label * 0.7 + rng.standard_normal(n) * 0.5).astype(np.float32)))
    regression_2d = [
        (rng.standard_normal((n, 3)).astype(np.float32), rng.standard_normal((n, 3)).astype(np.float32)) for n in (5, 3)
    ]
    # Perplexity: labels (batch, time) against flattened (batch * time, classes) predictions.
    sequences = [
        (rng.integers(0, 6, (b, t)).astype(np.float32), softmax(rng.standard_normal((b * t, 6)).astype(np.float32)))
        for b, t in ((3, 4), (2, 5))
    ]
    losses = [(np.zeros(n, np.float32), rng.uniform(0, 3, n).astype(np.float32)) for n in (5, 8)]
    index_preds = []
    for n in (7, 5):
        label = rng.integers(0, 4, n).astype(np.float32)
        index_preds.append((label, np.where(rng.random(n) < 0.6, label, rng.integers(0, 4, n)).astype(np.float32)))
    return {
        "binary": classes((8, 5, 7), 2),
        "multi": classes((9, 6, 10), 5),
        "index_preds": index_preds,
        "regression": regression,
        "regression_2d": regression_2d,
        "sequences": sequences,
        "losses": losses,
    }


# (case id, name given to mx.metric.create, keyword arguments, dataset)
CASES = [
    ("accuracy", "acc", {}, "multi"),
    ("accuracy_index_preds", "accuracy", {}, "index_preds"),
    ("top_k_2", "top_k_accuracy", {"top_k": 2}, "multi"),
    ("top_k_3", "top_k_acc", {"top_k": 3}, "multi"),
    ("f1_macro", "f1", {}, "binary"),
    ("f1_micro", "f1", {"average": "micro"}, "binary"),
    ("mcc_macro", "mcc", {}, "binary"),
    ("mcc_micro", "mcc", {"average": "micro"}, "binary"),
    ("pcc_binary", "pcc", {}, "binary"),
    ("pcc_multi", "pcc", {}, "multi"),
    ("pcc_index_preds", "pcc", {}, "index_preds"),
    ("perplexity", "perplexity", {"ignore_label": None}, "sequences"),
    ("perplexity_ignore", "perplexity", {"ignore_label": 0}, "sequences"),
    ("mae", "mae", {}, "regression"),
    ("mse", "mse", {}, "regression"),
    ("rmse", "rmse", {}, "regression"),
    ("mae_2d", "mae", {}, "regression_2d"),
    ("mse_2d", "mse", {}, "regression_2d"),
    ("rmse_2d", "rmse", {}, "regression_2d"),
    ("cross_entropy", "ce", {}, "multi"),
    ("cross_entropy_eps", "crossentropy", {"eps": 0.01}, "multi"),
    ("nll", "nll_loss", {}, "multi"),
    ("pearsonr_macro", "pearsonr", {}, "regression"),
    ("pearsonr_micro", "pearsoncorrelation", {"average": "micro"}, "regression"),
    ("pearsonr_2d", "pearsonr", {}, "regression_2d"),
    ("loss", "loss", {}, "losses"),
    ("torch", "torch", {}, "losses"),
    ("caffe", "caffe", {}, "losses"),
    # A list: a CompositeEvalMetric of (name, keyword arguments) children.
    ("composite", [["acc", {}], ["ce", {}], ["top_k_accuracy", {"top_k": 3}]], {}, "multi"),
    # A dict: a user function (FUNCTIONS) wrapped by mx.metric.np or mx.metric.create.
    ("custom_np", {"np": "agreement"}, {}, "multi"),
    ("custom_create_tuple", {"create": "squared_error_sum"}, {}, "regression"),
    ("custom_create_named", {"create": "agreement"}, {"name": "agree"}, "multi"),
]


def agreement(label, pred):
    """Share of samples whose highest-scored class is the label (one value per batch)."""
    return float((pred.argmax(axis=1) == label).mean())


def squared_error_sum(label, pred):
    """(sum of squared errors, number of values): MXNet adds both to its sums."""
    return float(((label - pred) ** 2).sum()), label.size


FUNCTIONS = {"agreement": agreement, "squared_error_sum": squared_error_sum}


def as_json(value):
    """Metric results as JSON: floats (NaN as the string "nan"), lists and (name, value) pairs."""
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, str):
        return value
    value = float(value)
    return value if math.isfinite(value) else repr(value)


def results(metric) -> dict:
    return {
        "get": as_json(metric.get()),
        "get_global": as_json(metric.get_global()),
        "get_name_value": as_json(metric.get_name_value()),
        "get_global_name_value": as_json(metric.get_global_name_value()),
    }


def run(name, kwargs, batches) -> dict:
    def make():
        if isinstance(name, list):
            return mx.metric.CompositeEvalMetric([mx.metric.create(child, **options) for child, options in name])
        if isinstance(name, dict):
            ((how, function),) = name.items()
            wrap = mx.metric.np if how == "np" else mx.metric.create
            return wrap(FUNCTIONS[function], **kwargs)
        return mx.metric.create(name, **kwargs)

    metric = make()
    for label, pred in batches:
        metric.update([mx.nd.array(label)], [mx.nd.array(pred)])
    entry = {"all": results(metric)}
    metric = make()
    for label, pred in batches[:-1]:
        metric.update([mx.nd.array(label)], [mx.nd.array(pred)])
    metric.reset_local()
    label, pred = batches[-1]
    metric.update([mx.nd.array(label)], [mx.nd.array(pred)])
    entry["after_reset_local"] = results(metric)
    try:
        entry["config"] = make().get_config()
    except NotImplementedError:
        entry["config"] = None
    return entry


def main() -> None:
    rng = np.random.default_rng(20260115)
    data = datasets(rng)
    arrays = {}
    for key, batches in data.items():
        for i, (label, pred) in enumerate(batches):
            arrays[f"{key}_{i}_label"] = label
            arrays[f"{key}_{i}_pred"] = pred
    np.savez(os.path.join(HERE, "inputs.npz"), **arrays)
    cases = []
    for case_id, name, kwargs, dataset in CASES:
        entry = {"id": case_id, "metric": name, "kwargs": kwargs, "data": dataset, "batches": len(data[dataset])}
        entry.update(run(name, kwargs, data[dataset]))
        cases.append(entry)
    registry = mx.registry._REGISTRY[mx.metric.EvalMetric]
    reference = {
        "mxnet_version": mx.__version__,
        "registry": {name: klass.__name__ for name, klass in sorted(registry.items())},
        "cases": cases,
    }
    with open(os.path.join(HERE, "reference.json"), "w", encoding="utf-8") as handle:
        json.dump(reference, handle, indent=1)
        handle.write("\n")
    print(f"{len(cases)} cases, {len(registry)} registered names")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()

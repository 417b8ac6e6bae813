"""Reference numbers for the optimizer update operators, written with real MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_optimizer.py [out.npz]

For each case it builds seeded float32 arrays, runs the operator three times with
``out=weight`` (the way an optimizer calls it: weight and states carry over) and stores the
inputs and every array afterwards in ``ops_optimizer.npz`` next to this script (or in the
path given), keys ``<case>/in_<array>`` and ``<case>/out_<array>``, with the operator
(``<case>/op``), its input order (``<case>/inputs``) and each step's parameters as JSON
(``<case>/params_<step>``), so tests/operator/test_optimizer_updates.py replays every case in
MXLab without MXNet. (``_contrib_group_adagrad_update``
is missing: MXNet 1.9.1 implements it for row-sparse gradients only.)
"""

from __future__ import annotations

import json
import os
import sys

import mxnet as mx
import numpy as np

SHAPE = (3, 4)
STEPS = 3

# case: (operator, inputs after weight as (name, kind), parameters per step (None: t = step + 1))
CASES = {
    "signsgd": ("signsgd_update", [("grad", "normal")], {"lr": 0.1, "wd": 0.01}),
    "signum": (
        "signum_update",
        [("grad", "normal"), ("mom", "zeros")],
        {"lr": 0.05, "momentum": 0.9, "wd": 0.01, "wd_lh": 0.02},
    ),
    "ftml": (
        "ftml_update",
        [("grad", "normal"), ("d", "zeros"), ("v", "zeros"), ("z", "zeros")],
        {"lr": 0.1, "wd": 0.01, "t": None},
    ),
    "ftrl": (
        "ftrl_update",
        [("grad", "normal"), ("z", "zeros"), ("n", "zeros")],
        {"lr": 0.1, "lamda1": 0.01, "wd": 0.01},
    ),
    "lamb1": (
        "lamb_update_phase1",
        [("grad", "normal"), ("mean", "zeros"), ("var", "zeros")],
        {"t": None, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.8},
    ),
    "lamb1_nobias": (
        "lamb_update_phase1",
        [("grad", "normal"), ("mean", "zeros"), ("var", "zeros")],
        {"t": None, "wd": 0.0, "bias_correction": False},
    ),
    "lamb2": (
        "lamb_update_phase2",
        [("g", "normal"), ("r1", "norm"), ("r2", "norm")],
        {"lr": 0.1, "lower_bound": 0.5, "upper_bound": 2.0},
    ),
    "adamw": (
        "_adamw_update",
        [("grad", "normal"), ("mean", "zeros"), ("var", "zeros"), ("rescale_grad", "half")],
        {"lr": 0.01, "eta": 0.5, "wd": 0.1, "clip_gradient": 1.0},
    ),
}


def inputs(case: str) -> dict[str, np.ndarray]:
    """The case's starting arrays (a function of the case name only, so MXLab rebuilds them)."""
    rng = np.random.default_rng(sum(map(ord, case)))
    arrays = {
        "weight": rng.normal(size=SHAPE).astype(np.float32),
    }
    for name, kind in CASES[case][1]:
        if kind == "zeros":
            arrays[name] = np.zeros(SHAPE, np.float32)
        elif kind == "normal":
            arrays[name] = rng.normal(size=SHAPE).astype(np.float32)
        elif kind == "norm":
            arrays[name] = np.array([rng.uniform(0.2, 3.0)], np.float32)
        elif kind == "half":
            arrays[name] = np.array([0.5], np.float32)
    return arrays


def params(case: str, step: int) -> dict:
    return {k: (step + 1 if v is None else v) for k, v in CASES[case][2].items()}


def multi_inputs() -> dict[str, np.ndarray]:
    """Two weights of different shapes, their gradients, momenta and float32 master copies."""
    rng = np.random.default_rng(7)
    arrays = {}
    for i, shape in enumerate([(2, 3), (4,)]):
        arrays[f"weight_{i}"] = rng.normal(size=shape).astype(np.float16)
        arrays[f"grad_{i}"] = rng.normal(size=shape).astype(np.float16)
        arrays[f"mom_{i}"] = np.zeros(shape, np.float32)
        arrays[f"weight32_{i}"] = arrays[f"weight_{i}"].astype(np.float32)
    arrays["lrs"] = np.array([0.1, 0.05], np.float32)
    arrays["wds"] = np.array([0.01, 0.0], np.float32)
    arrays["weights_sum_sq"] = np.array([4.0, 0.0], np.float32)
    arrays["grads_sum_sq"] = np.array([2.0, 1.0], np.float32)
    return arrays


MULTI_PARAMS = {"momentum": 0.9, "rescale_grad": 0.5, "clip_gradient": 1.0, "num_weights": 2}
LARS_PARAMS = {"eta": 0.01, "eps": 1e-8, "rescale_grad": 0.5}


def multi_cases() -> dict[str, np.ndarray]:
    """``multi_mp_sgd_mom_update`` twice (lrs/wds as parameters), ``preloaded_multi_sgd_update`` on
    float32 copies, and ``multi_lars``."""
    start = multi_inputs()
    nd = {k: mx.nd.array(v, dtype=v.dtype) for k, v in start.items()}
    groups = [nd[f"{kind}_{i}"] for i in range(2) for kind in ("weight", "grad", "mom", "weight32")]
    lrs, wds = tuple(float(v) for v in start["lrs"]), tuple(float(v) for v in start["wds"])
    for _ in range(2):
        mx.nd.multi_mp_sgd_mom_update(*groups, out=[nd["weight_0"], nd["weight_1"]], lrs=lrs, wds=wds, **MULTI_PARAMS)
    data = {f"multi/in_{k}": v for k, v in start.items()}
    data.update({f"multi/out_{k}": v.asnumpy() for k, v in nd.items()})
    w32 = [mx.nd.array(start[f"weight_{i}"], dtype="float32") for i in range(2)]
    g32 = [mx.nd.array(start[f"grad_{i}"], dtype="float32") for i in range(2)]
    params = {k: v for k, v in MULTI_PARAMS.items() if k != "momentum"}
    mx.nd.preloaded_multi_sgd_update(w32[0], g32[0], w32[1], g32[1], nd["lrs"], nd["wds"], out=w32, **params)
    data.update({f"preloaded/out_weight_{i}": w.asnumpy() for i, w in enumerate(w32)})
    lars = mx.nd.multi_lars(nd["lrs"], nd["weights_sum_sq"], nd["grads_sum_sq"], nd["wds"], **LARS_PARAMS)
    data["lars/out"] = lars.asnumpy()
    data.update(adam_lamb_cases(start))
    return data


ADAMW_PARAMS = {"lrs": (0.01, 0.02), "wds": (0.1, 0.0), "etas": (1.0, 0.5), "clip_gradient": 1.0}
LAMB_PARAMS = {"lrs": (0.01, 0.02), "wds": (0.1, 0.0), "step_count": (1, 4), "rescale_grad": 0.5, "upper_bound": 5.0}


def adam_lamb_cases(start: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``multi_adamw_update`` (rescale 0.5) and ``multi_lamb_update``, two steps each, float32."""
    data = {}
    for case in ("multi_adamw", "multi_lamb"):
        weights = [mx.nd.array(start[f"weight_{i}"], dtype="float32") for i in range(2)]
        grads = [mx.nd.array(start[f"grad_{i}"], dtype="float32") for i in range(2)]
        means = [mx.nd.zeros(w.shape, dtype="float32") for w in weights]
        variances = [mx.nd.zeros(w.shape, dtype="float32") for w in weights]
        for _ in range(2):
            fresh = [g.copy() for g in grads]  # MXNet's AdamW rescales its gradients in place
            if case == "multi_adamw":
                mx.nd.contrib.multi_adamw_update(weights, fresh, means, variances, 0.5, out=weights, **ADAMW_PARAMS)
            else:
                mx.nd.contrib.multi_lamb_update(weights, fresh, means, variances, out=weights, **LAMB_PARAMS)
        for i in range(2):
            data[f"{case}/out_weight_{i}"] = weights[i].asnumpy()
            data[f"{case}/out_mean_{i}"] = means[i].asnumpy()
            data[f"{case}/out_var_{i}"] = variances[i].asnumpy()
    return data


def front_end(op_name: str):
    """``mx.nd.<name>``, or its ``mx.nd.contrib`` form (``_adamw_update`` -> ``contrib.adamw_update``)."""
    if hasattr(mx.nd, op_name):
        return getattr(mx.nd, op_name)
    return getattr(mx.nd.contrib, op_name.removeprefix("_contrib_").removeprefix("_"))


def main(path: str) -> None:
    data = {}
    for case, (op_name, _, _) in CASES.items():
        start = inputs(case)
        for name, value in start.items():
            data[f"{case}/in_{name}"] = value
        arrays = {name: mx.nd.array(value, dtype="float32") for name, value in start.items()}
        op = front_end(op_name)
        names = ["weight"] + [n for n, _ in CASES[case][1]]
        data[f"{case}/op"] = np.array(op_name)
        data[f"{case}/inputs"] = np.array(names)
        for step in range(STEPS):
            data[f"{case}/params_{step}"] = np.array(json.dumps(params(case, step)))
            # A fresh copy of the gradient each step: MXNet 1.9.1's AdamW rescales its ``grad``
            # input in place (a side effect MXLab does not copy), and a training loop's backward
            # pass rewrites the gradient before every step anyway.
            fresh = {**arrays, "grad": arrays["grad"].copy()} if "grad" in arrays else arrays
            op(*[fresh[n] for n in names], out=arrays["weight"], **params(case, step))
        for name, value in arrays.items():
            data[f"{case}/out_{name}"] = value.asnumpy()
    data.update(multi_cases())
    np.savez(path, **data)


if __name__ == "__main__":
    main(
        sys.argv[1]
        if len(sys.argv) > 1
        else os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops_optimizer.npz")
    )

"""Reference trajectories of the Python optimizers, written with real MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/optimizers.py [out.npz]

Each case creates ``mx.optimizer.create(name, **params)`` (``GroupAdaGrad`` from
``mx.optimizer.contrib``), makes the state of one float32 weight and applies ``STEPS`` updates
with a new seeded gradient each step. ``optimizers.npz`` (next to this script, or the path
given) stores, per case, the optimizer name and parameters as JSON (``<case>/name``,
``<case>/params``), the starting weight (``<case>/weight``), each step's gradient
(``<case>/grad_<step>``) and the weight after it (``<case>/after_<step>``), so
tests/training/test_optimizer_families.py replays them in MXLab without MXNet. (DCASGD with
momentum is missing: MXNet 1.9.1 tests the momentum NDArray's truth value and fails.)
"""

from __future__ import annotations

import json
import os
import sys

import mxnet as mx
import numpy as np

STEPS = 3
SHAPE = (4, 3)
INDEX_NAME = "fc_weight"  # a name that gets weight decay and LARS scaling

CASES = {
    "signum": ("signum", {"learning_rate": 0.05, "momentum": 0.9, "wd": 0.01, "wd_lh": 0.02, "rescale_grad": 0.5}),
    "signsgd": ("signum", {"learning_rate": 0.05, "momentum": 0.0, "wd": 0.01}),
    "ftml": ("ftml", {"learning_rate": 0.05, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.8}),
    "lamb": ("lamb", {"learning_rate": 0.01, "wd": 0.01, "lower_bound": 0.1, "upper_bound": 3.0}),
    "lamb_plain": ("lamb", {"learning_rate": 0.01, "bias_correction": False, "rescale_grad": 0.5}),
    "lars": ("lars", {"learning_rate": 0.1, "momentum": 0.9, "eta": 0.01, "wd": 0.001, "rescale_grad": 0.5}),
    "lars_nomom": ("lars", {"learning_rate": 0.1, "eta": 0.02, "eps": 1e-6}),
    "ftrl": ("ftrl", {"learning_rate": 0.1, "lamda1": 0.05, "wd": 0.01, "rescale_grad": 0.5}),
    "adamax": ("adamax", {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.8}),
    "nadam": ("nadam", {"learning_rate": 0.01, "wd": 0.01, "rescale_grad": 0.5}),
    "adadelta": ("adadelta", {"rho": 0.8, "wd": 0.01, "clip_gradient": 0.8}),
    "dcasgd_nomom": ("dcasgd", {"learning_rate": 0.1, "lamda": 0.1}),
    "groupadagrad": ("groupadagrad", {"learning_rate": 0.1, "rescale_grad": 0.5, "eps": 1e-4}),
}


def arrays(case: str) -> tuple[np.ndarray, list[np.ndarray]]:
    """The starting weight and the gradient of every step (a function of the case name only)."""
    rng = np.random.default_rng(sum(map(ord, case)))
    weight = rng.normal(size=SHAPE).astype(np.float32)
    return weight, [rng.normal(size=SHAPE).astype(np.float32) for _ in range(STEPS)]


def create(name: str, params: dict):
    if name == "groupadagrad":
        return mx.optimizer.contrib.GroupAdaGrad(param_idx2name={0: INDEX_NAME}, **params)
    return mx.optimizer.create(name, param_idx2name={0: INDEX_NAME}, **params)


def main(path: str) -> None:
    data = {}
    for case, (name, params) in CASES.items():
        start, grads = arrays(case)
        optimizer = create(name, params)
        weight = mx.nd.array(start, dtype="float32")
        state = optimizer.create_state(0, weight)
        data[f"{case}/name"] = np.array(name)
        data[f"{case}/params"] = np.array(json.dumps(params))
        data[f"{case}/weight"] = start
        for step, grad in enumerate(grads):
            optimizer.update(0, weight, mx.nd.array(grad, dtype="float32"), state)
            data[f"{case}/grad_{step}"] = grad
            data[f"{case}/after_{step}"] = weight.asnumpy()
    np.savez(path, **data)


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizers.npz")
    )

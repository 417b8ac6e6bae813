"""The optimizers added for issue 17 (framework/optimizer/sgd.py, adaptive.py, contrib.py).

Three steps of each are compared with MXNet 1.9.1 through the committed trajectories in
tests/data/mxnet_1_9_1/ops/optimizers.npz (the script beside it also runs live when
``MXNET_PYTHON`` names an interpreter with MXNet 1.9.1); what MXNet cannot check (SGLD's noise,
DCASGD with momentum, multi-precision, argument errors) is checked against the documented rules.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework import optimizer as opt
from framework.test_utils import assert_almost_equal

nd = mx.nd
DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "ops"


def _create(name: str, params: dict) -> opt.Optimizer:
    if name == "groupadagrad":
        return opt.contrib.GroupAdaGrad(param_idx2name={0: "fc_weight"}, **params)
    return opt.create(name, param_idx2name={0: "fc_weight"}, **params)


def _replay(path: Path) -> list[str]:
    data = np.load(path)
    cases = sorted({k.split("/")[0] for k in data.files})
    for case in cases:
        optimizer = _create(str(data[f"{case}/name"]), json.loads(str(data[f"{case}/params"])))
        weight = nd.array(data[f"{case}/weight"], dtype="float32")
        state = optimizer.create_state(0, weight)
        step = 0
        while f"{case}/grad_{step}" in data.files:
            optimizer.update(0, weight, nd.array(data[f"{case}/grad_{step}"], dtype="float32"), state)
            expected = data[f"{case}/after_{step}"]
            assert_almost_equal(weight, expected, rtol=1e-4, atol=1e-6, names=(f"MXLab {case} step {step}", "MXNet"))
            step += 1
    return cases


def test_trajectories_match_mxnet_1_9_1():
    cases = _replay(DATA / "optimizers.npz")
    names = {str(np.load(DATA / "optimizers.npz")[f"{c}/name"]) for c in cases}
    assert names == {"signum", "ftml", "lamb", "lars", "ftrl", "adamax", "nadam", "adadelta", "dcasgd", "groupadagrad"}


@pytest.mark.skipif(not os.environ.get("MXNET_PYTHON"), reason="set MXNET_PYTHON to an interpreter with MXNet 1.9.1")
def test_trajectories_match_mxnet_1_9_1_live(tmp_path):
    target = tmp_path / "optimizers.npz"
    subprocess.run([os.environ["MXNET_PYTHON"], str(DATA / "optimizers.py"), str(target)], check=True, timeout=600)
    assert len(_replay(target)) >= 10


def test_every_name_is_registered_and_created_by_name():
    for name in ("signum", "ftml", "lamb", "lars", "ftrl", "adamax", "nadam", "adadelta", "sgld", "dcasgd"):
        assert type(opt.create(name)).__name__.lower() == name
        assert getattr(mx.optimizer, type(opt.create(name)).__name__) is type(opt.create(name))
    assert isinstance(opt.create("groupadagrad"), mx.optimizer.contrib.GroupAdaGrad)


def test_sgld_adds_noise_of_variance_lr():
    mx.random.seed(0)
    optimizer = opt.create("sgld", learning_rate=0.04)
    weight = nd.zeros((200, 200), dtype="float32")
    optimizer.update(0, weight, nd.zeros((200, 200), dtype="float32"), optimizer.create_state(0, weight))
    values = weight.asnumpy()
    assert abs(values.mean()) < 0.01 and abs(values.std() - 0.2) < 0.01  # sqrt(lr) = 0.2
    w = nd.ones((3,), dtype="float32")
    mx.random.seed(1)
    noise = nd.random.normal(0, 0.2, shape=(3,), dtype="float32").asnumpy()
    mx.random.seed(1)
    optimizer.update(1, w, nd.full((3,), 2.0, dtype="float32"), None)
    assert_almost_equal(w, 1 - 0.02 * 2 + noise, rtol=1e-5, atol=1e-6)  # half a gradient step plus the noise


def test_dcasgd_with_momentum_follows_its_rule():
    """MXNet 1.9.1 fails on this path (it asks an NDArray for its truth value); MXLab follows the documented rule."""
    w0, g = np.array([1.0, -2.0], np.float32), np.array([0.5, 1.0], np.float32)
    optimizer = opt.create("dcasgd", learning_rate=0.1, momentum=0.9, lamda=0.1)
    weight = nd.array(w0, dtype="float32")
    state = optimizer.create_state(0, weight)
    optimizer.update(0, weight, nd.array(g, dtype="float32"), state)
    first = -0.1 * g  # previous weight = starting weight: no compensation yet
    assert_almost_equal(weight, w0 + first, rtol=1e-6, atol=1e-7)
    optimizer.update(0, weight, nd.array(g, dtype="float32"), state)
    w1 = w0 + first
    second = 0.9 * first - 0.1 * (g + 0.1 * g * g * (w1 - w0))
    assert_almost_equal(weight, w1 + second, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["lars", "lamb"])
def test_multi_precision_keeps_a_float32_master_copy(name):
    params = {"learning_rate": 0.01, "multi_precision": True}
    if name == "lars":
        params.update(momentum=0.9, eta=0.01)
    w = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    grads = [np.random.default_rng(i + 1).normal(size=(3, 4)).astype(np.float32) for i in range(3)]
    reference, mixed = _create(name, dict(params, multi_precision=False)), _create(name, params)
    w32, w16 = nd.array(w, dtype="float32"), nd.array(w, dtype="float16")
    s32, s16 = reference.create_state(0, w32), mixed.create_state_multi_precision(0, w16)
    for g in grads:
        reference.update(0, w32, nd.array(g, dtype="float32"), s32)
        mixed.update_multi_precision(0, w16, nd.array(g, dtype="float16"), s16)
    assert w16.dtype == np.float16
    assert_almost_equal(w16, w32.asnumpy(), rtol=5e-3, atol=5e-3)


def test_lars_leaves_biases_and_norm_parameters_at_the_plain_rate():
    names = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma"}
    optimizer = opt.create("lars", learning_rate=0.1, eta=0.5, param_idx2name=names)
    weights = [nd.ones((2, 2), dtype="float32") * 3 for _ in range(3)]
    grads = [nd.ones((2, 2), dtype="float32") for _ in range(3)]
    optimizer.update([0, 1, 2], weights, grads, [None, None, None])
    # |w| = 6, |g| = 2: the weight's rate is 0.1 * 0.5 * 6 / 2 = 0.15; bias and gamma keep 0.1 (no wd).
    assert_almost_equal(weights[0], np.full((2, 2), 3 - 0.15), rtol=1e-6, atol=1e-6)
    for w in weights[1:]:
        assert_almost_equal(w, np.full((2, 2), 2.9), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: opt.create("signum", momentum=1.5), "Signum: momentum"),
        (lambda: opt.create("ftml", beta1="high"), "FTML: beta1"),
        (lambda: opt.create("lamb", lower_bound=-1), "LAMB: lower_bound"),
        (lambda: opt.create("lars", eta=-0.1), "LARS: eta"),
        (lambda: opt.create("ftrl", lamda1=-1), "Ftrl: lamda1"),
        (lambda: opt.create("adadelta", rho=2), "AdaDelta: rho"),
        (lambda: opt.create("nadam", schedule_decay=-1), "Nadam: schedule_decay"),
        (lambda: opt.create("dcasgd", lamda=-1), "DCASGD: lamda"),
    ],
)
def test_bad_arguments_name_the_optimizer_and_argument(factory, message):
    with pytest.raises(opt.OptimizerError, match=message):
        factory()


def test_group_adagrad_refuses_weight_decay_and_vectors():
    optimizer = opt.contrib.GroupAdaGrad(wd=0.1, param_idx2name={0: "fc_weight"})
    weight = nd.ones((2, 3), dtype="float32")
    with pytest.raises(opt.OptimizerError, match="weight decay is not supported"):
        optimizer.update(0, weight, nd.ones((2, 3), dtype="float32"), optimizer.create_state(0, weight))
    with pytest.raises(opt.OptimizerError, match="at least 2 dimensions"):
        optimizer.create_state(0, nd.ones((3,), dtype="float32"))


def test_new_optimizers_train_through_the_updater():
    """Each optimizer lowers a quadratic loss through ``get_updater`` (wide margin)."""
    target = np.array([1.0, -2.0, 0.5], np.float32)
    settings = {
        "signum": {"learning_rate": 0.05},
        "ftml": {"learning_rate": 0.1},
        "lamb": {"learning_rate": 0.1},
        "lars": {"learning_rate": 0.5, "eta": 0.1},
        "ftrl": {"learning_rate": 0.5, "lamda1": 0.0},
        "adamax": {"learning_rate": 0.1},
        "nadam": {"learning_rate": 0.1},
        "adadelta": {"rho": 0.9, "epsilon": 1e-3},
        "dcasgd": {"learning_rate": 0.1},
    }
    for name, params in settings.items():
        updater = opt.get_updater(opt.create(name, **params))
        weight = nd.zeros((3,), dtype="float32")
        start = float(np.sum(target**2))
        for _ in range(50):
            updater(0, nd.array(weight.asnumpy() - target, dtype="float32"), weight)
        assert float(np.sum((weight.asnumpy() - target) ** 2)) < 0.5 * start, name

"""The optimizer update operators of framework/operator/optimizer/ (SignSGD, Signum, FTML, Ftrl,
LAMB, AdamW, GroupAdaGrad, the multi-weight SGD forms and LARS).

Three steps of each are compared with MXNet 1.9.1 through the committed reference file
tests/data/mxnet_1_9_1/ops/ops_optimizer.npz (written by the script beside it, which the last
test also runs live when ``MXNET_PYTHON`` names an interpreter with MXNet 1.9.1).
``check_req`` runs a compute function several times on the same inputs, so it gets parameters
that make each result independent of the state the previous run rewrote.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_req

nd = mx.nd
DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "ops"
TOL = {"rtol": 1e-4, "atol": 1e-6}


def _f32(*shape: int, seed: int = 0) -> np.ndarray:
    return seeded_rng(seed).normal(size=shape).astype(np.float32)


def _front_end(op_name: str):
    """``mx.nd.<name>``, or its ``mx.nd.contrib`` form (``_adamw_update`` -> ``contrib.adamw_update``)."""
    if op_name.startswith("_"):
        return getattr(nd.contrib, op_name.removeprefix("_contrib_").removeprefix("_"))
    return getattr(nd, op_name)


# ============================================================================ agreement with MXNet 1.9.1
def _compare_with_reference(path: Path) -> list[str]:
    data = np.load(path)
    cases = sorted({k.split("/")[0] for k in data.files if k.endswith("/op")})
    for case in cases:
        op_name, names = str(data[f"{case}/op"]), [str(n) for n in data[f"{case}/inputs"]]
        arrays = {n: nd.array(data[f"{case}/in_{n}"], dtype="float32") for n in names}
        step = 0
        while f"{case}/params_{step}" in data.files:
            params = json.loads(str(data[f"{case}/params_{step}"]))
            fresh = {**arrays, "grad": arrays["grad"].copy()} if "grad" in arrays else arrays  # as the script
            _front_end(op_name)(*[fresh[n] for n in names], out=arrays["weight"], **params)
            step += 1
        for n in names:
            assert_almost_equal(arrays[n], data[f"{case}/out_{n}"], names=(f"MXLab {case} {n}", "MXNet 1.9.1"), **TOL)
    _compare_multi(data)
    return cases


def _compare_multi(data: np.lib.npyio.NpzFile) -> None:
    start = {k[len("multi/in_") :]: data[k] for k in data.files if k.startswith("multi/in_")}
    arrays = {k: nd.array(v, dtype=v.dtype.name) for k, v in start.items()}
    groups = [arrays[f"{kind}_{i}"] for i in range(2) for kind in ("weight", "grad", "mom", "weight32")]
    lrs, wds = tuple(float(v) for v in start["lrs"]), tuple(float(v) for v in start["wds"])
    params = {"momentum": 0.9, "rescale_grad": 0.5, "clip_gradient": 1.0, "num_weights": 2}
    for _ in range(2):
        nd.multi_mp_sgd_mom_update(*groups, out=[arrays["weight_0"], arrays["weight_1"]], lrs=lrs, wds=wds, **params)
    for k, v in arrays.items():
        tol = {"rtol": 2e-3, "atol": 1e-3} if v.dtype == np.float16 else TOL
        assert v.dtype == data[f"multi/out_{k}"].dtype, k
        assert_almost_equal(v, data[f"multi/out_{k}"], names=(f"MXLab multi {k}", "MXNet 1.9.1"), **tol)
    w32 = [nd.array(start[f"weight_{i}"], dtype="float32") for i in range(2)]
    g32 = [nd.array(start[f"grad_{i}"], dtype="float32") for i in range(2)]
    del params["momentum"]
    nd.preloaded_multi_sgd_update(w32[0], g32[0], w32[1], g32[1], arrays["lrs"], arrays["wds"], out=w32, **params)
    for i, w in enumerate(w32):
        assert_almost_equal(w, data[f"preloaded/out_weight_{i}"], names=("MXLab preloaded", "MXNet 1.9.1"), **TOL)
    lars = nd.multi_lars(
        arrays["lrs"],
        arrays["weights_sum_sq"],
        arrays["grads_sum_sq"],
        arrays["wds"],
        eta=0.01,
        eps=1e-8,
        rescale_grad=0.5,
    )
    assert_almost_equal(lars, data["lars/out"], names=("MXLab multi_lars", "MXNet 1.9.1"), **TOL)
    _compare_adam_lamb(data, start)


def _compare_adam_lamb(data: np.lib.npyio.NpzFile, start: dict) -> None:
    """``_multi_adamw_update`` and ``_multi_lamb_update``: two steps on two float32 weights."""
    for case in ("multi_adamw", "multi_lamb"):
        weights = [nd.array(start[f"weight_{i}"], dtype="float32") for i in range(2)]
        grads = [nd.array(start[f"grad_{i}"], dtype="float32") for i in range(2)]
        states = [nd.zeros(w.shape, dtype="float32") for w in weights for _ in range(2)]  # mean_i, var_i
        flat = [a for i in range(2) for a in (weights[i], grads[i], states[2 * i], states[2 * i + 1])]
        for _ in range(2):
            if case == "multi_adamw":
                nd._internal._multi_adamw_update(
                    *flat, nd.array([0.5], dtype="float32"), out=weights, num_weights=2, lrs=(0.01, 0.02),
                    wds=(0.1, 0.0), etas=(1.0, 0.5), clip_gradient=1.0,
                )  # fmt: skip
            else:
                nd._internal._multi_lamb_update(
                    *flat, out=weights, num_tensors=2, learning_rates=(0.01, 0.02), wds=(0.1, 0.0),
                    step_count=(1, 4), rescale_grad=0.5, upper_bound=5.0,
                )  # fmt: skip
        for i in range(2):
            for name, value in (("weight", weights[i]), ("mean", states[2 * i]), ("var", states[2 * i + 1])):
                expected = data[f"{case}/out_{name}_{i}"]
                assert_almost_equal(value, expected, names=(f"MXLab {case} {name}_{i}", "MXNet 1.9.1"), **TOL)


def test_agrees_with_mxnet_1_9_1_reference_data():
    cases = _compare_with_reference(DATA / "ops_optimizer.npz")
    assert {"signsgd", "signum", "ftml", "ftrl", "lamb1", "lamb2", "adamw"} <= set(cases)


@pytest.mark.skipif(not os.environ.get("MXNET_PYTHON"), reason="set MXNET_PYTHON to an interpreter with MXNet 1.9.1")
def test_agrees_with_mxnet_1_9_1_live(tmp_path):
    target = tmp_path / "ops_optimizer.npz"
    subprocess.run([os.environ["MXNET_PYTHON"], str(DATA / "ops_optimizer.py"), str(target)], check=True, timeout=600)
    assert len(_compare_with_reference(target)) >= 8


# ============================================================================ rules MXNet cannot check
def test_group_adagrad_keeps_one_history_value_per_row():
    """MXNet 1.9.1 runs it for row-sparse gradients only; the dense rule is its documented one."""
    w, g = _f32(3, 4, seed=1), _f32(3, 4, seed=2)
    history = np.full((3, 1), 0.5, np.float32)
    weight, hist = nd.array(w, dtype="float32"), nd.array(history, dtype="float32")
    nd.contrib.group_adagrad_update(weight, nd.array(g, dtype="float32"), hist, out=weight, lr=0.1, rescale_grad=0.5)
    scaled = 0.5 * g
    expected_history = history + np.mean(scaled * scaled, axis=1, keepdims=True)
    assert_almost_equal(hist, expected_history, **TOL)
    assert_almost_equal(weight, w - 0.1 * scaled / np.sqrt(expected_history + 1e-5), **TOL)


@pytest.mark.parametrize("rescale", [0.0, np.nan, np.inf])
def test_adamw_skips_the_step_when_rescale_grad_is_not_a_usable_number(rescale):
    w = _f32(2, 3)
    weight, mean = nd.array(w, dtype="float32"), nd.zeros((2, 3), dtype="float32")
    nd.contrib.adamw_update(
        weight, nd.ones((2, 3), dtype="float32"), mean, nd.zeros((2, 3), dtype="float32"),
        nd.array([rescale], dtype="float32"), out=weight, lr=0.1, eta=1.0,
    )  # fmt: skip
    assert_almost_equal(weight, w, rtol=0, atol=0)
    assert_almost_equal(mean, np.zeros((2, 3)), rtol=0, atol=0)


def test_mp_adamw_updates_the_float32_master_copy():
    w32 = _f32(2, 3)
    weight, master = nd.array(w32, dtype="float16"), nd.array(w32, dtype="float32")
    zeros = [nd.zeros((2, 3), dtype="float32") for _ in range(2)]
    grad = nd.array(_f32(2, 3, seed=3), dtype="float16")
    nd.contrib.mp_adamw_update(weight, grad, *zeros, master, nd.array([1.0]), out=weight, lr=0.1, eta=1.0)
    # First step without bias correction: mean / sqrt(var) = (1 - beta1) / sqrt(1 - beta2) * sign(grad).
    expected = w32 - 0.1 * (0.1 / np.sqrt(0.001)) * np.sign(grad.asnumpy().astype(np.float32))
    assert_almost_equal(master, expected, rtol=1e-4, atol=1e-4)
    assert weight.dtype == np.float16
    assert_almost_equal(weight, expected.astype(np.float16), rtol=1e-3, atol=1e-3)


def test_lamb_phase2_clamps_the_weight_norm_and_ignores_a_zero_norm():
    w, g = _f32(2, 3), _f32(2, 3, seed=4)
    weight, direction = nd.array(w, dtype="float32"), nd.array(g, dtype="float32")

    def step(r1: float, r2: float, **bounds: float) -> np.ndarray:
        r = (nd.array([r1], dtype="float32"), nd.array([r2], dtype="float32"))
        return nd.lamb_update_phase2(weight, direction, *r, lr=0.1, **bounds).asnumpy()

    assert_almost_equal(step(3.0, 2.0), w - 0.1 * 1.5 * g, **TOL)
    assert_almost_equal(step(3.0, 2.0, upper_bound=1.0), w - 0.1 * 0.5 * g, **TOL)
    assert_almost_equal(step(0.1, 2.0, lower_bound=1.0), w - 0.1 * 0.5 * g, **TOL)
    assert_almost_equal(step(0.0, 2.0), w - 0.1 * g, **TOL)
    assert_almost_equal(step(3.0, 0.0), w - 0.1 * g, **TOL)


def test_ftrl_sets_weights_with_small_z_to_exactly_zero():
    weight = nd.array(_f32(2, 3), dtype="float32")
    z, n = nd.zeros((2, 3), dtype="float32"), nd.zeros((2, 3), dtype="float32")
    grad = nd.array([[1e-4, -1e-4, 5.0], [0.0, 2.0, -3.0]], dtype="float32")
    out = nd.ftrl_update(nd.zeros((2, 3), dtype="float32"), grad, z, n, lr=0.1, lamda1=0.01).asnumpy()
    assert (out[np.abs(z.asnumpy()) <= 0.01] == 0).all()
    assert (out[np.abs(z.asnumpy()) > 0.01] != 0).all()
    assert weight.shape == (2, 3)


def test_multi_sgd_gives_each_weight_its_own_learning_rate():
    w = [_f32(2, 2, seed=i) for i in range(3)]
    g = [_f32(2, 2, seed=10 + i) for i in range(3)]
    args = [nd.array(a, dtype="float32") for pair in zip(w, g, strict=True) for a in pair]
    outs = nd.multi_sgd_update(*args, lrs=(0.1, 0.2, 0.3), wds=(0.0, 0.1, 0.0), num_weights=3)
    for i, (lr, wd) in enumerate([(0.1, 0.0), (0.2, 0.1), (0.3, 0.0)]):
        assert_almost_equal(outs[i], (1 - lr * wd) * w[i] - lr * g[i], **TOL)


def test_mxnet_contrib_front_ends_take_numbers_and_lists():
    """``mx.nd.contrib.adamw_update`` & co. are MXNet's Python wrappers over the ``_``-operators."""
    w = _f32(2, 3)

    def state() -> list:
        return [nd.zeros((2, 3), dtype="float32") for _ in range(2)]

    by_number, by_array = nd.array(w, dtype="float32"), nd.array(w, dtype="float32")
    grad = nd.array(_f32(2, 3, seed=5), dtype="float32")
    nd.contrib.adamw_update(by_number, grad, *state(), 0.5, lr=0.1, eta=1.0, out=by_number)
    nd._internal._adamw_update(
        by_array, grad, *state(), nd.array([0.5], dtype="float32"), lr=0.1, eta=1.0, out=by_array
    )
    assert_almost_equal(by_number, by_array.asnumpy(), rtol=0, atol=0)
    weights = [nd.array(w, dtype="float32"), nd.array(w[0], dtype="float32")]
    grads = [nd.array(g, dtype="float32") for g in (_f32(2, 3, seed=6), _f32(3, seed=7))]
    means, variances = (
        [nd.zeros(x.shape, dtype="float32") for x in weights],
        [nd.zeros(x.shape, dtype="float32") for x in weights],
    )
    nd.contrib.multi_lamb_update(
        weights, grads, means, variances, step_count=(1, 1), lrs=(0.1, 0.1), wds=(0.0, 0.0), out=weights
    )
    assert not np.allclose(weights[0].asnumpy(), w)
    with pytest.raises(mx.MXLabError, match="lists of one length"):
        nd.contrib.multi_adamw_update(weights, grads[:1], means, variances, 1.0, lrs=(0.1,), wds=(0.0,), etas=(1.0,))
    with pytest.raises(mx.MXLabError, match="rescale_grad must be a number"):
        nd.contrib.adamw_update(weights[0], grads[0], means[0], variances[0], "half", lr=0.1, eta=1.0)


def test_multi_ops_work_in_symbols_and_json():
    data = [mx.sym.var(f"{kind}{i}") for i in range(2) for kind in ("w", "g", "m", "w32")]
    out = mx.sym.multi_mp_sgd_mom_update(*data, lrs=(0.1, 0.2), wds=(0.0, 0.0), momentum=0.9, num_weights=2)
    assert out.list_arguments() == ["w0", "g0", "w1", "g1"]
    assert out.list_auxiliary_states() == ["m0", "w320", "m1", "w321"]  # mutated inputs, as in MXNet
    loaded = mx.sym.load_json(out.tojson())
    assert loaded.outputs[0].node.attrs.parsed.lrs == "(0.1, 0.2)"
    assert len(loaded.list_outputs()) == 2
    _, out_shapes, _ = loaded.infer_shape(w0=(3, 4), w1=(5,))
    assert out_shapes == [(3, 4), (5,)]


# ============================================================================ req
def test_every_update_honours_req():
    w, g, s = _f32(3, 4), _f32(3, 4, seed=1), np.abs(_f32(3, 4, seed=2))
    zero = np.zeros_like(w)
    one = np.ones((1,), np.float32)
    check_req("signsgd_update", [w, g], lr=0.1, wd=0.01)
    check_req("signum_update", [w, g, s.copy()], lr=0.1, momentum=0.0, wd_lh=0.1)
    check_req("ftml_update", [w, g, s.copy(), s.copy(), s.copy()], lr=0.1, beta1=0.0, beta2=0.0, t=1)
    check_req("ftrl_update", [w, zero, s.copy(), s.copy()], lr=0.1)
    check_req("lamb_update_phase1", [w, g, s.copy(), s.copy()], beta1=0.0, beta2=0.0, t=2, wd=0.1)
    check_req("lamb_update_phase2", [w, g, 2 * one, one], lr=0.1)
    w16 = w.astype(np.float16)
    check_req("mp_lamb_update_phase1", [w16, g.astype(np.float16), s.copy(), s.copy(), w], beta1=0, beta2=0, t=1, wd=0)
    check_req("mp_lamb_update_phase2", [w16, g, one, one, w.copy()], lr=0.0)
    check_req("_adamw_update", [w, g, s.copy(), s.copy(), one], lr=0.1, eta=0.5, beta1=0.0, beta2=0.0)
    check_req("_mp_adamw_update", [w16, g.astype(np.float16), s.copy(), s.copy(), w.copy(), one], lr=0.0, eta=1.0)
    check_req("_contrib_group_adagrad_update", [w, zero, np.ones((3, 1), np.float32)], lr=0.1)
    pairs = [w, g, w.copy(), g.copy()]
    check_req("multi_sgd_update", pairs, lrs=(0.1, 0.2), wds=(0.0, 0.1), num_weights=2)
    check_req("multi_sgd_mom_update", [w, g, s.copy()], lrs=(0.1,), wds=(0.0,), momentum=0.0)
    check_req("multi_mp_sgd_update", [w16, g.astype(np.float16), w.copy()], lrs=(0.0,), wds=(0.0,))
    check_req("multi_mp_sgd_mom_update", [w16, g.astype(np.float16), s.copy(), w.copy()], lrs=(0.0,), wds=(0.0,))
    lr_wd = [np.array([0.1, 0.2], np.float32), np.array([0.0, 0.1], np.float32)]
    check_req("preloaded_multi_sgd_update", [*pairs, *lr_wd], num_weights=2)
    check_req("preloaded_multi_sgd_mom_update", [w, g, s.copy(), *(a[:1] for a in lr_wd)], momentum=0.0)
    frozen = [np.zeros(1, np.float32), np.zeros(1, np.float32)]
    check_req("preloaded_multi_mp_sgd_update", [w16, g.astype(np.float16), w.copy(), *frozen])
    check_req("preloaded_multi_mp_sgd_mom_update", [w16, g.astype(np.float16), s.copy(), w.copy(), *frozen])
    adam = {"lrs": (0.1,), "wds": (0.0,), "etas": (1.0,), "beta1": 0.0, "beta2": 0.0}
    check_req("_multi_adamw_update", [w, g, s.copy(), s.copy(), one], **adam)
    check_req(
        "_multi_mp_adamw_update",
        [w16, g.astype(np.float16), s.copy(), s.copy(), w.copy(), one],
        **adam | {"lrs": (0.0,)},
    )
    lamb = {"learning_rates": (0.1,), "wds": (0.0,), "step_count": (1,), "beta1": 0.0, "beta2": 0.0}
    check_req("_multi_lamb_update", [w, g, s.copy(), s.copy()], **lamb)
    check_req(
        "_multi_mp_lamb_update",
        [w16, g.astype(np.float16), s.copy(), s.copy(), w.copy()],
        **lamb | {"learning_rates": (0.0,)},
    )
    sums = [np.array([0.1, 0.2], np.float32), np.array([4.0, 0.0], np.float32), np.array([1.0, 1.0], np.float32)]
    check_req("multi_lars", [*sums, np.array([0.0, 0.1], np.float32)], eta=0.01, eps=1e-8)


# ============================================================================ inference
def test_shapes_are_inferred_in_both_directions():
    ins, outs, done = infer_shapes("ftml_update", {"lr": 0.1, "t": 1}, [None, (2, 3), None, None, None])
    assert done and ins == [(2, 3)] * 5 and outs == [(2, 3)]
    ins, outs, done = infer_shapes("signum_update", {"lr": 0.1}, [None] * 3, [(4,)])
    assert done and ins == [(4,)] * 3
    ins, _, done = infer_shapes("lamb_update_phase2", {"lr": 0.1}, [(2, 3), None, None, None])
    assert done and ins == [(2, 3), (2, 3), (1,), (1,)]
    ins, _, done = infer_shapes("_adamw_update", {"lr": 0.1, "eta": 1}, [(2, 3), None, None, None, None])
    assert done and ins[4] == (1,)
    ins, _, _ = infer_shapes("_contrib_group_adagrad_update", {"lr": 0.1}, [(5, 2, 2), None, None])
    assert ins[2] == (5, 1)
    params = {"lrs": (0.1, 0.1), "wds": (0, 0), "num_weights": 2}
    ins, outs, done = infer_shapes("multi_sgd_update", params, [None] * 4, [(2,), (3, 3)])
    assert done and ins == [(2,), (2,), (3, 3), (3, 3)]
    ins, _, done = infer_shapes("preloaded_multi_sgd_update", {"num_weights": 2}, [(2,), None, (1,), None, None, None])
    assert done and ins[4:] == [(2,), (2,)]
    ins, outs, done = infer_shapes("multi_lars", {"eta": 1, "eps": 0}, [None, (3,), None, None])
    assert done and outs == [(3,)]


def test_shape_errors_name_the_operator():
    with pytest.raises(InferenceError, match="ftml_update"):
        infer_shapes("ftml_update", {"lr": 0.1, "t": 1}, [(2, 3), (3, 2), None, None, None])
    with pytest.raises(InferenceError, match="multi_lars.*1-D"):
        infer_shapes("multi_lars", {"eta": 1, "eps": 0}, [(2, 2), None, None, None])
    with pytest.raises(InferenceError, match="at least 2 dimensions"):
        infer_shapes("_contrib_group_adagrad_update", {"lr": 0.1}, [(4,), None, None])


def test_types_are_inferred_in_both_directions():
    ins, outs = infer_types("ftrl_update", {"lr": 0.1}, [None, None, None, None], ["float64"])
    assert ins == ["float64"] * 4
    ins, outs = infer_types("mp_lamb_update_phase1", {"t": 1, "wd": 0}, ["float16", None, None, None, None])
    assert ins == ["float16", "float16", "float32", "float32", "float32"] and outs == ["float32"]
    ins, outs = infer_types("mp_lamb_update_phase2", {"lr": 0.1}, [None, None, None, None, None], ["float16"])
    assert ins == ["float16", "float32", "float32", "float32", "float32"]
    params = {"lrs": (0.1,), "wds": (0,), "num_weights": 1}
    ins, outs = infer_types("multi_mp_sgd_mom_update", params, ["float16", None, None, None])
    assert ins == ["float16", "float16", "float32", "float32"] and outs == ["float16"]
    with pytest.raises(InferenceError, match="floating-point"):
        infer_types("signsgd_update", {"lr": 0.1}, ["int32", None])


# ============================================================================ parameters
@pytest.mark.parametrize(
    ("name", "params", "field"),
    [
        ("ftml_update", {"lr": 0.1}, "t"),
        ("ftml_update", {"lr": 0.1, "t": 0}, "t"),
        ("ftml_update", {"lr": 0.1, "t": 1, "beta1": 1.5}, "beta1"),
        ("lamb_update_phase1", {"t": 1}, "wd"),
        ("_adamw_update", {"lr": 0.1}, "eta"),
        ("signum_update", {"lr": "fast"}, "lr"),
        ("multi_sgd_update", {"lrs": (0.1,), "wds": (0.0,), "num_weights": 0}, "num_weights"),
        ("multi_sgd_update", {"lrs": (0.1, 0.2), "wds": (0.0,), "num_weights": 2}, "wds"),
        ("multi_sgd_update", {"lrs": "(0.1, x)", "wds": (0.0,)}, "lrs"),
        ("multi_sgd_update", {"lrs": (True,), "wds": (0.0,)}, "lrs"),
        ("multi_lars", {"eta": 0.1}, "eps"),
        ("_multi_lamb_update", {"learning_rates": (0.1,), "wds": (0.0,), "step_count": (1, 2)}, "step_count"),
        ("_multi_adamw_update", {"lrs": (0.1,), "wds": (0.0,), "etas": (1.0, 1.0)}, "etas"),
    ],
)
def test_bad_parameters_name_the_parameter(name, params, field):
    with pytest.raises(OperatorParamError, match=field):
        mx.operator.get(name).parse_attrs(params)


def test_the_state_arrays_are_declared_mutated():
    """So the engine orders each update against every other reader of the optimizer's state."""

    def mutated(name: str, **params) -> list[int]:
        op = mx.operator.get(name)
        return op.mutate_inputs(op.parse_attrs(params))

    assert mutated("ftml_update", lr=0.1, t=1) == [2, 3, 4]
    assert mutated("mp_lamb_update_phase2", lr=0.1) == [4]
    assert mutated("multi_mp_sgd_mom_update", lrs=(0.1, 0.1), wds=(0, 0), num_weights=2) == [2, 3, 6, 7]
    assert mutated("lamb_update_phase2", lr=0.1) == []
    assert mutated("_multi_mp_lamb_update", learning_rates=(0.1,), wds=(0,), step_count=(1,)) == [2, 3, 4]

"""The optimizer update operators (framework/operator/tensor/optimizer_ops.py).

One step of each operator is compared with MXNet 1.9.1 (numbers read off ``pip install
mxnet==1.9.1`` and written here; the tests never import MXNet), including the state arrays
the operator mutates. ``check_req`` runs the compute function three times on the same
inputs, so it is called with parameters that make the result independent of the state the
previous run wrote (momentum 0, decay rates 0, zero gradient, or lr 0).
"""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_req

nd = mx.nd

W = np.array([[0.097627006, 0.43037874, 0.20552675], [0.089766368, -0.1526904, 0.29178822]], dtype=np.float32)
G = np.array([[-0.24965115, 1.5670921, 1.8546511], [-0.46623394, 1.1669002, 0.11557968]], dtype=np.float32)
S = [
    np.array([[0.56804454, 0.92559665, 0.071036056], [0.087129302, 0.020218397, 0.83261985]], dtype=np.float32),
    np.array([[0.77815676, 0.87001216, 0.97861832], [0.79915857, 0.46147937, 0.7805292]], dtype=np.float32),
    np.array([[0.11827443, 0.63992101, 0.14335328], [0.94466889, 0.52184832, 0.41466194]], dtype=np.float32),
]

# (operator, parameters, weight after the step, states after the step): MXNet 1.9.1.
MXNET_ONE_STEP = [
    (
        "sgd_update",
        {"lr": 0.1, "wd": 0.01},
        [[0.1224945, 0.27323914, 0.019856125], [0.1363, -0.26922771, 0.27993846]],
        [],
    ),
    (
        "sgd_update",
        {"lr": 0.1, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.3},
        [[0.11001194, 0.39994836, 0.17532124], [0.1129883, -0.1825377, 0.28571743]],
        [],
    ),
    (
        "sgd_update",
        {"lr": 0.1, "clip_gradient": 0.0},
        [[0.097627006, 0.43037874, 0.20552675], [0.089766368, -0.1526904, 0.29178822]],
        [],
    ),
    (
        "sgd_mom_update",
        {"lr": 0.1, "momentum": 0.9, "wd": 0.01},
        [[0.63373452, 1.106276, 0.083788566], [0.21471637, -0.25103116, 1.0292963]],
        [[[0.53610754, 0.67589736, -0.12173819], [0.12495, -0.098340772, 0.73750806]]],
    ),
    (
        "sgd_mom_update",
        {"lr": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.3},
        [[0.621252, 1.2329853, 0.23925367], [0.19140467, -0.16434115, 1.0350753]],
        [[[0.52362502, 0.80260658, 0.033726923], [0.1016383, -0.011650754, 0.74328709]]],
    ),
    (
        "nag_mom_update",
        {"lr": 0.1, "momentum": 0.9, "wd": 0.01},
        [[0.6049912, 0.88154674, -0.089708269], [0.24875498, -0.35773438, 0.94369566]],
        [[[0.53560019, 0.67544621, -0.12144296], [0.12479101, -0.098135725, 0.73685616]]],
    ),
    (
        "nag_mom_update",
        {"lr": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.3},
        [[0.58127451, 1.1222943, 0.20567545], [0.20446277, -0.19302338, 0.95467579]],
        [[[0.52314132, 0.80191469, 0.033726774], [0.10152361, -0.01161042, 0.74262416]]],
    ),
    (
        "adam_update",
        {"lr": 0.01, "wd": 0.01},
        [[0.092110865, 0.41977274, 0.20300677], [0.08940959, -0.15467183, 0.28316793]],
        [
            [[0.48637256, 0.99017656, 0.24960314], [0.031882733, 0.1347339, 0.76120758]],
            [[0.77744043, 0.87161142, 0.98108703], [0.798576, 0.462376, 0.77976274]],
        ],
    ),
    (
        "adam_update",
        {
            "lr": 0.01,
            "beta1": 0.8,
            "beta2": 0.99,
            "epsilon": 1e-06,
            "wd": 0.1,
            "rescale_grad": 0.5,
            "clip_gradient": 0.3,
        },
        [[0.092712112, 0.42175806, 0.20434037], [0.089486793, -0.15381627, 0.28401327]],
        [
            [[0.43142307, 0.80047733, 0.11682884], [0.02487538, 0.076174714, 0.68348962]],
            [[0.77050757, 0.862212, 0.96973211], [0.79166943, 0.45776457, 0.77279955]],
        ],
    ),
    (
        "rmsprop_update",
        {"lr": 0.01, "wd": 0.01},
        [[0.10100251, 0.41468659, 0.16761522], [0.10497638, -0.19217479, 0.29045644]],
        [[[0.54273427, 1.002781, 0.23985222], [0.093599729, 0.087112226, 0.79169095]]],
    ),
    (
        "rmsprop_update",
        {"lr": 0.01, "gamma1": 0.8, "wd": 0.1, "rescale_grad": 0.5, "clip_gradient": 0.3, "clip_weights": 0.5},
        [[0.09932892, 0.42693403, 0.19455978], [0.097703278, -0.16891854, 0.29072383]],
        [[[0.45708355, 0.75847733, 0.074828848], [0.079751223, 0.034174718, 0.66760862]]],
    ),
    (
        "rmspropalex_update",
        {"lr": 0.01, "wd": 0.01},
        [[0.20620233, 0.99429399, 0.31473917], [0.94482875, 0.30507982, 0.66404712]],
        [
            [[1.4927342, 1.9527811, 1.1898522], [1.0435998, 1.0371122, 1.741691]],
            [[0.35719073, 0.49182558, 0.55767906], [0.35633349, 0.27747136, 0.37667623]],
            [[0.10857533, 0.56391525, 0.10921241], [0.85506237, 0.4577702, 0.37225887]],
        ],
    ),
    (
        "rmspropalex_update",
        {
            "lr": 0.01,
            "gamma1": 0.8,
            "gamma2": 0.7,
            "wd": 0.1,
            "rescale_grad": 0.5,
            "clip_gradient": 0.3,
            "clip_weights": 0.5,
        },
        [[0.18148105, 0.5, 0.30221176], [0.5, 0.20919423, 0.5]],
        [
            [[1.2570835, 1.5584774, 0.87482888], [0.87975127, 0.83417469, 1.4676087]],
            [[0.28825012, 0.40800488, 0.45144734], [0.27483538, 0.24459176, 0.32960543]],
            [[0.083854042, 0.44540197, 0.096685007], [0.66376764, 0.36188462, 0.28951731]],
        ],
    ),
    (
        "mp_sgd_update",
        {"lr": 0.1, "wd": 0.01},
        [[0.12249756, 0.27319336, 0.01991272], [0.13635254, -0.26928711, 0.27978516]],
        [[[0.12252197, 0.27325124, 0.019911617], [0.13632379, -0.26925647, 0.27989626]]],
    ),
    (
        "mp_sgd_mom_update",
        {"lr": 0.1, "momentum": 0.9, "wd": 0.01},
        [[0.63378906, 1.1064453, 0.083862305], [0.21472168, -0.25097656, 1.0292969]],
        [
            [[0.53610581, 0.67586827, -0.12172235], [0.12495745, -0.098349951, 0.73750597]],
            [[0.63376206, 1.1062882, 0.083844058], [0.21474016, -0.25105992, 1.029254]],
        ],
    ),
    (
        "mp_nag_mom_update",
        {"lr": 0.1, "momentum": 0.9, "wd": 0.01, "clip_gradient": 0.3},
        [[0.60498047, 1.1220703, 0.20568848], [0.21716309, -0.19299316, 0.94384766]],
        [
            [[0.5355984, 0.80191463, 0.033726729], [0.10819919, -0.011610404, 0.73685414]],
            [[0.60501724, 1.1223354, 0.20571503], [0.21718687, -0.1930429, 0.94365168]],
        ],
    ),
]


def _states(name: str, count: int) -> list[np.ndarray]:
    if name == "rmspropalex_update":  # a consistent state: n >= g_avg**2
        return [S[0] + 1.0, S[1] * 0.5, S[2]][:count]
    return S[:count]


@pytest.mark.parametrize(("name", "params", "weight", "states"), MXNET_ONE_STEP, ids=lambda v: None)
def test_one_step_matches_mxnet(name, params, weight, states):
    multi_precision = name.startswith("mp_")
    dtype = "float16" if multi_precision else "float32"
    w = nd.array(W.astype(dtype), dtype=dtype)
    g = nd.array(G.astype(dtype), dtype=dtype)
    count = len(states) - (1 if multi_precision else 0)
    state_arrays = [nd.array(s) for s in _states(name, count)]
    if multi_precision:
        state_arrays.append(nd.array(W.astype("float16").astype("float32")))
    result = getattr(nd, name)(w, g, *state_arrays, out=w, **params)
    assert result is w
    tol = 2e-3 if multi_precision else 1e-5
    assert_almost_equal(w.asnumpy().astype(np.float32), np.array(weight, dtype=np.float32), rtol=tol, atol=1e-6)
    for got, expected in zip(state_arrays, states, strict=True):
        assert_almost_equal(got.asnumpy(), np.array(expected, dtype=np.float32), rtol=1e-5, atol=1e-6)


def test_nag_decay_reads_the_updated_weight_only_when_written_in_place():
    """MXNet's kernel finishes the momentum after writing the output (numbers from MXNet 1.9.1)."""
    w, g, mom = nd.array([2.0]), nd.array([1.0]), nd.array([0.0])
    nd.nag_mom_update(w, g, mom, out=w, lr=0.1, momentum=0.9, wd=0.5)
    assert_almost_equal(w.asnumpy(), np.array([1.62]), rtol=1e-6)
    assert_almost_equal(mom.asnumpy(), np.array([-0.181]), rtol=1e-6)
    w, mom, out = nd.array([2.0]), nd.array([0.0]), nd.zeros((1,))
    nd.nag_mom_update(w, g, mom, out=out, lr=0.1, momentum=0.9, wd=0.5)
    assert_almost_equal(out.asnumpy(), np.array([1.62]), rtol=1e-6)
    assert_almost_equal(mom.asnumpy(), np.array([-0.2]), rtol=1e-6)
    assert w.asnumpy().tolist() == [2.0]


def test_every_update_operator_honours_req():
    rng = np.random.default_rng(3)

    def arrays(count, low=-1.0, high=1.0):
        return [rng.uniform(low, high, (3, 4)).astype(np.float32) for _ in range(count)]

    weight, grad = arrays(2)
    check_req("sgd_update", [weight, grad], lr=0.1, wd=0.01, clip_gradient=0.5)
    check_req("sgd_mom_update", [weight, grad, *arrays(1)], lr=0.1, momentum=0.0, wd=0.01)
    check_req("nag_mom_update", [weight, grad, *arrays(1)], lr=0.1, momentum=0.0, rescale_grad=0.5)
    check_req("adam_update", [weight, grad, *arrays(2, 0, 1)], lr=0.1, beta1=0.0, beta2=0.0, wd=0.1)
    check_req("rmsprop_update", [weight, grad, *arrays(1, 0, 1)], lr=0.1, gamma1=0.0, clip_weights=0.5)
    check_req("rmspropalex_update", [weight, grad, *arrays(3, 0, 1)], lr=0.1, gamma1=0.0, gamma2=0.0, epsilon=1.0)
    check_req("adagrad_update", [weight, np.zeros_like(grad), *arrays(1, 0, 1)], lr=0.1, wd=0.1)
    half = weight.astype(np.float16)
    check_req("mp_sgd_update", [half, grad.astype(np.float16), weight.copy()], lr=0.0)
    check_req("mp_sgd_mom_update", [half, grad.astype(np.float16), *arrays(1), weight.copy()], lr=0.0)
    check_req("mp_nag_mom_update", [half, grad.astype(np.float16), *arrays(1), weight.copy()], lr=0.0)


def test_update_operators_declare_mutated_states_and_no_gradient():
    expected = {
        "sgd_update": [],
        "sgd_mom_update": [2],
        "nag_mom_update": [2],
        "adam_update": [2, 3],
        "rmsprop_update": [2],
        "rmspropalex_update": [2, 3, 4],
        "adagrad_update": [2],
        "mp_sgd_update": [2],
        "mp_sgd_mom_update": [2, 3],
        "mp_nag_mom_update": [2, 3],
    }
    for name, mutated in expected.items():
        op = mx.operator.get(name)
        attrs = op.parse_attrs({"lr": 0.1})
        assert op.mutate_inputs(attrs) == mutated, name
        assert op.gradient is None, name
    assert mx.operator.get("adam_update").list_input_names(None) == ["weight", "grad", "mean", "var"]


def test_one_push_reads_the_gradient_and_writes_weight_and_state():
    w, g, mom = nd.ones((4,)), nd.ones((4,)), nd.zeros((4,))
    nd.waitall()
    with mx.events.record(["engine.push"]) as rec:
        nd.sgd_mom_update(w, g, mom, out=w, lr=0.1, momentum=0.9)
        nd.waitall()
    pushes = [e for e in rec.events if e["name"] == "sgd_mom_update"]
    assert len(pushes) == 1
    assert pushes[0]["reads"] == [g._chunk.var.id]
    assert set(pushes[0]["writes"]) == {w._chunk.var.id, mom._chunk.var.id}


def test_bad_parameters_and_inputs_raise_clearly():
    w, g = nd.ones((2, 3)), nd.ones((2, 3))
    with pytest.raises(OperatorParamError, match="sgd_update: required parameter 'lr' is missing"):
        nd.sgd_update(w, g)
    with pytest.raises(OperatorParamError, match="adam_update: unknown parameter\\(s\\) 'momentum'"):
        nd.adam_update(w, g, nd.zeros((2, 3)), nd.zeros((2, 3)), lr=0.1, momentum=0.9)
    with pytest.raises(OperatorParamError, match="parameter 'beta1' expects a number, got 'high'"):
        nd.adam_update(w, g, nd.zeros((2, 3)), nd.zeros((2, 3)), lr=0.1, beta1="high")
    with pytest.raises(InferenceError, match="sgd_mom_update: shape inconsistent"):
        nd.sgd_mom_update(w, g, nd.zeros((3, 2)), out=w, lr=0.1)
    with pytest.raises(InferenceError, match="sgd_update: input 0 must be a floating-point array, got int32"):
        nd.sgd_update(nd.ones((2,), dtype="int32"), nd.ones((2,), dtype="int32"), lr=0.1)
    with pytest.raises(InferenceError, match="mp_sgd_update: type inconsistent for input 2: expected float32"):
        nd.mp_sgd_update(
            nd.ones((2,), dtype="float16"), nd.ones((2,), dtype="float16"), nd.ones((2,), dtype="float16"), lr=0.1
        )


# MXNet 1.9.1's SGD arithmetic, read off the real kernels (sgd_update / sgd_mom_update run side by side with
# this formula over learning rates, momenta, rescales, decays and clip bounds agreed bit for bit): C-float
# scalars combine first, the step is grad * (lr * rescale) without clipping, lr * clip(grad * rescale) with,
# and the decay term leaves the momentum before the step does.
def _mxnet_sgd(w, g, m, lr, momentum, rescale, wd, clip):
    f = np.float32
    step = g * (f(lr) * f(rescale)) if clip < 0 else f(lr) * np.clip(g * f(rescale), -f(clip), f(clip))
    if m is None:
        return (f(1) - f(lr) * f(wd)) * w - step, None
    m = m * f(momentum) - w * (f(lr) * f(wd)) - step
    return w + m, m


SGD_CASES = [
    (lr, momentum, rescale, wd, clip)
    for lr in (0.1, 0.013)
    for momentum in (0.0, 0.9)
    for rescale in (1 / 128, 1 / 3)
    for wd in (0.0, 0.3)
    for clip in (-1.0, 0.5)
]


@pytest.mark.parametrize(("lr", "momentum", "rescale", "wd", "clip"), SGD_CASES)
def test_sgd_updates_are_bit_identical_to_mxnet_arithmetic(lr, momentum, rescale, wd, clip):
    rng = np.random.default_rng(3)
    w, g = rng.standard_normal((3, 50)).astype(np.float32), 3 * rng.standard_normal((3, 50)).astype(np.float32)
    m0 = 0.1 * rng.standard_normal((3, 50)).astype(np.float32)
    kwargs = {"lr": lr, "wd": wd, "rescale_grad": rescale, "clip_gradient": clip}
    expected_w, expected_m = _mxnet_sgd(w, g, None if momentum == 0.0 else m0, lr, momentum, rescale, wd, clip)
    weight, mom = nd.array(w), nd.array(m0)
    if momentum:
        nd.sgd_mom_update(weight, nd.array(g), mom, out=weight, momentum=momentum, **kwargs)
        np.testing.assert_array_equal(mom.asnumpy(), expected_m)
    else:
        nd.sgd_update(weight, nd.array(g), out=weight, **kwargs)
    np.testing.assert_array_equal(weight.asnumpy(), expected_w)
    # the fused form runs the same rule for each of its weights
    pairs = [nd.array(w[0]), nd.array(w[1:])]
    moms = [nd.array(m0[0]), nd.array(m0[1:])]
    inputs = [pairs[0], nd.array(g[0])] + ([moms[0]] if momentum else []) + [pairs[1], nd.array(g[1:])]
    inputs += [moms[1]] if momentum else []
    fused = nd.multi_sgd_mom_update if momentum else nd.multi_sgd_update
    extra = {"momentum": momentum} if momentum else {}
    fused(
        *inputs, out=pairs, lrs=(lr, lr), wds=(wd, wd), num_weights=2, rescale_grad=rescale, clip_gradient=clip, **extra
    )
    np.testing.assert_array_equal(np.concatenate([pairs[0].asnumpy()[None], pairs[1].asnumpy()]), expected_w)

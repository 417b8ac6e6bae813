"""mx.optimizer and mx.lr_scheduler against MXNet 1.9.1.

Every optimizer runs three updates through ``get_updater`` from the same weight and
gradients; the weight, the state arrays and ``num_update`` are compared with the numbers
MXNet 1.9.1 produced for the same calls (read off ``pip install mxnet==1.9.1`` and written
here; the tests never import MXNet). The schedulers are compared value by value.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import framework as mx
from framework import initializer, lr_scheduler, metric
from framework import optimizer as opt
from framework.engine import ENGINE_TYPES
from framework.test_utils import assert_almost_equal

nd = mx.nd

W0 = np.array([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]], dtype=np.float32)
GRADS = [
    np.array([[0.1, -0.2, 0.3], [1.5, -2.0, 0.05]], dtype=np.float32),
    np.array([[-0.4, 0.6, 0.2], [0.3, 0.9, -1.2]], dtype=np.float32),
    np.array([[0.7, 0.1, -0.5], [-0.6, 0.2, 0.4]], dtype=np.float32),
]

# case -> (optimizer name, keyword arguments, weight dtype)
CONFIGS = {
    "sgd": ("sgd", {"learning_rate": 0.1}, "float32"),
    "sgd_wd_rescale_clip": (
        "sgd",
        {"learning_rate": 0.1, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.4},
        "float32",
    ),
    "sgd_momentum": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, "float32"),
    "sgd_momentum_clip": (
        "sgd",
        {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 2.0, "clip_gradient": 0.5},
        "float32",
    ),
    "nag": ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, "float32"),
    "nag_clip": (
        "nag",
        {"learning_rate": 0.1, "momentum": 0.8, "wd": 0.05, "rescale_grad": 0.5, "clip_gradient": 0.3},
        "float32",
    ),
    "nag_no_momentum": ("nag", {"learning_rate": 0.1, "wd": 0.01}, "float32"),
    "adam": ("adam", {}, "float32"),
    "adam_custom": (
        "adam",
        {
            "learning_rate": 0.01,
            "beta1": 0.8,
            "beta2": 0.99,
            "epsilon": 1e-6,
            "wd": 0.01,
            "rescale_grad": 0.5,
            "clip_gradient": 0.3,
        },
        "float32",
    ),
    "rmsprop": ("rmsprop", {"learning_rate": 0.01}, "float32"),
    "rmsprop_custom": (
        "rmsprop",
        {"learning_rate": 0.01, "gamma1": 0.8, "wd": 0.01, "clip_gradient": 0.5, "clip_weights": 1.0},
        "float32",
    ),
    "rmsprop_centered": ("rmsprop", {"learning_rate": 0.01, "centered": True}, "float32"),
    "rmsprop_centered_custom": (
        "rmsprop",
        {
            "learning_rate": 0.01,
            "gamma1": 0.85,
            "gamma2": 0.7,
            "centered": True,
            "wd": 0.01,
            "rescale_grad": 0.5,
            "clip_weights": 1.9,
        },
        "float32",
    ),
    "adagrad": ("adagrad", {"learning_rate": 0.1}, "float32"),
    "adagrad_custom": (
        "adagrad",
        {"learning_rate": 0.1, "eps": 1e-5, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.3},
        "float32",
    ),
    "sgd_scheduler": ("sgd", {"momentum": 0.9}, "float32"),  # + FactorScheduler(step=1, factor=0.5, base_lr=0.2)
    "adam_begin_num_update": ("adam", {"learning_rate": 0.01, "begin_num_update": 10}, "float32"),
    "sgd_mp": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "multi_precision": True}, "float16"),
    "nag_mp": ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "multi_precision": True}, "float16"),
    "adam_mp": ("adam", {"learning_rate": 0.01, "multi_precision": True}, "float16"),
    "sgd_mp_nomom": ("sgd", {"learning_rate": 0.1, "multi_precision": True}, "float16"),
}

# case -> (weight after 3 updates, state(s) after 3 updates, num_update): MXNet 1.9.1.
MXNET_THREE_STEPS = {
    "sgd": ([0.46000004, -1.05, 2.0, -0.020000003, 0.28999999, -0.22500001], None, 3),
    "sgd_wd_rescale_clip": ([0.47849154, -1.0219929, 1.994046, 0.074795261, 0.18936063, -0.28163591], None, 3),
    "sgd_momentum": (
        [0.47609541, -1.0642107, 1.9196236, -0.30346072, 0.54920918, -0.12396945],
        [-0.043465108, -0.045089781, 0.0023915693, -0.088320777, 0.059988961, 0.064655855],
        3,
    ),
    "sgd_momentum_clip": (
        [0.4880234, -1.0010967, 1.8275195, -0.080820575, 0.199239, -0.28043047],
        [-0.02254712, -0.02995576, -0.031732451, -0.035580669, -0.045131192, -0.012310151],
        3,
    ),
    "nag": (
        [0.43692771, -1.1047584, 1.922089, -0.3817189, 0.60198456, -0.066134535],
        [-0.043417744, -0.044967793, 0.0025226735, -0.087641403, 0.059416369, 0.064342096],
        3,
    ),
    "nag_clip": (
        [0.46209624, -1.0170121, 1.9062408, 0.027294461, 0.18922278, -0.26002768],
        [-0.02312074, -0.010366423, -0.016001403, -0.0014741924, -0.017410446, 0.0056487713],
        3,
    ),
    "nag_no_momentum": ([0.45848155, -1.0469831, 1.994086, -0.019969858, 0.28909078, -0.22421093], None, 3),
    "adam": (
        [0.49922839, -0.99997133, 1.9981095, 0.097852588, 0.20148261, -0.29996154],
        [
            [0.042100012, 0.047800012, -0.0077, 0.088500023, -0.061000012, -0.063950017],
            [0.00065981149, 0.00040955478, 0.00037977521, 0.0026953777, 0.0048411312, 0.0016010344],
        ],
        3,
    ),
    "adam_custom": (
        [0.49234554, -0.99968892, 1.9809103, 0.080627799, 0.20644197, -0.30206734],
        [
            [0.035824001, 0.040345788, -0.0050953403, 0.0027056895, 0.030017775, -0.0057892762],
            [0.0013064805, 0.00096779468, 0.00095547573, 0.0020026753, 0.0018773099, 0.0012837286],
        ],
        3,
    ),
    "rmsprop": (
        [0.47152197, -1.0037527, 1.9765881, 0.074465275, 0.21491143, -0.31049964],
        [[0.064210013, 0.036640011, 0.035890009, 0.22635005, 0.4009001, 0.14580253]],
        3,
    ),
    "rmsprop_custom": (
        [0.48130536, -1.0, 1.0, 0.081257984, 0.1985576, -0.31489378],
        [[0.076403469, 0.047265314, 0.068209127, 0.096474633, 0.080165401, 0.071804427]],
        3,
    ),
    "rmsprop_centered": (
        [0.44185129, -0.97366929, 1.8978724, 0.0092237666, 0.26117006, -0.33793527],
        [
            [0.064210013, 0.036640014, 0.035890009, 0.22635005, 0.4009001, 0.14580254],
            [0.042100012, 0.047800012, -0.0077, 0.088500023, -0.061000012, -0.063950017],
            [-0.026498936, -0.0061565717, -0.018684387, -0.020454351, 0.011515567, -0.0077726487],
        ],
        3,
    ),
    "rmsprop_centered_custom": (
        [0.45954621, -0.98521942, 1.855949, 0.039302796, 0.2389562, -0.32278356],
        [
            [0.024070775, 0.012297509, 0.012967974, 0.077478312, 0.13559464, 0.052265342],
            [0.034280106, 0.031123128, -0.0011105426, 0.055675864, -0.035138413, -0.045013607],
            [-0.018918261, -0.0076686041, -0.0061861016, -0.0070005748, 0.0028663964, -0.0030155508],
        ],
        3,
    ),
    "adagrad": (
        [0.4108507, -1.0104858, 1.9256408, 0.016903227, 0.24988203, -0.3316828],
        [0.65999997, 0.41, 0.38, 2.6999998, 4.8499999, 1.6025001],
        3,
    ),
    "adagrad_custom": (
        [0.41339302, -1.0076381, 1.9199286, 0.021896102, 0.20561618, -0.35389766],
        [0.13250001, 0.1025, 0.094999999, 0.20250002, 0.19000001, 0.13062501],
        3,
    ),
    "sgd_scheduler": (
        [0.48679999, -1.0106, 1.8244001, -0.74000001, 1.1029999, -0.1191],
        [-0.015199998, -0.0266, -0.041600004, -0.24000001, 0.23299997, 0.079899997],
        3,
    ),
    "adam_begin_num_update": (
        [0.49630031, -1.001976, 1.989503, 0.087385014, 0.20813408, -0.29775557],
        [
            [0.042100012, 0.047800012, -0.0077, 0.088500023, -0.061000012, -0.063950017],
            [0.00065981149, 0.00040955478, 0.00037977521, 0.0026953777, 0.0048411312, 0.0016010344],
        ],
        13,
    ),
    "sgd_mp": (
        [0.47607422, -1.0644531, 1.9199219, -0.3034668, 0.54931641, -0.1239624],
        [
            [-0.043491453, -0.045100059, 0.0023920201, -0.088315323, 0.060002752, 0.064684287],
            [0.47606388, -1.0642401, 1.9196197, -0.30348444, 0.54918408, -0.12396784],
        ],
        3,
    ),
    "nag_mp": (
        [0.43676758, -1.1044922, 1.921875, -0.38183594, 0.60205078, -0.066101074],
        [
            [-0.043444037, -0.044978023, 0.0025231354, -0.087635964, 0.059430126, 0.064370438],
            [0.43687254, -1.1047969, 1.9220855, -0.38173777, 0.60197175, -0.066107452],
        ],
        3,
    ),
    "adam_mp": (
        [0.4921875, -0.99951172, 1.9814453, 0.078491211, 0.21472168, -0.29956055],
        [
            [0.49228254, -0.99971485, 1.981095, 0.078501619, 0.21477807, -0.29966289],
            [
                [0.042126358, 0.047810316, -0.0077004433, 0.088494644, -0.061013676, -0.063978359],
                [0.00066000212, 0.00040964744, 0.00037978493, 0.0026955244, 0.0048409365, 0.0016014234],
            ],
        ],
        3,
    ),
    "sgd_mp_nomom": (
        [0.45996094, -1.0498047, 2.0, -0.020019531, 0.29003906, -0.22497559],
        [None, [0.45997316, -1.0500122, 2.0, -0.020019535, 0.28996581, -0.22501831]],
        3,
    ),
}


def _make(case: str) -> opt.Optimizer:
    name, kwargs, _ = CONFIGS[case]
    kwargs = dict(kwargs)
    if case == "sgd_scheduler":
        kwargs["lr_scheduler"] = lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.2)
    return opt.create(name, **kwargs)


def _flat(state):
    if state is None:
        return None
    if isinstance(state, nd.NDArray):
        return state.asnumpy().astype(np.float64).ravel()
    return [_flat(s) for s in state]


def _assert_state(got, expected, tol):
    if expected is None:
        assert got is None
    elif isinstance(expected[0], list) or expected[0] is None:
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            _assert_state(g, e, tol)
    else:
        assert_almost_equal(got, np.array(expected), rtol=tol, atol=1e-6)


def _run(case: str, steps: int = 3, updater=None):
    dtype = CONFIGS[case][2]
    updater = updater or opt.get_updater(_make(case))
    weight = nd.array(W0, dtype=dtype)
    for grad in GRADS[:steps]:
        updater(0, nd.array(grad, dtype=dtype), weight)
    return updater, weight


@pytest.mark.parametrize("case", list(MXNET_THREE_STEPS))
def test_three_updates_match_mxnet(case):
    weight_expected, state_expected, num_update = MXNET_THREE_STEPS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # multi_precision=True must not warn about float16
        updater, weight = _run(case)
    tol = 2e-3 if CONFIGS[case][2] == "float16" else 1e-5
    assert_almost_equal(weight.asnumpy().astype(np.float64).ravel(), np.array(weight_expected), rtol=tol, atol=1e-6)
    _assert_state(_flat(updater.states[0]), state_expected, 1e-4 if tol > 1e-5 else 1e-5)
    assert updater.optimizer.num_update == num_update


def test_float16_without_multi_precision_warns():
    sgd = opt.SGD(learning_rate=0.1, momentum=0.9)
    with pytest.warns(UserWarning, match="Consider using multi_precision=True"):
        sgd.create_state_multi_precision(0, nd.ones((2,), dtype="float16"))


def test_update_is_one_engine_push_per_weight():
    updater = opt.get_updater(opt.Adam())
    weight, grad = nd.array(W0), nd.array(GRADS[0])
    updater(0, grad, weight)  # creates the state
    nd.waitall()
    with mx.events.record(["engine.push"]) as rec:
        updater(0, grad, weight)
        nd.waitall()
    assert [e["name"] for e in rec.events] == ["adam_update"]
    mean, var = updater.states[0]
    assert rec.events[0]["reads"] == [grad._chunk.var.id]
    assert set(rec.events[0]["writes"]) == {weight._chunk.var.id, mean._chunk.var.id, var._chunk.var.id}


@pytest.mark.parametrize("kind", list(ENGINE_TYPES))
def test_updates_queue_behind_gradient_writes_on_every_engine(make_engine, kind):
    """No waiting in Python: the engine orders grad writes, updates and reads."""
    expected = MXNET_THREE_STEPS["sgd_momentum"][0]
    with mx.engine.use(make_engine(kind, 2)):
        updater = opt.get_updater(_make("sgd_momentum"))
        weight, grad = nd.array(W0), nd.zeros((2, 3))
        for g in GRADS:
            grad[:] = nd.array(g)  # a pushed write the update must wait for
            updater(0, grad, weight)
        assert_almost_equal(weight.asnumpy().ravel(), np.array(expected), rtol=1e-5, atol=1e-6)


def test_lists_of_weights_update_like_single_calls():
    single = opt.get_updater(opt.SGD(learning_rate=0.1, momentum=0.9))
    batched = opt.get_updater(opt.SGD(learning_rate=0.1, momentum=0.9))
    a = [nd.array(W0), nd.array(W0 * 2)]
    b = [nd.array(W0), nd.array(W0 * 2)]
    for g in GRADS:
        for i in range(2):
            single(i, nd.array(g), a[i])
        batched([0, 1], [nd.array(g), nd.array(g)], b)
    for x, y in zip(a, b, strict=True):
        assert_almost_equal(x.asnumpy(), y.asnumpy())
    assert single.optimizer.num_update == batched.optimizer.num_update == 3


@pytest.mark.parametrize(
    "params",
    [
        {"momentum": 0.9, "wd": 0.01},
        {"momentum": 0.0, "wd": 0.01},
        {"momentum": 0.5, "rescale_grad": 0.5, "clip_gradient": 0.3},
    ],
)
def test_sgd_fuses_a_list_of_weights_into_one_push_with_the_per_weight_numbers(params):
    per_weight = opt.SGD(learning_rate=0.1, **params)
    per_weight.aggregate_num = 0  # fusion off: one sgd[_mom]_update per weight
    single, fused = opt.get_updater(per_weight), opt.get_updater(opt.SGD(learning_rate=0.1, **params))
    shapes = [(2, 3), (3,), (4, 2)]
    rng = np.random.default_rng(0)
    a = [nd.array(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    b = [x.copy() for x in a]
    name = "multi_sgd_mom_update" if params["momentum"] else "multi_sgd_update"
    for _ in range(3):
        grads = [nd.array(rng.standard_normal(s).astype(np.float32)) for s in shapes]
        single([0, 1, 2], grads, a)
        with mx.events.record(["engine.push"]) as rec:
            fused([0, 1, 2], [g.copy() for g in grads], b)
            nd.waitall()
        assert [e["name"] for e in rec.events if "update" in e["name"]] == [name]
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())  # the same arithmetic, not merely close


def test_sgd_updates_weight_by_weight_what_it_cannot_fuse():
    fused = opt.get_updater(opt.SGD(learning_rate=0.1, momentum=0.9))
    weights = [nd.array(W0), nd.array(W0, dtype="float64")]  # two dtypes: no single fused operation
    with mx.events.record(["engine.push"]) as rec:
        fused([0, 1], [nd.array(GRADS[0]), nd.array(GRADS[0], dtype="float64")], weights)
        nd.waitall()
    assert [e["name"] for e in rec.events if "update" in e["name"]] == ["sgd_mom_update", "sgd_mom_update"]
    same = nd.array(W0)  # one weight under two indices: updated twice, one after the other
    with mx.events.record(["engine.push"]) as rec:
        opt.get_updater(opt.SGD(learning_rate=0.5))([0, 1], [nd.array(GRADS[0])] * 2, [same, same])
        nd.waitall()
    assert [e["name"] for e in rec.events if "update" in e["name"]] == ["sgd_update", "sgd_update"]
    assert_almost_equal(same.asnumpy(), W0 - 2 * 0.5 * np.asarray(GRADS[0], dtype=np.float32), rtol=1e-6)


def test_sgd_does_not_fuse_weights_on_different_contexts_even_of_equal_dtype():
    fused = opt.get_updater(opt.SGD(learning_rate=0.1, momentum=0.9))
    weights = [nd.array(W0, ctx=mx.cpu(0)), nd.array(W0, ctx=mx.cpu(1))]
    grads = [nd.array(GRADS[0], ctx=mx.cpu(0)), nd.array(GRADS[0], ctx=mx.cpu(1))]
    with mx.events.record(["engine.push"]) as rec:
        fused([0, 1], grads, weights)
        nd.waitall()
    assert [e["name"] for e in rec.events if "update" in e["name"]] == ["sgd_mom_update", "sgd_mom_update"]
    assert_almost_equal(weights[0].asnumpy(), weights[1].asnumpy(), rtol=0, atol=0)


def _update_pushes(sgd: opt.SGD, count: int) -> tuple[list[str], list[np.ndarray]]:
    """The update operations one list call of ``count`` weights pushes, and the weights after it."""
    rng = np.random.default_rng(3)
    weights = [nd.array(rng.standard_normal((3, 2)).astype(np.float32)) for _ in range(count)]
    grads = [nd.array(rng.standard_normal((3, 2)).astype(np.float32)) for _ in range(count)]
    with mx.events.record(["engine.push"]) as rec:
        opt.get_updater(sgd)(list(range(count)), grads, weights)
        nd.waitall()
    return [e["name"] for e in rec.events if "update" in e["name"]], [w.asnumpy() for w in weights]


@pytest.mark.parametrize("name", ["MXLAB_OPTIMIZER_AGGREGATION_SIZE", "MXNET_OPTIMIZER_AGGREGATION_SIZE"])
def test_sgd_fuses_as_many_weights_per_operation_as_the_aggregation_size_says(monkeypatch, name):
    monkeypatch.delenv("MXLAB_OPTIMIZER_AGGREGATION_SIZE", raising=False)
    monkeypatch.delenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", raising=False)
    default_names, default_weights = _update_pushes(opt.SGD(learning_rate=0.1, momentum=0.9), 5)
    assert default_names == ["multi_sgd_mom_update"]  # MXLab's default, 64, takes all five at once
    monkeypatch.setenv(name, "2")
    sgd = opt.SGD(learning_rate=0.1, momentum=0.9)
    assert sgd.aggregate_num == 2
    names, weights = _update_pushes(sgd, 5)
    assert names == ["multi_sgd_mom_update"] * 3  # 2 + 2 + 1
    monkeypatch.setenv(name, "0")
    per_weight, per_weight_values = _update_pushes(opt.SGD(learning_rate=0.1, momentum=0.9), 5)
    assert per_weight == ["sgd_mom_update"] * 5
    for a, b, c in zip(default_weights, weights, per_weight_values, strict=True):
        np.testing.assert_array_equal(a, b)  # the grouping changes the operations, never the numbers
        np.testing.assert_array_equal(a, c)


def test_aggregation_size_mxlab_name_wins_and_a_bad_value_is_an_error(monkeypatch):
    monkeypatch.setenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "54")
    monkeypatch.setenv("MXLAB_OPTIMIZER_AGGREGATION_SIZE", "3")
    assert opt.SGD().aggregate_num == 3
    monkeypatch.delenv("MXLAB_OPTIMIZER_AGGREGATION_SIZE")
    assert opt.SGD().aggregate_num == 54  # a script written for MXNet sets MXNet's name
    for bad in ("-1", "four", "2.5"):
        monkeypatch.setenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", bad)
        with pytest.raises(mx.config.ConfigError, match="MXNET_OPTIMIZER_AGGREGATION_SIZE"):
            opt.SGD()


def test_updater_makes_a_state_again_when_its_states_were_emptied():
    updater = opt.get_updater(opt.SGD(learning_rate=0.1, momentum=0.9))
    weight = nd.array(W0)
    updater([0, 1], [nd.array(GRADS[0])] * 2, [weight, nd.array(W0)])
    updater.states.clear()  # states_synced still remembers indices 0 and 1
    updater([0, 1], [nd.array(GRADS[0])] * 2, [weight, nd.array(W0)])
    assert set(updater.states) == {0, 1} and all(updater.states_synced[i] for i in (0, 1))
    assert updater.states[1].shape == np.asarray(W0).shape


def test_sgd_multi_precision_list_with_float16_and_float32_weights_updates_each_its_own_way():
    updater = opt.get_updater(opt.SGD(learning_rate=0.5, momentum=0.0, multi_precision=True))
    half, full = nd.array(W0, dtype="float16"), nd.array(W0)
    grads = [nd.array(GRADS[0], dtype="float16"), nd.array(GRADS[0])]
    updater([0, 1], grads, [half, full])
    expected = W0 - 0.5 * np.asarray(GRADS[0], dtype=np.float32)
    assert_almost_equal(full.asnumpy(), expected, rtol=1e-6)
    assert_almost_equal(half.asnumpy().astype(np.float32), expected, rtol=2e-3, atol=2e-3)
    assert isinstance(updater.states[0], tuple) and updater.states[1] is None  # float32 master copy only for fp16


# ------------------------------------------------------------------ updater states
@pytest.mark.parametrize("case", ["sgd_momentum", "adam", "rmsprop_centered", "adagrad", "sgd_mp", "sgd"])
def test_updater_states_round_trip_through_pickle(case):
    """Two steps, save, restore into a fresh updater, one more step == three steps straight."""
    updater, weight = _run(case, steps=2)
    blob = updater.get_states(dump_optimizer=True)
    assert isinstance(blob, bytes)
    restored = opt.get_updater(opt.SGD())
    restored.set_states(blob)
    assert type(restored.optimizer) is type(updater.optimizer)
    assert restored.optimizer.num_update == 2 and restored.states_synced == {0: False}
    dtype = CONFIGS[case][2]
    restored(0, nd.array(GRADS[2], dtype=dtype), weight)
    straight_updater, straight = _run(case)
    assert_almost_equal(weight.asnumpy(), straight.asnumpy())
    _assert_state(_flat(restored.states[0]), _flat_as_lists(straight_updater.states[0]), 1e-6)


def _flat_as_lists(state):
    flat = _flat(state)
    if flat is None or isinstance(flat, np.ndarray):
        return None if flat is None else flat.tolist()
    return [_flat_as_lists(s) if not isinstance(s, np.ndarray) else s.tolist() for s in state]


def test_states_without_optimizer_keep_the_new_optimizer_and_plain_pickle_loads_them():
    updater, _ = _run("adam", steps=1)
    blob = updater.get_states()
    plain = pickle.loads(blob)
    mean, _ = plain[0]
    assert isinstance(mean, nd.NDArray) and mean.context == mx.cpu(0)
    assert_almost_equal(mean.asnumpy(), updater.states[0][0].asnumpy())
    other = opt.Adam(learning_rate=0.5)
    fresh = opt.get_updater(other)
    fresh.set_states(blob)
    assert fresh.optimizer is other and set(fresh.states) == {0}


def test_restored_states_move_to_the_weight_context():
    updater, _ = _run("sgd_momentum", steps=1)
    fresh = opt.get_updater(opt.SGD(learning_rate=0.1, momentum=0.9))
    fresh.set_states(updater.get_states())
    weight = nd.array(W0, ctx=mx.cpu(1))
    fresh(0, nd.array(GRADS[0], ctx=mx.cpu(1)), weight)
    assert fresh.states[0].context == mx.cpu(1) and fresh.states_synced[0]


def test_set_states_rejects_what_get_states_did_not_make():
    updater = opt.get_updater(opt.SGD())
    with pytest.raises(opt.OptimizerError, match="expects the bytes from get_states\\(\\), got str"):
        updater.set_states("states")
    with pytest.raises(opt.OptimizerError, match="not optimizer states \\(unpickled a list\\)"):
        updater.set_states(pickle.dumps([1, 2]))
    with pytest.raises(opt.OptimizerError, match="Updater expects an Optimizer, got str"):
        opt.get_updater("sgd")


# ------------------------------------------------------------------ rates, decays, registry
def test_lr_and_wd_multipliers_follow_mxnet():
    sgd = opt.SGD(learning_rate=0.1, wd=0.1, param_idx2name={0: "fc_weight", 1: "fc_bias", 2: "bn_gamma", 3: "bn_beta"})
    sgd.set_lr_mult({"fc_weight": 2.0, 3: 0.5})
    assert sgd._get_lrs([0, 1, 2, 3, 4]) == pytest.approx([0.2, 0.1, 0.1, 0.05, 0.1])
    assert sgd._get_wds([0, 1, 2, 3, 4]) == pytest.approx([0.1, 0.0, 0.1, 0.0, 0.1])
    assert sgd.wd_mult == {"fc_bias": 0.0, "bn_beta": 0.0}
    sgd.set_wd_mult({"fc_bias": 3.0})
    assert sgd._get_wds([0, 1, 2, 3]) == pytest.approx([0.1, 0.3, 0.1, 0.0])


def test_symbol_attributes_set_multipliers():
    class FakeSymbol:
        def attr_dict(self):
            return {"fc_weight": {"__lr_mult__": "0.5", "__wd_mult__": "2"}, "data": {}}

        def list_arguments(self):
            return ["data", "fc_weight", "fc_bias"]

    sgd = opt.SGD(learning_rate=0.2, wd=0.1, sym=FakeSymbol(), param_idx2name={0: "fc_weight", 1: "fc_bias"})
    assert sgd._get_lr(0) == pytest.approx(0.1) and sgd._get_wd(0) == pytest.approx(0.2)
    assert sgd._get_lr(1) == pytest.approx(0.2) and sgd._get_wd(1) == 0.0


def test_learning_rate_and_scheduler_interplay_follow_mxnet():
    sgd = opt.SGD()
    assert sgd.learning_rate == 0.01
    sgd.set_learning_rate(0.5)
    assert sgd.learning_rate == 0.5
    factor = lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    with pytest.warns(UserWarning, match="has been overwritten by ``learning_rate`` \\(0.3\\)"):
        opt.SGD(learning_rate=0.3, lr_scheduler=factor)
    assert factor.base_lr == 0.3  # MXNet 1.9.1
    cosine = lr_scheduler.CosineScheduler(max_update=10, base_lr=1.0)
    with pytest.warns(UserWarning):
        scheduled = opt.SGD(learning_rate=0.3, lr_scheduler=cosine)
    scheduled.num_update = 5
    assert scheduled.learning_rate == pytest.approx(0.5)  # MXNet 1.9.1: cosine keeps its own start
    with pytest.raises(opt.OptimizerError, match="LRScheduler of the optimizer has already been defined"):
        scheduled.set_learning_rate(0.1)


def test_create_register_and_unknown_names():
    assert isinstance(opt.create("SGD", momentum=0.5), opt.SGD)
    assert isinstance(opt.Optimizer.create_optimizer("nag"), opt.NAG)
    assert type(opt.create("adam")).__name__ == "Adam" and opt.create("adam").lr == 0.001
    with pytest.raises(
        opt.OptimizerError, match="Cannot find optimizer 'sgdd'; registered optimizers: adadelta, adagrad"
    ):
        opt.create("sgdd")

    @opt.register
    class Doubler(opt.Optimizer):
        """MXNet's ``Test`` optimizer, in user code: plain NDArray arithmetic."""

        def create_state(self, index, weight):
            return nd.zeros(weight.shape, weight.context)

        def update(self, index, weight, grad, state):
            weight[:] += grad * self.rescale_grad
            state[:] = weight

    try:
        updater = opt.get_updater(opt.create("doubler", rescale_grad=2.0))
        weight = nd.ones((2,))
        updater("w", nd.ones((2,)), weight)
        assert weight.asnumpy().tolist() == [3.0, 3.0] and updater.states["w"].asnumpy().tolist() == [3.0, 3.0]
    finally:
        del opt.Optimizer.opt_registry["doubler"]
    with pytest.raises(opt.OptimizerError, match="expects an Optimizer subclass"):
        opt.register(int)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: opt.SGD(learning_rate=-0.1), "SGD: learning_rate must be >= 0.0, got -0.1"),
        (lambda: opt.SGD(learning_rate="fast"), "SGD: learning_rate must be a number, got 'fast'"),
        (lambda: opt.SGD(momentum=-0.9), "SGD: momentum must be >= 0.0, got -0.9"),
        (lambda: opt.SGD(clip_gradient=-1), "SGD: clip_gradient must be >= 0.0, got -1.0"),
        (lambda: opt.SGD(param_idx2name=["w"]), "SGD: param_idx2name should be a dict of param indexes to names"),
        (lambda: opt.SGD(lr_scheduler=0.1), "SGD: lr_scheduler must be callable"),
        (lambda: opt.SGD(begin_num_update=1.5), "SGD: begin_num_update must be an int, got 1.5"),
        (lambda: opt.Adam(beta1=1.0), "Adam: beta1 must be < 1.0, got 1.0"),
        (lambda: opt.Adam(epsilon=-1e-8), "Adam: epsilon must be >= 0.0"),
        (lambda: opt.RMSProp(gamma1=1.5), "RMSProp: gamma1 must be < 1.0, got 1.5"),
        (lambda: opt.RMSProp(clip_weights=-2), "RMSProp: clip_weights must be >= 0.0, got -2.0"),
        (lambda: opt.AdaGrad(eps=float("nan")), "AdaGrad: eps must be a number, got nan"),
        (lambda: opt.create(3), "optimizer name must be a string, got 3"),
        (lambda: opt.SGD().set_learning_rate(-1), "set_learning_rate: lr must be >= 0.0"),
    ],
)
def test_bad_parameters_raise_clearly(make, message):
    with pytest.raises(opt.OptimizerError, match=message.replace("(", "\\(").replace(")", "\\)")):
        make()


def test_bad_update_arguments_raise_clearly():
    sgd = opt.SGD(momentum=0.9)
    weight = nd.ones((2, 3))
    with pytest.raises(opt.OptimizerError, match="SGD.update: grad shape \\(3, 2\\) does not match weight shape"):
        sgd.update(0, weight, nd.ones((3, 2)), sgd.create_state(0, weight))
    with pytest.raises(opt.OptimizerError, match="Adam.update: grad must be an NDArray, got ndarray"):
        opt.Adam().update(0, weight, np.ones((2, 3)), None)
    with pytest.raises(opt.OptimizerError, match="Updater: weight for index 0 must be an NDArray"):
        opt.get_updater(sgd)(0, nd.ones((2,)), [1.0, 2.0])
    with pytest.raises(opt.OptimizerError, match="got 2 indices, 1 gradients and 2 weights"):
        opt.get_updater(sgd)([0, 1], [nd.ones((2,))], [nd.ones((2,)), nd.ones((2,))])


def test_optimizer_pickles_without_param_dict():
    class Param:
        lr_mult = 2.0
        wd_mult = 0.0

    sgd = opt.SGD(learning_rate=0.1, wd=0.1, param_dict={0: Param()})
    assert sgd._get_lr(0) == pytest.approx(0.2) and sgd._get_wd(0) == 0.0
    copy = pickle.loads(pickle.dumps(sgd))
    assert copy.param_dict == {} and copy._get_lr(0) == pytest.approx(0.1)


# ------------------------------------------------------------------ schedulers
# scheduler(n) for n = 0..12: MXNet 1.9.1.
MXNET_SCHEDULES = {
    "factor": [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125],
    "factor_stop": [1.0, 1.0, 1.0, 0.1, 0.1, 0.01, 0.01, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001],
    "factor_warmup": [0.2, 0.4, 0.6, 0.8, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125],
    "multifactor": [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125],
    "multifactor_warmup_const": [0.5, 0.5, 0.5, 1.0, 1.0, 0.1, 0.1, 0.1, 0.1, 0.01, 0.01, 0.01, 0.01],
    "poly": [1.0, 0.829, 0.676, 0.541, 0.424, 0.325, 0.244, 0.181, 0.136, 0.109, 0.1, 0.1, 0.1],
    "poly_warmup": [0.1, 0.55, 1.0, 0.875, 0.75, 0.625, 0.5, 0.375, 0.25, 0.125, 0.0, 0.0, 0.0],
    "cosine": [
        1.0,
        0.9804226065,
        0.9236067977,
        0.8351141009,
        0.7236067977,
        0.6,
        0.4763932023,
        0.3648858991,
        0.2763932023,
        0.2195773935,
        0.2,
        0.2,
        0.2,
    ],
    "cosine_warmup": [
        0.0,
        0.3333333333,
        0.6666666667,
        1.0,
        0.950484434,
        0.8117449009,
        0.611260467,
        0.388739533,
        0.1882550991,
        0.04951556605,
        0.0,
        0.0,
        0.0,
    ],
}


def _scheduler(case: str) -> lr_scheduler.LRScheduler:
    s = lr_scheduler
    return {
        "factor": lambda: s.FactorScheduler(step=3, factor=0.5, base_lr=1.0),
        "factor_stop": lambda: s.FactorScheduler(step=2, factor=0.1, stop_factor_lr=1e-3, base_lr=1.0),
        "factor_warmup": lambda: s.FactorScheduler(
            step=3, factor=0.5, base_lr=1.0, warmup_steps=4, warmup_begin_lr=0.2
        ),
        "multifactor": lambda: s.MultiFactorScheduler(step=[2, 5, 9], factor=0.5, base_lr=1.0),
        "multifactor_warmup_const": lambda: s.MultiFactorScheduler(
            step=[4, 8], factor=0.1, base_lr=1.0, warmup_steps=3, warmup_begin_lr=0.5, warmup_mode="constant"
        ),
        "poly": lambda: s.PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.1),
        "poly_warmup": lambda: s.PolyScheduler(max_update=10, base_lr=1.0, pwr=1, warmup_steps=2, warmup_begin_lr=0.1),
        "cosine": lambda: s.CosineScheduler(max_update=10, base_lr=1.0, final_lr=0.2),
        "cosine_warmup": lambda: s.CosineScheduler(max_update=10, base_lr=1.0, warmup_steps=3),
    }[case]()


@pytest.mark.parametrize("case", list(MXNET_SCHEDULES))
def test_schedules_match_mxnet(case):
    scheduler = _scheduler(case)
    assert [scheduler(n) for n in range(13)] == pytest.approx(MXNET_SCHEDULES[case], rel=1e-9, abs=1e-12)


def test_step_schedulers_catch_up_when_resuming_late():
    scheduler = lr_scheduler.FactorScheduler(step=3, factor=0.5, base_lr=1.0)
    assert scheduler(10) == 0.125  # three reductions at once
    assert scheduler(2) == 0.125  # and no rewinding (MXNet's behaviour)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: lr_scheduler.FactorScheduler(step=0), "FactorScheduler: step must be >= 1 update, got 0"),
        (lambda: lr_scheduler.FactorScheduler(step=2, factor=1.5), "factor must be <= 1 to reduce the rate, got 1.5"),
        (lambda: lr_scheduler.MultiFactorScheduler(step=[5, 3]), "step must be an increasing list, got [5, 3]"),
        (lambda: lr_scheduler.MultiFactorScheduler(step=[]), "step must be a non-empty list of ints, got []"),
        (lambda: lr_scheduler.MultiFactorScheduler(step=[0, 3]), "every step must be >= 1 update"),
        (lambda: lr_scheduler.PolyScheduler(max_update=0), "PolyScheduler: max_update must be >= 1, got 0"),
        (lambda: lr_scheduler.CosineScheduler(max_update=2.5), "CosineScheduler: max_update must be an int, got 2.5"),
        (lambda: lr_scheduler.CosineScheduler(10, warmup_steps=-1), "warmup_steps has to be >= 0, got -1"),
        (lambda: lr_scheduler.PolyScheduler(10, warmup_steps=1.0), "PolyScheduler: warmup_steps must be an int"),
        (
            lambda: lr_scheduler.CosineScheduler(10, base_lr=0.1, warmup_begin_lr=0.5),
            "base_lr \\(0.1\\) has to be higher than warmup_begin_lr \\(0.5\\)",
        ),
        (lambda: lr_scheduler.FactorScheduler(2, warmup_mode="cubic"), "warmup_mode must be 'linear' or 'constant'"),
    ],
)
def test_bad_scheduler_parameters_raise_clearly(make, message):
    with pytest.raises(lr_scheduler.LRSchedulerError, match=message.replace("[", "\\[").replace("]", "\\]")):
        make()


# ------------------------------------------------------------------ together
@pytest.mark.parametrize("name", ["sgd", "nag", "adam", "rmsprop", "adagrad"])
def test_a_linear_model_trains_with_autograd_initializer_and_metric(name):
    """Initializer fills, autograd writes .grad, the updater steps, the metric watches the error fall."""
    rng = np.random.default_rng(0)
    x = nd.array(rng.normal(size=(64, 3)).astype(np.float32))
    y = nd.array(x.asnumpy() @ np.array([[1.0], [-2.0], [0.5]], dtype=np.float32) + 0.3)
    mx.random.seed(0)
    w, b = nd.zeros((3, 1)), nd.zeros((1,))
    init = initializer.Xavier()
    init(initializer.InitDesc("fc_weight"), w)
    init(initializer.InitDesc("fc_bias"), b)
    kwargs = {
        "sgd": {"learning_rate": 0.1, "momentum": 0.9},
        "nag": {"learning_rate": 0.1, "momentum": 0.9},
        "adam": {"learning_rate": 0.1},
        "rmsprop": {"learning_rate": 0.05},
        "adagrad": {"learning_rate": 0.5},
    }
    updater = opt.get_updater(opt.create(name, rescale_grad=1.0 / 64, **kwargs[name]))
    for param in (w, b):
        param.attach_grad()
    mse = metric.MSE()
    errors = []
    for _ in range(60):
        with mx.autograd.record():
            pred = nd.dot(x, w) + b
            loss = nd.sum((pred - y) ** 2) * 0.5
        loss.backward()
        updater(0, w.grad, w)
        updater(1, b.grad, b)
        mse.reset()
        mse.update([y], [pred])
        errors.append(mse.get()[1])
    assert errors[-1] < 0.01 * errors[0], errors[::10]

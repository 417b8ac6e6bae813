"""mx.init: name-based dispatch, the registry and ``dumps``, and the random initializers.

Deterministic results (dispatch, ``dumps`` strings, Bilinear and LSTMBias values, error
cases) are compared with MXNet 1.9.1 (read off ``pip install mxnet==1.9.1`` and written
here). Random draws come from MXLab's own generator, so those tests check the distribution
(bounds, spread) and reproducibility under ``mx.random.seed`` instead of MXNet's numbers.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import framework as mx
from framework import initializer as init
from framework.test_utils import assert_almost_equal

nd = mx.nd


def _filled(initializer, name, shape=(3,), attrs=None, start=7.0):
    arr = nd.full(shape, start)
    initializer(init.InitDesc(name, attrs), arr)
    return arr.asnumpy()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("fc_bias", 0.0),
        ("bn_gamma", 1.0),
        ("bn_beta", 0.0),
        ("q_min", 0.0),
        ("q_max", 1.0),
        ("bn_moving_mean", 0.0),  # MXLab: MXNet 1.9.1 raises here unless __init__ is set
        ("bn_moving_var", 1.0),
        ("bn_moving_inv_var", 0.0),
        ("x_moving_avg", 0.0),
    ],
)
def test_names_choose_the_rule(name, value):
    assert _filled(init.Uniform(0.5), name).tolist() == [value] * 3


def test_weights_use_the_initializer_rule_and_init_attribute_overrides_the_name():
    weight = _filled(init.Uniform(0.5), "fc_weight", shape=(50, 40))
    assert np.abs(weight).max() <= 0.5 and weight.std() > 0.2
    assert _filled(init.Zero(), "fc_weight").tolist() == [0.0] * 3
    assert _filled(init.One(), "fc_weight").tolist() == [1.0] * 3
    # MXNet 1.9.1: a variable's __init__ attribute wins whatever the name says.
    attrs = {"__init__": init.Constant(3).dumps()}
    assert _filled(init.Uniform(0.5), "fc_bias", attrs=attrs).tolist() == [3.0] * 3
    assert _filled(init.Xavier(), "bn_moving_var", attrs={"__init__": '["zero", {}]'}).tolist() == [0.0] * 3


def test_desc_remembers_the_first_initializer_as_global_init():
    desc = init.InitDesc("fc_weight")
    first = init.Zero()
    first(desc, nd.ones((2,)))
    init.One()(desc, nd.ones((2,)))
    assert desc.global_init is first and desc.attrs == {}
    assert isinstance(desc, str) and desc == "fc_weight"


def test_plain_string_names_still_work_with_a_deprecation_warning():
    arr = nd.full((2,), 5.0)
    with pytest.warns(DeprecationWarning, match="init\\(mx.init.InitDesc"):
        init.Constant(2.0)("fc_weight", arr)
    assert arr.asnumpy().tolist() == [2.0, 2.0]
    with pytest.warns(DeprecationWarning):
        init.Constant(2.0)("bn_moving_var", arr)
    assert arr.asnumpy().tolist() == [1.0, 1.0]
    arr = nd.zeros((1, 1, 4, 4))
    with pytest.warns(DeprecationWarning):
        init.Uniform()("upsampling0_weight", arr)  # legacy: upsampling layers are bilinear
    assert arr.asnumpy()[0, 0, 0].tolist() == [0.0625, 0.1875, 0.1875, 0.0625]


def test_unknown_names_and_vectors_raise_like_mxnet():
    with pytest.raises(init.InitializerError, match="Unknown initialization pattern for 'data'"):
        init.Uniform()(init.InitDesc("data"), nd.ones((3,)))
    with pytest.raises(init.InitializerError, match="Xavier initializer cannot be applied to vector v_weight"):
        init.Xavier()(init.InitDesc("v_weight"), nd.ones((3,)))
    with pytest.raises(init.InitializerError, match="Uniform: the array to initialise must be an NDArray, got ndarray"):
        init.Uniform()(init.InitDesc("w_weight"), np.ones(3))


# ------------------------------------------------------------------ dumps / create / register
MXNET_DUMPS = [
    (init.Uniform(), '["uniform", {"scale": 0.07}]'),
    (init.Uniform(0.1), '["uniform", {"scale": 0.1}]'),
    (init.Normal(0.5), '["normal", {"sigma": 0.5}]'),
    (init.Xavier(), '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]'),
    (
        init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2.34),
        '["xavier", {"rnd_type": "gaussian", "factor_type": "in", "magnitude": 2.34}]',
    ),
    (init.MSRAPrelu(), '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'),
    (init.MSRAPrelu("out", 0.1), '["msraprelu", {"factor_type": "out", "slope": 0.1}]'),
    (init.Constant(2.5), '["constant", {"value": 2.5}]'),
    (init.Constant(np.array([[1, 2], [3, 4]])), '["constant", {"value": [[1, 2], [3, 4]]}]'),
    (init.Zero(), '["zero", {}]'),
    (init.One(), '["one", {}]'),
    (init.Orthogonal(), '["orthogonal", {"scale": 1.414, "rand_type": "uniform"}]'),
    (init.Bilinear(), '["bilinear", {}]'),
    (init.LSTMBias(2.0), '["lstmbias", {"forget_bias": 2.0}]'),
]


@pytest.mark.parametrize(("initializer", "text"), MXNET_DUMPS, ids=[t for _, t in MXNET_DUMPS])
def test_dumps_matches_mxnet_and_create_reads_it_back(initializer, text):
    assert initializer.dumps() == text
    again = init.create(text)
    assert type(again) is type(initializer)
    assert again.dumps() == text


def test_create_accepts_names_aliases_instances_and_dicts():
    xavier = init.create('["xavier", {"rnd_type": "gaussian", "magnitude": 2}]')
    assert isinstance(xavier, init.Xavier) and xavier.magnitude == 2.0 and xavier.rnd_type == "gaussian"
    assert isinstance(init.create("zeros"), init.Zero) and isinstance(init.create("ONES"), init.One)
    assert init.create("msraprelu", slope=0.5)._kwargs == {"factor_type": "avg", "slope": 0.5}
    one = init.One()
    assert init.create(one) is one
    assert isinstance(init.create({"initializer": "normal", "sigma": 0.2}), init.Normal)
    assert init.create('{"initializer": "uniform", "scale": 0.3}') == init.Uniform(0.3)
    assert init.Uniform(0.1) == init.Uniform(0.1) and init.Uniform(0.1) != init.Uniform(0.2)


def test_create_errors_name_what_went_wrong():
    with pytest.raises(init.InitializerError, match="initializer 'gaussian' is not registered \\(registered: "):
        init.create("gaussian")
    with pytest.raises(init.InitializerError, match="already an instance; additional arguments are invalid"):
        init.create(init.One(), scale=2)
    with pytest.raises(init.InitializerError, match="malformed initializer JSON"):
        init.create('["uniform", {"scale": }]')
    with pytest.raises(init.InitializerError, match="expected '\\[name, \\{kwargs\\}\\]'"):
        init.create('["uniform"]')
    with pytest.raises(init.InitializerError, match="got int"):
        init.create(3)


def test_register_and_alias_make_custom_initializers_creatable():
    @init.register
    @init.alias("myinit")
    class CustomInit(init.Initializer):
        def __init__(self, value=0.1):
            super().__init__(value=value)
            self.value = value

        def _init_weight(self, _, arr):
            arr[:] = self.value

        def _init_bias(self, _, arr):
            arr[:] = 1

    try:
        assert _filled(init.create("myinit"), "fc_weight").tolist() == pytest.approx([0.1] * 3)
        assert _filled(init.create("custominit"), "fc_bias").tolist() == [1.0] * 3
        desc = init.InitDesc("fc_bias", {"__init__": CustomInit(0.5).dumps()})
        assert _filled(init.Zero(), desc, attrs=desc.attrs).tolist() == [0.5] * 3
    finally:
        del init.base._REGISTRY["myinit"], init.base._REGISTRY["custominit"]
    with pytest.raises(init.InitializerError, match="expects an Initializer subclass"):
        init.register(dict)


# ------------------------------------------------------------------ deterministic initializers
def test_bilinear_and_lstm_bias_match_mxnet():
    arr = nd.zeros((2, 1, 3, 3))
    init.Bilinear()(init.InitDesc("up_weight"), arr)
    expected = [0.0625, 0.1875, 0.1875, 0.1875, 0.5625, 0.5625, 0.1875, 0.5625, 0.5625] * 2
    assert arr.asnumpy().ravel().tolist() == expected
    arr = nd.zeros((1, 1, 4, 4))
    init.Bilinear()(init.InitDesc("up_weight"), arr)
    assert arr.asnumpy().ravel().tolist() == [
        0.0625, 0.1875, 0.1875, 0.0625, 0.1875, 0.5625, 0.5625, 0.1875,
        0.1875, 0.5625, 0.5625, 0.1875, 0.0625, 0.1875, 0.1875, 0.0625,
    ]  # fmt: skip
    arr = nd.ones((8,))
    init.Uniform()(init.InitDesc("lstm_i2h_bias", {"__init__": init.LSTMBias(2.0).dumps()}), arr)
    assert arr.asnumpy().tolist() == [0.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0]
    with pytest.raises(init.InitializerError, match="Bilinear: the weight must be 4-d"):
        init.Bilinear()(init.InitDesc("up_weight"), nd.zeros((3, 3)))


def test_constant_takes_numbers_and_arrays_of_the_weight_shape():
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert _filled(init.Constant(values), "w_weight", shape=(2, 3)).tolist() == values.tolist()
    assert _filled(init.Constant(nd.array(values)), "w_weight", shape=(2, 3)).tolist() == values.tolist()
    assert json.loads(init.Constant(nd.array(values)).dumps()) == ["constant", {"value": values.tolist()}]
    with pytest.raises(init.InitializerError, match="Constant: value of shape \\(2, 3\\) cannot initialise 'w_weight'"):
        _filled(init.Constant(values), "w_weight", shape=(3, 2))


def test_mixed_and_load():
    mixed = init.Mixed(["bias", ".*"], [init.Zero(), init.One()])
    arr = nd.full((2,), 5.0)
    mixed(init.InitDesc("fc_bias"), arr)
    assert arr.asnumpy().tolist() == [0.0, 0.0]
    mixed(init.InitDesc("fc_weight"), arr)
    assert arr.asnumpy().tolist() == [1.0, 1.0]
    with pytest.raises(init.InitializerError, match="did not match any pattern"):
        init.Mixed(["bias"], [init.Zero()])(init.InitDesc("fc_weight"), arr)
    with pytest.raises(init.InitializerError, match="got 2 patterns but 1 initializers"):
        init.Mixed(["a", "b"], [init.Zero()])

    saved = {"arg:fc_weight": nd.array([[1.0, 2.0]]), "aux:bn_moving_var": nd.array([3.0])}
    load = init.Load(saved, default_init=init.Constant(9.0))
    weight = nd.zeros((1, 2))
    load(init.InitDesc("fc_weight"), weight)
    assert weight.asnumpy().tolist() == [[1.0, 2.0]]
    other = nd.zeros((2,))
    load(init.InitDesc("fc2_weight"), other)
    assert other.asnumpy().tolist() == [9.0, 9.0]
    with pytest.raises(init.InitializerError, match="Shape mismatch, target \\(2,\\) vs loaded \\(1,\\)"):
        load(init.InitDesc("bn_moving_var"), other)
    with pytest.raises(init.InitializerError, match="Cannot initialize fc3_weight: not found"):
        init.Load(saved)(init.InitDesc("fc3_weight"), other)


def test_load_reads_a_params_file(tmp_path):
    path = str(tmp_path / "model.params")
    nd.save(path, {"arg:fc_weight": nd.array([[4.0, 5.0]])})
    weight = nd.zeros((1, 2))
    init.Load(path)(init.InitDesc("fc_weight"), weight)
    assert weight.asnumpy().tolist() == [[4.0, 5.0]]


# ------------------------------------------------------------------ random initializers
@pytest.mark.parametrize(
    ("shape", "factor_type", "expected"),
    [
        ((64, 32, 3, 3), "avg", math.sqrt(3 / 432)),  # fan_in 288, fan_out 576
        ((64, 32, 3, 3), "in", math.sqrt(3 / 288)),
        ((100, 20), "out", math.sqrt(3 / 100)),
        ((100, 20), "avg", math.sqrt(3 / 60)),
    ],
)
def test_xavier_scale(shape, factor_type, expected):
    xavier = init.Xavier(factor_type=factor_type)
    assert xavier.scale_for(shape) == pytest.approx(expected)
    weight = _filled(xavier, "conv_weight", shape=shape)
    assert np.abs(weight).max() <= expected * (1 + 1e-6)
    assert np.abs(weight).max() > 0.98 * expected  # thousands of draws reach the bound
    assert weight.std() == pytest.approx(expected / math.sqrt(3), rel=0.05)


def test_gaussian_initializers_have_the_requested_spread():
    normal = _filled(init.Normal(0.5), "fc_weight", shape=(200, 100))
    assert normal.mean() == pytest.approx(0.0, abs=0.01) and normal.std() == pytest.approx(0.5, rel=0.02)
    msra = init.MSRAPrelu(slope=0.0)  # magnitude 2: He initialisation, std sqrt(2 / fan_avg)
    weight = _filled(msra, "conv_weight", shape=(64, 32, 3, 3))
    assert weight.std() == pytest.approx(math.sqrt(2 / 432), rel=0.05)
    ortho = _filled(init.Orthogonal(scale=1.0), "fc_weight", shape=(4, 6))
    assert_almost_equal(ortho @ ortho.T, np.eye(4), rtol=1e-4, atol=1e-5)


def test_random_initializers_are_reproducible_under_mx_random_seed():
    def draw(initializer):
        mx.random.seed(42)
        return _filled(initializer, "fc_weight", shape=(5, 4))

    for initializer in (init.Uniform(0.3), init.Normal(0.2), init.Xavier(), init.MSRAPrelu()):
        first, second = draw(initializer), draw(initializer)
        assert np.array_equal(first, second)
    first = draw(init.Uniform(0.3))
    assert not np.array_equal(first, _filled(init.Uniform(0.3), "fc_weight", shape=(5, 4)))  # the stream moves on


def test_float64_and_float16_weights_keep_their_dtype():
    for dtype in ("float64", "float16"):
        arr = nd.zeros((10, 10), dtype=dtype)
        init.Xavier()(init.InitDesc("fc_weight"), arr)
        assert arr.dtype == np.dtype(dtype) and np.abs(arr.asnumpy()).max() > 0


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: init.Uniform(-0.1), "Uniform: scale must be >= 0, got -0.1"),
        (lambda: init.Normal(0), "Normal: sigma must be > 0, got 0"),
        (lambda: init.Normal("big"), "Normal: sigma must be a number, got 'big'"),
        (lambda: init.Xavier(rnd_type="normal"), "Xavier: rnd_type must be one of \\['uniform', 'gaussian'\\]"),
        (lambda: init.Xavier(factor_type="sum"), "Xavier: factor_type must be one of \\['avg', 'in', 'out'\\]"),
        (lambda: init.Xavier(magnitude=-3), "Xavier: magnitude must be >= 0, got -3"),
        (lambda: init.Orthogonal(rand_type="cauchy"), "Orthogonal: rand_type must be 'uniform' or 'normal'"),
        (lambda: init.Load(["w"]), "Load: param must be a file name or a dict"),
    ],
)
def test_bad_parameters_raise_clearly(make, message):
    with pytest.raises(init.InitializerError, match=message):
        make()

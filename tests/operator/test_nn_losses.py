"""Loss layers: SoftmaxOutput, the regression outputs, MakeLoss and softmax_cross_entropy.

The output layers' backward pass is the loss gradient itself, so most checks compare the
gradient autograd produces (with the default head gradient) against MXNet's numbers.
Expectations marked "MXNet 1.9.1" were read off the real MXNet (pip ``mxnet==1.9.1``)
and are written here as plain numbers; the tests never import MXNet.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, seeded_rng, softmax_reference

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req, rand_shape_nd

nd = mx.nd
FLOATS = ["float16", "float32", "float64"]

X = np.array([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3], [1.5, 0.0, -2.0], [-0.4, 0.9, 0.3]])
LABEL = np.array([0, -1, 2, 1])


def _output_and_grad(name: str, x: np.ndarray, label: np.ndarray, head=None, **params):
    xa = nd.array(x, dtype="float64")
    xa.attach_grad()
    with mx.autograd.record():
        out = getattr(nd, name)(xa, nd.array(label, dtype="float64"), **params)
    out.backward(None if head is None else nd.array(head, dtype="float64"))
    return out.asnumpy(), xa.grad.asnumpy()


# ============================================================================ SoftmaxOutput
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_output_forward(dtype):
    rng = seeded_rng(0)
    for ndim in range(2, 6):
        shape = rand_shape_nd(ndim, 4, rng=rng)
        x = rng.uniform(-2, 2, shape).astype(dtype)
        label = rng.integers(0, shape[-1], shape[:-1]).astype(dtype)
        out = nd.SoftmaxOutput(nd.array(x, dtype=x.dtype), nd.array(label, dtype=label.dtype))
        # without multi_output / preserve_shape: softmax over everything but axis 0
        flat = softmax_reference(x.astype(np.float64).reshape(shape[0], -1), 1).reshape(shape)
        assert out.dtype == np.dtype(dtype)
        assert_almost_equal(out, flat.astype(dtype))
        out = nd.SoftmaxOutput(nd.array(x, dtype=x.dtype), nd.array(label, dtype=label.dtype), preserve_shape=True)
        assert_almost_equal(out, softmax_reference(x.astype(np.float64), -1).astype(dtype))
        multi_label = rng.integers(0, shape[1], (shape[0], *shape[2:])).astype(dtype)
        out = nd.SoftmaxOutput(
            nd.array(x, dtype=x.dtype), nd.array(multi_label, dtype=multi_label.dtype), multi_output=True
        )
        assert_almost_equal(out, softmax_reference(x.astype(np.float64), 1).astype(dtype))


# MXNet 1.9.1: gradient of SoftmaxOutput(X, LABEL, **params) with the default head gradient
MXNET_SOFTMAX_OUTPUT_GRAD = {
    "plain": (
        {},
        [
            -0.82470961,
            0.039112573,
            0.78559703,
            0.36029662,
            0.39818934,
            0.24151404,
            0.79787603,
            0.17803021,
            -0.97590623,
            0.14963229,
            -0.45095473,
            0.30132243,
        ],
    ),
    "batch": (
        {"normalization": "batch", "grad_scale": 2.0},
        [
            -0.4123548,
            0.019556287,
            0.39279852,
            0.18014831,
            0.19909467,
            0.12075702,
            0.39893801,
            0.089015103,
            -0.48795312,
            0.074816146,
            -0.22547736,
            0.15066122,
        ],
    ),
    "ignore-valid": (
        {"use_ignore": True, "normalization": "valid"},
        [
            -0.27490321,
            0.013037525,
            0.26186569,
            0,
            0,
            0,
            0.26595868,
            0.059343404,
            -0.32530209,
            0.049877432,
            -0.15031825,
            0.10044081,
        ],
    ),
    "valid": (
        {"normalization": "valid"},
        [
            -0.27490321,
            0.013037525,
            0.26186569,
            0.12009888,
            0.13272978,
            0.080504684,
            0.26595868,
            0.059343404,
            -0.32530209,
            0.049877432,
            -0.15031825,
            0.10044081,
        ],
    ),
    "smooth": (
        {"smooth_alpha": 0.3},
        [
            -0.5247096,
            -0.11088743,
            0.63559703,
            0.21029661,
            0.24818934,
            0.091514038,
            0.64787602,
            0.0280302,
            -0.67590622,
            -0.00036771329,
            -0.15095472,
            0.15132243,
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(MXNET_SOFTMAX_OUTPUT_GRAD))
def test_softmax_output_gradient_matches_mxnet(case):
    params, expected = MXNET_SOFTMAX_OUTPUT_GRAD[case]
    out, grad = _output_and_grad("SoftmaxOutput", X, LABEL, head=np.full(X.shape, 7.0), **params)
    assert_almost_equal(out, softmax_reference(X, 1))
    # the head gradient (7) is ignored; label -1 is outside [0, 3) and selects no class
    assert_almost_equal(grad, np.array(expected).reshape(X.shape), rtol=1e-6, atol=1e-7)


# MXNet 1.9.1: multi_output on (2, 3, 2, 2) data with labels (2, 4)
MULTI_X = (np.arange(24, dtype=np.float64).reshape(2, 3, 2, 2) * 0.37) % 1.3 - 0.6
MULTI_LABEL = np.array([[0, 2, 1, 1], [2, 0, -1, 1]])
MXNET_MULTI_GRAD = {
    "null": (
        {},
        [
            -0.18113985,
            0.068860151,
            0.068860151,
            0.096605469,
            0.082440569,
            0.082440569,
            -0.16755943,
            -0.13434225,
            0.09869928,
            -0.15130072,
            0.09869928,
            0.037736785,
            0.068860151,
            -0.18113985,
            0.14561063,
            0.068860151,
            0.082440569,
            0.082440569,
            0.047509806,
            -0.16755943,
            -0.15130072,
            0.09869928,
            0.056879565,
            0.09869928,
        ],
    ),
    "batch": (
        {"normalization": "batch"},
        [
            -0.090569924,
            0.034430076,
            0.034430076,
            0.048302735,
            0.041220284,
            0.041220284,
            -0.083779716,
            -0.067171127,
            0.04934964,
            -0.07565036,
            0.04934964,
            0.018868393,
            0.034430076,
            -0.090569924,
            0.072805315,
            0.034430076,
            0.041220284,
            0.041220284,
            0.023754903,
            -0.083779716,
            -0.07565036,
            0.04934964,
            0.028439782,
            0.04934964,
        ],
    ),
    "ignore-valid": (
        {"normalization": "valid", "use_ignore": True},
        [
            -0.10350849,
            0.03934866,
            0.03934866,
            0.055203128,
            0.047108898,
            0.047108898,
            -0.095748251,
            -0.076767006,
            0.056399591,
            -0.086457558,
            0.056399591,
            0.021563878,
            0.03934866,
            -0.10350849,
            0,
            0.03934866,
            0.047108898,
            0.047108898,
            0,
            -0.095748251,
            -0.086457558,
            0.056399591,
            0,
            0.056399591,
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(MXNET_MULTI_GRAD))
def test_softmax_output_multi_output_matches_mxnet(case):
    params, expected = MXNET_MULTI_GRAD[case]
    expected = np.array(expected).reshape(MULTI_X.shape)
    _, grad = _output_and_grad("SoftmaxOutput", MULTI_X, MULTI_LABEL, multi_output=True, **params)
    # null normalisation divides by the spatial size (4), batch by batch * spatial (8), valid by 7 valid labels
    assert_almost_equal(grad, expected, rtol=1e-6, atol=1e-7)
    # the (N, d1, d2) label layout gives the same gradient
    _, grad = _output_and_grad("SoftmaxOutput", MULTI_X, MULTI_LABEL.reshape(2, 2, 2), multi_output=True, **params)
    assert_almost_equal(grad, expected, rtol=1e-6, atol=1e-7)


def test_softmax_output_other_layouts():
    rng = seeded_rng(1)
    x = rng.uniform(-2, 2, (2, 3, 2))
    label = np.array([[1, 0, 1], [0, 0, 1]])
    # preserve_shape: softmax and one-hot along the last axis; batch normalisation divides by the 6 rows
    out, grad = _output_and_grad("SoftmaxOutput", x, label, preserve_shape=True, normalization="batch")
    assert_almost_equal(grad, (softmax_reference(x, -1) - np.eye(2)[label]) / 6)
    # MXNet 1.9.1: 3-D data without multi_output normalises over (3*2) values per sample and reads the
    # first N=2 label entries
    out, grad = _output_and_grad("SoftmaxOutput", x, label)
    assert_almost_equal(grad.reshape(2, 6), out.reshape(2, 6) - np.eye(6)[label.reshape(-1)[:2]])
    # MXNet 1.9.1: a label of the data's shape is a probability distribution
    prob = rng.uniform(0, 1, X.shape)
    prob /= prob.sum(axis=1, keepdims=True)
    out, grad = _output_and_grad("SoftmaxOutput", X, prob, grad_scale=0.5, normalization="batch")
    assert_almost_equal(grad, (out - prob) * 0.5)
    # out_grad=True multiplies by the head gradient
    head = rng.uniform(0, 1, X.shape)
    out, grad = _output_and_grad("SoftmaxOutput", X, np.array([0, 1, 2, 1]), head=head, out_grad=True)
    assert_almost_equal(grad, (out - np.eye(3)[[0, 1, 2, 1]]) * head)
    # the Softmax alias is the same operator
    assert mx.operator.get("Softmax") is mx.operator.get("SoftmaxOutput")
    assert_almost_equal(
        nd.Softmax(nd.array(X, dtype=X.dtype), nd.array(LABEL, dtype=LABEL.dtype)),
        softmax_reference(X, 1).astype(np.float32),
    )


def test_softmax_output_gradient_wrt_data_is_cross_entropy():
    """SoftmaxOutput's gradient is that of sum(-log softmax[label]): check it by finite differences."""
    rng = seeded_rng(2)
    x = rng.uniform(-2, 2, (3, 4))
    label = nd.array(np.array([0, 3, 1]))

    def loss(a):
        return nd.SoftmaxOutput(a, label)

    xa = nd.array(x, dtype="float64")
    xa.attach_grad()
    with mx.autograd.record():
        out = loss(xa)
    out.backward()
    check_imperative_gradient(lambda a: nd.softmax_cross_entropy(a, label), [x])
    sce_grad = softmax_reference(x, 1) - np.eye(4)[[0, 3, 1]]
    assert_almost_equal(xa.grad, sce_grad)


def test_softmax_output_req_and_label_gradient():
    rng = seeded_rng(3)
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    check_req("SoftmaxOutput", [x, np.array([0, 3, 1], np.float32)])
    check_req(
        "SoftmaxOutput",
        [rng.uniform(-1, 1, (2, 3, 2, 2)).astype(np.float32), rng.integers(0, 3, (2, 4)).astype(np.float32)],
        multi_output=True,
        normalization="valid",
        use_ignore=True,
        ignore_label=1,
    )
    xa, la = nd.array(x, dtype=x.dtype), nd.array(np.array([0, 3, 1]))
    la.attach_grad()
    with mx.autograd.record():
        out = nd.SoftmaxOutput(xa, la)
    out.backward()
    assert not la.grad.asnumpy().any()  # labels get a zero gradient


def test_softmax_output_shape_inference_like_mxnet():
    # MXNet 1.9.1: sym.SoftmaxOutput(...).infer_shape(data=...)
    assert infer_shapes("SoftmaxOutput", {}, [(4, 5), None])[:2] == ([(4, 5), (4,)], [(4, 5)])
    assert infer_shapes("SoftmaxOutput", {}, [(4, 3, 5), None])[0] == [(4, 3, 5), (4, 3)]
    assert infer_shapes("SoftmaxOutput", {"preserve_shape": True}, [(4, 3, 5), None])[0] == [(4, 3, 5), (4, 3)]
    assert infer_shapes("SoftmaxOutput", {"multi_output": True}, [(4, 3, 2, 2), None])[0] == [(4, 3, 2, 2), (4, 4)]
    assert infer_shapes("SoftmaxOutput", {"multi_output": True}, [(4, 3), None])[0] == [(4, 3), (4, 1)]
    assert infer_shapes("SoftmaxOutput", {"multi_output": True}, [(4, 3, 2, 5), (4, 2, 5)])[2]
    assert infer_shapes("SoftmaxOutput", {"multi_output": True}, [(4, 3, 2, 5), (4, 1, 2, 5)])[2]
    assert infer_shapes("SoftmaxOutput", {}, [(4, 3), (4, 3)])[0] == [(4, 3), (4, 3)]  # probabilities
    assert infer_shapes("SoftmaxOutput", {}, [None, None], [(4, 3)])[0] == [(4, 3), (4,)]
    assert infer_shapes("SoftmaxOutput", {}, [None, (4,)])[2] is False
    with pytest.raises(InferenceError, match=r"SoftmaxOutput.*label.*\(4,\).*\(4, 2\)"):
        infer_shapes("SoftmaxOutput", {}, [(4, 3), (4, 2)])
    with pytest.raises(InferenceError, match=r"SoftmaxOutput.*label shape \(4, 3\).*\(4, 10\) or \(4, 2, 5\)"):
        infer_shapes("SoftmaxOutput", {"multi_output": True}, [(4, 3, 2, 5), (4, 3)])
    with pytest.raises(OperatorParamError, match="SoftmaxOutput.*normalization"):
        nd.SoftmaxOutput(nd.ones((2, 2)), nd.ones(2), normalization="mean")


# ============================================================================ regression outputs
REGRESSION_LABEL = np.array([[0.2, 0.1, 0.7], [1.0, 0.0, 0.5], [0.3, 0.3, 0.3], [0.9, 0.2, 0.0]])
# MXNet 1.9.1: output and gradient of <op>(X, REGRESSION_LABEL, grad_scale=1.5)
MXNET_REGRESSION = {
    "LinearRegressionOutput": (
        X.ravel().tolist(),
        [0.15, -0.55, 0.65, -0.45, 0.1, -0.4, 0.6, -0.15, -1.15, -0.65, 0.35, 0.15],
    ),
    "LogisticRegressionOutput": (
        [
            0.62245933,
            0.26894142,
            0.88079708,
            0.52497919,
            0.549834,
            0.42555748,
            0.81757448,
            0.5,
            0.11920292,
            0.40131234,
            0.7109495,
            0.57444252,
        ],
        [
            0.21122967,
            0.084470711,
            0.090398539,
            -0.23751041,
            0.274917,
            -0.037221258,
            0.25878724,
            0.1,
            -0.090398539,
            -0.24934383,
            0.25547475,
            0.28722126,
        ],
    ),
    "MAERegressionOutput": (X.ravel().tolist(), [0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5, -0.5, -0.5, 0.5, 0.5]),
}
REGRESSION_GRAD = {
    "LinearRegressionOutput": (lambda x: x, lambda d: d),
    "LogisticRegressionOutput": (lambda x: 1 / (1 + np.exp(-x)), lambda d: d),
    "MAERegressionOutput": (lambda x: x, np.sign),
}


@pytest.mark.parametrize("name", sorted(MXNET_REGRESSION))
def test_regression_output_matches_mxnet(name):
    out, grad = _output_and_grad(name, X, REGRESSION_LABEL, head=np.full(X.shape, 3.0), grad_scale=1.5)
    expected_out, expected_grad = MXNET_REGRESSION[name]
    assert_almost_equal(out, np.array(expected_out).reshape(X.shape), rtol=1e-6, atol=1e-7)
    # divided by the 3 outputs per sample; the head gradient is ignored
    assert_almost_equal(grad, np.array(expected_grad).reshape(X.shape), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(MXNET_REGRESSION))
def test_regression_output_forward_and_backward(dtype, name):
    forward, grad_of = REGRESSION_GRAD[name]
    rng = seeded_rng(4)
    for ndim in range(1, 6):
        shape = rand_shape_nd(ndim, 4, rng=rng)
        x = rng.uniform(-2, 2, shape).astype(dtype)
        label = rng.uniform(-2, 2, shape).astype(dtype)
        xa = nd.array(x, dtype=x.dtype)
        xa.attach_grad()
        with mx.autograd.record():
            out = getattr(nd, name)(xa, nd.array(label, dtype=label.dtype))
        out.backward()
        ref = forward(x.astype(np.float64))
        assert out.dtype == np.dtype(dtype)
        assert_almost_equal(out, ref.astype(dtype))
        per_sample = x.size // shape[0]
        expected = grad_of(ref - label.astype(np.float64)) / per_sample
        if name == "MAERegressionOutput":  # sign() is unstable where out == label in low precision
            expected = np.where(np.isclose(ref, label, atol=1e-2), xa.grad.asnumpy(), expected)
        assert_almost_equal(xa.grad, expected.astype(dtype))


@pytest.mark.parametrize("name", sorted(MXNET_REGRESSION))
def test_regression_output_req_and_shapes(name):
    rng = seeded_rng(5)
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    check_req(name, [x, rng.uniform(-2, 2, (3, 4)).astype(np.float32)])
    # MXNet 1.9.1: a (N, 1) output takes a (N,) label; otherwise the label has the data's shape
    assert infer_shapes(name, {}, [(4, 1), None])[0] == [(4, 1), (4,)]
    assert infer_shapes(name, {}, [(4, 3), None])[0] == [(4, 3), (4, 3)]
    assert infer_shapes(name, {}, [(4, 3, 2), None])[0] == [(4, 3, 2), (4, 3, 2)]
    assert infer_shapes(name, {}, [(4,), None])[0] == [(4,), (4,)]
    assert infer_shapes(name, {}, [None, (4, 3)])[0] == [(4, 3), (4, 3)]
    assert infer_shapes(name, {}, [(4, 3), (4, 3, 1)])[2]
    with pytest.raises(InferenceError, match=rf"{name}.*label shape \(4, 2\).*\(4, 3\)"):
        infer_shapes(name, {}, [(4, 3), (4, 2)])
    with pytest.raises(InferenceError, match=rf"{name}.*label shape \(3, 4\)"):
        infer_shapes(name, {}, [(4, 3), (3, 4)])
    with pytest.raises(OperatorParamError, match=rf"{name}.*grad_scale"):
        getattr(nd, name)(nd.ones((2, 2)), nd.ones((2, 2)), grad_scale="big")


def test_regression_output_n1_label_gradient():
    x = seeded_rng(6).uniform(-1, 1, (4, 1))
    label = np.array([0.5, -0.5, 0.0, 1.0])
    _, grad = _output_and_grad("LinearRegressionOutput", x, label)
    assert_almost_equal(grad, x - label[:, None])  # one output per sample: no division


def test_regression_outputs_differentiate_their_losses():
    """Each output layer's gradient is that of its loss (mean over outputs per sample)."""
    rng = seeded_rng(7)
    x = rng.uniform(-2, 2, (3, 2))
    label = rng.uniform(0.1, 0.9, (3, 2))
    for name, loss in (
        ("LinearRegressionOutput", lambda a, lab: (a - lab) ** 2 / 2 / 2),
        ("MAERegressionOutput", lambda a, lab: np.abs(a - lab) / 2),
        (
            "LogisticRegressionOutput",
            lambda a, lab: -(lab * np.log(1 / (1 + np.exp(-a))) + (1 - lab) * np.log(1 - 1 / (1 + np.exp(-a)))) / 2,
        ),
    ):
        _, grad = _output_and_grad(name, x, label)
        eps = 1e-6
        numeric = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            step = np.zeros_like(x)
            step[i] = eps
            numeric[i] = (loss(x + step, label).sum() - loss(x - step, label).sum()) / (2 * eps)
        assert_almost_equal(grad, numeric, rtol=1e-5, atol=1e-8)


def test_regression_outputs_give_labels_zero_gradient():
    """The output layers ignore the head gradient by design, so check_imperative_gradient's random
    projection does not apply to them; their loss gradients are checked by finite differences above."""
    rng = seeded_rng(8)
    for name in sorted(MXNET_REGRESSION):
        xa, la = nd.array(rng.uniform(-1, 1, (2, 3))), nd.array(rng.uniform(-1, 1, (2, 3)))
        la.attach_grad()
        xa.attach_grad()
        with mx.autograd.record():
            out = getattr(nd, name)(xa, la)
        out.backward()
        assert not la.grad.asnumpy().any()
        assert xa.grad.asnumpy().any()


# ============================================================================ MakeLoss
# MXNet 1.9.1: the gradient of MakeLoss(X, **params) with a head gradient of 5 (ignored), first row
MXNET_MAKE_LOSS = [
    ({}, 1.0),
    ({"grad_scale": 3.0}, 3.0),
    ({"normalization": "batch"}, 0.25),
    ({"normalization": "valid", "valid_thresh": 0.2}, 1 / 5),  # 5 values of X are > 0.2
    ({"normalization": "valid"}, 1 / 7),  # 7 values of X are > 0
    ({"normalization": "valid", "valid_thresh": 5.0}, 1.0),  # none valid: divide by 1
]


@pytest.mark.parametrize(("params", "expected"), MXNET_MAKE_LOSS)
def test_make_loss_matches_mxnet(params, expected):
    out, grad = _output_and_grad_make_loss(X, **params)
    assert_almost_equal(out, X)
    assert_almost_equal(grad, np.full(X.shape, expected))


def _output_and_grad_make_loss(x, **params):
    xa = nd.array(x, dtype="float64")
    xa.attach_grad()
    with mx.autograd.record():
        out = nd.MakeLoss(xa, **params)
    out.backward(nd.full(x.shape, 5.0, dtype="float64"))
    return out.asnumpy(), xa.grad.asnumpy()


@pytest.mark.parametrize("dtype", FLOATS)
def test_make_loss_forward_req_and_errors(dtype):
    rng = seeded_rng(9)
    for ndim in range(1, 6):
        x = rng.uniform(-2, 2, rand_shape_nd(ndim, 4, rng=rng)).astype(dtype)
        out = nd.MakeLoss(nd.array(x, dtype=x.dtype))
        assert out.dtype == np.dtype(dtype)
        assert_almost_equal(out, x)
    check_req("MakeLoss", [rng.uniform(-1, 1, (3, 4)).astype(dtype)], normalization="valid")
    check_req("MakeLoss", [rng.uniform(-1, 1, (3, 4)).astype(dtype)], normalization="batch", grad_scale=2.0)
    assert infer_shapes("MakeLoss", {}, [None], [(3, 4)])[0] == [(3, 4)]
    with pytest.raises(OperatorParamError, match="MakeLoss.*normalization"):
        nd.MakeLoss(nd.ones(2), normalization="sum")
    with pytest.raises(InferenceError, match="MakeLoss"):
        infer_shapes("MakeLoss", {}, [(3, 4)], [(4, 3)])


def test_make_loss_gradient_is_that_of_a_sum():
    """MakeLoss(f(x)) behaves like the loss sum(f(x)) * grad_scale: checked through a composed graph."""
    x = seeded_rng(10).uniform(-1, 1, (2, 3))
    xa = nd.array(x, dtype="float64")
    xa.attach_grad()
    with mx.autograd.record():
        loss = nd.MakeLoss(
            nd.FullyConnected(xa, nd.array(np.ones((1, 3)), dtype="float64"), num_hidden=1, no_bias=True),
            grad_scale=2.0,
        )
    loss.backward()
    assert_almost_equal(xa.grad, np.full(x.shape, 2.0))


# ============================================================================ softmax_cross_entropy
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_cross_entropy_forward(dtype):
    rng = seeded_rng(11)
    for _ in range(4):
        n, k = rand_shape_nd(2, 5, rng=rng)
        x = rng.uniform(-2, 2, (n, k)).astype(dtype)
        label = rng.integers(0, k, n)
        out = nd.softmax_cross_entropy(nd.array(x, dtype=x.dtype), nd.array(label, dtype=label.dtype))
        ref = -np.log(softmax_reference(x.astype(np.float64), 1)[np.arange(n), label]).sum()
        assert out.shape == (1,) and out.dtype == np.dtype(dtype)
        assert_almost_equal(out, np.array([ref]).astype(dtype))


def test_softmax_cross_entropy_matches_mxnet():
    x = np.array(
        [
            [1.7640524, 0.4001572, 0.978738],
            [2.2408931, 1.867558, -0.9772779],
            [0.95008844, -0.1513572, -0.10321885],
            [0.41059852, 0.14404356, 1.4542735],
        ]
    )
    label = np.array([0, 2, 1, 1])
    xa = nd.array(x, dtype="float64")
    xa.attach_grad()
    with mx.autograd.record():
        out = nd.softmax_cross_entropy(xa, nd.array(label, dtype=label.dtype))
    out.backward(nd.array([3.0], dtype="float64"))
    # MXNet 1.9.1: a (1,) sum of -log p[label]; the gradient is head * (softmax - one_hot)
    assert_almost_equal(out, np.array([7.71763033]), rtol=1e-6)
    assert_almost_equal(xa.grad, 3 * (softmax_reference(x, 1) - np.eye(3)[label]))


def test_softmax_cross_entropy_gradient_req_and_errors():
    rng = seeded_rng(12)
    x = rng.uniform(-2, 2, (3, 4))
    label = nd.array(np.array([0, 3, 1]))
    check_imperative_gradient(lambda a: nd.softmax_cross_entropy(a, label), [x])
    check_req("softmax_cross_entropy", [x.astype(np.float32), np.array([0, 3, 1], np.float32)])
    assert infer_shapes("softmax_cross_entropy", {}, [(4, 3), None])[:2] == ([(4, 3), (4,)], [(1,)])
    assert infer_shapes("softmax_cross_entropy", {}, [None, (4,)])[0] == [(4, 0), (4,)]
    with pytest.raises(InferenceError, match=r"softmax_cross_entropy.*2-D data.*\(4, 3, 2\)"):
        nd.softmax_cross_entropy(nd.ones((4, 3, 2)), nd.ones(4))
    with pytest.raises(InferenceError, match=r"softmax_cross_entropy.*1-D label.*\(4, 1\)"):
        nd.softmax_cross_entropy(nd.ones((4, 3)), nd.ones((4, 1)))
    with pytest.raises(InferenceError, match="softmax_cross_entropy.*label"):
        nd.softmax_cross_entropy(nd.ones((4, 3)), nd.ones(5))

"""CTCLoss, SVMOutput and IdentityAttachKLSparseReg.

CTC is checked against the definition itself: on tiny problems every alignment path is
enumerated, collapsed (merge repeats, drop blanks) and the probabilities of the paths that
give the label are summed. Agreement with MXNet 1.9.1 is in test_mxnet_reference_normseq.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng, softmax_reference

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd


def _collapse(path, blank):
    merged = [s for i, s in enumerate(path) if i == 0 or s != path[i - 1]]
    return tuple(s for s in merged if s != blank)


def _ctc_brute_force(data, labels, data_lengths, blank):
    """-log of the summed probability of every path collapsing to each label."""
    probs = softmax_reference(data.astype(np.float64), axis=2)
    losses = []
    for n, label in enumerate(labels):
        steps = data_lengths[n]
        total = 0.0
        for path in itertools.product(range(data.shape[2]), repeat=steps):
            if _collapse(path, blank) == tuple(label):
                total += np.prod([probs[t, n, s] for t, s in enumerate(path)])
        losses.append(-np.log(total))
    return np.array(losses)


@pytest.mark.parametrize("blank_label", ["first", "last"])
def test_ctc_loss_matches_the_sum_over_alignments(blank_label):
    rng = seeded_rng(1)
    steps, alphabet = 4, 4
    data = rng.uniform(-2, 2, (steps, 4, alphabet)).astype(np.float32)
    blank = 0 if blank_label == "first" else alphabet - 1
    symbols = [s for s in range(alphabet) if s != blank]
    labels = [(symbols[0], symbols[1]), (symbols[2], symbols[2]), (symbols[1],), ()]
    padding = 0 if blank_label == "first" else -1
    padded = np.full((4, 3), padding, np.float32)
    for n, label in enumerate(labels):
        padded[n, : len(label)] = label
    loss = nd.ctc_loss(nd.array(data, dtype=data.dtype), nd.array(padded, dtype=padded.dtype), blank_label=blank_label)
    assert_almost_equal(loss.asnumpy(), _ctc_brute_force(data, labels, [steps] * 4, blank), rtol=1e-4, atol=1e-5)


def test_ctc_loss_with_data_and_label_lengths():
    rng = seeded_rng(2)
    data = rng.uniform(-2, 2, (5, 3, 3))
    labels = np.array([[1, 2, 1], [2, 2, 2], [1, 1, 2]], np.float64)  # no padding: lengths say where labels end
    label_lengths, data_lengths = np.array([2, 1, 3]), np.array([5, 3, 4])
    want = _ctc_brute_force(
        data, [tuple(labels[n, :k].astype(int)) for n, k in enumerate(label_lengths)], data_lengths, 0
    )
    loss = nd.CTCLoss(
        nd.array(data, dtype=data.dtype),
        nd.array(labels, dtype=labels.dtype),
        nd.array(data_lengths, dtype=data_lengths.dtype),
        nd.array(label_lengths, dtype=label_lengths.dtype),
        use_data_lengths=True,
        use_label_lengths=True,
    )
    assert_almost_equal(loss.asnumpy(), want, rtol=1e-8, atol=1e-10)


def test_ctc_loss_gradient_and_aliases():
    rng = seeded_rng(3)
    data = rng.uniform(-1, 1, (5, 2, 4))
    labels = nd.array([[1, 3, 0], [2, 2, 1]], dtype="float64")
    lengths = nd.array([5, 4], dtype="float64")
    check_imperative_gradient(lambda d: nd.ctc_loss(d, labels, lengths, use_data_lengths=True), [data])
    check_imperative_gradient(lambda d: nd.contrib.CTCLoss(d, labels - 1, blank_label="last"), [data])
    # steps beyond a sequence's length get no gradient; the labels none at all
    x, lab = nd.array(data, dtype=data.dtype), nd.array(labels.asnumpy())
    for a in (x, lab):
        a.attach_grad()
    with mx.autograd.record():
        loss = nd.contrib.ctc_loss(x, lab, lengths, use_data_lengths=True)
    loss.backward()
    assert not x.grad.asnumpy()[4:, 1].any() and x.grad.asnumpy()[:4, 1].all()
    assert not lab.grad.asnumpy().any()


def test_ctc_loss_of_an_impossible_label_is_infinite():
    # three symbols with a repeat need at least four steps
    loss = nd.ctc_loss(nd.zeros((3, 1, 3)), nd.array([[1, 1, 2]]))
    assert np.isinf(loss.asnumpy()).all()


def test_ctc_loss_inference_req_and_errors():
    ins, outs, done = infer_shapes("CTCLoss", {"use_data_lengths": True}, [(6, 3, 5), None, None])
    assert not done and ins[2] == (3,) and outs == [(3,), (6, 3, 5)]
    ins, outs, done = infer_shapes("CTCLoss", {}, [None, (3, 4)], [None, (6, 3, 5)])
    assert done and ins == [(6, 3, 5), (3, 4)] and outs[0] == (3,)
    assert infer_types("CTCLoss", {}, ["float64", "int32"]) == (["float64", "int32"], ["float64", "float64"])
    assert infer_types("CTCLoss", {}, [None, "int32"], ["float32", None]) == (
        ["float32", "int32"],
        ["float32", "float32"],
    )
    with pytest.raises(InferenceError, match="data must be 3-D"):
        infer_shapes("CTCLoss", {}, [(6, 3), (3, 4)])
    with pytest.raises(InferenceError, match="shape inconsistent"):
        infer_shapes("CTCLoss", {}, [(6, 3, 5), (2, 4)])
    with pytest.raises(InferenceError, match="float16, float32 or float64"):
        infer_types("CTCLoss", {}, ["int32", "int32"])
    with pytest.raises(OperatorParamError, match="'blank_label'"):
        nd.ctc_loss(nd.ones((3, 1, 3)), nd.ones((1, 1)), blank_label="middle")
    with pytest.raises(InferenceError, match="label values must lie in the alphabet"):
        nd.ctc_loss(nd.ones((3, 1, 3)), nd.array([[1, 7]])).asnumpy()
    op = mx.operator.get("CTCLoss")
    attrs = op.parse_attrs({"use_label_lengths": True})
    assert op.list_input_names(attrs) == ["data", "label", "label_lengths"]
    assert (op.get_num_outputs(attrs), op.get_num_visible_outputs(attrs)) == (2, 1)
    rng = seeded_rng(4)
    data = rng.uniform(-1, 1, (4, 2, 3)).astype(np.float32)
    check_req("CTCLoss", [data, np.array([[1, 2], [2, 0]], np.float32)])
    check_req(
        "CTCLoss",
        [data, np.array([[1, 2], [2, 1]], np.int32), np.array([4, 2], np.int32), np.array([2, 1], np.int32)],
        use_data_lengths=True,
        use_label_lengths=True,
    )


# ---------------------------------------------------------------------------- SVMOutput
def _svm_reference(scores, label, margin, coef, linear):
    true = np.arange(scores.shape[1])[None, :] == label[:, None]
    if linear:
        return np.where(true, -coef * (scores < margin), coef * (scores > -margin))
    return np.where(true, -2 * coef * np.maximum(margin - scores, 0), 2 * coef * np.maximum(margin + scores, 0))


@pytest.mark.parametrize("linear", [False, True])
def test_svm_output_forward_is_identity_and_backward_is_the_hinge_gradient(linear):
    rng = seeded_rng(5)
    scores = rng.uniform(-2, 2, (6, 4)).astype(np.float32)
    label = rng.integers(0, 4, 6).astype(np.float32)
    x = nd.array(scores, dtype=scores.dtype)
    x.attach_grad()
    with mx.autograd.record():
        out = nd.SVMOutput(
            x, nd.array(label, dtype=label.dtype), margin=0.5, regularization_coefficient=2.0, use_linear=linear
        )
    out.backward(nd.ones(out.shape) * 5)  # the head gradient is ignored, as in every output layer
    assert_almost_equal(out.asnumpy(), scores)
    assert_almost_equal(x.grad.asnumpy(), _svm_reference(scores, label, 0.5, 2.0, linear))
    check_req("SVMOutput", [scores, label], use_linear=linear)


def test_svm_output_gradient_is_the_derivative_of_the_hinge_loss():
    rng = seeded_rng(6)
    scores = rng.uniform(-2, 2, (3, 4))
    label = np.array([0, 3, 1])

    def hinge(d):  # the loss whose gradient SVMOutput emits (L2-SVM, margin 1, coefficient 1)
        true = nd.one_hot(nd.array(label, dtype="float64"), 4, dtype="float64")
        return (nd.relu(1 - d) ** 2 * true + nd.relu(1 + d) ** 2 * (1 - true)).sum()

    x = nd.array(scores, dtype=scores.dtype)
    x.attach_grad()
    with mx.autograd.record():
        out = nd.SVMOutput(x, nd.array(label, dtype="float64"))
    out.backward()
    check_imperative_gradient(hinge, [scores])
    y = nd.array(scores, dtype=scores.dtype)
    y.attach_grad()
    with mx.autograd.record():
        loss = hinge(y)
    loss.backward()
    assert_almost_equal(x.grad.asnumpy(), y.grad.asnumpy())


def test_svm_output_inference_and_errors():
    ins, outs, done = infer_shapes("SVMOutput", {}, [(5, 3), None])
    assert done and ins[1] == (5,) and outs == [(5, 3)]
    ins, outs, done = infer_shapes("SVMOutput", {}, [None, None], [(5, 3)])
    assert done and ins == [(5, 3), (5,)]
    with pytest.raises(InferenceError, match="data must be 2-D"):
        infer_shapes("SVMOutput", {}, [(5, 3, 2), None])
    with pytest.raises(OperatorParamError, match="'margin'"):
        nd.SVMOutput(nd.ones((2, 2)), nd.zeros(2), margin="wide")
    assert mx.sym.SVMOutput(mx.sym.var("data"), name="svm").list_arguments() == ["data", "svm_label"]


# ---------------------------------------------------------------------------- IdentityAttachKLSparseReg
def test_kl_sparse_reg_updates_its_state_and_adds_the_penalty():
    rng = seeded_rng(7)
    x = rng.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
    sym = mx.sym.IdentityAttachKLSparseReg(
        mx.sym.var("data"), name="kl", sparseness_target=0.2, penalty=0.5, momentum=0.8
    )
    assert sym.list_arguments() == ["data"] and sym.list_auxiliary_states() == ["kl_moving_avg"]
    start = np.array([0.2, 0.3, 0.4], np.float32)
    state = nd.array(start, dtype=start.dtype)
    ex = sym.bind(
        mx.cpu(), {"data": nd.array(x, dtype=x.dtype)}, args_grad={"data": nd.zeros(x.shape)}, aux_states=[state]
    )
    out = ex.forward(is_train=True)[0]
    ex.backward(nd.ones(x.shape) * 2)
    rho_hat = 0.8 * start + 0.2 * x.mean(axis=0)
    assert_almost_equal(out.asnumpy(), x)
    assert_almost_equal(state.asnumpy(), rho_hat)
    want = 2 + 0.5 * (-0.2 / rho_hat + 0.8 / (1 - rho_hat))
    assert_almost_equal(ex.grad_dict["data"].asnumpy(), np.broadcast_to(want, x.shape))
    # inference leaves the state alone
    ex.forward(is_train=False)
    assert_almost_equal(state.asnumpy(), rho_hat)


def test_identity_layers_may_write_in_place():
    for name in ("SVMOutput", "IdentityAttachKLSparseReg"):
        op = mx.operator.get(name)
        assert op.inplace_option(op.parse_attrs({})) == [(0, 0)]


def test_kl_sparse_reg_gradient_req_and_inference():
    rng = seeded_rng(8)
    x = rng.uniform(0.1, 0.9, (3, 2, 2))
    state = nd.array([0.3, 0.6], dtype="float64")
    # with no penalty the gradient is the identity's (the penalty is not a derivative of the output)
    check_imperative_gradient(lambda d: nd.IdentityAttachKLSparseReg(d, state, penalty=0.0), [x])
    check_req("IdentityAttachKLSparseReg", [x.astype(np.float32), np.array([0.3, 0.6], np.float32)], is_train=False)
    ins, outs, done = infer_shapes("IdentityAttachKLSparseReg", {}, [(4, 7), None])
    assert done and ins[1] == (7,) and outs == [(4, 7)]
    with pytest.raises(InferenceError, match="at least 2 dimensions"):
        infer_shapes("IdentityAttachKLSparseReg", {}, [(4,), None])
    with pytest.raises(InferenceError, match="float16, float32 or float64"):
        infer_types("IdentityAttachKLSparseReg", {}, ["int32", None])
    with pytest.raises(OperatorParamError, match="'sparseness_target'"):
        nd.IdentityAttachKLSparseReg(nd.ones((2, 2)), nd.ones(2), sparseness_target=1.5)

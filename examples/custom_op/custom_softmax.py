"""A softmax output layer written in Python with ``mx.operator.CustomOp`` (MXNet 1.x's classic example).

``forward`` and ``backward`` use ordinary ``mx.nd`` operations; MXLab runs them on its
custom-op thread as an asynchronous engine operation. The script checks the operator
against NumPy, then trains a small classifier with it as the loss layer.

Run from anywhere: ``python examples/custom_op/custom_softmax.py``.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import framework as mx


class Softmax(mx.operator.CustomOp):
    """Softmax over the last axis; its gradient is (probabilities - one_hot(label))."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        e = mx.nd.exp(x - x.max(axis=1, keepdims=True))
        self.assign(out_data[0], req[0], e / e.sum(axis=1, keepdims=True))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1]
        prob = out_data[0]
        one_hot = mx.nd.one_hot(label, depth=prob.shape[1])
        self.assign(in_grad[0], req[0], (prob - one_hot) / prob.shape[0])
        self.assign(in_grad[1], req[1], mx.nd.zeros_like(label))


@mx.operator.register("example_softmax")
class SoftmaxProp(mx.operator.CustomOpProp):
    def __init__(self) -> None:
        super().__init__(need_top_grad=False)  # a loss layer: no gradient from above

    def list_arguments(self) -> list[str]:
        return ["data", "label"]

    def list_outputs(self) -> list[str]:
        return ["output"]

    def infer_shape(self, in_shape):
        data_shape = in_shape[0]
        return [data_shape, [data_shape[0]]], [data_shape], []

    def create_operator(self, ctx, shapes, dtypes):
        return Softmax()


def check_against_numpy() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    label = np.array([0, 2, 1, 2], dtype=np.float32)
    data = mx.nd.array(x)
    data.attach_grad()
    with mx.autograd.record():
        prob = mx.nd.Custom(data, mx.nd.array(label), op_type="example_softmax")
    prob.backward()
    expected = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(prob.asnumpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(data.grad.asnumpy(), (expected - np.eye(3)[label.astype(int)]) / 4, rtol=1e-5)
    print("forward and backward match NumPy")


def train() -> float:
    """Two well-separated blobs, a one-layer network, the custom softmax as the loss."""
    rng = np.random.default_rng(1)
    centers = np.array([[2.0, 2.0], [-2.0, -2.0]], dtype=np.float32)
    labels = rng.integers(0, 2, size=200)
    points = centers[labels] + rng.standard_normal((200, 2)).astype(np.float32) * 0.5
    train_iter = mx.io.NDArrayIter(points, labels.astype(np.float32), batch_size=20, shuffle=True)

    data, label = mx.sym.var("data"), mx.sym.var("softmax_label")
    fc = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    net = mx.sym.Custom(fc, label, op_type="example_softmax", name="softmax")

    module = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"], context=mx.cpu())
    module.fit(train_iter, num_epoch=5, optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    accuracy = dict(module.score(train_iter, "acc"))["accuracy"]
    print(f"training accuracy with the Python softmax: {accuracy:.3f}")
    return accuracy


def main() -> None:
    check_against_numpy()
    accuracy = train()
    if accuracy < 0.95:
        sys.exit(f"expected the separable blobs to be learned, got accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()

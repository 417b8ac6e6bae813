"""Load librelu_lib.so (``make relu_lib``, needs nvcc) and check my_relu on CPU and, if present, GPU.

Run from this directory: ``make relu_lib && python test_relu.py``.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import framework as mx
from framework import library


def check(ctx: mx.Context) -> None:
    data = np.array([[-2, -1], [1, 2]], dtype=np.float32)
    x = mx.nd.array(data, ctx=ctx)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.my_relu(x)
    y.backward()
    print(y)
    np.testing.assert_allclose(y.asnumpy(), np.maximum(data, 0))
    np.testing.assert_allclose(x.grad.asnumpy(), (data > 0).astype(np.float32))

    s = mx.sym.my_relu(mx.sym.Variable("x"))
    exe = s.bind(ctx=ctx, args={"x": x})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), np.maximum(data, 0))


def main() -> None:
    path = os.path.abspath(os.path.join(os.path.dirname(__file__), "librelu_lib.so"))
    if not os.path.exists(path):
        sys.exit(f"{path} not found: run `make relu_lib` first (needs nvcc)")
    library.load(path)
    print("--------start CPU compute---------")
    check(mx.cpu())
    if mx.backend.num_gpus() > 0:
        print("--------start GPU compute---------")
        check(mx.gpu(0))
    else:
        print("no GPU: skipped the GPU run")
    print("all checks passed")


if __name__ == "__main__":
    main()

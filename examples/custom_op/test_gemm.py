"""Load libgemm_lib.so (``make gemm_lib``) and check my_gemm / state_gemm against NumPy.

Run from this directory: ``make gemm_lib && python test_gemm.py``.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import framework as mx
from framework import library


def main() -> None:
    path = os.path.abspath(os.path.join(os.path.dirname(__file__), "libgemm_lib.so"))
    if not os.path.exists(path):
        sys.exit(f"{path} not found: run `make gemm_lib` first")
    library.load(path)

    a_np = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    b_np = np.array([[7], [8], [9]], dtype=np.float32)
    a, b = mx.nd.array(a_np), mx.nd.array(b_np)

    print("--------start ndarray compute---------")
    print(mx.nd.my_gemm(a, b))
    print(mx.nd.state_gemm(a, b, test_kw=100))
    np.testing.assert_allclose(mx.nd.my_gemm(a, b).asnumpy(), a_np @ b_np)

    print("--------start symbolic compute--------")
    s = mx.sym.Variable("s")
    t = mx.sym.Variable("t")
    c = mx.sym.my_gemm(s, t)
    d = mx.sym.state_gemm(s, t, test_kw=200)
    in_grad = [mx.nd.empty((2, 3)), mx.nd.empty((3, 1))]
    exe = c.bind(ctx=mx.cpu(), args={"s": a, "t": b}, args_grad=in_grad)
    exe2 = d.bind(ctx=mx.cpu(), args={"s": a, "t": b})
    out = exe.forward(is_train=True)[0]
    print(out)
    print(exe2.forward()[0])
    np.testing.assert_allclose(out.asnumpy(), a_np @ b_np)

    print("--------start backward compute--------")
    head = np.ones((2, 1), dtype=np.float32)
    exe.backward([mx.nd.array(head)])
    print(in_grad)
    np.testing.assert_allclose(in_grad[0].asnumpy(), head @ b_np.T)
    np.testing.assert_allclose(in_grad[1].asnumpy(), a_np.T @ head)

    print("--------start autograd compute--------")
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.state_gemm(a, b)
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), head @ b_np.T)
    print("all checks passed")


if __name__ == "__main__":
    main()

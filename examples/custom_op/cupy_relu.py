"""A GPU operator written in Python: a CuPy ``RawKernel`` inside an ``mx.operator.CustomOp``.

On a GPU context the forward launches a CUDA kernel (compiled by CuPy at first use) on
the raw CuPy arrays behind the NDArrays (``CustomOp.as_array``); on a CPU context the same
operator falls back to NumPy, so the script runs everywhere and uses the GPU when there
is one. The backward uses ordinary ``mx.nd`` operations.

Run from anywhere: ``python examples/custom_op/cupy_relu.py``.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import framework as mx
from framework import backend

RELU_KERNEL = r"""
extern "C" __global__ void relu(const float* x, float* y, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0 ? x[i] : 0;
}
"""


class RawReLU(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        if req[0] != "write":
            self.assign(out_data[0], req[0], mx.nd.relu(in_data[0]))  # the kernel only overwrites
            return
        ctx = in_data[0].context
        x, y = self.as_array(in_data[0]), self.as_array(out_data[0])
        xp = backend.array_module(ctx)  # cupy on a GPU, numpy on a CPU
        if ctx.device_type == "gpu":
            kernel = xp.RawKernel(RELU_KERNEL, "relu")
            kernel(((x.size + 255) // 256,), (256,), (x, y, np.int32(x.size)))
        else:
            xp.maximum(x, 0, out=y)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * (in_data[0] > 0))


@mx.operator.register("example_raw_relu")
class RawReLUProp(mx.operator.CustomOpProp):
    def infer_type(self, in_type):
        if np.dtype(in_type[0]) != np.float32:
            raise TypeError(f"example_raw_relu: the kernel takes float32, got {np.dtype(in_type[0]).name}")
        return super().infer_type(in_type)

    def create_operator(self, ctx, shapes, dtypes):
        return RawReLU()


def check(ctx: mx.Context) -> None:
    data = np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32)
    x = mx.nd.array(data, ctx=ctx)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="example_raw_relu")
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), np.maximum(data, 0))
    np.testing.assert_allclose(x.grad.asnumpy(), (data > 0).astype(np.float32))

    net = mx.sym.Custom(mx.sym.var("x"), op_type="example_raw_relu")
    out = net.bind(ctx, {"x": x}).forward()[0]
    np.testing.assert_allclose(out.asnumpy(), np.maximum(data, 0))
    print(f"example_raw_relu matches NumPy on {ctx}")


def main() -> None:
    check(mx.cpu())
    if mx.num_gpus() > 0:
        check(mx.gpu(0))
    else:
        print("no GPU: the CuPy kernel path was not run")


if __name__ == "__main__":
    main()

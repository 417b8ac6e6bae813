"""Record what MXNet 1.9.1's mx.mon.Monitor reports for a small net (tests/test_monitor.py compares).

Run with an interpreter that has mxnet 1.9.1, from the repository root::

    MXNET_SUBGRAPH_BACKEND=NONE python tests/data/mxnet_1_9_1/module/make_monitor_reference.py \
        > tests/data/mxnet_1_9_1/module/monitor_reference.json

(``MXNET_SUBGRAPH_BACKEND=NONE``: otherwise MKL-DNN fuses fc1 and relu1 into one node and the
monitor reports the fused node's name.)

It works unchanged with ``import framework as mx`` (the test runs the same function on MXLab).
"""

from __future__ import annotations

import json
import sys

import numpy as np


def network(mx):
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=2, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def values(shape, offset):
    """Fixed, sign-mixed numbers (no generator, so both frameworks see the same ones)."""
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + offset) * 0.9).reshape(shape).astype(np.float32)


def run(mx, monitor_all):
    net = network(mx)
    exe = net.simple_bind(mx.cpu(), grad_req="null", data=(3, 5), softmax_label=(3,))
    for i, name in enumerate(net.list_arguments()):
        if name == "softmax_label":
            exe.arg_dict[name][:] = np.array([0, 1, 0], dtype=np.float32)
        else:
            exe.arg_dict[name][:] = values(exe.arg_dict[name].shape, i)
    mon = mx.mon.Monitor(1, monitor_all=monitor_all, sort=False)
    mon.install(exe)
    mon.tic()
    exe.forward(is_train=False)
    rows = mon.toc()
    return [[int(step), str(name), [float(v) for v in text.split()]] for step, name, text in rows]


def main():
    import mxnet as mx  # noqa: PLC0415 - the peer interpreter only

    json.dump({"mxnet": mx.__version__, "outputs": run(mx, False), "all": run(mx, True)}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

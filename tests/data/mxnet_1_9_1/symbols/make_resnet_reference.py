"""Reference outputs of MXNet 1.9.1 for ResNet-18 v1 with deterministic parameters.

The trained parameters would be 45 MB, so none are stored: every argument and auxiliary
state is drawn from ``numpy.random.RandomState(seed)`` in sorted-name order (the legacy
generator gives the same numbers in every NumPy version), and the test regenerates them
the same way. Run with an interpreter that has mxnet 1.9.1:

    mxvenv/bin/python tests/data/mxnet_1_9_1/symbols/make_resnet_reference.py

It writes ``resnet18_v1-reference.nd``: the input and MXNet's inference output.
"""

import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from resnet_params import INPUT_SHAPE, deterministic_input, deterministic_params  # noqa: E402


def main() -> None:
    net = mx.sym.load(os.path.join(HERE, "resnet18_v1-symbol.json"))
    arg_shapes, _, aux_shapes = net.infer_shape(data=INPUT_SHAPE)
    arg_shapes = dict(zip(net.list_arguments(), arg_shapes, strict=True))
    aux_shapes = dict(zip(net.list_auxiliary_states(), aux_shapes, strict=True))
    args, aux = deterministic_params(arg_shapes, aux_shapes)
    data = deterministic_input()
    arrays = {k: mx.nd.array(v) for k, v in args.items()}
    arrays["data"] = mx.nd.array(data)
    executor = net.bind(mx.cpu(), arrays, aux_states={k: mx.nd.array(v) for k, v in aux.items()}, grad_req="null")
    output = executor.forward(is_train=False)[0].asnumpy()
    mx.nd.save(
        os.path.join(HERE, "resnet18_v1-reference.nd"), {"data": mx.nd.array(data), "output": mx.nd.array(output)}
    )
    print("output", output.shape, float(np.abs(output).mean()))


if __name__ == "__main__":
    main()

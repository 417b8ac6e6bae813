"""Write the reference symbol files in this folder with real MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1`` (and ``numpy<1.24``)::

    /work/mxvenv/bin/python tests/data/mxnet_1_9_1/symbols/make_symbols.py

It writes, next to this script:

* ``mlp-symbol.json`` / ``mlp-0000.params``: a small MNIST-shaped MLP built with ``mx.sym``
  (784 -> FullyConnected 32 -> relu -> FullyConnected 16 -> relu -> FullyConnected 10 ->
  SoftmaxOutput), saved with ``mx.model.save_checkpoint`` (``arg:``/``aux:`` keys);
* ``lenet-symbol.json`` / ``lenet-0000.params``: LeNet (two Convolution + tanh + max Pooling
  stages, Flatten, two FullyConnected, SoftmaxOutput), narrowed (8 and 16 filters, 64 hidden
  units) to keep the files small;
* ``mlp-reference.nd`` / ``lenet-reference.nd``: ``mx.nd.save`` of a dict holding the inputs
  (``data``, ``softmax_label``), the forward output in inference mode (``output``), the output
  in training mode (``train_output``) and, after ``backward()``, the gradient of every argument
  (``grad:<name>``), all computed by MXNet's executor with the parameters of the ``.params``
  file. An MXLab executor bound to the same parameters must reproduce them;
* ``resnet18_v1-symbol.json``: ``mx.gluon.model_zoo.vision.resnet18_v1()`` initialized
  (no pretrained download), hybridized, run once on a (1, 3, 224, 224) batch and exported
  (its ~45 MB ``.params`` file is not kept);
* ``composed.json``: for each symbol of ``composed_nets.build`` (built with ``mx.sym``), its
  ``tojson()``, argument / output / auxiliary names, ``attr_dict()``, ``debug_str()`` and
  ``infer_shape`` result, so that MXLab can be checked to build the very same graphs;
* ``expected.json``: for each network, MXNet's ``list_arguments``, ``list_outputs``,
  ``list_auxiliary_states``, ``infer_shape`` and ``infer_type`` results for the input shapes
  used here, so that the tests need no MXNet.

The tests in tests/symbol/ read these files; they never import this script.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")  # plain operators, no MKLDNN graph fusion

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20240501


def mlp() -> mx.sym.Symbol:
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data=data, name="fc1", num_hidden=32)
    act1 = mx.sym.Activation(data=fc1, name="relu1", act_type="relu")
    fc2 = mx.sym.FullyConnected(data=act1, name="fc2", num_hidden=16)
    act2 = mx.sym.Activation(data=fc2, name="relu2", act_type="relu")
    fc3 = mx.sym.FullyConnected(data=act2, name="fc3", num_hidden=10)
    return mx.sym.SoftmaxOutput(data=fc3, name="softmax")


def lenet() -> mx.sym.Symbol:
    data = mx.sym.Variable("data")
    conv1 = mx.sym.Convolution(data=data, kernel=(5, 5), num_filter=8, name="conv1")
    tanh1 = mx.sym.Activation(data=conv1, act_type="tanh", name="tanh1")
    pool1 = mx.sym.Pooling(data=tanh1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    conv2 = mx.sym.Convolution(data=pool1, kernel=(5, 5), num_filter=16, name="conv2")
    tanh2 = mx.sym.Activation(data=conv2, act_type="tanh", name="tanh2")
    pool2 = mx.sym.Pooling(data=tanh2, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    flat = mx.sym.Flatten(data=pool2, name="flatten")
    fc1 = mx.sym.FullyConnected(data=flat, num_hidden=64, name="fc1")
    tanh3 = mx.sym.Activation(data=fc1, act_type="tanh", name="tanh3")
    fc2 = mx.sym.FullyConnected(data=tanh3, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(data=fc2, name="softmax")


def describe(sym: mx.sym.Symbol, shapes: dict) -> dict:
    """What MXNet says about the symbol: names, inferred shapes and types."""
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**shapes)
    arg_types, out_types, aux_types = sym.infer_type(data="float32")
    return {
        "input_shapes": {k: list(v) for k, v in shapes.items()},
        "arguments": sym.list_arguments(),
        "outputs": sym.list_outputs(),
        "auxiliary_states": sym.list_auxiliary_states(),
        "inputs": sym.list_inputs(),
        "arg_shapes": [list(s) for s in arg_shapes],
        "out_shapes": [list(s) for s in out_shapes],
        "aux_shapes": [list(s) for s in aux_shapes],
        "arg_types": [np.dtype(t).name for t in arg_types],
        "out_types": [np.dtype(t).name for t in out_types],
        "aux_types": [np.dtype(t).name for t in aux_types],
        "num_internals": len(sym.get_internals().list_outputs()),
    }


def checkpoint(prefix: str, sym: mx.sym.Symbol, data_shape: tuple, rng: np.random.Generator) -> dict:
    """Save symbol and parameters, then the executor's outputs and gradients for one batch."""
    batch = data_shape[0]
    shapes = {"data": data_shape, "softmax_label": (batch,)}
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    arg_params, aux_params = {}, {}
    for name, shape in zip(sym.list_arguments(), arg_shapes, strict=True):
        if name not in shapes:
            arg_params[name] = mx.nd.array(rng.uniform(-0.5, 0.5, shape).astype(np.float32))
    for name, shape in zip(sym.list_auxiliary_states(), aux_shapes, strict=True):
        aux_params[name] = mx.nd.array(rng.uniform(0.5, 1.5, shape).astype(np.float32))
    mx.model.save_checkpoint(os.path.join(HERE, prefix), 0, sym, arg_params, aux_params)

    data = mx.nd.array(rng.standard_normal(data_shape).astype(np.float32))
    label = mx.nd.array(rng.integers(0, 10, batch).astype(np.float32))
    args = dict(arg_params, data=data, softmax_label=label)
    grads = {name: mx.nd.zeros(arr.shape) for name, arr in args.items()}
    exe = sym.bind(mx.cpu(), args=args, args_grad=grads, aux_states=aux_params, grad_req="write")
    output = exe.forward(is_train=False)[0].copy()
    train_output = exe.forward(is_train=True)[0].copy()
    exe.backward()
    reference = {"data": data, "softmax_label": label, "output": output, "train_output": train_output}
    for name, grad in exe.grad_dict.items():
        reference[f"grad:{name}"] = grad.copy()
    mx.nd.save(os.path.join(HERE, f"{prefix}-reference.nd"), reference)
    return describe(sym, shapes)


def resnet18() -> dict:
    """Export ResNet-18 v1 from the Gluon model zoo (random weights: nothing is downloaded)."""
    net = mx.gluon.model_zoo.vision.resnet18_v1()
    net.initialize()
    net.hybridize()
    net(mx.nd.zeros((1, 3, 224, 224)))
    prefix = os.path.join(HERE, "resnet18_v1")
    net.export(prefix)
    os.remove(prefix + "-0000.params")  # ~45 MB: not kept
    sym = mx.sym.load(prefix + "-symbol.json")
    return describe(sym, {"data": (1, 3, 224, 224)})


def composed() -> dict:
    """What MXNet says about the symbols of composed_nets.py."""
    sys.path.insert(0, HERE)
    from composed_nets import build  # noqa: PLC0415 - importable only once HERE is on sys.path

    result = {}
    for name, (sym, shapes) in build(mx.sym, mx.name.NameManager).items():
        entry = {
            "json": sym.tojson(),
            "arguments": sym.list_arguments(),
            "outputs": sym.list_outputs(),
            "auxiliary_states": sym.list_auxiliary_states(),
            "attr_dict": sym.attr_dict(),
            "debug_str": sym.debug_str(),
        }
        if shapes is not None:
            args, outs, aux = sym.infer_shape_partial(**shapes)
            entry["infer_shape"] = {"shapes": shapes, "args": args, "outs": outs, "aux": aux}
        result[name] = entry
    return result


def main() -> None:
    rng = np.random.default_rng(SEED)
    mx.random.seed(SEED)
    expected = {
        "mlp": checkpoint("mlp", mlp(), (4, 784), rng),
        "lenet": checkpoint("lenet", lenet(), (2, 1, 28, 28), rng),
        "resnet18_v1": resnet18(),
        "mxnet_version": mx.__version__,
    }
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "composed.json"), "w") as f:
        json.dump(composed(), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

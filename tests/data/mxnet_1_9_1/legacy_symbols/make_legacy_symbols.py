"""Record how MXNet 1.9.1 upgrades, binds and runs symbol JSON files in older MXNet layouts.

The ``*-symbol.json`` files next to this script were written by hand in the layouts older
MXNet versions saved (no MXNet of those versions is installed here):

* ``v0_8_convnet``: before 0.9: ``param``/``attr`` instead of ``attrs``, two-element input
  entries, ``backward_source_id``, no ``mxnet_version``; plain hidden keys (``lr_mult``,
  ``ctx_group``) and input-prefixed ones (``bias_wd_mult``, ``weight_lr_mult``); a
  BatchNorm without its auxiliary states; ``Softmax`` (the old name of SoftmaxOutput);
* ``v0_9_3_bn``: version 903, ``attr`` per node, a BatchNorm whose moving statistics exist
  but have no ``__init__`` (added from 0.9.4 on), an ``argmax`` with ``axis=-1`` (which meant
  "no axis" before 0.9.5), two heads;
* ``v1_0_mlp``: version 10000, ``attrs`` per node, some nodes without ``attrs``, plain
  ``lr_mult``/``wd_mult`` on a variable (hidden keys are renamed for every older version).

Run with an interpreter that has mxnet 1.9.1, from the repository root::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/legacy_symbols/make_legacy_symbols.py

It writes ``expected.json``: per file, what ``run(mx, name)`` returned with MXNet. ``run``
works unchanged on MXLab; tests/symbol/test_symbol_json_legacy.py compares the two.
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
#: The given input shapes of each file (the rest is inferred).
SHAPES = {
    "v0_8_convnet": {"data": (2, 1, 6, 6)},
    "v0_9_3_bn": {"data": (3, 4)},
    "v1_0_mlp": {"data": (4, 3), "label": (4, 2)},
}


def values(shape, offset):
    """Fixed, sign-mixed numbers (no generator, so both frameworks see the same ones)."""
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + offset) * 0.8).reshape(shape).astype(np.float32)


def _floats(array) -> list:
    return [float(v) if math.isfinite(v) else repr(float(v)) for v in array.asnumpy().astype(np.float64).ravel()]


def run(mx, name):
    """Load ``<name>-symbol.json`` and report its upgraded form and its outputs on fixed inputs."""
    net = mx.sym.load(os.path.join(HERE, f"{name}-symbol.json"))
    arg_shapes, out_shapes, aux_shapes = net.infer_shape(**SHAPES[name])
    args = {
        arg: mx.nd.array(values(shape, i))
        for i, (arg, shape) in enumerate(zip(net.list_arguments(), arg_shapes, strict=True))
    }
    if "softmax_label" in args:  # class indices
        args["softmax_label"] = mx.nd.array(np.arange(arg_shapes[-1][0]) % 3)
    aux = {
        aux_name: mx.nd.array(np.abs(values(shape, 10 + i)) + (0.5 if aux_name.endswith("var") else 0.0))
        for i, (aux_name, shape) in enumerate(zip(net.list_auxiliary_states(), aux_shapes, strict=True))
    }
    grads = {arg: mx.nd.zeros(array.shape) for arg, array in args.items()}
    exe = net.bind(mx.cpu(), args, args_grad=grads, aux_states=aux)
    inference = [_floats(out) for out in exe.forward(is_train=False)]
    training = [_floats(out) for out in exe.forward(is_train=True)]
    exe.backward([mx.nd.ones(out.shape) for out in exe.outputs])  # loss layers ignore their head gradient
    return {
        "arguments": net.list_arguments(),
        "auxiliary_states": net.list_auxiliary_states(),
        "outputs": net.list_outputs(),
        "attr_dict": net.attr_dict(),
        "tojson": json.loads(net.tojson()),
        "shapes": [[list(s) for s in arg_shapes], [list(s) for s in out_shapes], [list(s) for s in aux_shapes]],
        "inference": inference,
        "training": training,
        "gradients": {arg: _floats(grad) for arg, grad in sorted(grads.items())},
        "aux_after_training": {k: _floats(v) for k, v in sorted(aux.items())},
    }


def main() -> None:
    import mxnet as mx  # noqa: PLC0415 - the peer interpreter only

    expected = {"mxnet_version": mx.__version__}
    for name in SHAPES:
        expected[name] = run(mx, name)
    with open(os.path.join(HERE, "expected.json"), "w") as stream:
        json.dump(expected, stream, indent=1, sort_keys=True)
        stream.write("\n")
    sys.stdout.write(f"wrote {os.path.join(HERE, 'expected.json')}\n")


if __name__ == "__main__":
    main()

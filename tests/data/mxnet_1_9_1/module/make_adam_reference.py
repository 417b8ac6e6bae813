"""Record MXNet 1.9.1's Adam or RMSProp trajectory on a small MLP (tests/training/test_adam_parity.py compares).

Run with an interpreter that has mxnet 1.9.1, from the repository root::

    python tests/data/mxnet_1_9_1/module/make_adam_reference.py \
        > tests/data/mxnet_1_9_1/module/adam_reference.json
    python tests/data/mxnet_1_9_1/module/make_adam_reference.py rmsprop \
        > tests/data/mxnet_1_9_1/module/rmsprop_reference.json
    python tests/data/mxnet_1_9_1/module/make_adam_reference.py rmsprop_centered \
        > tests/data/mxnet_1_9_1/module/rmsprop_centered_reference.json

It trains the same net from the same parameters on the same batches on each of MXNet's CPU
paths (oneDNN, the default; its plain C++ kernels, ``MXNET_MKLDNN_ENABLED=0``; and those on
one OpenMP thread), each in a child process, and records the parameters after selected
steps. The paths differ only in the order of floating-point reductions, so their distance
is MXNet's own spread: how far a faithful reimplementation may drift. ``run(mx)`` works unchanged on MXLab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

#: The optimizers a reference can be recorded for: name -> (optimizer, optimizer_params).
OPTIMIZERS = {
    "adam": ("adam", {"learning_rate": 0.01}),
    "rmsprop": ("rmsprop", {"learning_rate": 0.002}),
    "rmsprop_centered": ("rmsprop", {"learning_rate": 0.002, "centered": True}),
}
STEPS = 120
RECORD = (1, 2, 5, 10, 20, 40, 80, 120)
BATCH, FEATURES, HIDDEN, CLASSES = 16, 10, 32, 4


def values(shape, offset, scale):
    """Fixed, sign-mixed numbers (no generator, so both frameworks see the same ones)."""
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 1.3 + offset) * scale).reshape(shape).astype(np.float32)


def batches():
    for step in range(STEPS):
        data = values((BATCH, FEATURES), 0.1 * step, 1.0)
        label = (np.arange(BATCH) * 7 + step) % CLASSES
        yield data, label.astype(np.float32)


def network(mx):
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=HIDDEN, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=CLASSES, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def initial_params():
    return {
        "fc1_weight": values((HIDDEN, FEATURES), 0.5, 0.3),
        "fc1_bias": np.zeros(HIDDEN, np.float32),
        "fc2_weight": values((CLASSES, HIDDEN), 1.5, 0.3),
        "fc2_bias": np.zeros(CLASSES, np.float32),
    }


def run(mx, optimizer="adam"):
    """The parameters (as lists) after each step in RECORD, training with OPTIMIZERS[optimizer]."""
    name, optimizer_params = OPTIMIZERS[optimizer]
    mod = mx.mod.Module(network(mx), context=mx.cpu())
    mod.bind(data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))])
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in initial_params().items()}, aux_params={})
    mod.init_optimizer(optimizer=name, optimizer_params=dict(optimizer_params))
    recorded = {}
    for step, (data, label) in enumerate(batches(), start=1):
        batch = mx.io.DataBatch(data=[mx.nd.array(data)], label=[mx.nd.array(label)])
        mod.forward_backward(batch)
        mod.update()
        if step in RECORD:
            params, _ = mod.get_params()
            recorded[str(step)] = {k: v.asnumpy().astype(float).tolist() for k, v in sorted(params.items())}
    return recorded


def main():
    optimizer = sys.argv[1] if len(sys.argv) > 1 else "adam"
    if os.environ.get("ADAM_REFERENCE_CHILD"):
        import mxnet as mx  # noqa: PLC0415 - the peer interpreter only

        json.dump(run(mx, optimizer), sys.stdout)
        return
    paths = {}
    paths_env = (
        ("onednn", {}),
        ("plain", {"MXNET_MKLDNN_ENABLED": "0"}),
        ("plain_one_thread", {"MXNET_MKLDNN_ENABLED": "0", "OMP_NUM_THREADS": "1", "MXNET_USE_OPERATOR_TUNING": "0"}),
    )
    for label, extra in paths_env:
        env = {**os.environ, "ADAM_REFERENCE_CHILD": "1", "MXNET_SUBGRAPH_BACKEND": "NONE", **extra}
        done = subprocess.run(
            [sys.executable, __file__, optimizer], env=env, capture_output=True, text=True, check=True
        )
        paths[label] = json.loads(done.stdout)
    import mxnet as mx  # noqa: PLC0415 - the peer interpreter only

    record = {"mxnet": mx.__version__, "optimizer": optimizer, "steps": list(RECORD), "paths": paths}
    json.dump(record, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

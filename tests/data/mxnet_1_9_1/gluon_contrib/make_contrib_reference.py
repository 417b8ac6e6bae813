"""Write ``reference.npz`` and ``deformable.params`` in this folder with real MXNet 1.9.1's ``gluon.contrib``.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/gluon_contrib/make_contrib_reference.py

Each case of ``CASES`` builds a block from its code string, runs it once to settle deferred shapes,
then gives every parameter (in sorted name order) values drawn from ``np.random.RandomState(11)``,
uniform in [-0.5, 0.5] as float32 (``offset_*`` parameters scaled by 0.2, so deformable sampling
points move by fractions of a pixel), and records, under ``<case>/...``:
``x`` (the input, from the same generator), ``param/<name>`` for each parameter (names as MXNet
gives them), ``out/<i>`` for the forward outputs, and for ``train`` cases ``grad_x`` (the input's
gradient for the head ``x``-independent weights ``head``) and the running statistics afterwards.
Cells are unrolled over the input's axis 1 (layout NTC) with merged outputs; their outputs are
``[outputs, *final_states]``.
It also writes ``signatures.json``: the constructor and public method signatures of the classes
of ``contrib.cnn``, ``contrib.data`` and ``contrib.estimator``, which the API listing of
tests/data/mxnet_1_9_1/api does not cover. MXNet 1.9.1 computes ModulatedDeformableConvolution on
GPU only, so it has no case here. tests/gluon/test_contrib_*.py read the file; they never import MXNet.
"""

from __future__ import annotations

import inspect
import json
import os

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")

import mxnet as mx
import numpy as np
from mxnet.gluon import contrib  # also used by the CASES strings

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (code building the block, input shape, how to run it)
CASES = {
    "pixel_shuffle_1d": ("contrib.nn.PixelShuffle1D(3)", (2, 6, 4), "block"),
    "pixel_shuffle_2d": ("contrib.nn.PixelShuffle2D((2, 3))", (2, 12, 3, 4), "block"),
    "pixel_shuffle_3d": ("contrib.nn.PixelShuffle3D((2, 1, 2))", (1, 8, 2, 3, 2), "block"),
    "sync_batch_norm": ("contrib.nn.SyncBatchNorm(in_channels=3, num_devices=1, prefix='sbn_')", (4, 3, 5, 5), "train"),
    "deformable": (
        "contrib.cnn.DeformableConvolution(4, kernel_size=3, padding=1, in_channels=3, prefix='dc_')",
        (2, 3, 6, 6),
        "train",
    ),
    "conv2d_lstm": (
        "contrib.rnn.Conv2DLSTMCell((2, 5, 5), 3, i2h_kernel=3, h2h_kernel=3, i2h_pad=1, prefix='c2l_')",
        (2, 3, 2, 5, 5),
        "cell",
    ),
    "conv1d_gru": (
        "contrib.rnn.Conv1DGRUCell((2, 7), 3, i2h_kernel=3, h2h_kernel=5, prefix='c1g_')",
        (2, 3, 2, 7),
        "cell",
    ),
    "conv3d_rnn": (
        "contrib.rnn.Conv3DRNNCell((2, 3, 3, 3), 2, i2h_kernel=1, h2h_kernel=3, activation='relu', prefix='c3r_')",
        (2, 2, 2, 3, 3, 3),
        "cell",
    ),
    "lstmp": ("contrib.rnn.LSTMPCell(5, 3, input_size=4, prefix='lp_')", (2, 3, 4), "cell"),
}


def run(block, x, how):
    """One case's outputs; tests/gluon/test_contrib_reference.py compiles this from source (only ``mx`` bound)."""
    if how == "cell":
        outputs, states = block.unroll(x.shape[1], x, layout="NTC", merge_outputs=True)
        return [outputs, *states]
    if how == "train":
        with mx.autograd.record():
            out = block(x)
        return [out]
    return [block(x)]


SIGNATURE_MODULES = ("cnn", "data", "estimator")


def signatures():
    """``{"<module>.<Class>": {"__init__": "(...)", "<method>": "(self, ...)"}}`` for the public classes."""
    found = {}
    for module_name in SIGNATURE_MODULES:
        module = getattr(contrib, module_name)
        for name in sorted(dir(module)):
            cls = getattr(module, name)
            if name.startswith("_") or not inspect.isclass(cls):
                continue
            entry = {"__init__": str(inspect.signature(cls))}
            for member, value in vars(cls).items():
                if not member.startswith("_") and inspect.isfunction(value):
                    entry[member] = str(inspect.signature(value))
            found[f"{module_name}.{name}"] = entry
    return found


def main():
    rng = np.random.RandomState(11)
    arrays = {}
    for case, (code, shape, how) in CASES.items():
        block = eval(code)  # the fixed strings of CASES
        block.initialize()
        x = mx.nd.array(rng.uniform(-1, 1, shape).astype(np.float32))
        run(block, x, "block" if how == "train" else how)  # settle deferred shapes
        params = block.collect_params()
        for name in sorted(params.keys()):
            scale = 0.2 if "offset" in name else 1.0
            value = (rng.uniform(-0.5, 0.5, params[name].shape) * scale).astype(np.float32)
            if name.endswith("running_var"):
                value = np.abs(value) + 0.5
            params[name].set_data(mx.nd.array(value))
            arrays[f"{case}/param/{name}"] = value
        arrays[f"{case}/x"] = x.asnumpy()
        if how == "train":
            x.attach_grad()
            head = rng.uniform(-1, 1, run(block, x, "block")[0].shape).astype(np.float32)
            with mx.autograd.record():
                out = block(x)
                loss = (out * mx.nd.array(head)).sum()
            loss.backward()
            arrays[f"{case}/head"] = head
            arrays[f"{case}/grad_x"] = x.grad.asnumpy()
            outputs = [out]
            for name in sorted(params.keys()):
                if name.endswith(("running_mean", "running_var")):
                    arrays[f"{case}/after/{name}"] = params[name].data().asnumpy()
        else:
            outputs = run(block, x, how)
        for i, out in enumerate(outputs):
            arrays[f"{case}/out/{i}"] = out.asnumpy()
        if case == "deformable":
            block.save_parameters(os.path.join(HERE, "deformable.params"))
    np.savez_compressed(os.path.join(HERE, "reference.npz"), **arrays)
    with open(os.path.join(HERE, "signatures.json"), "w", encoding="utf-8") as handle:
        json.dump(signatures(), handle, indent=1, sort_keys=True)
        handle.write("\n")
    print(f"wrote {len(arrays)} arrays for {len(CASES)} cases")


if __name__ == "__main__":
    main()

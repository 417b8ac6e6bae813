"""Write the Module checkpoint references in this folder with real MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/mxvenv/bin/python tests/data/mxnet_1_9_1/module/make_module_files.py

It trains a small MLP with BatchNorm (so the checkpoint holds ``aux:`` entries) with
``mx.mod.Module.fit`` for 3 epochs on fixed random data, saving a checkpoint after every
epoch with ``mx.callback.do_checkpoint``, and writes:

* ``bn_mlp-symbol.json`` and ``bn_mlp-0003.params`` (the files of the last epoch; the
  earlier epochs' files are removed);
* ``bn_mlp-reference.nd``: ``mx.nd.save`` of ``data`` (10 x 6 inputs) and ``output``, what
  ``Module.load("bn_mlp", 3).predict`` returns for them (batch 4: the last batch is padded,
  the padding dropped).

tests/module/test_model_files.py reads these files; it never imports MXNet.
"""

from __future__ import annotations

import os

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")  # plain operators, no MKLDNN graph fusion

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def bn_mlp() -> mx.sym.Symbol:
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    bn1 = mx.sym.BatchNorm(fc1, name="bn1")
    act1 = mx.sym.Activation(bn1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act1, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def main() -> None:
    mx.random.seed(1)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 6)).astype(np.float32)
    y = rng.integers(0, 3, 40).astype(np.float32)
    prefix = os.path.join(HERE, "bn_mlp")
    mod = mx.mod.Module(bn_mlp(), context=mx.cpu())
    mod.fit(
        mx.io.NDArrayIter(x, y, batch_size=8),
        num_epoch=3,
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        initializer=mx.init.Xavier(),
        epoch_end_callback=mx.callback.do_checkpoint(prefix),
    )
    for epoch in (1, 2):
        os.remove(f"{prefix}-{epoch:04d}.params")
    data = rng.standard_normal((10, 6)).astype(np.float32)
    loaded = mx.mod.Module.load(prefix, 3, context=mx.cpu())
    loaded.bind(data_shapes=[("data", (4, 6))], for_training=False)
    output = loaded.predict(mx.io.NDArrayIter(data, batch_size=4))
    mx.nd.save(os.path.join(HERE, "bn_mlp-reference.nd"), {"data": mx.nd.array(data), "output": output})


if __name__ == "__main__":
    main()

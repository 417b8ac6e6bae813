"""Record MXNet 1.9.1's outputs of zoo networks with seeded weights, to ``model_zoo_outputs.nd``.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/gluon/make_model_zoo_outputs.py

Names and shapes alone (``model_zoo_names.json``) do not show that the branches of a block are
concatenated in the same order or pooled alike; the outputs do. For each network of
:data:`NETWORKS`, :func:`seeded_network` builds it with 10 classes and gives every parameter
values from one seeded generator in name order (running variances positive); the file holds
the output for :func:`seeded_input` (inference: BatchNorm uses the running statistics).
tests/gluon/test_model_zoo.py rebuilds the same with MXLab and compares; it never imports MXNet.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, "model_zoo_outputs.nd")
#: network name -> input shape
NETWORKS = {"inceptionv3": (1, 3, 299, 299)}


def seeded_network(mx: Any, name: str) -> Any:
    with mx.name.NameManager():
        net = mx.gluon.model_zoo.vision.get_model(name, classes=10)
    net.initialize()
    net(mx.nd.zeros(NETWORKS[name]))  # shapes inferred, parameters allocated
    rng = np.random.default_rng(5)
    for key, param in sorted(net.collect_params().items()):
        values = rng.standard_normal(param.shape).astype(np.float32)
        if key.endswith("running_var"):
            values = np.abs(values) + 0.5
        elif key.endswith("weight"):  # keep activations of the deep network in a sane range
            values *= np.sqrt(2.0 / max(1, int(np.prod(param.shape[1:]))))
        param.set_data(mx.nd.array(values))
    return net


def seeded_input(name: str) -> np.ndarray:
    return np.random.default_rng(6).uniform(-1, 1, size=NETWORKS[name]).astype(np.float32)


def main() -> None:
    import mxnet as mx  # noqa: PLC0415 - only this script, run by the peer interpreter, has mxnet

    outputs = {name: seeded_network(mx, name)(mx.nd.array(seeded_input(name))) for name in NETWORKS}
    mx.nd.save(OUTPUT, outputs)
    print(f"wrote {OUTPUT}: {sorted(outputs)}")


if __name__ == "__main__":
    main()

"""Write optimizer states pickled by real MXNet 1.9.1, for tests/module/test_mxnet_optimizer_states.py.

Run with an interpreter that has ``mxnet==1.9.1``::

    .peers/mxvenv/bin/python tests/data/mxnet_1_9_1/module/make_optimizer_states.py [folder]

* ``sgd_fc-0001.params``, ``sgd_fc-symbol.json``, ``sgd_fc-0001.states``: a Module (one
  FullyConnected layer, SoftmaxOutput, SGD with momentum) after two updates on fixed data,
  saved with ``save_checkpoint(..., save_optimizer_states=True)``: its ``.states`` file is
  MXNet's pickle of the momenta;
* ``adam_dense.states``: a Gluon Trainer (Adam) after one step, ``save_states``: the states
  and the optimizer pickled together;
* ``optimizer_states_reference.json``: the momenta and the Adam states as numbers, and the
  Adam optimizer's update counts.
"""

from __future__ import annotations

import json
import os
import pickle
import sys

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")

import mxnet as mx
import numpy as np

HERE = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def module_states() -> dict:
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc"), name="softmax")
    mod = mx.mod.Module(net)
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params(mx.init.Constant(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    batch = mx.io.DataBatch([mx.nd.array(np.arange(20).reshape(4, 5) / 20)], [mx.nd.array([0, 1, 2, 1])])
    for _ in range(2):
        mod.forward_backward(batch)
        mod.update()
    prefix = os.path.join(HERE, "sgd_fc")
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    with open(prefix + "-0001.states", "rb") as f:
        states = pickle.loads(f.read())
    return {str(k): v.asnumpy().tolist() for k, v in states.items()}


def trainer_states() -> dict:
    dense = mx.gluon.nn.Dense(2, in_units=3)
    dense.initialize(mx.init.Constant(0.2))
    trainer = mx.gluon.Trainer(dense.collect_params(), "adam", {"learning_rate": 0.01})
    with mx.autograd.record():
        loss = dense(mx.nd.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])).sum()
    loss.backward()
    trainer.step(2)
    trainer.save_states(os.path.join(HERE, "adam_dense.states"))
    states = trainer._updaters[0].states
    opt = trainer._optimizer
    return {
        "states": {str(k): [a.asnumpy().tolist() for a in v] for k, v in states.items()},
        "num_update": opt.num_update,
        "index_update_count": {str(k): v for k, v in opt._index_update_count.items()},
    }


def main() -> None:
    reference = {"mxnet": mx.__version__, "sgd_momenta": module_states(), "adam": trainer_states()}
    with open(os.path.join(HERE, "optimizer_states_reference.json"), "w", encoding="utf-8") as f:
        json.dump(reference, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

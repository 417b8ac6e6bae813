"""Optimizer states pickled by MXNet 1.9.1 load into MXLab (tests/data/mxnet_1_9_1/module/make_optimizer_states.py).

A Module checkpoint's ``.states`` file and a Gluon Trainer's ``save_states`` are Python pickles
of MXNet's own classes; MXLab reads them without MXNet installed (framework/optimizer/updater.py).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework.optimizer import OptimizerError

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "module"
REFERENCE = json.loads((DATA / "optimizer_states_reference.json").read_text())


def _module_resumed(folder: Path) -> mx.mod.Module:
    module = mx.mod.Module.load(str(folder / "sgd_fc"), 1, load_optimizer_states=True)
    module.bind([("data", (4, 5))], [("softmax_label", (4,))])
    module.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    return module


def _trainer_resumed(folder: Path) -> mx.gluon.Trainer:
    dense = mx.gluon.nn.Dense(2, in_units=3)
    dense.initialize(mx.init.Constant(0.2))
    trainer = mx.gluon.Trainer(dense.collect_params(), "adam", {"learning_rate": 0.01})
    trainer.load_states(str(folder / "adam_dense.states"))
    return trainer


def _check(folder: Path, reference: dict) -> None:
    module = _module_resumed(folder)
    momenta = {str(k): v.asnumpy() for k, v in module._updater.states.items()}
    assert momenta.keys() == reference["sgd_momenta"].keys()
    for key, values in reference["sgd_momenta"].items():
        np.testing.assert_allclose(momenta[key], values, rtol=1e-6)
    trainer = _trainer_resumed(folder)
    adam = reference["adam"]
    for key, values in adam["states"].items():
        mean, var = trainer._updaters[0].states[int(key)]
        np.testing.assert_allclose(mean.asnumpy(), values[0], rtol=1e-6)
        np.testing.assert_allclose(var.asnumpy(), values[1], rtol=1e-6)
    # the update counts come along (Adam's bias correction reads them), the optimizer stays MXLab's
    assert trainer._optimizer.num_update == adam["num_update"]
    assert {str(k): v for k, v in trainer._optimizer._index_update_count.items()} == adam["index_update_count"]
    assert isinstance(trainer._optimizer, mx.optimizer.Adam)


def test_states_mxnet_pickled_load_with_their_numbers():
    _check(DATA, REFERENCE)


def test_a_resumed_module_trains_on_from_mxnets_momenta():
    """One more SGD step: with the loaded momentum m it moves by 0.9 m - lr g, a fresh optimizer by -lr g."""
    batch = mx.io.DataBatch([mx.nd.array(np.arange(20).reshape(4, 5) / 20)], [mx.nd.array([0, 1, 2, 1])])
    steps = []
    for resumed in (True, False):
        module = _module_resumed(DATA)
        if not resumed:
            module._updater.states.clear()
        before = module.get_params()[0]["fc_weight"].asnumpy()
        module.forward_backward(batch)
        module.update()
        steps.append(module.get_params()[0]["fc_weight"].asnumpy() - before)
    momentum = np.array(REFERENCE["sgd_momenta"]["0"])
    np.testing.assert_allclose(steps[0] - steps[1], 0.9 * momentum, rtol=1e-3, atol=1e-7)


def test_states_for_another_optimizer_are_refused(tmp_path):
    dense = mx.gluon.nn.Dense(2, in_units=3)
    dense.initialize()
    trainer = mx.gluon.Trainer(dense.collect_params(), "sgd")
    with pytest.raises(OptimizerError, match="saved with MXNet's mxnet.optimizer.optimizer.Adam, .* SGD"):
        trainer.load_states(str(DATA / "adam_dense.states"))
    (tmp_path / "junk.states").write_bytes(pickle.dumps(["not", "states"]))
    with pytest.raises(OptimizerError, match="not optimizer states"):
        trainer.load_states(str(tmp_path / "junk.states"))


@pytest.mark.skipif(not os.environ.get("MXNET_PYTHON"), reason="set MXNET_PYTHON to an interpreter with MXNet 1.9.1")
def test_states_mxnet_writes_now_load_too(tmp_path):
    script = DATA / "make_optimizer_states.py"
    subprocess.run([os.environ["MXNET_PYTHON"], str(script), str(tmp_path)], check=True, timeout=300)
    _check(tmp_path, json.loads((tmp_path / "optimizer_states_reference.json").read_text()))

"""gluon.Trainer with the distributed store: two workers (Ray actors) train like one process.

Each worker joins a fresh job (two server actors) through the launcher's environment
variables, builds the same network, and trains on its half of every global batch with
``kvstore='dist_sync'``; the servers sum both workers' gradients and run the optimizer.
The result must equal one process training on the whole batches.
"""

from __future__ import annotations

import os
import sys
import uuid

import numpy as np
import pytest

import framework as mx
from framework import autograd, gluon
from framework.kvstore.cluster import DistConfig, local_ray_options, start_servers, stop_servers

pytestmark = pytest.mark.dist

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUM_WORKERS = 2
NUM_SERVERS = 2

try:
    os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    import ray
except ImportError:  # pragma: no cover - depends on the environment
    ray = None


class WorkerActor:
    """A training process stand-in: sets the job's variables, then runs a function."""

    def run(self, env: dict[str, str], fn, *args):
        os.environ.update(env)
        return fn(*args)


if ray is not None:
    WorkerActor = ray.remote(num_cpus=0)(WorkerActor)


@pytest.fixture(scope="module")
def workers():
    if ray is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("ray is required under CI for the distributed tests (install the [dist] extra)")
        pytest.skip("ray is not installed (pip install 'mxlab[dist]')")
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, saved) if p)  # the actors import this checkout
    ray.init(namespace="mxlab-test-gluon-dist", **local_ray_options(num_cpus=4))
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # ship the worker function by value
    yield [WorkerActor.remote() for _ in range(NUM_WORKERS)]
    ray.shutdown()
    if saved is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = saved


def build_net():
    with mx.name.NameManager():
        net = gluon.nn.HybridSequential()
        with net.name_scope():
            net.add(gluon.nn.Dense(8, activation="relu", in_units=5), gluon.nn.Dense(2, in_units=8))
    return net


def train(x: np.ndarray, y: np.ndarray, batch: int, kvstore: str, seed: int, rank: int, num_workers: int):
    """Trains ``build_net`` on this worker's share of every batch; returns the final weights."""
    net = build_net()
    mx.random.seed(seed)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5, "momentum": 0.9}, kvstore=kvstore)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    share = batch // num_workers
    for start in range(0, len(x), batch):
        xs = mx.nd.array(x[start + rank * share : start + (rank + 1) * share])
        ys = mx.nd.array(y[start + rank * share : start + (rank + 1) * share])
        with autograd.record():
            loss = loss_fn(net(xs), ys)
        loss.backward()
        trainer.step(batch)  # the global batch: the servers sum every worker's gradient
    return {name: p.data().asnumpy() for name, p in net.collect_params().items()}


def worker_train(x, y, batch):
    rank = int(os.environ["MXLAB_KV_RANK"])
    # The same seed everywhere: as in MXNet, the store is seeded (rank 0's weights) only at the
    # first step, after each worker's first backward, so the workers must start equal.
    return train(x, y, batch, "dist_sync", seed=11, rank=rank, num_workers=NUM_WORKERS)


def test_dist_sync_trainer_matches_one_process_on_the_whole_batch(workers):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((48, 5)).astype(np.float32)
    y = (x[:, 0] - x[:, 2] > 0).astype(np.float32)
    namespace = f"test-{uuid.uuid4().hex[:10]}"
    servers = start_servers(NUM_SERVERS, NUM_WORKERS, namespace, 30.0)
    try:
        configs = [DistConfig(r, NUM_WORKERS, NUM_SERVERS, namespace, None, 30.0, 1_000_000) for r in range(2)]
        trained = ray.get(
            [w.run.remote(c.to_env(), worker_train, x, y, 8) for w, c in zip(workers, configs, strict=True)],
            timeout=120,
        )
    finally:
        stop_servers(servers)
    # one process on the whole batches, from the same initial weights
    expected = train(x, y, 8, kvstore=None, seed=11, rank=0, num_workers=1)
    for weights in trained:
        assert set(weights) == set(expected)
        for name, value in expected.items():
            np.testing.assert_allclose(weights[name], value, rtol=1e-4, atol=1e-5, err_msg=name)

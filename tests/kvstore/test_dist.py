"""The distributed KVStore on a local Ray cluster: 2 workers (Ray actors), 2 servers per job.

One Ray cluster serves the whole module. Each test starts its own job (two fresh server
actors in a fresh namespace) and runs a function on both worker actors, which join the job
through the launcher's environment variables, exactly as a launched ``train.py`` does. The
launcher itself is run end to end as a subprocess against the same cluster.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
import uuid

import numpy as np
import pytest
from needs import needs_module

import framework as mx
from framework import events
from framework.executor.split_backward import available_cores
from framework.kvstore.cluster import DistConfig, local_ray_options, start_servers, stop_servers
from framework.kvstore.dist import DistKVStore
from framework.kvstore.launch import share_cores
from framework.kvstore.sharding import server_of
from framework.module import Module

pytestmark = pytest.mark.dist

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUM_WORKERS = 2
NUM_SERVERS = 2

try:
    os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    import ray
except ImportError:  # pragma: no cover - depends on the environment
    ray = None


@pytest.fixture(scope="module")
def cluster():
    """One local Ray cluster for the module: 4 CPUs, a 200 MB object store, no dashboard."""
    needs_module("ray", "the distributed KVStore tests start a local Ray cluster (pip install 'mxlab[dist]')")
    saved = os.environ.get("PYTHONPATH")
    # Ray's worker processes inherit the driver's environment: make them import this checkout.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, saved) if p)
    ray.init(namespace="mxlab-test-dist", **local_ray_options(num_cpus=4))
    # the functions below run inside the worker actors: ship them by value, not by module name
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    workers = [WorkerActor.remote() for _ in range(NUM_WORKERS)]
    ray.get([w.ready.remote() for w in workers])
    yield {"address": ray.get_runtime_context().gcs_address, "workers": workers}
    ray.shutdown()
    if saved is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = saved


class WorkerActor:
    """A training process stand-in: sets the job's variables, then runs a function."""

    def ready(self) -> int:
        return os.getpid()

    def run(self, env: dict[str, str], fn, *args):
        os.environ.update(env)
        return fn(*args)


if ray is not None:
    WorkerActor = ray.remote(num_cpus=0)(WorkerActor)


class Job:
    """Fresh servers in a fresh namespace, and one DistConfig per worker."""

    def __init__(
        self, workers, timeout: float = 20.0, bigarray_bound: int = 1_000_000, transport: str = "auto"
    ) -> None:
        self.namespace = f"test-{uuid.uuid4().hex[:10]}"
        self.workers = workers
        self.servers = start_servers(NUM_SERVERS, len(workers), self.namespace, timeout)
        self.configs = [
            DistConfig(rank, len(workers), NUM_SERVERS, self.namespace, None, timeout, bigarray_bound, transport)
            for rank in range(len(workers))
        ]

    def submit(self, fn, *args):
        """Start ``fn(*args)`` on every worker (each reads its rank from the environment)."""
        return [w.run.remote(c.to_env(), fn, *args) for w, c in zip(self.workers, self.configs, strict=True)]

    def run(self, fn, *args, timeout: float = 60.0):
        return ray.get(self.submit(fn, *args), timeout=timeout)

    def close(self) -> None:
        stop_servers(self.servers)


@pytest.fixture
def job(cluster):
    made: list[Job] = []

    def make(**kwargs) -> Job:
        made.append(Job(cluster["workers"], **kwargs))
        return made[-1]

    yield make
    for j in made:
        j.close()


# ----------------------------------------------------------------------------- worker functions
def sums_and_ordering(kv_type: str):
    """Runs on each worker: pushes of both workers are summed; a pull waits for the slower worker."""
    kv = mx.kv.create(kv_type)
    rank = kv.rank
    assert (kv.type, kv.num_workers) == (kv_type, 2)
    kv.init(["w", "big"], [mx.nd.ones((2, 3)), mx.nd.zeros((4, 5))])  # 'big' is split (bound 10)
    kv.init([3, 4], [mx.nd.zeros((3,)), mx.nd.zeros((3,))])
    results = {}
    # one value per worker, and a list of per-device values on each worker
    with events.record(["kvstore.push", "kvstore.pull"]) as rec:
        kv.push("w", [mx.nd.full((2, 3), rank + 1.0, ctx=mx.cpu(0)), mx.nd.full((2, 3), 10.0, ctx=mx.cpu(1))])
        outs = [mx.nd.zeros((2, 3), ctx=mx.cpu(0)), mx.nd.zeros((2, 3), ctx=mx.cpu(1))]
        kv.pull("w", out=outs)
        results["w"] = [o.asnumpy() for o in outs]
    results["events"] = [(e["kind"], e["key"], e["nbytes"], e["ctx"]) for e in rec.events]
    big = mx.nd.arange(20).reshape((4, 5)) * (rank + 1)
    kv.pushpull("big", big)
    results["big"] = big.asnumpy()
    kv.push([3, 4], [mx.nd.full((3,), 1.0), mx.nd.full((3,), rank * 2.0)], priority=-1)
    ints = [mx.nd.zeros((3,)), mx.nd.zeros((3,))]
    kv.pull([3, 4], out=ints, priority=-1)
    results["ints"] = [i.asnumpy() for i in ints]
    # rank 1 pushes late: rank 0's push/pull return at once, its result waits for rank 1
    kv.barrier()
    if rank == 1:
        time.sleep(1.5)
    start = time.perf_counter()
    kv.push(3, mx.nd.full((3,), 5.0))
    out = mx.nd.zeros((3,))
    kv.pull(3, out=out)
    issued = time.perf_counter() - start
    results["late"] = (out.asnumpy(), issued, time.perf_counter() - start)
    results["servers"] = kv.server_info() if rank == 0 else None
    return results


def server_sgd(kv_type: str, grads: list, steps: int, w0: dict, states_file: str | None):
    """Runs on each worker: SGD on the servers, with this worker's gradients."""
    kv = mx.kv.create(kv_type)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5))
    kv.init(list(w0), [mx.nd.array(v) for v in w0.values()])
    for step in range(steps):
        kv.push(list(w0), [mx.nd.array(g) for g in grads[kv.rank][step]])
    outs = [mx.nd.zeros(v.shape) for v in w0.values()]
    kv.pull(list(w0), out=outs)
    pulled = [o.asnumpy() for o in outs]
    if states_file and kv.rank == 0:
        kv.save_optimizer_states(states_file)
    kv.barrier()
    return pulled


def resume_sgd(kv_type: str, grads: list, w0: dict, states_file: str):
    """Runs on each worker: a new job loads the saved states and makes one more step."""
    kv = mx.kv.create(kv_type)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5))
    kv.init(list(w0), [mx.nd.array(v) for v in w0.values()])
    if kv.rank == 0:
        kv.load_optimizer_states(states_file)
    kv.barrier()
    kv.push(list(w0), [mx.nd.array(g) for g in grads[kv.rank]])
    outs = [mx.nd.zeros(v.shape) for v in w0.values()]
    kv.pull(list(w0), out=outs)
    return [o.asnumpy() for o in outs]


def async_applies():
    """Runs on each worker: dist_async refuses to push without an updater, then applies each push at once."""
    kv = mx.kv.create("dist_async")
    kv.init(["nope", "w"], [mx.nd.zeros((2,)), mx.nd.zeros((2,))])
    kv.push("nope", mx.nd.ones((2,)))
    failed = mx.nd.zeros((2,))
    kv.pull("nope", out=failed)  # the push's error travels through the engine to the pulled array
    try:
        failed.asnumpy()
        refused = None
    except mx.kv.KVStoreError as err:
        refused = str(err)
    kv.barrier()
    out = mx.nd.zeros((2,))

    def add_scaled(key, merged, stored):
        stored += merged * 10

    kv.set_updater(add_scaled)
    seen = {}
    if kv.rank == 0:  # rank 1 has not pushed: an async pull already sees rank 0's update
        kv.push("w", mx.nd.ones((2,)))
        kv.pull("w", out=out)
        seen["alone"] = out.asnumpy()
    kv.barrier()
    if kv.rank == 1:
        kv.push("w", mx.nd.full((2,), 2.0))
        kv.pull("w", out=out)
        out.wait_to_read()  # the push has been applied before rank 0 passes the barrier
    kv.barrier()
    kv.pull("w", out=out)
    seen["both"] = out.asnumpy()
    return refused, seen


def survive_dead_worker():
    """Runs on each worker: one push round together, then rank 0 pushes again after rank 1 died."""
    kv = mx.kv.create("dist_sync")
    kv.init("w", mx.nd.zeros((3,)))
    kv.push("w", mx.nd.ones((3,)))
    out = mx.nd.zeros((3,))
    kv.pull("w", out=out)
    first = out.asnumpy()
    if kv.rank == 1:
        return first, None, 0.0
    time.sleep(1.0)  # the test kills rank 1 meanwhile
    start = time.perf_counter()
    kv.push("w", mx.nd.ones((3,)))
    kv.pull("w", out=out)
    try:
        out.asnumpy()
        error = None
    except mx.kv.KVStoreError as err:
        error = str(err)
    return first, error, time.perf_counter() - start


def lose_a_server(victim):
    """Runs on each worker: a server dies; pulls of the keys it held fail, naming it."""
    kv = mx.kv.create("dist_sync")
    keys = [0, 1, 2, 3]
    kv.init(keys, [mx.nd.zeros((2,)) for _ in keys])
    ray.kill(victim)
    time.sleep(0.5)
    outs = [mx.nd.zeros((2,)) for _ in keys]
    kv.pull(keys, out=outs)
    errors = []
    for o in outs:
        try:
            o.asnumpy()
        except mx.kv.KVStoreError as err:
            errors.append(str(err))
    return errors


def module_fit(x: np.ndarray, y: np.ndarray, batch: int, epochs: int):
    """Runs on each worker: Module.fit with dist_sync on this worker's part of every batch."""
    kv = mx.kv.create("dist_sync")
    # worker r takes the r-th half of every global batch of 2 * batch samples
    parts = x.reshape(-1, kv.num_workers, batch, x.shape[1])[:, kv.rank].reshape(-1, x.shape[1])
    labels = y.reshape(-1, kv.num_workers, batch)[:, kv.rank].reshape(-1)
    mod = Module(mlp(), context=[mx.cpu(0), mx.cpu(1)])
    mx.random.seed(kv.rank + 5)  # different initial weights: rank 0's must win
    it = mx.io.NDArrayIter(parts, labels, batch_size=batch)
    before = kv.ray_calls
    mod.fit(it, num_epoch=epochs, kvstore=kv, optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    mx.nd.waitall()
    args, _ = mod.get_params()
    shared = sum(info["shared_blocks"] for info in kv.server_info())
    return {k: v.asnumpy() for k, v in args.items()}, kv.ray_calls - before, shared


def batches_and_priorities():
    """Runs on each worker: one message per server per batch; sums of overlapping pushes with priorities."""
    kv = mx.kv.create("dist_sync")
    rank = kv.rank
    keys = ["a", "b", "c", "d", "big"]
    shapes = [(2,), (3,), (2, 2), (1,), (4, 5)]  # 'big' (20 elements, bound 10) is split over both servers
    kv.init(keys, [mx.nd.ones(s) for s in shapes])

    def add(key, merged, stored):
        stored += merged

    kv.set_updater(add)
    found = {}
    with events.record(["kvstore.step"]) as rec:
        kv.begin_step()
        before = kv.ray_calls
        kv.push(keys, [mx.nd.full(s, rank + 1.0) for s in shapes])
        outs = [mx.nd.zeros(s) for s in shapes]
        kv.pull(keys, out=outs)
        split = kv.end_step()
    found["calls"] = kv.ray_calls - before
    found["split"] = split
    found["events"] = rec.events
    found["after_one"] = [o.asnumpy() for o in outs]
    # overlapping pushes: 'b' is in both batches, with different priorities, before any pull
    kv.push(["a", "b"], [mx.nd.full((2,), 1.0), mx.nd.full((3,), 10.0 * (rank + 1))], priority=-3)
    kv.push(["b", "c"], [mx.nd.full((3,), 100.0), mx.nd.full((2, 2), rank + 0.5)], priority=5)
    kv.push("big", mx.nd.arange(20).reshape((4, 5)), priority=-1)
    kv.pull(keys, out=outs, priority=2)
    found["after_three"] = [o.asnumpy() for o in outs]
    # pushpull: the push's answer brings the new values back, one message per server
    before = kv.ray_calls
    pushed = [mx.nd.full((2,), 1.0), mx.nd.full((4, 5), 1.0)]
    kv.pushpull(["a", "big"], pushed)
    found["pushpull"] = [p.asnumpy() for p in pushed]
    mx.nd.waitall()
    found["pushpull_calls"] = kv.ray_calls - before
    return found


def one_to_one_pushpull():
    """Runs on each worker: pushpull with one gradient and one output per key, then with two devices."""
    kv = mx.kv.create("dist_sync")
    rank = kv.rank
    kv.init(["w", "big"], [mx.nd.ones((2, 3)), mx.nd.zeros((4, 5))])  # 'big' is split over both servers
    kv.set_updater(lambda key, merged, stored: stored.__iadd__(merged))
    grads = [mx.nd.full((2, 3), rank + 1.0), mx.nd.full((4, 5), 10.0 * (rank + 1))]
    outs = [mx.nd.zeros((2, 3)), mx.nd.zeros((4, 5))]
    with events.record(["engine.push", "kvstore.push", "kvstore.pull"]) as rec:
        kv.pushpull(["w", "big"], grads, out=outs)
        mx.nd.waitall()
    found = {
        "outs": [o.asnumpy() for o in outs],
        "grads": [g.asnumpy() for g in grads],
        "ops": sorted(e["name"] for e in rec.events if e["kind"] == "engine.push"),
        "traffic": sorted((e["kind"], e["key"]) for e in rec.events if e["kind"] != "engine.push"),
    }
    # the next step reads the outputs and rewrites the gradients: the engine orders both after the answer
    grads[0][:] = 100.0
    kv.pushpull("w", grads[0], out=outs[0])
    found["second"] = outs[0].asnumpy()
    # a strided output (part of a column of a bigger array) cannot take the answer through a flat view
    grid = mx.nd.zeros((2, 4, 2))
    column = grid[:, 0:3, 1]
    kv.pushpull("w", mx.nd.ones((2, 3)), out=column)
    found["column"] = grid.asnumpy()
    # two devices per key: the buffer sums them and copies the answer to both outputs
    two = [mx.nd.full((2, 3), 1.0, ctx=mx.cpu(0)), mx.nd.full((2, 3), 2.0, ctx=mx.cpu(1))]
    outs2 = [mx.nd.zeros((2, 3), ctx=mx.cpu(0)), mx.nd.zeros((2, 3), ctx=mx.cpu(1))]
    with events.record(["engine.push"]) as rec:
        kv.pushpull("w", two, out=outs2)
        mx.nd.waitall()
    found["two_devices"] = [o.asnumpy() for o in outs2]
    found["two_devices_ops"] = sorted(e["name"] for e in rec.events)
    return found


def mlp():
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"), act_type="relu")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=2, name="fc2"), name="softmax")


# ----------------------------------------------------------------------------- tests
@pytest.mark.parametrize("kv_type", ["dist_sync", "dist_device_sync"])
def test_sync_sums_every_worker_and_pull_waits_for_the_update(job, kv_type):
    j = job(bigarray_bound=10)
    r0, r1 = j.run(sums_and_ordering, kv_type)
    for r in (r0, r1):
        # rank 0 pushed 1 + 10, rank 1 pushed 2 + 10: every output of every worker holds 23
        for o in r["w"]:
            np.testing.assert_allclose(o, np.full((2, 3), 23.0))
        np.testing.assert_allclose(r["big"], np.arange(20).reshape(4, 5) * 3.0)
        np.testing.assert_allclose(r["ints"][0], np.full(3, 2.0))
        np.testing.assert_allclose(r["ints"][1], np.full(3, 2.0))
        np.testing.assert_allclose(r["late"][0], np.full(3, 10.0))
    assert r0["events"] == [
        ("kvstore.push", "w", 24, "cpu(0)"),
        ("kvstore.push", "w", 24, "cpu(1)"),
        ("kvstore.pull", "w", 24, "cpu(0)"),
        ("kvstore.pull", "w", 24, "cpu(1)"),
    ]
    _, issued, done = r0["late"]
    assert issued < 0.5  # push and pull returned at once ...
    assert done > 1.0  # ... and the pulled value waited for rank 1's late push
    info = r0["servers"]
    assert [s["mode"] for s in info] == ["sync", "sync"]
    big_parts = sorted((s["index"], part, size) for s in info for key, part, size in s["shards"] if key == "big")
    assert big_parts == [(0, 0, 10), (1, 1, 10)]  # 20 elements >= bound 10: half on each server


def test_server_side_sgd_matches_single_process_sgd(job, tmp_path):
    rng = np.random.default_rng(0)
    w0 = {"small": rng.standard_normal((3, 4)).astype(np.float32), "big": rng.standard_normal(25).astype(np.float32)}
    steps = 3
    grads = [[[rng.standard_normal(v.shape).astype(np.float32) for v in w0.values()] for _ in range(steps + 1)]]
    grads.append([[rng.standard_normal(v.shape).astype(np.float32) for v in w0.values()] for _ in range(steps + 1)])
    states = str(tmp_path / "dist.states")
    pulled = job(bigarray_bound=20).run(server_sgd, "dist_sync", [g[:steps] for g in grads], steps, w0, states)

    # the same optimizer in one process, fed the sum of both workers' gradients
    local = mx.kv.create("local")
    local.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5))
    local.init(list(w0), [mx.nd.array(v) for v in w0.values()])
    for step in range(steps + 1):
        summed = [mx.nd.array(a + b) for a, b in zip(grads[0][step], grads[1][step], strict=True)]
        local.push(list(w0), summed)
        if step == steps - 1:
            expected = [mx.nd.zeros(v.shape) for v in w0.values()]
            local.pull(list(w0), out=expected)
            expected = [e.asnumpy() for e in expected]
    for worker in pulled:
        for got, want in zip(worker, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(expected[0], w0["small"])

    # a new job restores the momentum from the file and continues exactly like the single process
    final = [mx.nd.zeros(v.shape) for v in w0.values()]
    local.pull(list(w0), out=final)
    w_steps = dict(zip(w0, pulled[0], strict=True))
    resumed = job(bigarray_bound=20).run(resume_sgd, "dist_sync", [g[steps] for g in grads], w_steps, states)
    for worker in resumed:
        for got, want in zip(worker, final, strict=True):
            np.testing.assert_allclose(got, want.asnumpy(), rtol=1e-5, atol=1e-6)


def test_async_applies_each_push_at_once(job):
    (refused, s0), (refused1, s1) = job().run(async_applies)
    assert refused is not None and "dist_async store applies every push with an updater" in refused
    assert refused1 is not None
    np.testing.assert_allclose(s0["alone"], np.full(2, 10.0))  # rank 1 had not pushed
    for seen in (s0, s1):
        np.testing.assert_allclose(seen["both"], np.full(2, 30.0))


@pytest.mark.parametrize("transport", ["auto", "ray"])
def test_module_trains_on_two_workers_like_one_process_on_the_whole_batch(job, transport):
    rng = np.random.default_rng(1)
    batch, epochs = 8, 2
    x = rng.standard_normal((64, 5)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)

    # each layer's pushpull leaves while backward computes the layers below; through shared memory
    # and the servers' channels ('auto', this host) or in Ray's messages ('ray'), the weights are the same
    results = job(transport=transport).run(module_fit, x, y, batch, epochs)
    trained = [params for params, _, _ in results]
    shared = {shared for _, _, shared in results}
    assert shared == ({len(mlp().list_arguments()) - 2} if transport == "auto" else {0})
    # one process, one device, batches of 2 * batch, started from rank 0's initial weights
    mx.random.seed(5)
    single = Module(mlp(), context=[mx.cpu(0)])
    single.fit(
        mx.io.NDArrayIter(x, y, batch_size=2 * batch),
        num_epoch=epochs,
        kvstore=None,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.5},
    )
    expected = {k: v.asnumpy() for k, v in single.get_params()[0].items()}
    for params in trained:
        assert set(params) == set(expected)
        for name, value in expected.items():
            np.testing.assert_allclose(params[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
    # messages: one initial pull per parameter, then per step one pushpull per server for the layers
    # one backward bulk segment finishes; this small network's backward pass is one segment, so
    # every layer travels in the same message to each server
    per_step = len({server_of(name, NUM_SERVERS) for name in expected})
    assert per_step < len(expected)  # fewer than parameters (MXNet sends a push and a pull for each)
    steps = epochs * len(x) // (2 * batch)
    assert [calls for _, calls, _ in results] == [len(expected) + steps * per_step] * 2


def test_a_killed_worker_yields_an_error_not_a_hang(job, cluster):
    victim = WorkerActor.remote()
    j = Job([cluster["workers"][0], victim], timeout=3.0)
    try:
        refs = j.submit(survive_dead_worker)
        first_victim, _, _ = ray.get(refs[1], timeout=30)
        ray.kill(victim)
        first, error, waited = ray.get(refs[0], timeout=30)
    finally:
        j.close()
    np.testing.assert_allclose(first, np.full(3, 2.0))
    np.testing.assert_allclose(first_victim, np.full(3, 2.0))
    assert error is not None and "waited 3 s for worker(s) [1]" in error and "MXLAB_KV_TIMEOUT" in error
    assert waited < 10.0


def test_a_dead_server_is_named(job, cluster):
    j = job(timeout=5.0)
    # rank 0 alone would wait at create's barrier for rank 1: let rank 1 join and sit in init
    refs = j.submit(lose_a_server, j.servers[1])
    errors = ray.get(refs, timeout=30)
    for worker_errors in errors:
        assert worker_errors, "a pull from a dead server must fail"
        assert all("server" in e for e in worker_errors)
        assert any("KVStore server 1 (mxlab-kv-server-1) has died" in e for e in worker_errors)


def make_store(kv_type: str) -> str:
    """Runs on a worker: create a store and report its type."""
    return mx.kv.create(kv_type).type


def test_workers_must_agree_and_servers_must_exist(job, cluster):
    j = job(timeout=90.0)
    missing = DistConfig(0, 2, 3, j.namespace, None, 90.0)
    with pytest.raises(mx.kv.KVStoreError, match="'mxlab-kv-server-2' was not found in Ray namespace"):
        DistKVStore("dist_sync", missing)
    types = ["dist_sync", "dist_async"]
    refs = [w.run.remote(c.to_env(), make_store, t) for w, c, t in zip(j.workers, j.configs, types, strict=True)]
    errors, start = [], time.perf_counter()
    for ref in refs:
        with pytest.raises(ray.exceptions.RayTaskError) as caught:
            ray.get(ref, timeout=60)
        errors.append(str(caught.value))
    # a worker that learns of the disagreement aborts the job, so the other does not wait for its timeout
    mismatch = r"worker \d created a dist_a?sync store but worker \d created dist_a?sync"
    assert all(re.search(mismatch, e) for e in errors)
    assert time.perf_counter() - start < 45.0  # well before the 90 s timeout, however slow the machine


def test_one_message_per_server_per_batch_and_sums_with_priorities(job):
    r0, r1 = job(bigarray_bound=10).run(batches_and_priorities)
    ones = {"a": np.ones(2), "b": np.ones(3), "c": np.ones((2, 2)), "d": np.ones(1), "big": np.ones((4, 5))}
    for r in (r0, r1):
        # 5 keys on 2 servers: one push message and one pull message per server
        assert r["calls"] == 4
        assert r["split"].ray_calls == 4
        # the updater adds each round's sum (1 + 2 from the two workers) to the initial ones
        for got, want in zip(r["after_one"], ones.values(), strict=True):
            np.testing.assert_allclose(got, want + 3.0)
        a, b, c, d, big = r["after_three"]
        np.testing.assert_allclose(a, np.full(2, 4.0 + 2.0))
        np.testing.assert_allclose(b, np.full(3, 4.0 + 30.0 + 200.0))  # both rounds of 'b', in order
        np.testing.assert_allclose(c, np.full((2, 2), 4.0 + 2.0))
        np.testing.assert_allclose(d, np.full(1, 4.0))  # not pushed again
        np.testing.assert_allclose(big, 4.0 + 2.0 * np.arange(20).reshape(4, 5))
        np.testing.assert_allclose(r["pushpull"][0], a + 2.0)
        np.testing.assert_allclose(r["pushpull"][1], big + 2.0)
        assert r["pushpull_calls"] == 2  # 'a' on one server, 'big' split over both: one message each
        split = r["split"]
        assert split.compute_s + split.comm_s + split.wait_s == pytest.approx(split.wall_s, rel=1e-6)
        assert split.comm_s + split.wait_s > 0
        (event,) = r["events"]
        assert set(event) == {"kind", "t_ns", *events.KINDS["kvstore.step"]}
        assert (event["step"], event["calls"]) == (0, 4)
        assert event["wait_ms"] == pytest.approx(split.wait_s * 1e3)
    assert (r0["events"][0]["rank"], r1["events"][0]["rank"]) == (0, 1)


def test_pushpull_with_one_array_per_key_skips_the_buffers(job):
    r0, r1 = job(bigarray_bound=10).run(one_to_one_pushpull)
    for rank, r in enumerate((r0, r1)):
        # the updater adds the round's sum: 1 + (1 + 2), and 0 + (10 + 20)
        np.testing.assert_allclose(r["outs"][0], np.full((2, 3), 4.0))
        np.testing.assert_allclose(r["outs"][1], np.full((4, 5), 30.0))
        # the gradients were only read
        np.testing.assert_allclose(r["grads"][0], np.full((2, 3), rank + 1.0))
        np.testing.assert_allclose(r["grads"][1], np.full((4, 5), 10.0 * (rank + 1)))
        # one message per server ('big' is split over both) and no reduce or broadcast operation
        assert r["ops"] == ["KVStoreDistPushPull('big')", "KVStoreDistPushPull('w', 'big')"]
        # the events still tell the UI what went out and came back
        assert r["traffic"] == [
            ("kvstore.pull", "big"),
            ("kvstore.pull", "w"),
            ("kvstore.push", "big"),
            ("kvstore.push", "w"),
        ]
        np.testing.assert_allclose(r["second"], np.full((2, 3), 4.0 + 200.0))
        # through the buffer: 204 + 1 + 1 into the column of the grid, the rest of the grid untouched
        np.testing.assert_allclose(r["column"][:, 0:3, 1], np.full((2, 3), 206.0))
        np.testing.assert_allclose(r["column"][:, 3, 1], np.zeros(2))
        np.testing.assert_allclose(r["column"][:, :, 0], np.zeros((2, 4)))
        # two devices: 206 + (1 + 2) * 2 workers, on both outputs, through the buffer
        for out in r["two_devices"]:
            np.testing.assert_allclose(out, np.full((2, 3), 212.0))
        assert "KVStoreReduce('w')" in r["two_devices_ops"]
        assert r["two_devices_ops"].count("KVStoreBroadcast('w')") == 2


# ----------------------------------------------------------------------------- the launcher
LAUNCHED = textwrap.dedent(
    """
    import os
    import time

    import ray

    import framework as mx

    kv = mx.kv.create("dist_sync")
    kv.init("w", mx.nd.zeros((3,)))
    if os.environ.get("FAIL_RANK") == str(kv.rank):
        raise SystemExit(f"rank {kv.rank} gives up")
    if os.environ.get("KILL_SERVER") and kv.rank == 0:
        ray.kill(ray.get_actor("mxlab-kv-server-1", namespace=os.environ["MXLAB_KV_NAMESPACE"]))
    if os.environ.get("KILL_SERVER"):
        time.sleep(4)  # the launcher checks its servers every second: it notices first
    threads = [os.environ.get(name) for name in ("MXLAB_CPU_WORKER_NTHREADS", "MXLAB_BLAS_THREADS")]
    print(f"rank {kv.rank} threads {threads} engine workers {mx.config.get('MXLAB_CPU_WORKER_NTHREADS')}")
    out = mx.nd.zeros((3,))
    for step in range(3):
        kv.push("w", mx.nd.full((3,), kv.rank + 1.0))
        kv.pull("w", out=out)
        print(f"rank {kv.rank}/{kv.num_workers} step {step} {out.asnumpy().tolist()}")
    """
)


def launch(cluster, tmp_path, extra_env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    script = tmp_path / "train.py"
    script.write_text(LAUNCHED)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MXLAB_KV_")}
    env.update(extra_env)
    command = [sys.executable, "-m", "framework.kvstore.launch", "-n", "2", "-s", "2"]
    command += ["--address", cluster["address"], "--timeout", "10", sys.executable, str(script)]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    return done, time.perf_counter() - start


def test_launcher_runs_two_workers(cluster, tmp_path):
    done, _ = launch(cluster, tmp_path, {"MXLAB_CPU_WORKER_NTHREADS": "", "MXLAB_BLAS_THREADS": ""})
    assert done.returncode == 0, done.stderr
    for rank in (0, 1):
        for step in range(3):
            assert f"[worker {rank}] rank {rank}/2 step {step} [3.0, 3.0, 3.0]" in done.stdout
    # the two workers share this machine's cores: each gets its share of engine workers and BLAS threads
    blank = {k: v for k, v in os.environ.items() if k not in ("MXLAB_CPU_WORKER_NTHREADS", "MXLAB_BLAS_THREADS")}
    share = share_cores(blank, 2, available_cores())
    engine_workers = share.get("MXLAB_CPU_WORKER_NTHREADS", "")  # "": the blank value the test gave
    blas = share.get("MXLAB_BLAS_THREADS", "")
    for rank in (0, 1):
        assert f"[worker {rank}] rank {rank} threads [{engine_workers!r}, {blas!r}]" in done.stdout, done.stdout
    if share:
        assert f"launch: 2 worker(s) share {available_cores()} core(s): each gets" in done.stderr


def test_launcher_keeps_the_thread_counts_it_is_given(cluster, tmp_path):
    done, _ = launch(cluster, tmp_path, {"MXLAB_CPU_WORKER_NTHREADS": "3", "OMP_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stderr
    for rank in (0, 1):
        assert f"[worker {rank}] rank {rank} threads ['3', None] engine workers 3" in done.stdout, done.stdout
    assert "share" not in done.stderr


def test_launcher_fails_naming_the_dead_worker(cluster, tmp_path):
    done, elapsed = launch(cluster, tmp_path, {"FAIL_RANK": "1"})
    assert done.returncode != 0
    assert "[worker 1] rank 1 gives up" in done.stderr
    assert "launch: job failed: worker 1" in done.stderr and "exited with code 1" in done.stderr
    # rank 0 is not left waiting for the timeout: the launcher aborted the servers at once
    assert "the distributed KVStore job was aborted: worker 1" in done.stderr
    assert elapsed < 60


def test_launcher_fails_naming_a_dead_server(cluster, tmp_path):
    done, elapsed = launch(cluster, tmp_path, {"KILL_SERVER": "1"})
    assert done.returncode != 0
    assert "launch: job failed: KVStore server(s) [1] died" in done.stderr, done.stderr[-3000:]
    assert "NameError" not in done.stderr and "Traceback" not in done.stderr.split("aborting the job")[0]
    assert elapsed < 60

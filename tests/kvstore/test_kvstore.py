"""mx.kv: the single-machine KVStore ('local' and 'device') against NumPy written out here.

Both types must give the same numbers; they differ only in where the sum is computed. The
distributed names, outside a launched job, must refuse clearly (tests/kvstore/test_dist.py runs them).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import framework as mx
from framework import events
from framework.engine import Engine
from framework.kvstore import KVStore, KVStoreError, LocalKVStore, create
from framework.module import Module

SHAPE = (2, 3)
TYPES = ["local", "device"]
CTXS = [mx.cpu(0), mx.cpu(1)]


def arrays(value: float, ctxs=CTXS) -> list:
    return [mx.nd.full(SHAPE, value, ctx=c) for c in ctxs]


def check_all(outs, expected) -> None:
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), np.broadcast_to(expected, SHAPE), rtol=1e-6)


@pytest.mark.parametrize("kv_type", TYPES)
def test_push_sums_a_list_and_pull_broadcasts(kv_type):
    kv = create(kv_type)
    assert isinstance(kv, KVStore) and kv.type == kv_type and kv.rank == 0 and kv.num_workers == 1
    kv.init(3, mx.nd.ones(SHAPE))
    outs = arrays(0.0)
    kv.pull(3, out=outs)
    check_all(outs, 1.0)
    kv.push(3, [mx.nd.full(SHAPE, 2.0, ctx=mx.cpu(0)), mx.nd.full(SHAPE, 5.0, ctx=mx.cpu(1))])
    kv.pull(3, out=outs)
    check_all(outs, 7.0)  # without an updater the stored value is replaced by the sum
    kv.push(3, mx.nd.full(SHAPE, 4.0))  # one value
    single = mx.nd.zeros(SHAPE)
    kv.pull(3, out=single)
    check_all([single], 4.0)
    kv.barrier()


@pytest.mark.parametrize("kv_type", TYPES)
def test_str_and_int_keys_and_list_forms(kv_type):
    kv, numbered = create(kv_type), create(kv_type)  # one store per key type, as MXNet requires
    kv.init(["a", "b", "c"], [mx.nd.zeros(SHAPE)] * 3)
    numbered.init([5, 9], [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)])
    # one value per key, and a list of values per key
    kv.push(["a", "b"], [mx.nd.ones(SHAPE), arrays(2.0)])
    kv.push("c", arrays(1.5) + [mx.nd.full(SHAPE, 1.0)])
    numbered.push([5, 9], [arrays(1.0), arrays(3.0)])
    outs = {k: arrays(-1.0) for k in ("a", "b", "c")}
    kv.pull(["a", "b", "c"], out=[outs["a"], outs["b"], outs["c"]])
    check_all(outs["a"], 1.0)
    check_all(outs["b"], 4.0)
    check_all(outs["c"], 4.0)
    ints = [mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)]
    numbered.pull([5, 9], out=ints)
    check_all([ints[0]], 2.0)
    check_all([ints[1]], 6.0)
    # a key listed twice in one push: all its values are summed
    numbered.push([5, 5], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE)])
    numbered.pull(5, out=ints[0])
    check_all([ints[0]], 2.0)
    # pushpull: push then pull back into the pushed arrays
    values = arrays(0.5)
    kv.pushpull("a", values)
    check_all(values, 1.0)
    target = mx.nd.zeros(SHAPE)
    numbered.pushpull(9, [mx.nd.ones(SHAPE)], out=target)
    check_all([target], 1.0)


@pytest.mark.parametrize("kv_type", TYPES)
def test_updater_gets_key_sum_and_stored(kv_type):
    kv = create(kv_type)
    seen = []

    def updater(key, summed, stored):
        seen.append((key, summed.asnumpy().copy(), stored.asnumpy().copy()))
        stored += summed * 2

    kv.set_updater(updater)
    kv.init("w", mx.nd.ones(SHAPE))
    kv.push("w", arrays(1.0))
    outs = arrays(0.0)
    kv.pull("w", out=outs)
    check_all(outs, 1.0 + 2 * 2.0)
    assert seen[0][0] == "w"
    np.testing.assert_allclose(seen[0][1], np.full(SHAPE, 2.0))
    np.testing.assert_allclose(seen[0][2], np.ones(SHAPE))
    values = arrays(1.0)
    kv.pushpull("w", values)  # the updated value comes back into the pushed arrays
    check_all(values, 5.0 + 2 * 2.0)
    with pytest.raises(KVStoreError, match="callable"):
        kv.set_updater(42)


@pytest.mark.parametrize("kv_type", TYPES)
def test_private_set_updater_is_mxnets_name_for_set_updater(kv_type):
    # MXNet 1.x scripts call kv._set_updater(fn); it must install fn exactly like set_updater.
    kv = create(kv_type)
    kv.init(3, mx.nd.ones(SHAPE))

    def update(key, summed, stored):
        stored += summed * 2

    kv._set_updater(update)
    kv.push(3, mx.nd.ones(SHAPE))
    out = mx.nd.zeros(SHAPE)
    kv.pull(3, out=out)
    np.testing.assert_allclose(out.asnumpy(), np.full(SHAPE, 3.0))
    with pytest.raises(KVStoreError, match="expected a callable updater"):
        kv._set_updater("not a function")


@pytest.mark.parametrize("kv_type", TYPES)
def test_set_optimizer_sgd_matches_numpy_and_states_round_trip(kv_type, tmp_path):
    lr, momentum, rescale = 0.1, 0.9, 0.5
    kv = create(kv_type)
    assert kv.is_capable("optimizer")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=lr, momentum=momentum, rescale_grad=rescale))
    w0 = np.arange(6, dtype=np.float32).reshape(SHAPE)
    kv.init(0, mx.nd.array(w0))
    w, mom = w0.copy(), np.zeros(SHAPE, np.float32)
    grads = [np.full(SHAPE, 1.0, np.float32), np.full(SHAPE, -3.0, np.float32)]
    for step in range(2):
        kv.push(0, [mx.nd.array(g * (step + 1), ctx=c) for g, c in zip(grads, CTXS, strict=True)])
        g = sum(grads) * (step + 1)
        mom = momentum * mom - lr * rescale * g
        w = w + mom
    outs = arrays(0.0)
    kv.pull(0, out=outs)
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), w, rtol=1e-5)
    fname = str(tmp_path / "kv.states")
    kv.save_optimizer_states(fname)
    # a fresh store loaded with the states continues exactly like the original
    other = create(kv_type)
    other.set_optimizer(mx.optimizer.SGD(learning_rate=lr, momentum=momentum, rescale_grad=rescale))
    other.init(0, mx.nd.array(w))
    other.load_optimizer_states(fname)
    for store in (kv, other):
        store.push(0, arrays(1.0))
    a, b = mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)
    kv.pull(0, out=a)
    other.pull(0, out=b)
    expected = w + momentum * mom - lr * rescale * 2.0
    np.testing.assert_allclose(a.asnumpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(b.asnumpy(), expected, rtol=1e-5)


def test_optimizer_state_errors(tmp_path):
    kv = create("local")
    with pytest.raises(KVStoreError, match="no optimizer"):
        kv.save_optimizer_states(str(tmp_path / "x"))
    with pytest.raises(KVStoreError, match="no optimizer"):
        kv.load_optimizer_states(str(tmp_path / "x"))
    with pytest.raises(KVStoreError, match="Optimizer"):
        kv.set_optimizer("sgd")
    with pytest.raises(KVStoreError, match="unknown capability 'teleport'"):
        kv.is_capable("teleport")
    with pytest.raises(KVStoreError, match="compression"):
        kv.set_gradient_compression({"type": "2bit"})


@pytest.mark.parametrize("kv_type", TYPES)
def test_usage_errors_name_key_and_values(kv_type):
    kv = create(kv_type)
    with pytest.raises(KVStoreError, match="key 'w' has not been initialized"):
        kv.push("w", mx.nd.ones(SHAPE))
    with pytest.raises(KVStoreError, match="key 7 has not been initialized"):
        kv.pull(7, out=mx.nd.ones(SHAPE))
    kv.init("w", mx.nd.ones(SHAPE))
    with pytest.raises(KVStoreError, match="duplicate init of key 'w'"):
        kv.init("w", mx.nd.ones(SHAPE))
    with pytest.raises(
        KVStoreError, match=r"push\('w'\): pushed shape \(3, 2\) does not match the stored shape \(2, 3\)"
    ):
        kv.push("w", [mx.nd.ones(SHAPE), mx.nd.ones((3, 2))])
    with pytest.raises(
        KVStoreError, match=r"pull\('w'\): output shape \(4,\) does not match the stored shape \(2, 3\)"
    ):
        kv.pull("w", out=mx.nd.ones((4,)))
    with pytest.raises(KVStoreError, match="pushed dtype float64 does not match the stored dtype float32"):
        kv.push("w", mx.nd.ones(SHAPE, dtype="float64"))
    with pytest.raises(KVStoreError, match="out= .* is required"):
        kv.pull("w")
    with pytest.raises(KVStoreError, match="2 keys need a list of 2 values, got 1 values"):
        kv.push(["w", "w"], [mx.nd.ones(SHAPE)])
    with pytest.raises(KVStoreError, match="all int or all str"):
        kv.init([1, "x"], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE)])
    with pytest.raises(KVStoreError, match="mixed key types are not allowed: 3 among str keys"):
        kv.init(3, mx.nd.ones(SHAPE))  # this store holds "w": MXNet refuses an int key beside it
    with pytest.raises(KVStoreError, match="keys must be int or str, got float 1.5"):
        kv.init(1.5, mx.nd.ones(SHAPE))
    with pytest.raises(KVStoreError, match="expected an NDArray"):
        kv.push("w", np.ones(SHAPE))


def test_create_types_and_refusals():
    assert create().type == "local"
    assert isinstance(create("local_allreduce_device"), LocalKVStore)
    for name in ("dist_sync", "dist_async", "dist_device_sync"):
        # outside a launched job the distributed types say which variables are missing
        with pytest.raises(KVStoreError, match=r"needs the job's environment variables \['MXLAB_KV_RANK'"):
            create(name)
    with pytest.raises(KVStoreError, match="unknown store type 'nccl'"):
        create("nccl")
    with pytest.raises(KVStoreError, match="must be a string"):
        create(3)
    assert mx.kv.create is create


@pytest.mark.parametrize("kv_type", TYPES)
def test_events_are_published(kv_type):
    kv = create(kv_type)
    kv.init("w", mx.nd.ones(SHAPE))
    with events.record(["kvstore.push", "kvstore.pull"]) as rec:
        kv.push("w", arrays(1.0))
        kv.pull("w", out=arrays(0.0))
    pushes, pulls = rec.of_kind("kvstore.push"), rec.of_kind("kvstore.pull")
    assert [(e["key"], e["nbytes"], e["ctx"]) for e in pushes] == [("w", 24, str(c)) for c in CTXS]
    assert [(e["key"], e["nbytes"], e["ctx"]) for e in pulls] == [("w", 24, str(c)) for c in CTXS]


@pytest.mark.parametrize("kv_type", TYPES)
def test_pull_after_push_is_ordered_by_the_engine(kv_type, make_engine):
    """A slow op writes the gradients; push and pull return at once yet the pull sees the sum."""
    engine = make_engine("ThreadedEnginePerDevice", 2)
    previous = Engine.set(engine)
    try:
        kv = create(kv_type)
        kv.init(1, mx.nd.zeros(SHAPE))
        grads = arrays(0.0)
        release, written = threading.Event(), threading.Event()

        data = [g._data for g in grads]

        def slow_write(run_ctx):
            release.wait(10)
            for d in data:
                d[...] = 3.0
            written.set()

        engine.push_sync(slow_write, mx.cpu(0), [], [g._chunk.var for g in grads], name="slow_write")
        outs = arrays(-1.0)
        kv.push(1, grads, priority=-1)
        kv.pull(1, out=outs, priority=-1)
        # neither call waited for the writer: it cannot finish before release (a wait would last its 10 s)
        assert not written.is_set()
        release.set()
        check_all(outs, 6.0)
    finally:
        Engine.set(previous)


@pytest.mark.parametrize("kv_type", TYPES)
def test_module_uses_the_store_and_two_devices_train_like_one(kv_type):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 5)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=2, name="fc"), name="softmax")

    def fit(contexts):
        mx.random.seed(1)
        it = mx.io.NDArrayIter(x, y, batch_size=8)
        mod = Module(net, context=contexts)
        mod.fit(it, num_epoch=2, kvstore=kv_type, optimizer="sgd", optimizer_params={"learning_rate": 0.5})
        return mod

    two, one = fit(CTXS), fit([mx.cpu(0)])
    assert isinstance(two._kvstore, LocalKVStore) and two._kvstore.type == kv_type
    a, b = two.get_params()[0], one.get_params()[0]
    for name in a:
        np.testing.assert_allclose(a[name].asnumpy(), b[name].asnumpy(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- plug-in stores (KVStoreBase.register)
def test_registered_store_class_is_created_by_its_lower_case_name():
    class SumOnlyStore(mx.kv.LocalKVStore):
        def __init__(self):
            super().__init__("local")

    try:
        assert mx.kv.KVStoreBase.register(SumOnlyStore) is SumOnlyStore
        assert mx.kv.KVStoreBase.kv_registry["sumonlystore"] is SumOnlyStore
        store = mx.kv.create("SumOnlyStore")
        assert isinstance(store, SumOnlyStore) and isinstance(store, mx.kv.KVStoreBase)
        with pytest.warns(UserWarning, match="already registered"):
            mx.kv.KVStore.register(SumOnlyStore)
    finally:
        mx.kv.KVStoreBase.kv_registry.pop("sumonlystore", None)
    assert mx.kv.create("local").type == "local"
    with pytest.raises(mx.kv.KVStoreError, match="not a subclass of mx.kv.KVStoreBase"):
        mx.kv.KVStoreBase.register(dict)
    assert mx.kv.kvstore.KVStore is mx.kv.KVStore

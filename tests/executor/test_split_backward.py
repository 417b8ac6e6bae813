"""Weight gradients split off into nodes of their own: the same numbers, more parallel work."""

from __future__ import annotations

import os

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

import framework as mx
from framework.executor import split_backward


def _lenet():
    """LeNet's shape (two 5x5 convolutions, tanh, pooling, two dense layers), batch 64."""
    x = mx.sym.var("data")
    for i, filters in enumerate((20, 50)):
        x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=filters, name=f"conv{i}")
        x = mx.sym.Pooling(mx.sym.tanh(x), kernel=(2, 2), stride=(2, 2), pool_type="max", name=f"pool{i}")
    x = mx.sym.tanh(mx.sym.FullyConnected(mx.sym.flatten(x), num_hidden=500, name="fc0"))
    return mx.sym.FullyConnected(x, num_hidden=10, name="fc1")


def _bind(symbol, split: bool, data_grad: bool = False):
    rng = np.random.default_rng(0)
    shapes, _, _ = symbol.infer_shape(data=(64, 1, 28, 28))
    names = symbol.list_arguments()
    args = {n: mx.nd.array(rng.standard_normal(s).astype(np.float32) * 0.1) for n, s in zip(names, shapes, strict=True)}
    grads = {n: mx.nd.zeros(s) for n, s in zip(names, shapes, strict=True) if n != "data" or data_grad}
    return symbol.bind(mx.cpu(), args, args_grad=grads, split_weight_gradients=split)


def _run(executor):
    head = np.random.default_rng(1).standard_normal(executor.outputs[0].shape).astype(np.float32)
    executor.forward(is_train=True)
    executor.backward(mx.nd.array(head))
    return {n: g.asnumpy() for n, g in executor.grad_dict.items() if g is not None}


def test_split_gives_the_same_gradients():
    whole, split = _bind(_lenet(), False), _bind(_lenet(), True)
    expected, got = _run(whole), _run(split)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)
    # conv1 and fc0 are split; conv0 is not (no input gradient wanted), nor fc1 (too small to pay)
    assert (whole.num_split_nodes, split.num_split_nodes) == (0, 2)
    backward_names = [step.name for segment in split._backward_segments for step in segment.steps]
    assert "conv1_backward_weight" in backward_names and "fc0_backward_weight" in backward_names
    assert "conv0_backward_weight" not in backward_names and "fc1_backward_weight" not in backward_names


def test_the_weight_clone_runs_beside_the_chain():
    executor = _bind(_lenet(), True)
    segments = executor._backward_segments
    owner = {step.name: k for k, segment in enumerate(segments) for step in segment.steps}
    # the clone is a segment of its own, not in the chain that goes on to conv0's gradient
    assert owner["conv1_backward_weight"] != owner["conv0_backward"]
    assert segments[owner["conv1_backward_weight"]].steps[0].name == "conv1_backward_weight"


def test_the_first_layer_is_split_when_its_input_gradient_is_wanted():
    executor = _bind(_lenet(), True, data_grad=True)
    assert executor.num_split_nodes == 3  # conv0 too: the data gradient is read by nobody else but returned
    reference = _run(_bind(_lenet(), False, data_grad=True))
    for name, values in _run(executor).items():
        np.testing.assert_allclose(values, reference[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_no_split_when_the_weight_gradient_is_not_wanted():
    symbol = _lenet()
    shapes, _, _ = symbol.infer_shape(data=(64, 1, 28, 28))
    names = symbol.list_arguments()
    args = {n: mx.nd.ones(s) for n, s in zip(names, shapes, strict=True)}
    grads = {n: mx.nd.zeros(s) for n, s in zip(names, shapes, strict=True)}
    reqs = {n: ("null" if n.startswith("conv1") else "write") for n in names}
    executor = symbol.bind(mx.cpu(), args, args_grad=grads, grad_req=reqs, split_weight_gradients=True)
    assert executor.num_split_nodes == 2  # fc0 and conv0 (whose data gradient is wanted); not conv1


def test_the_setting_turns_it_on(monkeypatch):
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", "1")
    assert _bind(_lenet(), None).num_split_nodes == 2
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", "0")
    assert _bind(_lenet(), None).num_split_nodes == 0


def test_weight_gradient_work_counts_multiply_adds():
    executor = _bind(_lenet(), True)
    node = next(
        n
        for n in executor._graph.nodes
        if n.op is not None and n.op.name == "_backward_FullyConnected" and n.name == "fc0_backward"
    )
    shapes = {
        (e.node.id, e.index): s
        for e, s in ((executor._graph.entry(i), executor._shapes[i]) for i in range(executor._graph.num_entries))
    }
    work = split_backward.weight_gradient_work(node, lambda e: shapes.get((e.node.id, e.index)))
    assert work == 64 * 500 * 800  # (batch x hidden) outputs, each against one 800-wide weight row


@pytest.mark.parametrize("bad", ["maybe", "2"])
def test_a_bad_setting_is_named(monkeypatch, bad):
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", bad)
    with pytest.raises(Exception, match="MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS"):
        _bind(_lenet(), None)


def test_a_bad_argument_is_named():
    with pytest.raises(Exception, match="split_weight_gradients must be True, False or 'auto', got 'yes'"):
        _bind(_lenet(), "yes")


# ----------------------------------------------------------------------------- training, bit for bit
def _mlp(depth: int, hidden: int):
    x = mx.sym.var("data")
    for i in range(depth):
        x = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=hidden, name=f"fc{i}"), act_type="relu")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(x, num_hidden=10, name="out"), name="softmax")


def _train(symbol, data_shape, split, expected_splits, steps=4):
    """``steps`` Module steps (SGD with momentum) with the split forced on or off; the final parameters."""
    rng = np.random.default_rng(3)
    batch = data_shape[0]
    batches = [
        mx.io.DataBatch(
            [mx.nd.array(rng.random(data_shape, dtype=np.float32))],
            [mx.nd.array(rng.integers(0, 10, batch).astype(np.float32))],
        )
        for _ in range(steps)
    ]
    mx.random.seed(0)
    mod = mx.mod.Module(symbol, context=mx.cpu())
    mod.bind(data_shapes=[("data", data_shape)], label_shapes=[("softmax_label", (batch,))])
    mod.init_params(mx.init.Xavier(rnd_type="uniform", factor_type="in", magnitude=1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    assert mod._exec_group.execs[0].num_split_nodes == (expected_splits if split else 0)
    for data_batch in batches:
        mod.forward_backward(data_batch)
        mod.update()
    return {name: array.asnumpy() for name, array in mod.get_params()[0].items()}


@pytest.mark.parametrize(
    ("network", "data_shape", "splits"),
    [
        (lambda: _mlp(2, 512), (128, 784), 1),  # the MLP: fc1 (784-512) keeps no data gradient, out is small
        (lambda: mx.sym.SoftmaxOutput(_lenet(), name="softmax"), (64, 1, 28, 28), 2),  # conv1 and fc0
    ],
    ids=["mlp", "lenet"],
)
def test_training_with_the_split_is_bit_identical(monkeypatch, network, data_shape, splits):
    results = {}
    for split in (False, True):
        monkeypatch.setenv("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", "1" if split else "0")
        results[split] = _train(network(), data_shape, split, splits)
    for name, whole in results[False].items():
        assert np.array_equal(results[True][name], whole), name  # the same products: the same bits


# ----------------------------------------------------------------------------- auto
@pytest.mark.parametrize(
    ("kind", "workers", "device", "blas", "cores", "expected"),
    [
        ("ThreadedEnginePerDevice", 2, "cpu", 1, 2, True),  # one BLAS thread per product, a core for the clone
        ("ThreadedEnginePerDevice", 2, "cpu", 2, 2, False),  # each product already takes both cores
        ("ThreadedEnginePerDevice", 2, "cpu", 4, 8, True),
        ("ThreadedEnginePerDevice", 1, "cpu", 1, 2, False),  # no second worker to run the clone
        ("ThreadedEngine", 2, "cpu", 1, 2, True),
        ("NaiveEngine", None, "cpu", 1, 2, False),  # everything runs in the pushing thread
        ("ThreadedEnginePerDevice", 2, "gpu", 1, 2, False),
    ],
)
def test_auto_splits_where_a_second_product_finds_idle_cores(
    monkeypatch, make_engine, kind, workers, device, blas, cores, expected
):
    monkeypatch.setattr(split_backward, "blas_threads", lambda: blas)
    monkeypatch.setattr(split_backward, "available_cores", lambda: cores)
    assert split_backward.cores_to_spare(device, make_engine(kind, workers)) is expected


def test_blas_threads_and_cores_are_read_from_the_process():
    assert split_backward.blas_threads() >= 1 and split_backward.available_cores() >= 1


def _blas(path: str, threads: int) -> dict:
    return {"user_api": "blas", "internal_api": "openblas", "filepath": path, "num_threads": threads}


def test_blas_threads_counts_numpys_blas_not_another_librarys(monkeypatch):
    # SciPy's wheel brings its own OpenBLAS; a limit set before SciPy was imported leaves it at 2
    numpy_dir = os.path.dirname(os.path.abspath(np.__file__))
    numpys = _blas(os.path.join(numpy_dir + ".libs", "libscipy_openblas64_.so"), 1)
    scipys = _blas(os.path.join(os.path.dirname(numpy_dir), "scipy.libs", "libscipy_openblas.so"), 2)
    openmp = {"user_api": "openmp", "internal_api": "openmp", "filepath": "/lib/libgomp.so", "num_threads": 8}
    monkeypatch.setattr(split_backward, "threadpool_info", lambda: [numpys, scipys, openmp])
    assert split_backward.blas_threads() == 1
    # a BLAS inside NumPy's own folder counts too, and the larger of NumPy's wins
    inside = _blas(os.path.join(numpy_dir, "core", "libblas.so"), 3)
    monkeypatch.setattr(split_backward, "threadpool_info", lambda: [numpys, scipys, inside])
    assert split_backward.blas_threads() == 3
    # NumPy linked to a system BLAS (nothing inside its package): every BLAS found counts
    system = _blas("/usr/lib/libopenblas.so", 1)
    monkeypatch.setattr(split_backward, "threadpool_info", lambda: [system, scipys, openmp])
    assert split_backward.blas_threads() == 2
    monkeypatch.setattr(split_backward, "threadpool_info", lambda: [openmp])
    assert split_backward.blas_threads() == 1  # no BLAS at all: one thread


def test_blas_threads_follows_a_limit_on_numpys_blas_alone():
    # the benchmarks' --blas-threads 1 limits BLAS before framework (and with it SciPy) is imported
    controller = ThreadpoolController()
    numpy_dir = os.path.dirname(os.path.abspath(np.__file__))
    numpys = [lib.filepath for lib in controller.lib_controllers if lib.user_api == "blas"]
    numpys = [path for path in numpys if split_backward._inside(path, numpy_dir)]
    if not numpys:
        pytest.skip("NumPy here uses a BLAS outside its package (nothing to tell apart)")
    with controller.select(filepath=numpys[0]).limit(limits=1):
        assert split_backward.blas_threads() == 1


def _bind_mlp(depth: int, hidden: int, split):
    symbol = _mlp(depth, hidden)
    shapes, _, _ = symbol.infer_shape(data=(128, 784), softmax_label=(128,))
    names = symbol.list_arguments()
    args = {n: mx.nd.ones(s) for n, s in zip(names, shapes, strict=True)}
    grads = {n: mx.nd.zeros(s) for n, s in zip(names, shapes, strict=True) if n not in ("data", "softmax_label")}
    return symbol.bind(mx.cpu(), args, args_grad=grads, split_weight_gradients=split)


def test_auto_keeps_a_split_only_when_it_plans_no_more_memory(monkeypatch):
    monkeypatch.setattr(split_backward, "cores_to_spare", lambda device, engine: True)
    # the MLP: one split, the same planned bytes
    shallow = {split: _bind_mlp(2, 512, split) for split in (False, True, "auto")}
    assert [shallow[s].num_split_nodes for s in (False, True, "auto")] == [0, 1, 1]
    assert shallow["auto"].plan.bytes_planned == shallow[False].plan.bytes_planned
    # six layers: every output gradient pinned beside its clone costs memory, so auto leaves them whole
    deep = {split: _bind_mlp(6, 1024, split) for split in (False, True, "auto")}
    assert deep[True].num_split_nodes == 5 and deep[True].plan.bytes_planned > deep[False].plan.bytes_planned
    assert deep["auto"].num_split_nodes == 0 and deep["auto"].plan.bytes_planned == deep[False].plan.bytes_planned


def test_auto_without_cores_to_spare_does_not_split(monkeypatch):
    monkeypatch.setattr(split_backward, "cores_to_spare", lambda device, engine: False)
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", "auto")
    assert _bind_mlp(2, 512, None).num_split_nodes == 0
    monkeypatch.setattr(split_backward, "cores_to_spare", lambda device, engine: True)
    assert _bind_mlp(2, 512, None).num_split_nodes == 1


def test_auto_is_the_default(monkeypatch):
    monkeypatch.delenv("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", raising=False)
    assert split_backward.setting() == "auto"
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_WEIGHT_GRADIENTS", "0")
    assert split_backward.setting() is False

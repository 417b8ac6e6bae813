"""A large FullyConnected forward product shared with a helper operation: the same numbers, ordered right."""

from __future__ import annotations

import copy
import threading
import time

import numpy as np
import pytest

import framework as mx
from framework import events
from framework.executor import split_backward, split_forward
from framework.operator.kernel import Req


def _mlp(hidden: int = 512, flatten: bool = True, no_bias: bool = False):
    x = mx.sym.var("data")
    x = mx.sym.relu(mx.sym.FullyConnected(x, num_hidden=hidden, flatten=flatten, no_bias=no_bias, name="fc1"))
    x = mx.sym.relu(mx.sym.FullyConnected(x, num_hidden=hidden, flatten=flatten, no_bias=no_bias, name="fc2"))
    return mx.sym.FullyConnected(x, num_hidden=10, flatten=flatten, name="fc3")


def _bind(symbol, split: str, monkeypatch, data_shape=(128, 784), grads: bool = True):
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS", split)
    rng = np.random.default_rng(0)
    shapes, _, _ = symbol.infer_shape(data=data_shape)
    names = symbol.list_arguments()
    args = {n: mx.nd.array(rng.standard_normal(s).astype(np.float32) * 0.1) for n, s in zip(names, shapes, strict=True)}
    grad_arrays = {n: mx.nd.zeros(s) for n, s in zip(names, shapes, strict=True) if n != "data"} if grads else None
    return symbol.bind(mx.cpu(), args, args_grad=grad_arrays, split_weight_gradients=False)


def _run(executor, is_train: bool = True):
    executor.forward(is_train=is_train)
    out = executor.outputs[0].asnumpy()
    if not is_train:
        return {"out": out}
    executor.backward(mx.nd.array(np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)))
    return {"out": out, **{n: g.asnumpy() for n, g in executor.grad_dict.items() if g is not None}}


def _close(got: dict, expected: dict) -> None:
    # each output element is the same dot product, but BLAS may block a smaller product differently
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_split_gives_the_same_outputs_and_gradients(monkeypatch):
    whole, split = _bind(_mlp(), "0", monkeypatch), _bind(_mlp(), "1", monkeypatch)
    assert (whole.num_split_products, split.num_split_products) == (0, 2)  # fc3 is too small to pay
    _close(_run(split), _run(whole))
    _close(_run(split, is_train=False), _run(whole, is_train=False))


@pytest.mark.parametrize(
    ("hidden", "data_shape", "flatten", "no_bias", "names"),
    [
        # data smaller than weight: column blocks
        (512, (128, 784), True, False, ["fc1[:, 0:128]", "fc1[:, 128:256]", "fc1[:, 256:384]", "fc1[:, 384:512]"]),
        (256, (512, 256), True, True, ["fc1[0:128]", "fc1[128:256]", "fc1[256:384]", "fc1[384:512]"]),  # rows
        (512, (66, 2, 784), False, False, ["fc1[0:16]", "fc1[16:33]", "fc1[33:49]", "fc1[49:66]"]),  # 3-D: rows
    ],
)
def test_pieces_by_columns_or_rows(monkeypatch, hidden, data_shape, flatten, no_bias, names):
    whole = _bind(_mlp(hidden, flatten, no_bias), "0", monkeypatch, data_shape)
    split = _bind(_mlp(hidden, flatten, no_bias), "1", monkeypatch, data_shape)
    assert [piece.name for piece in split.shared_products[0].pieces] == names
    _close(_run(split), _run(whole))


def test_the_fence_helper_and_chain_are_ordered_through_the_block(monkeypatch):
    executor = _bind(_mlp(), "1", monkeypatch)
    fence, helper, chain = executor._forward_pushes[:3]
    fc1 = chain.steps[0]
    assert fc1.name == "fc1" and fence.name == "fc1 fence" and helper.name == "fc1 helper"
    block = fc1.writes[0]  # fc1's output block
    fence_var = fence.writes[1]
    # the fence waits for every earlier user of the block; the block comes first so that the chain,
    # which waits for it, is the fence's continuation and the helper goes to the other worker
    assert fence.writes == [block, fence_var] and fence.reads == []
    assert fence_var in helper.reads and helper.writes == [] and block not in helper.reads
    assert set(fc1.reads) <= set(helper.reads)  # the helper reads what the product reads
    # the chain writes the block: every later reader of fc1's output waits for the whole product
    assert block in chain.writes and fence_var not in chain.reads
    # fc2's fence ends the chain's segment after fc1, its helper and the rest follow
    assert [s.name for s in executor._forward_pushes[3:]] == ["fc2 helper", "fc2..fc3 [3 nodes]"]  # _mlp ends in fc3
    assert chain.steps[-1].name == "fc2 fence"


def test_a_product_that_is_the_output_is_whole_when_read(monkeypatch):
    x = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=512, name="head")
    whole, split = _bind(x, "0", monkeypatch, grads=False), _bind(x, "1", monkeypatch, grads=False)
    assert [s.name for s in split._forward_pushes] == ["head fence", "head helper", "head"]
    for _ in range(3):  # asnumpy waits for the chain's operation, which waits for the helper's pieces
        _close(_run(split, is_train=False), _run(whole, is_train=False))


def test_both_operations_reach_the_engine(monkeypatch):
    executor = _bind(_mlp(), "1", monkeypatch)
    _run(executor)
    with events.record(["engine.push"]) as recorder:
        executor.forward(is_train=True)
        mx.nd.waitall()
    names = [e["name"] for e in recorder.events]
    assert {"fc1 fence", "fc1 helper", "fc2 helper"} <= set(names)
    taken = [product.taken_by_helper for product in executor.shared_products]
    assert all(0 <= t <= split_forward.PIECES for t in taken)


class _Piece:
    """A stand-in piece: records who ran it, optionally waits for a signal or fails."""

    def __init__(self, log: list, name: str, gate: threading.Event | None = None, fail: bool = False) -> None:
        self.log, self.name, self.gate, self.fail = log, name, gate, fail

    def run(self, run_ctx, is_train) -> None:
        if self.gate is not None:
            assert self.gate.wait(10)
        if self.fail:
            raise ValueError(f"{self.name} failed")
        self.log.append((self.name, threading.current_thread().name))


def test_the_chain_computes_what_the_helper_has_not_taken():
    log: list = []
    product = split_forward.SharedProduct([_Piece(log, f"p{i}") for i in range(4)])  # ready as built
    product.finish(None, True)  # no helper came: the chain computes every piece
    assert [name for name, _ in log] == ["p0", "p1", "p2", "p3"]
    product.help(None, True)  # a helper that starts late finds nothing left
    assert product.taken_by_helper == 0 and len(log) == 4


def test_the_chain_waits_for_a_piece_the_helper_is_computing():
    log: list = []
    gate = threading.Event()
    product = split_forward.SharedProduct([_Piece(log, "slow", gate), _Piece(log, "p1"), _Piece(log, "p2")])
    product.reset(None, True)
    helper = threading.Thread(target=product.help, args=(None, True), name="helper")
    helper.start()
    while product._next == 0:  # until the helper has taken the first piece
        time.sleep(0.001)
    finisher = threading.Thread(target=product.finish, args=(None, True), name="chain")
    finisher.start()
    finisher.join(0.2)
    assert finisher.is_alive()  # the chain has taken the rest and waits for the slow piece
    gate.set()
    finisher.join(10)
    helper.join(10)
    assert not finisher.is_alive() and sorted(name for name, _ in log) == ["p1", "p2", "slow"]
    assert ("slow", "helper") in log


def test_a_failing_piece_fails_the_chains_operation():
    product = split_forward.SharedProduct([_Piece([], "p0"), _Piece([], "bad", fail=True)])
    product.reset(None, True)
    with pytest.raises(ValueError, match="bad failed"):
        product.finish(None, True)
    log: list = []
    product.pieces = [_Piece(log, "p0")]
    product.reset(None, True)  # the next pass starts clean
    product.finish(None, True)
    assert [name for name, _ in log] == ["p0"]


def test_small_products_and_other_requests_stay_whole(monkeypatch):
    executor = _bind(_mlp(), "1", monkeypatch)
    steps = {step.name: step for segment in executor._forward_segments for step in segment.steps}
    assert split_forward.splittable(steps["fc1"]) and split_forward.splittable(steps["fc2"])
    assert not split_forward.splittable(steps["fc3"])  # 128 x 512 x 10 multiply-adds
    assert not split_forward.splittable(steps[next(n for n in steps if n.startswith("relu"))])
    added = copy.copy(steps["fc1"])
    added.req = [Req.ADD]  # only a plain write is split
    assert not split_forward.splittable(added)
    on_gpu = copy.copy(steps["fc1"])
    on_gpu.ctx = mx.gpu(0)  # a GPU worker's kernels are asynchronous on its own stream: never split
    assert not split_forward.splittable(on_gpu)


def test_monitoring_and_inline_runs_use_the_whole_nodes(monkeypatch):
    # (run_inline, a loop body's run, iterates the same whole segments as monitoring)
    executor = _bind(_mlp(), "1", monkeypatch)
    seen = []
    executor.set_monitor_callback(lambda name, array: seen.append(name))
    executor.forward(is_train=False)
    mx.nd.waitall()
    assert seen.count("fc1_output") == 1 and seen.count("fc2_output") == 1


def test_auto_splits_where_a_core_is_idle(monkeypatch):
    monkeypatch.setattr(split_backward, "cores_to_spare", lambda device, engine: False)
    assert _bind(_mlp(), "auto", monkeypatch).num_split_products == 0
    monkeypatch.setattr(split_backward, "cores_to_spare", lambda device, engine: True)
    assert _bind(_mlp(), "auto", monkeypatch).num_split_products == 2
    monkeypatch.delenv("MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS")
    assert split_forward.setting() == "auto"  # the default: where a core is idle


def test_a_bad_setting_is_refused(monkeypatch):
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS", "sometimes")
    with pytest.raises(mx.base.MXLabError, match="MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS"):
        split_forward.setting()

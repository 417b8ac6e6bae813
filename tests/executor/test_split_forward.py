"""A large FullyConnected forward product run as two halves: the same numbers, the halves ordered right."""

from __future__ import annotations

import copy

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
    # each output element is the same dot product, but BLAS may block a half-size product differently
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
        (512, (128, 784), True, False, ["fc1[:, 0:256]", "fc1[:, 256:512]"]),  # data smaller than weight
        (256, (512, 256), True, True, ["fc1[0:256]", "fc1[256:512]"]),  # a large batch: rows
        (512, (64, 2, 784), False, False, ["fc1[0:32]", "fc1[32:64]"]),  # a 3-D output: rows
    ],
)
def test_halves_by_columns_or_rows(monkeypatch, hidden, data_shape, flatten, no_bias, names):
    whole = _bind(_mlp(hidden, flatten, no_bias), "0", monkeypatch, data_shape)
    split = _bind(_mlp(hidden, flatten, no_bias), "1", monkeypatch, data_shape)
    pushed = [segment.name for segment in split._forward_pushes]
    assert pushed[:3] == ["fc1 fence", *names]
    _close(_run(split), _run(whole))


def test_the_halves_are_ordered_through_the_block_and_two_variables(monkeypatch):
    executor = _bind(_mlp(), "1", monkeypatch)
    fence, first, second, after = executor._forward_pushes[:4]
    block = first.steps[0].writes[0]  # fc1's output block
    fence_var = next(v for v in fence.writes if v is not block)
    assert fence.steps == [] and set(fence.writes) == {block, fence_var}  # waits for the block's earlier users
    assert first.writes == [block] and fence_var not in first.reads
    assert fence_var in second.reads and block not in second.writes and block not in second.reads
    done = second.writes[0]
    # the chain goes on after both halves, and writing the block makes every later reader wait for it
    assert done in after.reads and block in after.writes and after.steps[0].name.startswith("relu")
    # fc2's fence rides on the segment after fc1's halves
    assert any(v.name == "fc2_fence" for v in after.writes)


def test_a_split_product_at_the_end_is_followed_by_a_join(monkeypatch):
    x = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=512, name="head")
    whole, split = _bind(x, "0", monkeypatch, grads=False), _bind(x, "1", monkeypatch, grads=False)
    assert [s.name for s in split._forward_pushes] == ["head fence", "head[:, 0:256]", "head[:, 256:512]", "head join"]
    # the output is read outside the executor: asnumpy must wait for both halves
    for _ in range(3):
        _close(_run(split, is_train=False), _run(whole, is_train=False))


def test_both_halves_run_as_engine_operations(monkeypatch):
    executor = _bind(_mlp(), "1", monkeypatch)
    _run(executor)
    with events.record(["engine.push"]) as recorder:
        executor.forward(is_train=True)
        mx.nd.waitall()
    names = [e["name"] for e in recorder.events]
    assert {"fc1 fence", "fc1[:, 0:256]", "fc1[:, 256:512]", "fc2[:, 0:256]", "fc2[:, 256:512]"} <= set(names)


def test_small_products_and_other_requests_stay_whole(monkeypatch):
    executor = _bind(_mlp(), "1", monkeypatch)
    steps = {step.name: step for segment in executor._forward_segments for step in segment.steps}
    assert split_forward.splittable(steps["fc1"]) and split_forward.splittable(steps["fc2"])
    assert not split_forward.splittable(steps["fc3"])  # 128 x 512 x 10 multiply-adds
    assert not split_forward.splittable(steps[next(n for n in steps if n.startswith("relu"))])
    added = copy.copy(steps["fc1"])
    added.req = [Req.ADD]  # only a plain write is split
    assert not split_forward.splittable(added)


def test_monitoring_and_inline_runs_use_the_whole_nodes(monkeypatch):
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
    assert split_forward.setting() is False  # off unless asked for


def test_a_bad_setting_is_refused(monkeypatch):
    monkeypatch.setenv("MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS", "sometimes")
    with pytest.raises(mx.base.MXLabError, match="MXLAB_EXEC_SPLIT_FORWARD_PRODUCTS"):
        split_forward.setting()

"""The executor: values against autograd and NumPy, grad_req, parallel branches, errors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import framework as mx
from framework import autograd, events
from framework import symbol as sym
from framework.executor import ExecutorError, PlanOptions, bind, simple_bind
from framework.executor.executor import UnknownArgumentError
from framework.operator import registry
from framework.operator.infer import elemwise_shape, elemwise_type
from framework.operator.kernel import assign
from framework.test_utils import assert_almost_equal


def mlp(depth=2, hidden=16, classes=5):
    x = sym.Variable("data")
    for i in range(depth):
        x = sym.Activation(sym.FullyConnected(x, num_hidden=hidden, name=f"fc{i}"), act_type="relu", name=f"relu{i}")
    return sym.SoftmaxOutput(sym.FullyConnected(x, num_hidden=classes, name="fc_out"), name="softmax")


def fill(exe, seed=0):
    """Random arguments (labels as integers); returns them as NumPy arrays by name."""
    rng = np.random.default_rng(seed)
    values = {}
    for name, array in exe.arg_dict.items():
        if name.endswith("label"):
            value = rng.integers(0, 5, array.shape).astype(array.dtype)
        else:
            value = rng.uniform(-0.5, 0.5, array.shape).astype(array.dtype)
        array[:] = value
        values[name] = value
    return values


def numpy_mlp(v, depth=2):
    """Forward and backward of ``mlp`` by hand: (softmax output, gradients by name)."""
    acts, h = [], v["data"]
    for i in range(depth):
        h = np.maximum(h @ v[f"fc{i}_weight"].T + v[f"fc{i}_bias"], 0)
        acts.append(h)
    z = h @ v["fc_out_weight"].T + v["fc_out_bias"]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    g = p - np.eye(p.shape[1])[v["softmax_label"].astype(int)]
    grads = {"fc_out_weight": g.T @ h, "fc_out_bias": g.sum(0)}
    g = g @ v["fc_out_weight"]
    for i in reversed(range(depth)):
        g = g * (acts[i] > 0)
        below = acts[i - 1] if i else v["data"]
        grads[f"fc{i}_weight"], grads[f"fc{i}_bias"] = g.T @ below, g.sum(0)
        g = g @ v[f"fc{i}_weight"]
    grads["data"] = g
    grads["softmax_label"] = np.zeros_like(v["softmax_label"])
    return p, grads


# ---------------------------------------------------------------------------- values
def test_forward_and_backward_match_numpy_and_autograd():
    exe = simple_bind(mlp(), mx.cpu(), data=(6, 8))
    values = fill(exe)
    out = exe.forward(is_train=True)
    exe.backward()
    prob, grads = numpy_mlp(values)
    assert_almost_equal(out[0], prob, names=("executor", "numpy"))
    assert exe.output_dict["softmax_output"] is out[0]
    for name, grad in grads.items():
        assert_almost_equal(exe.grad_dict[name], grad, names=(f"executor d{name}", "numpy"))

    # the same operators through autograd
    arrays = {k: mx.nd.array(v) for k, v in values.items()}
    for k, a in arrays.items():
        if k != "softmax_label":
            a.attach_grad()
    with autograd.record():
        h = arrays["data"]
        for i in range(2):
            h = mx.nd.FullyConnected(h, arrays[f"fc{i}_weight"], arrays[f"fc{i}_bias"], num_hidden=16)
            h = mx.nd.Activation(h, act_type="relu")
        h = mx.nd.FullyConnected(h, arrays["fc_out_weight"], arrays["fc_out_bias"], num_hidden=5)
        p = mx.nd.SoftmaxOutput(h, arrays["softmax_label"])
    p.backward()
    assert_almost_equal(out[0], p, names=("executor", "autograd"))
    for k, a in arrays.items():
        if k != "softmax_label":
            assert_almost_equal(exe.grad_dict[k], a.grad, names=(f"executor d{k}", "autograd"))


def test_forward_kwargs_and_inference_mode():
    net = mlp()
    exe = simple_bind(net, mx.cpu(), grad_req="null", data=(3, 8))
    values = fill(exe, seed=1)
    assert exe.grad_arrays == [None] * len(exe.arg_arrays) and exe.grad_dict["data"] is None
    new_data = np.random.default_rng(2).uniform(-1, 1, (3, 8)).astype(np.float32)
    out = exe.forward(data=mx.nd.array(new_data))[0]
    values["data"] = new_data
    assert_almost_equal(out, numpy_mlp(values)[0])
    out = exe.forward(data=new_data * 2)[0]  # NumPy values work too
    values["data"] = new_data * 2
    assert_almost_equal(out, numpy_mlp(values)[0])
    exe.backward()  # nothing to do without gradients


def test_head_gradients_shared_gradients_and_variables_used_twice():
    a, b = sym.Variable("a"), sym.Variable("b")
    c = sym.elemwise_mul(a, a, name="sq") + b  # a used twice; + passes the head gradient to b
    d = sym.ElementWiseSum(a, b, name="sum")  # both gradients are the head gradient itself
    exe = simple_bind(sym.Group([c, d]), mx.cpu(), a=(2, 3), b=(2, 3))
    va, vb = fill(exe, seed=3)["a"], exe.arg_dict["b"].asnumpy()
    exe.forward(is_train=True)
    with pytest.raises(ExecutorError, match="not a loss function, so its head gradient is required"):
        exe.backward()
    g1 = np.full((2, 3), 2.0, np.float32)
    g2 = np.arange(6, dtype=np.float32).reshape(2, 3)
    exe.backward([mx.nd.array(g1), mx.nd.array(g2)])
    assert_almost_equal(exe.outputs[0], va * va + vb)
    assert_almost_equal(exe.grad_dict["a"], 2 * va * g1 + g2)
    assert_almost_equal(exe.grad_dict["b"], g1 + g2)
    first, second = exe.output_dict  # out_grads by output name
    exe.backward({first: mx.nd.array(g2), second: mx.nd.array(g2)})
    assert_almost_equal(exe.grad_dict["b"], 2 * g2)
    assert_almost_equal(exe.grad_dict["a"], 2 * va * g2 + g2)
    with pytest.raises(ExecutorError, match=r"out_grads\[1\] for output 'sum_output' has shape \(3,\)"):
        exe.backward([mx.nd.array(g1), mx.nd.ones((3,))])


def lenet_like():
    x = sym.Variable("data")
    x = sym.Pooling(
        sym.Activation(sym.Convolution(x, kernel=(3, 3), num_filter=4, name="conv1"), act_type="tanh", name="tanh1"),
        pool_type="max",
        kernel=(2, 2),
        stride=(2, 2),
        name="pool1",
    )
    left = sym.Activation(sym.Convolution(x, kernel=(1, 1), num_filter=4, name="conv2"), act_type="relu", name="r2")
    right = sym.sigmoid(sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv3"), name="s3")
    x = sym.Concat(left, right, sym.exp(left, name="e"), dim=1, name="cat")
    x = sym.Dropout(sym.Flatten(x, name="flat"), p=0.0, name="drop")
    x = sym.BatchNorm(sym.FullyConnected(x, num_hidden=12, name="fc1"), name="bn")
    return sym.SoftmaxOutput(sym.FullyConnected(x, num_hidden=5, name="fc2"), name="softmax")


@pytest.mark.parametrize("mirror", [None, "node", "segment"])
def test_planned_memory_gives_the_same_values_as_no_planning_at_all(mirror):
    results = []
    for options in (PlanOptions(inplace=False, sharing=False), PlanOptions()):
        exe = simple_bind(lenet_like(), mx.cpu(), plan_options=options, mirror=mirror, data=(3, 2, 10, 10))
        fill(exe, seed=11)
        exe.forward(is_train=True)
        exe.backward()
        results.append((exe.outputs[0].asnumpy(), {k: g.asnumpy() for k, g in exe.grad_dict.items()}, exe.plan))
    (out_a, grads_a, naive), (out_b, grads_b, planned) = results
    assert np.array_equal(out_a, out_b)
    for name in grads_a:
        assert np.array_equal(grads_a[name], grads_b[name]), name
    assert naive.bytes_planned <= naive.bytes_naive and planned.bytes_planned < naive.bytes_planned / 2
    assert planned.inplace


# ---------------------------------------------------------------------------- grad_req
def test_grad_req_add_accumulates_and_null_leaves_arrays_untouched():
    net = mlp()
    names = net.list_arguments()
    exe = simple_bind(net, mx.cpu(), data=(4, 8))
    values = fill(exe, seed=4)
    args = {k: mx.nd.array(v) for k, v in values.items()}
    marker = np.full((16, 8), 7.0, np.float32)
    grads = {k: mx.nd.zeros(a.shape) for k, a in args.items()}
    grads["fc0_weight"] = mx.nd.array(marker)
    reqs = {k: "add" for k in names}
    reqs["fc0_weight"] = "null"
    del reqs["softmax_label"]  # missing from the dict: null
    acc = bind(net, mx.cpu(), args, args_grad=grads, grad_req=reqs)
    assert acc.grad_req["softmax_label"] == "null" and acc.grad_req["fc0_bias"] == "add"
    for _ in range(3):
        acc.forward(is_train=True)
        acc.backward()
    exe.forward(is_train=True)
    exe.backward()
    for name in names:
        if name in ("fc0_weight", "softmax_label"):
            continue
        assert_almost_equal(acc.grad_dict[name], 3 * exe.grad_dict[name].asnumpy(), names=(f"add {name}", "3 x write"))
    assert np.array_equal(acc.grad_dict["fc0_weight"].asnumpy(), marker)
    # a list of requests, one per argument
    lst = bind(net, mx.cpu(), args, args_grad=grads, grad_req=["write"] + ["null"] * (len(names) - 1))
    lst.forward(is_train=True)
    lst.backward()
    assert_almost_equal(lst.grad_dict["data"], exe.grad_dict["data"])


def test_a_gradient_without_a_path_is_zero_for_write():
    x, y = sym.Variable("x"), sym.Variable("y")
    out = sym.MakeLoss(sym.sum(sym.exp(x) + sym.BlockGrad(y)), name="loss")
    exe = simple_bind(out, mx.cpu(), x=(2, 2), y=(2, 2))
    exe.grad_dict["y"][:] = 5
    exe.forward(is_train=True)
    exe.backward()
    assert np.array_equal(exe.grad_dict["y"].asnumpy(), np.zeros((2, 2)))
    assert_almost_equal(exe.grad_dict["x"], np.exp(exe.arg_dict["x"].asnumpy()))


# ---------------------------------------------------------------------------- layers with state
def test_batchnorm_updates_auxiliary_states_and_dropout_masks_only_in_training():
    x = sym.Variable("data")
    net = sym.MakeLoss(sym.sum(sym.Dropout(sym.BatchNorm(x, name="bn", momentum=0.5), p=0.5, name="drop")), name="loss")
    exe = simple_bind(net, mx.cpu(), data=(8, 3))
    assert list(exe.aux_dict) == ["bn_moving_mean", "bn_moving_var"]
    data = np.random.default_rng(5).normal(3, 1, (8, 3)).astype(np.float32)
    exe.arg_dict["data"][:] = data
    exe.arg_dict["bn_gamma"][:] = 1
    exe.aux_dict["bn_moving_var"][:] = 1
    exe.forward(is_train=True)
    exe.backward()
    assert_almost_equal(exe.aux_dict["bn_moving_mean"], 0.5 * data.mean(axis=0), rtol=1e-4, atol=1e-5)
    before = exe.aux_dict["bn_moving_mean"].asnumpy()
    inference = exe.forward(is_train=False)[0].asnumpy()
    assert np.array_equal(exe.aux_dict["bn_moving_mean"].asnumpy(), before)
    normalized = (data - before) / np.sqrt(exe.aux_dict["bn_moving_var"].asnumpy() + 1e-3)
    assert_almost_equal(inference, normalized.sum(keepdims=True).reshape(inference.shape), rtol=1e-4, atol=1e-3)
    # inference-only binding: the mask nobody reads is not stored, and not written
    infer = simple_bind(net, mx.cpu(), grad_req="null", data=(8, 3))
    assert "drop_mask: not stored" in infer.debug_str()


# ---------------------------------------------------------------------------- parallel branches
_meeting: dict[str, threading.Barrier] = {}


def _meet(attrs, op_ctx, inputs, req, outputs):
    _meeting["barrier"].wait()  # breaks (timeout) unless both branches run at the same time
    assign(outputs[0], req[0], inputs[0] * 2)


def _register_meet_op():
    if not registry.exists("_test_executor_meet"):
        (
            registry.register("_test_executor_meet")
            .set_num_inputs(1)
            .set_infer_shape(elemwise_shape)
            .set_infer_type(elemwise_type)
            .set_compute(_meet)
        )


@pytest.mark.parametrize("bulk_size", [1, 15])
def test_independent_branches_run_concurrently_on_two_workers(make_engine, bulk_size):
    _register_meet_op()
    x = sym.Variable("x")
    branches = []
    for side in ("left", "right"):
        h = sym.exp(sym.relu(x, name=f"{side}0"), name=f"{side}1")
        h = sym._internal._test_executor_meet(h, name=f"{side}_meet")
        branches.append(sym.sin(h, name=f"{side}2"))
    out = sym.elemwise_add(*branches, name="join")
    with mx.engine.use(make_engine("ThreadedEnginePerDevice", 2)):
        _meeting["barrier"] = threading.Barrier(2, timeout=10)
        exe = simple_bind(out, mx.cpu(), grad_req="null", bulk_size=bulk_size, x=(4, 4))
        exe.arg_dict["x"][:] = 0.5
        result = exe.forward()[0].asnumpy()
    expected = 2 * np.sin(2 * np.exp(np.full((4, 4), 0.5)))
    assert_almost_equal(result, expected)
    if bulk_size > 1:  # each branch is one bulk segment; the join its own
        assert len(exe._forward_segments) == 3


def test_a_chain_is_bulked_into_segments_of_at_most_bulk_size_nodes():
    exe = simple_bind(mlp(depth=4), mx.cpu(), data=(2, 8), bulk_size=4)
    sizes = [len(s.steps) for s in exe._forward_segments]
    assert max(sizes) == 4 and sum(sizes) == 10
    with events.record(["engine.push"]) as rec:
        exe.forward(is_train=True)
        exe.backward()
        mx.nd.waitall()
    names = [e["name"] for e in rec.events]
    assert any("[4 nodes]" in n for n in names)
    assert len([n for n in names if "fc" in n or "relu" in n or "softmax" in n]) <= len(exe._forward_segments) + len(
        exe._backward_segments
    )


_BULK_VARIABLES = [
    f"{prefix}_EXEC_BULK_EXEC_{suffix}"
    for prefix in ("MXLAB", "MXNET")
    for suffix in ("TRAIN", "INFERENCE", "MAX_NODE_TRAIN", "MAX_NODE_TRAIN_FWD", "MAX_NODE_TRAIN_BWD")
]


def _segment_sizes(grad_req="write", depth=8, **bind_options):
    exe = simple_bind(mlp(depth=depth), mx.cpu(), grad_req=grad_req, data=(2, 8), **bind_options)
    return [len(s.steps) for s in exe._forward_segments], [len(s.steps) for s in exe._backward_segments]


def test_bulk_segment_sizes_follow_mxnets_settings(monkeypatch):
    for name in _BULK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    forward, backward = _segment_sizes()  # a chain of 18 forward nodes: 15 + 3 by default
    assert forward == [15, 3] and max(backward) == 15
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN", "4")  # both passes
    forward, backward = _segment_sizes()
    assert max(forward) == 4 and max(backward) == 4 and sum(forward) == 18
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD", "999")  # GluonCV's settings
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD", "2")
    forward, backward = _segment_sizes()
    assert forward == [18] and max(backward) == 2
    monkeypatch.setenv("MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD", "5")  # MXLab's name wins over MXNet's
    assert max(_segment_sizes()[0]) == 5
    assert _segment_sizes(bulk_size=(3, None)) == ([3] * 6, _segment_sizes()[1])  # CachedOp's size for one pass
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_TRAIN", "0")
    for given in (None, (3, 4)):  # off whatever the per-pass sizes say, as in MXNet
        forward, backward = _segment_sizes(bulk_size=given)
        assert set(forward) == set(backward) == {1}
    forward, backward = _segment_sizes(bulk_size=6)  # bind's own bulk_size is used as given
    assert max(forward) == max(backward) == 6


def test_an_inference_executor_bulks_its_whole_graph(monkeypatch):
    for name in _BULK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN", "2")  # a training setting: not read here
    forward, backward = _segment_sizes(grad_req="null", depth=12)
    assert forward == [26] and backward == []
    assert _segment_sizes(grad_req="null", depth=12, bulk_size=(3, 3))[0] == [26]  # CachedOp's sizes: training only
    exe = simple_bind(mlp(depth=12), mx.cpu(), grad_req="null", data=(2, 8))
    fill(exe)
    with events.record(["engine.push"]) as rec:
        bulked = exe.forward()[0].asnumpy()
    assert len([e for e in rec.events if "[26 nodes]" in e["name"]]) == 1
    monkeypatch.setenv("MXLAB_EXEC_BULK_EXEC_INFERENCE", "0")
    node_by_node = simple_bind(mlp(depth=12), mx.cpu(), grad_req="null", data=(2, 8))
    assert {len(s.steps) for s in node_by_node._forward_segments} == {1}
    fill(node_by_node)
    np.testing.assert_array_equal(node_by_node.forward()[0].asnumpy(), bulked)  # grouping never changes numbers


@pytest.mark.parametrize(
    "name, value",
    [("MXNET_EXEC_BULK_EXEC_TRAIN", "maybe"), ("MXLAB_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD", "-3")],
)
def test_a_malformed_bulk_setting_is_an_error_naming_it(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(mx.config.ConfigError, match=name):
        simple_bind(mlp(depth=2), mx.cpu(), data=(2, 8))


def test_gradient_segments_name_the_backward_segment_that_finishes_each_gradient():
    one_segment = simple_bind(mlp(depth=3), mx.cpu(), data=(2, 8), bulk_size=100)
    found = one_segment.gradient_segments()
    weights = [n for n in one_segment.arg_dict if n.endswith(("_weight", "_bias"))]
    assert set(weights) <= set(found)
    assert set(found.values()) == {0}
    node_by_node = simple_bind(mlp(depth=3), mx.cpu(), data=(2, 8), bulk_size=1)
    found = node_by_node.gradient_segments()
    # backward runs last layer first: the last layer's gradients are finished by an earlier segment
    assert found["fc_out_weight"] < found["fc2_weight"] < found["fc1_weight"] < found["fc0_weight"]
    inference = simple_bind(mlp(depth=3), mx.cpu(), grad_req="null", data=(2, 8))
    assert inference.gradient_segments() == {}


# ---------------------------------------------------------------------------- the plan, reported
def test_debug_str_and_plan_event_report_planned_and_naive_memory():
    with events.record(["executor.plan"]) as rec:
        exe = simple_bind(mlp(depth=3, hidden=256), mx.cpu(), data=(512, 64))
    text = exe.debug_str()
    planned, naive = exe.plan.bytes_planned, exe.plan.bytes_naive
    assert f"Total {planned >> 20} MB allocated ({planned} bytes" in text
    assert f"Naive {naive >> 20} MB ({naive} bytes)" in text
    assert "relu0_output: storage 0" in text and "(in place of fc0_output)" in text
    assert "fc0_backward_output1: external (bound array)" in text
    assert planned < naive
    (event,) = rec.events
    assert event["bytes_planned"] == planned and event["bytes_naive"] == naive
    assert event["storage"] == exe.plan.storage and [tuple(p) for p in event["inplace"]] == exe.plan.inplace
    node = next(n for n in event["graph"] if n["name"] == "relu0")
    assert node["op"] == "Activation" and node["backward"] is False
    assert [event["graph"][i]["name"] for i, _ in node["inputs"]] == ["fc0"]


def test_copy_params_from_and_reshape():
    net = mlp()
    exe = simple_bind(net, mx.cpu(), data=(4, 8))
    fill(exe)
    params = {"fc0_weight": mx.nd.ones((16, 8), dtype="float64")}
    exe.copy_params_from(params)
    assert exe.arg_dict["fc0_weight"].dtype == np.float32 and exe.arg_dict["fc0_weight"].asnumpy().min() == 1
    with pytest.raises(ExecutorError, match="'nope' in arg_params that is not in the arguments"):
        exe.copy_params_from({"nope": mx.nd.ones((1,))})
    exe.copy_params_from({"nope": mx.nd.ones((1,))}, allow_extra_params=True)
    with pytest.raises(ExecutorError, match="not in the auxiliary states"):
        exe.copy_params_from({}, {"nope": mx.nd.ones((1,))})

    small = exe.reshape(data=(2, 8), softmax_label=(2,))
    assert all(any(b is old for old in exe._blocks) for b in small._blocks)  # memory shared too
    assert small.arg_dict["fc0_weight"] is exe.arg_dict["fc0_weight"]  # unchanged shapes: shared
    assert small.arg_dict["data"].shape == (2, 8)
    exe.arg_dict["data"][:] = 1.0
    assert small.arg_dict["data"].asnumpy().min() == 1.0  # down-sized arrays are views of the old ones
    out = small.forward()[0]
    assert out.shape == (2, 5)
    with pytest.raises(ExecutorError, match="larger than the original"):
        exe.reshape(data=(8, 8), softmax_label=(8,))
    assert exe.reshape(allow_up_sizing=True, data=(8, 8), softmax_label=(8,)).arg_dict["data"].shape == (8, 8)
    with pytest.raises(ExecutorError, match="unspecified array arg:fc0_weight changed"):
        exe.reshape(data=(4, 4))
    assert exe.reshape(partial_shaping=True, data=(4, 4)).arg_dict["fc0_weight"].shape == (16, 4)


# ---------------------------------------------------------------------------- errors
def test_bind_errors_name_the_argument():
    net = mlp()
    names = net.list_arguments()
    good = {n: mx.nd.zeros(s) for n, s in zip(names, net.infer_shape(data=(4, 8))[0], strict=True)}
    missing = dict(good)
    del missing["fc1_bias"]
    with pytest.raises(ExecutorError, match="key `fc1_bias` is missing in `args`"):
        bind(net, mx.cpu(), missing)
    with pytest.raises(ExecutorError, match=r"length of args \(2\) does not match"):
        bind(net, mx.cpu(), [good["data"], good["fc0_weight"]])
    wrong = dict(good, fc1_weight=mx.nd.zeros((16, 9)))
    with pytest.raises(ExecutorError, match=r"fc1.*\(16, 16\).*\(16, 9\).*fc1_weight \(16, 9\)"):
        bind(net, mx.cpu(), wrong)
    with pytest.raises(ExecutorError, match="unknown grad_req 'sometimes' for argument 'fc0_bias'"):
        bind(net, mx.cpu(), good, grad_req={"fc0_bias": "sometimes"})
    with pytest.raises(ExecutorError, match="unknown grad_req 'inplace' for argument 'data'"):
        simple_bind(net, mx.cpu(), grad_req="inplace", data=(4, 8))
    with pytest.raises(ExecutorError, match=r"gradient array of 'data' has shape \(1,\)"):
        bind(net, mx.cpu(), good, args_grad={"data": mx.nd.zeros((1,))})
    with pytest.raises(ExecutorError, match="argument 'data' must be an NDArray, got ndarray"):
        bind(net, mx.cpu(), dict(good, data=np.zeros((4, 8))))
    with pytest.raises(ExecutorError, match=r"cannot infer the shape of \['data'"):
        simple_bind(net, mx.cpu())
    with pytest.raises(ExecutorError, match=r"\['dta'\] are not arguments"):
        simple_bind(net, mx.cpu(), dta=(4, 8))
    exe = bind(net, mx.cpu(), good)
    with pytest.raises(UnknownArgumentError, match="unknown argument 'y'"):
        exe.forward(y=mx.nd.ones((2,)))
    with pytest.raises(ExecutorError, match=r"shape mismatch for argument 'data': bound with \(4, 8\), got \(2, 8\)"):
        exe.forward(data=mx.nd.ones((2, 8)))
    with pytest.raises(ExecutorError, match="group2ctx places groups on"):
        simple_bind(net, mx.cpu(), group2ctx={"dev1": mx.cpu(1)}, data=(4, 8))


def test_errors_inside_operators_name_the_node():
    x = sym.Variable("x")
    out = sym.take(sym.Variable("w"), x, mode="raise", name="lookup")
    exe = simple_bind(out, mx.cpu(), grad_req="null", x=(2,), w=(3, 2))
    exe.arg_dict["x"][:] = 7  # out of range
    exe.forward()
    with pytest.raises(Exception) as info:
        exe.outputs[0].asnumpy()
    assert "lookup" in "".join(getattr(info.value, "__notes__", [])) + str(info.value)


def test_type_dict_and_float64():
    net = mlp()
    exe = simple_bind(net, mx.cpu(), type_dict={"data": "float64"}, data=(4, 8))
    assert all(a.dtype == np.float64 for a in exe.arg_arrays)
    values = fill(exe, seed=9)
    exe.forward(is_train=True)
    exe.backward()
    prob, grads = numpy_mlp(values)
    assert_almost_equal(exe.outputs[0], prob)
    assert_almost_equal(exe.grad_dict["fc0_weight"], grads["fc0_weight"])


def test_outputs_that_are_arguments_or_repeated():
    x = sym.Variable("x")
    y = sym.exp(x, name="e")
    exe = simple_bind(sym.Group([x, y, y]), mx.cpu(), grad_req="null", x=(2,))
    exe.arg_dict["x"][:] = 1.0
    outs = exe.forward()
    assert outs[0] is exe.arg_dict["x"]
    assert_almost_equal(outs[1], np.exp([1.0, 1.0])) and outs[2].asnumpy().tolist() == outs[1].asnumpy().tolist()
    assert repr(exe).startswith("<Executor 2 nodes on cpu(0)")

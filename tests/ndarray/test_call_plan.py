"""The imperative path's per-call-pattern cache: what it may share between calls, and what it must not."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.base import EngineError
from framework.ndarray import imperative
from framework.operator.infer import elemwise_shape, elemwise_type
from framework.operator.registry import register


def _report_context(attrs, op_ctx, inputs, req, outputs):
    """Writes (is_train, device id) into its output: what the compute function was told."""
    outputs[0][...] = inputs[0]
    outputs[0][0] = float(op_ctx.is_train)
    outputs[0][1] = float(op_ctx.ctx.device_id)


register("_test_report_context", override=True).set_num_inputs(1).set_infer_shape(elemwise_shape).set_infer_type(
    elemwise_type
).set_compute(_report_context)


def _reported(x):
    [out] = imperative.invoke("_test_report_context", [x])
    return tuple(out.asnumpy()[:2])


def test_the_shared_op_context_follows_the_training_flag():
    x = mx.nd.zeros((4,))
    assert _reported(x) == (0.0, 0.0)
    with mx.autograd.train_mode():
        assert _reported(x) == (1.0, 0.0)
    assert _reported(x) == (0.0, 0.0)


def test_the_shared_op_context_follows_the_device_of_the_inputs():
    assert _reported(mx.nd.zeros((4,), ctx=mx.cpu(0))) == (0.0, 0.0)
    assert _reported(mx.nd.zeros((4,), ctx=mx.cpu(1))) == (0.0, 1.0)  # same shapes, another device


def test_a_repeated_call_pattern_reuses_one_plan_and_a_new_shape_makes_another(monkeypatch):
    # an empty cache of its own: after thousands of earlier tests the shared one may be full
    # (it stops growing at its limit), and then no new plan would be stored
    monkeypatch.setattr(imperative, "_call_cache", {})
    a, smaller = mx.nd.ones((3, 5)), mx.nd.ones((2, 5))
    before = len(imperative._call_cache)
    for _ in range(3):
        b = a + 7.25
    assert len(imperative._call_cache) - before == 1
    c = smaller + 7.25
    assert len(imperative._call_cache) - before == 2
    np.testing.assert_allclose(b.asnumpy(), 8.25)
    assert c.shape == (2, 5)


def test_out_naming_one_array_twice_is_refused_with_the_operator_named():
    data = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    out = mx.nd.zeros((2, 3))
    with pytest.raises(EngineError, match="SliceChannel: out= holds the same array"):
        mx.nd.split(mx.nd.concat(data, data, dim=0), num_outputs=2, axis=0, out=[out, out])

"""LBSGD (accumulated large-batch steps with warmup or LARS), and MXNet's leftover names ccSGD, Test, set_lr_scale."""

from __future__ import annotations

import math

import numpy as np
import pytest

import framework as mx
from framework.optimizer import OptimizerError


def _step(optimizer, weight, grads, state=None):
    for grad in grads:
        optimizer.update(0, weight, mx.nd.array(grad), state)
    return weight.asnumpy()


def test_lbsgd_steps_once_per_batch_scale_updates_with_the_mean_gradient():
    optimizer = mx.optimizer.create("lbsgd", learning_rate=0.1, batch_scale=2, warmup_epochs=0)
    weight = mx.nd.array([1.0, 1.0])
    after_one = _step(optimizer, weight, [[1.0, 3.0]])
    np.testing.assert_allclose(after_one, [1.0, 1.0])  # still accumulating
    after_two = _step(optimizer, weight, [[3.0, 5.0]])
    # mean gradient (2, 4), rate 0.1 * batch_scale (warmup over): 1 - 0.2 * (2, 4)
    np.testing.assert_allclose(after_two, [0.6, 0.2], rtol=1e-5)


def test_lbsgd_warmup_grows_from_one_to_batch_scale():
    for strategy, shape in (("linear", 0.5), ("power2", 0.25), ("sqrt", math.sqrt(0.5))):
        optimizer = mx.optimizer.LBSGD(warmup_strategy=strategy, batch_scale=9, warmup_epochs=2, updates_per_epoch=5)
        assert optimizer.warmup_multiplier(0) == 1.0
        assert optimizer.warmup_multiplier(5) == pytest.approx(1 + 8 * shape)
        assert optimizer.warmup_multiplier(10) == 9.0 == optimizer.warmup_multiplier(50)


def test_lbsgd_warmup_starts_at_begin_epoch():
    optimizer = mx.optimizer.LBSGD(
        learning_rate=1.0, batch_scale=3, warmup_epochs=2, updates_per_epoch=3, begin_epoch=1
    )
    weight = mx.nd.array([0.0])
    _step(optimizer, weight, [[1.0]] * 3)
    # progress 3 (begin_epoch) + 3 (updates) = 6 of 6: the full multiplier 3
    np.testing.assert_allclose(weight.asnumpy(), [-3.0], rtol=1e-5)


def test_lbsgd_lars_scales_by_the_weight_to_gradient_norm_ratio():
    optimizer = mx.optimizer.LBSGD(learning_rate=0.1, warmup_strategy="lars", momentum=0.9)
    weight = mx.nd.array([3.0, 4.0])  # norm 5
    state = optimizer.create_state(0, weight)
    _step(optimizer, weight, [[0.0, 0.5]], state)  # gradient norm 0.5: ratio 10
    np.testing.assert_allclose(weight.asnumpy(), [3.0, 4.0 - 0.1 * 10 * 0.5], rtol=1e-5)
    assert optimizer.lars_multiplier(mx.nd.array([1e6]), mx.nd.array([1.0]), 0.0) == 100.0


def test_lbsgd_multi_precision_steps_the_float32_master_copy():
    optimizer = mx.optimizer.LBSGD(learning_rate=0.5, multi_precision=True, warmup_epochs=0)
    weight = mx.nd.array([1.0], dtype="float16")
    state = optimizer.create_state_multi_precision(0, weight)
    optimizer.update_multi_precision(0, weight, mx.nd.array([1.0], dtype="float16"), state)
    assert weight.dtype == np.float16 and state[1].dtype == np.float32
    np.testing.assert_allclose(weight.asnumpy(), [0.5])


def test_lbsgd_rejects_bad_settings():
    with pytest.raises(OptimizerError, match="warmup_strategy"):
        mx.optimizer.LBSGD(warmup_strategy="cosine")
    with pytest.raises(OptimizerError, match="batch_scale must be an integer >= 1"):
        mx.optimizer.LBSGD(batch_scale=0)


def test_ccsgd_is_sgd_and_test_adds_the_gradient():
    assert isinstance(mx.optimizer.create("ccsgd", momentum=0.9), mx.optimizer.SGD)
    test = mx.optimizer.create("test", rescale_grad=0.5)
    weight = mx.nd.array([1.0, 2.0])
    state = test.create_state(0, weight)
    test.update(0, weight, mx.nd.array([2.0, 2.0]), state)
    np.testing.assert_allclose(weight.asnumpy(), [2.0, 3.0])
    np.testing.assert_allclose(state.asnumpy(), [2.0, 3.0])
    assert mx.optimizer.optimizer.SGD is mx.optimizer.SGD


def test_set_lr_scale_is_removed_as_in_mxnet():
    with pytest.raises(DeprecationWarning, match="use set_lr_mult"):
        mx.optimizer.SGD().set_lr_scale({0: 0.5})

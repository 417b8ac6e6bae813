"""MXNet 1.9.1's module paths over MXLab's operator functions (gen_*, utils) and the legacy mx.nd.imdecode."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import framework as mx
from framework.legacy_imdecode import ImdecodeError


def test_generated_modules_hold_the_same_functions():
    assert mx.nd.gen_op.relu is mx.nd.relu
    assert mx.nd.gen_contrib.ROIAlign is mx.nd.contrib.ROIAlign
    assert mx.nd.gen_linalg.gemm2 is mx.nd.linalg.gemm2
    assert mx.nd.gen_random.uniform is mx.nd.op._random_uniform
    assert mx.nd.gen__internal._plus_scalar is mx.nd._internal._plus_scalar
    assert mx.nd.gen_image.to_tensor is mx.nd.image.to_tensor
    assert mx.sym.gen_op.relu is mx.sym.op.relu
    assert mx.sym.gen_linalg is mx.sym.linalg
    assert isinstance(mx.sym.gen_random.normal(shape=(2,)), mx.sym.Symbol)
    # mx.nd.contrib.adamw_update is a hand-written front end (over _adamw_update), not a generated function.
    assert hasattr(mx.nd.contrib, "adamw_update") and not hasattr(mx.nd.gen_contrib, "adamw_update")
    with pytest.raises(AttributeError, match="no operator"):
        mx.nd.gen_contrib.no_such_operator  # noqa: B018


def test_utils_are_the_dense_creation_and_file_functions(tmp_path):
    assert mx.nd.utils.zeros is mx.nd.zeros and mx.nd.utils.array is mx.nd.array
    path = str(tmp_path / "x.nd")
    mx.nd.utils.save(path, {"a": mx.nd.ones((2,))})
    assert mx.nd.utils.load(path)["a"].asnumpy().tolist() == [1, 1]


def _png(height=4, width=5, rgb=(10, 20, 30)) -> bytes:
    pixels = np.empty((height, width, 3), np.uint8)
    pixels[...] = rgb
    pixels[0, 0] = (1, 2, 3)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def test_imdecode_is_channel_first_float_in_decoder_order():
    decoded = mx.nd.imdecode(_png())
    assert decoded.shape == (3, 4, 5) and decoded.dtype == np.float32
    assert decoded[:, 1, 1].asnumpy().tolist() == [30, 20, 10]  # BGR, as OpenCV decodes
    assert decoded[:, 0, 0].asnumpy().tolist() == [3, 2, 1]


def test_imdecode_clips_subtracts_the_mean_and_fills_a_batch_slot():
    clipped = mx.nd.imdecode(_png(), clip_rect=(1, 1, 3, 4), channels=1)
    assert clipped.shape == (1, 3, 2)
    batch = mx.nd.zeros((2, 3, 4, 5))
    returned = mx.nd.imdecode(_png(), out=batch, index=1, mean=mx.nd.ones((3, 4, 5)))
    assert returned is batch
    assert batch[1, :, 2, 2].asnumpy().tolist() == [29, 19, 9]
    assert batch[0].asnumpy().sum() == 0


def test_imdecode_errors_name_the_problem():
    with pytest.raises(ImdecodeError, match="not inside"):
        mx.nd.imdecode(_png(), clip_rect=(0, 0, 9, 9))
    with pytest.raises(ImdecodeError, match="channels=4"):
        mx.nd.imdecode(_png(), channels=4)
    with pytest.raises(ImdecodeError, match="mean has shape"):
        mx.nd.imdecode(_png(), mean=mx.nd.ones((3, 2, 2)))
    with pytest.raises(ImdecodeError, match="out must be 3-D"):
        mx.nd.imdecode(_png(), out=mx.nd.zeros((60,)))
    with pytest.raises(ImdecodeError, match="cannot decode"):
        mx.nd.imdecode(b"not an image")


# ---------------------------------------------------------------------- hand-written contrib functions
def test_isfinite_isinf_isnan_mark_elements():
    x = mx.nd.array([1.0, float("inf"), -float("inf"), float("nan")])
    assert mx.nd.contrib.isfinite(x).asnumpy().tolist() == [1, 0, 0, 0]
    assert mx.nd.contrib.isinf(x).asnumpy().tolist() == [0, 1, 1, 0]
    assert mx.nd.contrib.isnan(x).asnumpy().tolist() == [0, 0, 0, 1]
    with pytest.raises(TypeError):
        mx.nd.contrib.isnan()  # data is required, as in MXNet


def test_rand_zipfian_draws_log_uniform_classes_and_their_expected_counts():
    mx.random.seed(3)
    true_classes = mx.nd.array([0, 3, 9])
    sampled, expected_true, expected_sampled = mx.nd.contrib.rand_zipfian(true_classes, 4000, 10)
    draws = sampled.asnumpy()
    assert sampled.dtype == np.int64 and draws.min() >= 0 and draws.max() <= 9
    probabilities = np.log((np.arange(10) + 2) / (np.arange(10) + 1)) / np.log(11)
    np.testing.assert_allclose(probabilities.sum(), 1.0)
    frequencies = np.bincount(draws, minlength=10) / len(draws)
    np.testing.assert_allclose(frequencies, probabilities, atol=0.03)  # class 0 is ~29%, class 9 ~4%
    np.testing.assert_allclose(expected_true.asnumpy(), 4000 * probabilities[[0, 3, 9]])
    np.testing.assert_allclose(expected_sampled.asnumpy(), 4000 * probabilities[draws])
    with pytest.raises(mx.MXNetError, match="num_sampled must be a positive integer"):
        mx.nd.contrib.rand_zipfian(true_classes, 0, 10)


def test_symbolic_rand_zipfian_has_the_same_shapes():
    outputs = mx.sym.Group(list(mx.sym.contrib.rand_zipfian(mx.sym.var("c"), 5, 10)))
    sampled, expected_true, expected_sampled = outputs.eval(ctx=mx.cpu(), c=mx.nd.array([0, 3, 9]))
    assert (sampled.shape, expected_true.shape, expected_sampled.shape) == ((5,), (3,), (5,))
    assert 0 <= sampled.asnumpy().min() and sampled.asnumpy().max() < 10


def test_adamw_front_ends_take_mxnets_arguments_imperatively_and_symbolically():
    def state():
        return mx.nd.ones((2,)), mx.nd.zeros((2,)), mx.nd.zeros((2,))

    weight, mean, var = state()
    out = mx.nd.zeros((2,))
    returned = mx.nd.contrib.adamw_update(weight, mx.nd.ones((2,)), mean, var, 0.5, lr=0.1, eta=1.0, wd=0.01, out=out)
    assert returned is out and mean.asnumpy().tolist() == pytest.approx([0.05, 0.05])
    step = mx.sym.contrib.adamw_update(
        mx.sym.var("w"), mx.sym.var("g"), mx.sym.var("m"), mx.sym.var("v"), 0.5, lr=0.1, eta=1.0, wd=0.01
    )
    assert step.list_auxiliary_states() == ["m", "v"]  # mutated in place, as in MXNet
    weight, mean, var = state()
    executor = step.bind(mx.cpu(), {"w": weight, "g": mx.nd.ones((2,))}, aux_states={"m": mean, "v": var})
    np.testing.assert_allclose(executor.forward()[0].asnumpy(), out.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(mean.asnumpy(), [0.05, 0.05], rtol=1e-6)

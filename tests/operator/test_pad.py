"""Pad: constant, edge and reflect padding of the spatial axes, against np.pad."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework.operator.infer import InferenceError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

WIDTH_4D = (0, 0, 0, 0, 1, 2, 2, 1)
WIDTH_5D = (0, 0, 0, 0, 1, 0, 0, 1, 2, 1)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("shape, width", [((2, 3, 4, 5), WIDTH_4D), ((1, 2, 3, 4, 4), WIDTH_5D)])
def test_pad_matches_numpy_with_gradient_and_req(mode, shape, width):
    x = np.random.rand(*shape)
    pairs = [(width[2 * i], width[2 * i + 1]) for i in range(len(shape))]
    kwargs = {"constant_value": 1.5} if mode == "constant" else {}
    expected = np.pad(x, pairs, mode=mode, **({"constant_values": 1.5} if mode == "constant" else {}))
    assert_almost_equal(mx.nd.pad(mx.nd.array(x), mode=mode, pad_width=width, **kwargs), expected)
    check_imperative_gradient(lambda a: mx.nd.Pad(a, mode=mode, pad_width=width, **kwargs), [x])
    check_req("Pad", [x], mode=mode, pad_width=width, **kwargs)


def test_pad_rejects_bad_widths():
    x = mx.nd.zeros((1, 1, 3, 3))
    with pytest.raises(InferenceError, match="batch and channel axes"):
        mx.nd.pad(x, pad_width=(0, 1, 0, 0, 1, 1, 1, 1))
    with pytest.raises(InferenceError, match="2 \\* ndim = 8 numbers"):
        mx.nd.pad(x, pad_width=(0, 0, 0, 0, 1, 1))
    with pytest.raises(InferenceError, match="must be smaller than its length 3"):
        mx.nd.pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 3, 0, 0, 0))
    with pytest.raises(InferenceError, match="4-d or 5-d"):
        mx.nd.pad(mx.nd.zeros((3, 3)), pad_width=(1, 1, 1, 1))

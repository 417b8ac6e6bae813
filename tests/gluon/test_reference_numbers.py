"""Gluon losses and image transforms against MXNet 1.9.1's numbers (tests/data/mxnet_1_9_1/gluon/).

``make_reference_numbers.py`` there ran each call of its LOSSES and TRANSFORMS tables with
MXNet 1.9.1; the same calls run here on MXLab (tests/gluon/test_loss.py and test_data.py check
that hybridized blocks agree with imperative ones).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import framework as mx

HERE = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "gluon"
_spec = importlib.util.spec_from_file_location("make_reference_numbers", HERE / "make_reference_numbers.py")
assert _spec is not None and _spec.loader is not None
references = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(references)


@pytest.fixture(scope="module")
def mxnet_numbers():
    return mx.nd.load(str(HERE / "reference-numbers.nd"))


def test_the_reference_file_covers_every_call(mxnet_numbers):
    assert sorted(mxnet_numbers) == sorted({**references.LOSSES, **references.TRANSFORMS})


@pytest.mark.parametrize("name", list(references.LOSSES))
def test_losses_give_mxnets_numbers(mxnet_numbers, name):
    got = references.LOSSES[name](mx)
    np.testing.assert_allclose(got.asnumpy(), mxnet_numbers[name].asnumpy(), rtol=1e-3, atol=1e-5)


# integer images: an interpolated pixel may round the other way in either library
_TOLERANCE = {"uint8": 1.0, "float16": 1e-3, "float32": 1e-4}


@pytest.mark.parametrize("name", list(references.TRANSFORMS))
def test_transforms_give_mxnets_numbers(mxnet_numbers, name):
    got = references.TRANSFORMS[name](mx)
    expected = mxnet_numbers[name]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    diff = np.abs(got.asnumpy().astype(np.float64) - expected.asnumpy().astype(np.float64))
    assert diff.max() <= _TOLERANCE[np.dtype(expected.dtype).name], f"{name}: largest difference {diff.max()}"

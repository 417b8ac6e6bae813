"""mx.test_utils comparisons and tolerances: MXNet 1.9.1's defaults, and messages that name the worst element."""

from __future__ import annotations

import numpy as np
import pytest
from api_coverage import documented_absences, load_reference, module_report

import framework as mx
from framework import test_utils as tu


def test_default_tolerances_per_dtype():
    assert tu.default_rtols()[np.dtype(np.float16)] == 1e-2
    assert tu.default_atols()[np.dtype(np.float32)] == 1e-3
    assert tu.default_rtols()[np.dtype(np.int32)] == 0
    assert tu.default_numeric_eps()[np.dtype(np.float32)] == 2.0**-9
    assert tu.get_rtol() == 1e-5 and tu.get_atol() == 1e-20  # float64's, as in MXNet
    assert tu.get_rtol(0.5) == 0.5 and tu.get_rtol(dtype=np.float16) == 1e-2
    assert tu.get_etol() == 0 and tu.get_etol(0.1) == 0.1
    assert tu.default_dtype() is np.float32
    assert tu.effective_dtype(np.ones(2, np.float16)) == np.float16


def test_get_tols_takes_the_looser_dtype_and_dicts():
    a16, b64 = np.ones(2, np.float16), np.ones(2, np.float64)
    assert tu.get_tols(a16, b64, None, None) == (1e-2, 1e-1)
    assert tu.get_tols(a16, b64, 0.3, None) == (0.3, 1e-1)
    assert tu.get_tols(a16, a16, {np.float16: 0.05}, None) == (0.05, 1e-1)
    assert tu.get_tols(1.0, 2.0, None, None) == (1e-5, 1e-20)  # Python floats are float64
    assert tu.get_tolerance(np.ones(1, np.float32), None, tu.default_rtols()) == 1e-4


def test_assert_almost_equal_passes_within_tolerance():
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    tu.assert_almost_equal(a, a + 5e-4)  # float32: atol 1e-3
    tu.assert_almost_equal(mx.nd.array(a), a)
    tu.assert_almost_equal(np.array([np.inf, 1.0]), np.array([np.inf, 1.0]))
    tu.assert_almost_equal(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), equal_nan=True)
    tu.assert_almost_equal(np.ones((2, 3)), np.ones(3))  # use_broadcast=True


def test_assert_almost_equal_fails_naming_the_worst_element():
    a = np.zeros((3, 4))
    b = np.zeros((3, 4))
    b[0, 1] = 1.0
    b[2, 3] = 5.0
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, b, rtol=1e-3, atol=1e-3, names=("got", "want"))
    message = str(info.value)
    assert message.startswith("Error ") and "exceeds tolerance rtol=1.000000e-03, atol=1.000000e-03" in message
    assert "Location of maximum error: (2, 3), got=0.00000000, want=5.00000000" in message
    assert "(mismatch 16.666667%: 2 of 12 elements" in message
    assert "  1: Error" in message and "  2: Error" in message and "(0, 1)" in message


def test_assert_almost_equal_mismatches_limits_the_list():
    a, b = np.zeros(20), np.arange(1.0, 21.0)
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, b, rtol=0, atol=0.5, mismatches=(3, 10))
    message = str(info.value)
    assert "  3: Error" in message and "  4: Error" not in message
    assert "20 of 20 elements" in message
    assert "Location of maximum error: (19,)" in message


def test_assert_almost_equal_failure_paths():
    with pytest.raises(AssertionError, match=r"shapes differ \(use_broadcast=False\): a has \(2, 3\), b has \(3,\)"):
        tu.assert_almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)
    with pytest.raises(AssertionError, match="do not broadcast"):
        tu.assert_almost_equal(np.ones((2, 3)), np.ones(2))
    with pytest.raises(AssertionError, match="Location of maximum error: \\(0,\\)"):
        tu.assert_almost_equal(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))  # NaN != NaN by default
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1, 2], np.int32), np.array([1, 3], np.int32))  # integers: exact
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True, False]), np.array([True, True]))
    with pytest.raises(TypeError, match="no default tolerance for dtype"):
        tu.assert_almost_equal(np.array(["a"]), np.array(["a"]))


def test_almost_equal_uses_float64_defaults_like_mxnet():
    a = np.ones(3, np.float32)
    assert tu.almost_equal(a, a)
    assert not tu.almost_equal(a, a + 1e-4)  # rtol 1e-5 whatever the dtype
    assert tu.almost_equal(a, a + 1e-4, rtol=1e-3)
    assert not tu.almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)
    assert tu.almost_equal(np.ones((2, 3)), np.ones(3))
    assert not tu.almost_equal(np.ones((2, 3)), np.ones(2))
    assert tu.almost_equal(np.array([np.nan]), np.array([np.nan]), equal_nan=True)


def test_find_max_violation():
    index, violation = tu.find_max_violation(
        np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 2.0], [3.5, 4.0]]), 0, 0.1
    )
    assert index == (1, 0) and violation == pytest.approx(5.0)
    assert tu.find_max_violation(np.zeros(0), np.zeros(0)) == ((), 0.0)


def test_ignore_nan_with_err_and_allclose():
    a = np.array([np.nan, 1.0, 2.0])
    tu.assert_almost_equal_ignore_nan(a, np.array([5.0, 1.0, np.nan]))
    with pytest.raises(AssertionError, match=r"Location of maximum error: \(1,\)"):
        tu.assert_almost_equal_ignore_nan(a, np.array([5.0, 9.0, np.nan]))
    x, y = np.zeros(10), np.zeros(10)
    y[3] = 1.0
    tu.assert_almost_equal_with_err(x, y, rtol=0, atol=0.1, etol=0.2)  # 10% out, 20% allowed
    with pytest.raises(AssertionError, match="more than etol=0.05"):
        tu.assert_almost_equal_with_err(x, y, rtol=0, atol=0.1, etol=0.05)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(x, y, rtol=0, atol=0.1)  # etol 0: every element
    tu.assert_allclose(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    with pytest.raises(AssertionError):
        tu.assert_allclose(np.array([1.0]), np.array([1.0 + 1e-6]))


def test_same_and_same_array():
    assert tu.same(np.arange(3), np.arange(3)) and not tu.same(np.arange(3), np.arange(1, 4))
    x = mx.nd.zeros((2, 3))
    assert tu.same_array(x, x[:])  # a view of the whole array shares memory
    assert not tu.same_array(x, x.copy())
    np.testing.assert_array_equal(x.asnumpy(), 0)  # restored


def test_np_reduce_and_collapse_sum_like():
    data = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_allclose(tu.np_reduce(data, (0, 2), True, np.sum), data.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(tu.np_reduce(data, None, False, np.max), data.max())
    np.testing.assert_allclose(tu.np_reduce(data, -1, False, np.sum), data.sum(axis=-1))
    np.testing.assert_allclose(tu.collapse_sum_like(data, (3, 1)), data.sum(axis=(0, 2)).reshape(3, 1))
    assert tu.collapse_sum_like(np.zeros((0, 3)), (1, 3)).shape == (1, 3)
    with pytest.raises(ValueError, match="does not broadcast"):
        tu.collapse_sum_like(data, (2, 4))
    with pytest.raises(ValueError, match="more dimensions"):
        tu.collapse_sum_like(np.ones(3), (1, 3))


def test_compare_ndarray_tuple():
    tu.compare_ndarray_tuple((mx.nd.ones(2), (np.zeros(1), None)), (np.ones(2), (np.zeros(1), None)))
    with pytest.raises(AssertionError, match="structures differ"):
        tu.compare_ndarray_tuple((np.ones(2),), (np.ones(2), np.ones(2)))
    with pytest.raises(AssertionError, match="one side is None"):
        tu.compare_ndarray_tuple(None, np.ones(1))
    with pytest.raises(AssertionError, match="Location of maximum error"):
        tu.compare_ndarray_tuple((np.ones(2),), (np.zeros(2),))


def test_default_context_follows_the_with_block_and_can_be_set():
    assert tu.default_context() == mx.cpu(0)
    with mx.cpu(2):
        assert tu.default_context() == mx.cpu(2)
    try:
        tu.set_default_context(mx.cpu(1))
        assert tu.default_context() == mx.cpu(1)
        assert mx.nd.zeros(1).context == mx.cpu(1)
    finally:
        tu.set_default_context(mx.cpu(0))


def test_mxnet_small_helpers():
    np.testing.assert_array_equal(tu.assign_each(np.array([[1, 2], [3, 4]]), lambda v: v * 10), [[10, 20], [30, 40]])
    np.testing.assert_array_equal(tu.assign_each(np.array([1, 2]), None), [1, 2])
    np.testing.assert_array_equal(tu.assign_each2(np.array([1, 2]), np.array([3, 4]), lambda a, b: a * b), [3, 8])
    with pytest.raises(AssertionError, match="shapes differ"):
        tu.assign_each2(np.ones(2), np.ones(3), max)
    tu.checkShapes(np.ones((2, 3)), np.zeros((2, 3)))
    with pytest.raises(AssertionError, match=r"a.shape = \(2,\) and b.shape = \(3,\) are not equal"):
        tu.checkShapes(np.ones(2), np.ones(3))
    line = tu.locationError(np.array([1.0, 2.0]), np.array([1.0, 3.0]), (1,), ("x", "y"), maxError=True)
    assert line == "Location of maximum error: (1,), x=2.00000000, y=3.00000000"
    assert len(tu.random_uniform_arrays((2,), low=5, high=6)[0]) == 2
    with pytest.raises(TypeError, match="unexpected argument"):
        tu.random_uniform_arrays((2,), scale=3)


def test_test_utils_has_mxnets_names_and_signatures():
    """Every name MXNet 1.9.1 defines in mx.test_utils, with its signature, unless documented absent."""
    report = module_report(load_reference(), mx, "test_utils")
    absent = documented_absences()
    assert [n for n in report.missing if f"mx.test_utils.{n}" not in absent] == []
    assert report.signatures == {}

"""mx.test_utils random data helpers: MXNet's signatures, NumPy's global generator, dense storage only."""

from __future__ import annotations

import numpy as np
import pytest

import framework as mx
from framework import test_utils as tu


def test_rand_shapes_have_mxnet_ranges():
    np.random.seed(3)
    shapes = [tu.rand_shape_nd(4) for _ in range(50)]
    assert all(len(s) == 4 and all(1 <= d <= 10 for d in s) for s in shapes)
    assert any(d == 10 for s in shapes for d in s)  # dim defaults to 10
    zeros = [tu.rand_shape_nd(3, 2, allow_zero_size=True) for _ in range(50)]
    assert any(0 in s for s in zeros)
    assert all(1 <= d <= 4 for d in tu.rand_shape_2d(4, 4))
    assert len(tu.rand_shape_3d()) == 3
    np.random.seed(5)
    first = tu.rand_shape_nd(3)
    np.random.seed(5)
    assert tu.rand_shape_nd(3) == first
    rng = np.random.default_rng(0)
    assert all(1 <= d <= 3 for d in tu.rand_shape_nd(5, 3, rng=rng))


def test_rand_shape_rejects_a_generator_in_mxnets_allow_zero_size_slot():
    with pytest.raises(tu.HelperArgumentError, match="allow_zero_size must be a bool.*rng=..., by keyword"):
        tu.rand_shape_nd(2, 3, np.random.default_rng(0))


def test_rand_ndarray_is_dense_float32_and_refuses_sparse():
    x = tu.rand_ndarray((3, 4))
    assert isinstance(x, mx.nd.NDArray) and x.shape == (3, 4) and x.dtype == np.float32
    assert tu.rand_ndarray((2,), dtype=np.float64, ctx=mx.cpu(1)).context == mx.cpu(1)
    for stype in ("csr", "row_sparse"):
        with pytest.raises(tu.HelperArgumentError, match=f"stype='{stype}' needs sparse storage"):
            tu.rand_ndarray((3, 4), stype)


def test_random_arrays_and_samples():
    one = tu.random_arrays((2, 3))
    assert isinstance(one, np.ndarray) and one.dtype == np.float32 and one.shape == (2, 3)
    several = tu.random_arrays((2,), ())
    assert [a.shape for a in several] == [(2,), ()]
    uniform = tu.random_uniform_arrays((100,), (3,), low=2.0, high=3.0, dtype=np.float64)
    assert len(uniform) == 2 and uniform[0].dtype == np.float64 and uniform[0].min() >= 2 and uniform[0].max() < 3
    sample = tu.random_sample(list(range(10)), 4)
    assert len(sample) == 4 and len(set(sample)) == 4
    with pytest.raises(tu.HelperArgumentError, match=r"k must be in \[0, 3\]"):
        tu.random_sample([1, 2, 3], 4)
    x, y = tu.rand_coord_2d(0, 5, 10, 12)
    assert 0 <= x < 5 and 10 <= y < 12


def test_tensor_builders():
    np.testing.assert_array_equal(tu.create_vector(4).asnumpy(), [0, 1, 2, 3])
    assert tu.create_vector(3).dtype == np.int64
    np.testing.assert_array_equal(tu.create_2d_tensor(3, 2).asnumpy(), [[0, 0], [1, 1], [2, 2]])
    np.testing.assert_array_equal(tu.get_identity_mat(3).asnumpy(), np.eye(3))
    assert tu.get_identity_mat_batch(2).shape == (2, 2, 2)


def test_matrices_with_real_eigenvalues():
    m = tu.new_matrix_with_real_eigvals_2d(4)
    eig = np.linalg.eigvals(m)
    np.testing.assert_allclose(eig.imag, 0, atol=1e-8)
    assert np.all(np.abs(eig.real) <= 10 + 1e-6)
    assert tu.new_matrix_with_real_eigvals_nd((2, 3, 3)).shape == (2, 3, 3)
    q = tu.new_orthonormal_matrix_2d(4)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-10)
    s = tu.new_sym_matrix_with_real_eigvals_2d(3)
    np.testing.assert_allclose(s, s.T, atol=1e-10)
    assert tu.new_sym_matrix_with_real_eigvals_nd((2, 2, 3, 3)).shape == (2, 2, 3, 3)

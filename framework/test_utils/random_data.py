"""Random test data: shapes, arrays, coordinates and well-conditioned matrices.

Everything draws from NumPy's *global* generator, as MXNet's helpers do, so one
``np.random.seed(n)`` (which tests/conftest.py does per test) makes a failing test repeat.
Arrays are float32 (``default_dtype``) unless a dtype is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..context import Context
from ..ndarray.ndarray import NDArray
from .tolerances import HelperArgumentError, default_context, default_dtype


def _check_allow_zero(allow_zero_size: Any, who: str) -> int:
    if not isinstance(allow_zero_size, bool | np.bool_):
        raise HelperArgumentError(
            f"{who}: allow_zero_size must be a bool, got {allow_zero_size!r} "
            "(a random generator is passed as rng=..., by keyword)"
        )
    return 0 if allow_zero_size else 1


def rand_shape_2d(dim0: int = 10, dim1: int = 10, allow_zero_size: bool = False) -> tuple[int, int]:
    """A random 2-d shape: each dimension in [1, dim] ([0, dim] with allow_zero_size)."""
    low = _check_allow_zero(allow_zero_size, "rand_shape_2d")
    return int(np.random.randint(low, dim0 + 1)), int(np.random.randint(low, dim1 + 1))


def rand_shape_3d(
    dim0: int = 10, dim1: int = 10, dim2: int = 10, allow_zero_size: bool = False
) -> tuple[int, int, int]:
    """A random 3-d shape: each dimension in [1, dim] ([0, dim] with allow_zero_size)."""
    low = _check_allow_zero(allow_zero_size, "rand_shape_3d")
    return tuple(int(np.random.randint(low, d + 1)) for d in (dim0, dim1, dim2))  # type: ignore[return-value]


def rand_shape_nd(
    num_dim: int, dim: int = 10, allow_zero_size: bool = False, *, rng: np.random.Generator | None = None
) -> tuple[int, ...]:
    """A random shape of ``num_dim`` dimensions, each in [1, dim] ([0, dim] with allow_zero_size).

    ``rng`` (MXLab's addition, keyword only) draws from that Generator instead of NumPy's global one.
    """
    low = _check_allow_zero(allow_zero_size, "rand_shape_nd")
    if rng is None:
        return tuple(int(d) for d in np.random.randint(low, dim + 1, size=int(num_dim)))
    return tuple(int(d) for d in rng.integers(low, dim + 1, size=int(num_dim)))


def rand_coord_2d(x_low: int, x_high: int, y_low: int, y_high: int) -> tuple[int, int]:
    """A random integer point with ``x`` in [x_low, x_high) and ``y`` in [y_low, y_high)."""
    return int(np.random.randint(x_low, x_high, dtype=np.int64)), int(np.random.randint(y_low, y_high, dtype=np.int64))


def random_arrays(*shapes: Sequence[int]) -> np.ndarray | list[np.ndarray]:
    """Standard-normal float32 arrays, one per shape (one array, not a list, for one shape)."""
    arrays = [
        np.array(np.random.randn(), dtype=default_dtype())
        if len(s) == 0
        else np.random.randn(*s).astype(default_dtype())
        for s in shapes
    ]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes: Sequence[int], **kwargs: Any) -> list[np.ndarray]:
    """Uniform arrays in [low, high), one per shape (always a list); keywords ``low`` (0),
    ``high`` (1) and ``dtype`` (float32)."""
    low, high = kwargs.pop("low", 0.0), kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", None) or default_dtype()
    if kwargs:
        raise TypeError(f"random_uniform_arrays: unexpected argument(s) {sorted(kwargs)}; accepted: low, high, dtype")
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population: list[Any], k: int) -> list[Any]:
    """``k`` distinct elements of ``population`` in random order."""
    if not 0 <= k <= len(population):
        raise HelperArgumentError(f"random_sample: k must be in [0, {len(population)}], got {k}")
    chosen = list(population)
    np.random.shuffle(chosen)
    return chosen[:k]


def rand_ndarray(
    shape: Sequence[int],
    stype: str = "default",
    density: float | None = None,
    dtype: Any = None,
    modifier_func: Any = None,
    shuffle_csr_indices: bool = False,
    distribution: str | None = None,
    ctx: Context | None = None,
) -> NDArray:
    """A standard-normal NDArray of ``shape`` (float32 unless ``dtype``) on ``ctx``.

    Only ``stype="default"`` exists: ``density``, ``modifier_func``, ``shuffle_csr_indices`` and
    ``distribution`` shape MXNet's sparse arrays, which MXLab does not have.
    """
    if stype != "default":
        raise HelperArgumentError(
            f"rand_ndarray: stype={stype!r} needs sparse storage, which MXLab does not have; "
            "only stype='default' (dense) exists"
        )
    ctx = ctx or default_context()
    values = random_arrays(tuple(shape))
    return nd.array(values, ctx=ctx, dtype=default_dtype() if dtype is None else dtype)


def create_vector(size: int, dtype: Any = np.int64) -> NDArray:
    """``[0, 1, ..., size-1]`` (MXNet's large-tensor tests use it past 2^32 elements)."""
    return nd.arange(0, size, dtype=dtype)


def create_2d_tensor(rows: int, columns: int, dtype: Any = np.int64) -> NDArray:
    """A ``rows x columns`` array whose row ``i`` is all ``i``."""
    column = nd.arange(0, rows, dtype=dtype).reshape((rows, 1))
    return nd.broadcast_to(column, shape=(rows, columns))


def get_identity_mat(size: int) -> NDArray:
    """The ``size x size`` identity matrix, float32."""
    return nd.array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size: int) -> NDArray:
    """Two identity matrices stacked: shape ``(2, size, size)``."""
    eye = np.eye(size, dtype=np.float32)
    return nd.array(np.stack([eye, eye]))


def new_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """An ``n x n`` matrix ``Q^-1 D Q`` with real eigenvalues ``D`` in [-10, 10] and ``Q`` well conditioned.

    ``Q`` is a Householder reflection times a diagonal, redrawn until its condition number is
    below 3, so that eigen-decomposition tests are not at the mercy of rounding.
    """
    while True:
        d = np.diag(np.random.uniform(-1.0, 1.0, n))
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v = v / np.linalg.norm(v)
        q = (np.eye(n) - 2 * v @ v.T) @ d
        if np.linalg.cond(q, 2) < 3:
            break
    eigenvalues = np.diag(np.random.uniform(-10.0, 10.0, n))
    return np.linalg.inv(q) @ eigenvalues @ q


def _batched(make: Any, shape: Sequence[int]) -> np.ndarray:
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([make(shape[-1]) for _ in range(count)]).reshape(tuple(shape))


def new_matrix_with_real_eigvals_nd(shape: Sequence[int]) -> np.ndarray:
    """A batch of :func:`new_matrix_with_real_eigvals_2d` matrices with ``shape`` (..., n, n)."""
    return _batched(new_matrix_with_real_eigvals_2d, shape)


def new_orthonormal_matrix_2d(n: int) -> np.ndarray:
    """A random ``n x n`` orthonormal matrix (the Q of a QR decomposition)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """A symmetric ``Q^T D Q`` with eigenvalues ``D`` in [-10, 10]."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape: Sequence[int]) -> np.ndarray:
    """A batch of :func:`new_sym_matrix_with_real_eigvals_2d` matrices with ``shape`` (..., n, n)."""
    return _batched(new_sym_matrix_with_real_eigvals_2d, shape)


__all__ = [
    "create_2d_tensor",
    "create_vector",
    "get_identity_mat",
    "get_identity_mat_batch",
    "new_matrix_with_real_eigvals_2d",
    "new_matrix_with_real_eigvals_nd",
    "new_orthonormal_matrix_2d",
    "new_sym_matrix_with_real_eigvals_2d",
    "new_sym_matrix_with_real_eigvals_nd",
    "rand_coord_2d",
    "rand_ndarray",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "random_arrays",
    "random_sample",
    "random_uniform_arrays",
]

"""``mx.test_utils``: MXNet 1.9.1's testing helpers, one module per idea.

* :mod:`.tolerances` -- default rtol/atol/eps per dtype, the default context and dtype;
* :mod:`.compare` -- ``assert_almost_equal`` and friends: close enough, and if not, where
  the worst element is;
* :mod:`.random_data` -- random shapes, arrays and well-conditioned matrices;
* :mod:`.consistency` -- the same symbol across contexts and dtypes, optimizers, speed;
* :mod:`.environment` -- environment variables, stderr, retries, expected exceptions;
* :mod:`.stats` -- chi-square and moment checks of random generators;
* :mod:`.datasets` -- MNIST / CIFAR-10 from local files (MXLab never downloads), DummyIter;
* :mod:`.symbolic` -- the symbol checkers (``check_symbolic_forward``/``backward``,
  ``check_numeric_gradient``, ``numeric_grad``, ``simple_forward``);
* :mod:`.imperative` -- the imperative checkers (``check_imperative_gradient``: finite
  differences against autograd for a Python function of NDArrays, ``check_req``).

The two checker modules build on the comparisons and tolerances; this package only gathers
them. ``framework.symbol_test_utils`` and ``framework.imperative_test_utils``, where the
checkers were first, re-export them from here.

``check_numeric_gradient`` takes a Symbol first, as in MXNet. MXLab's operator tests mostly
check functions of NDArrays instead: that is ``check_imperative_gradient(fn, location)``.
Messages speak the learner's language: which input, which index, what the backward pass said
and what finite differences said.
"""

from __future__ import annotations

from .compare import (
    almost_equal,
    assert_allclose,
    assert_almost_equal,
    assert_almost_equal_ignore_nan,
    assert_almost_equal_with_err,
    assign_each,
    assign_each2,
    checkShapes,
    collapse_sum_like,
    compare_ndarray_tuple,
    find_max_violation,
    locationError,
    np_reduce,
    same,
    same_array,
)
from .consistency import (
    check_consistency,
    check_gluon_hybridize_consistency,
    check_speed,
    compare_optimizer,
    same_symbol_structure,
)
from .datasets import (
    DatasetMissingError,
    DummyIter,
    download,
    download_model,
    get_bz2_data,
    get_cifar10,
    get_mnist,
    get_mnist_iterator,
    get_mnist_pkl,
    get_mnist_ubyte,
    get_zip_data,
)
from .environment import (
    assert_exception,
    discard_stderr,
    environment,
    get_im2rec_path,
    has_tvm_ops,
    is_aarch64_run,
    is_cd_run,
    is_op_runnable,
    list_gpus,
    retry,
    set_env_var,
)
from .imperative import check_imperative_gradient, check_req
from .random_data import (
    create_2d_tensor,
    create_vector,
    get_identity_mat,
    get_identity_mat_batch,
    new_matrix_with_real_eigvals_2d,
    new_matrix_with_real_eigvals_nd,
    new_orthonormal_matrix_2d,
    new_sym_matrix_with_real_eigvals_2d,
    new_sym_matrix_with_real_eigvals_nd,
    rand_coord_2d,
    rand_ndarray,
    rand_shape_2d,
    rand_shape_3d,
    rand_shape_nd,
    random_arrays,
    random_sample,
    random_uniform_arrays,
)
from .stats import chi_square_check, gen_buckets_probs_with_ppf, mean_check, var_check, verify_generator
from .symbolic import (
    SymbolCheckError,
    check_numeric_gradient,
    check_symbolic_backward,
    check_symbolic_forward,
    numeric_grad,
    simple_forward,
)
from .tolerances import (
    HelperArgumentError,
    default_atols,
    default_context,
    default_dtype,
    default_numeric_eps,
    default_rtols,
    effective_dtype,
    get_atol,
    get_etol,
    get_rtol,
    get_tolerance,
    get_tols,
    set_default_context,
)

__all__ = [
    "DatasetMissingError",
    "DummyIter",
    "HelperArgumentError",
    "SymbolCheckError",
    "almost_equal",
    "assert_allclose",
    "assert_almost_equal",
    "assert_almost_equal_ignore_nan",
    "assert_almost_equal_with_err",
    "assert_exception",
    "assign_each",
    "assign_each2",
    "checkShapes",
    "check_consistency",
    "check_gluon_hybridize_consistency",
    "check_imperative_gradient",
    "check_numeric_gradient",
    "check_req",
    "check_speed",
    "check_symbolic_backward",
    "check_symbolic_forward",
    "chi_square_check",
    "collapse_sum_like",
    "compare_ndarray_tuple",
    "compare_optimizer",
    "create_2d_tensor",
    "create_vector",
    "default_atols",
    "default_context",
    "default_dtype",
    "default_numeric_eps",
    "default_rtols",
    "discard_stderr",
    "download",
    "download_model",
    "effective_dtype",
    "environment",
    "find_max_violation",
    "gen_buckets_probs_with_ppf",
    "get_atol",
    "get_bz2_data",
    "get_cifar10",
    "get_etol",
    "get_identity_mat",
    "get_identity_mat_batch",
    "get_im2rec_path",
    "get_mnist",
    "get_mnist_iterator",
    "get_mnist_pkl",
    "get_mnist_ubyte",
    "get_rtol",
    "get_tolerance",
    "get_tols",
    "get_zip_data",
    "has_tvm_ops",
    "is_aarch64_run",
    "is_cd_run",
    "is_op_runnable",
    "list_gpus",
    "locationError",
    "mean_check",
    "new_matrix_with_real_eigvals_2d",
    "new_matrix_with_real_eigvals_nd",
    "new_orthonormal_matrix_2d",
    "new_sym_matrix_with_real_eigvals_2d",
    "new_sym_matrix_with_real_eigvals_nd",
    "np_reduce",
    "numeric_grad",
    "rand_coord_2d",
    "rand_ndarray",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "random_arrays",
    "random_sample",
    "random_uniform_arrays",
    "retry",
    "same",
    "same_array",
    "same_symbol_structure",
    "set_default_context",
    "set_env_var",
    "simple_forward",
    "var_check",
    "verify_generator",
]

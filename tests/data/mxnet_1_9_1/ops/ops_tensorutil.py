"""Reference outputs of MXNet 1.9.1 for a sample of the tensor-utility operators.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_tensorutil.py [OUT_DIR]

It writes, next to this script (or into ``OUT_DIR``; the ``ops/`` folder keeps the operator
reference data out of the size budget of the NDArray files one level up):

* ``ops_tensorutil.json``: one record per case: the front-end function (``nd.erf``,
  ``nd.contrib.boolean_mask``...), its keyword parameters, which inputs get a gradient, and the
  dtype and shape of every stored array: inputs (``in``), outputs (``out``) and, for
  differentiable cases, the input gradients MXNet's autograd computed (``grads``) for the head
  gradients of :func:`nd_case_store.head_gradient` (0 for the outputs listed in ``zero_heads``, where MXNet's
  gradient differs from MXLab's on purpose: see docs/differences.md);
* ``ops_tensorutil.npz``: the values, one flat array per dtype, in that order (case by case,
  ``in``, ``out``, ``grads``): an .npz entry per array would cost ~200 bytes each.

tests/operator/test_tensorutil_mxnet.py replays every case through MXLab and compares (it
runs this script live too when ``MXNET_PYTHON`` names an MXNet interpreter).
"""

from __future__ import annotations

import os
import sys

import mxnet as mx
import numpy as np
from nd_case_store import record_cases

HERE = os.path.dirname(os.path.abspath(__file__))


def _cases(rng: np.random.Generator) -> list[tuple]:
    """(case id, function, inputs, params, inputs to differentiate[, outputs whose head gradient is 0])."""
    f32 = np.float32

    def u(*shape, low=-1.0, high=1.0):
        return rng.uniform(low, high, shape).astype(f32)

    return [
        ("erf", "nd.erf", [u(3, 4, low=-2, high=2)], {}, [0]),
        ("erfinv", "nd.erfinv", [u(3, 4, low=-0.9, high=0.9)], {}, [0]),
        ("gamma", "nd.gamma", [u(3, 4, low=0.5, high=4)], {}, [0]),
        ("gammaln", "nd.gammaln", [u(3, 4, low=0.5, high=4)], {}, [0]),
        ("hard_sigmoid", "nd.hard_sigmoid", [u(3, 4, low=-4, high=4)], {"alpha": 0.3, "beta": 0.4}, [0]),
        ("reverse", "nd.reverse", [u(2, 3, 4)], {"axis": (0, 2)}, [0]),
        ("flip", "nd.flip", [u(2, 3)], {"axis": (1,)}, [0]),
        ("cumsum_axis", "nd.cumsum", [u(2, 3, 4)], {"axis": 1}, [0]),
        ("cumsum_flat", "nd.cumsum", [u(2, 3)], {}, [0]),
        ("diag_vec", "nd.diag", [u(3)], {"k": -1}, [0]),
        ("diag_mat", "nd.diag", [u(3, 4)], {"k": 1}, [0]),
        ("diag_3d", "nd.diag", [u(2, 3, 4)], {"k": 0, "axis1": 0, "axis2": 2}, [0]),
        ("moments", "nd.moments", [u(2, 3, 4)], {"axes": (0, 2)}, [0]),
        ("moments_keep", "nd.moments", [u(2, 3)], {"axes": (1,), "keepdims": True}, [0]),
        ("moments_all", "nd.moments", [u(2, 3)], {"axes": (0, 1)}, [0]),
        ("reshape_like", "nd.reshape_like", [u(2, 6), u(3, 4)], {}, [0]),
        (
            "reshape_like_part",
            "nd.reshape_like",
            [u(6, 12), u(4, 2, 2, 3)],
            {"lhs_begin": -1, "lhs_end": None, "rhs_begin": 1, "rhs_end": None},
            [0],
        ),
        ("slice_like", "nd.slice_like", [u(3, 2, 4), u(2, 1, 3)], {"axes": (0, 2)}, [0]),
        ("slice_like_all", "nd.slice_like", [u(3, 4), u(2, 2)], {}, [0]),
        ("shape_array", "nd.shape_array", [u(2, 3, 4)], {}, []),
        ("size_array", "nd.size_array", [u(2, 3, 4)], {}, []),
        ("arange_like", "nd.contrib.arange_like", [u(2, 3)], {"start": 1.0, "step": 0.5, "repeat": 2}, []),
        ("arange_like_axis", "nd.contrib.arange_like", [u(2, 5)], {"axis": -1, "start": 3.0}, []),
        ("index_array", "nd.contrib.index_array", [u(2, 3, 2)], {"axes": (2, 0)}, []),
        ("batch_take", "nd.batch_take", [u(3, 4), np.array([0, 3, 9], np.int32)], {}, []),
        ("choose_element_0index", "nd.choose_element_0index", [u(3, 4), np.array([1, 0, 3], f32)], {}, [0]),
        ("fill_element_0index", "nd.fill_element_0index", [u(3, 4), u(3), np.array([2, 0, 1], f32)], {}, []),
        ("onehot_encode", "nd._internal._onehot_encode", [np.array([3, 0], f32), np.zeros((2, 4), f32)], {}, []),
        ("ravel", "nd.ravel_multi_index", [np.array([[0, 2, 1], [3, 1, 0]], f32)], {"shape": (3, 4)}, []),
        ("unravel", "nd.unravel_index", [np.array([0, 5, 11, 7], f32)], {"shape": (3, 4)}, []),
        ("split_v2", "nd._internal._split_v2", [u(2, 5, 3)], {"indices": (0, 1, 4), "axis": 1}, [0]),
        ("split_v2_sections", "nd._internal._split_v2", [u(6, 2)], {"indices": (), "sections": 3, "axis": 0}, [0]),
        (
            "split_v2_squeeze",
            "nd._internal._split_v2",
            [u(2, 3)],
            {"indices": (0, 1), "axis": 0, "squeeze_axis": True},
            [0],
        ),
        ("eye", "nd._internal._eye", [], {"N": 3, "M": 5, "k": 1, "dtype": "float64"}, []),
        ("linspace", "nd._internal._linspace", [], {"start": -1.0, "stop": 2.0, "num": 7, "endpoint": False}, []),
        ("linspace_int", "nd._internal._linspace", [], {"start": 0.0, "stop": 5.0, "num": 4, "dtype": "int32"}, []),
        ("sign_ste", "nd.contrib.sign_ste", [u(3, 4)], {}, [0]),
        ("round_ste", "nd.contrib.round_ste", [u(3, 4, low=-3, high=3)], {}, [0]),
        ("gradientmultiplier", "nd.contrib.gradientmultiplier", [u(3, 4)], {"scalar": -0.5}, [0]),
        ("div_sqrt_dim", "nd.contrib.div_sqrt_dim", [u(2, 2, 9)], {}, [0]),
        ("allclose_true", "nd.contrib.allclose", [np.ones((2, 3), f32), np.ones((2, 3), f32) + 1e-7], {}, []),
        ("allclose_false", "nd.contrib.allclose", [u(2, 3), u(2, 3)], {"rtol": 0.1}, []),
        ("index_copy", "nd.contrib.index_copy", [u(5, 3), np.array([4, 1], f32), u(2, 3)], {}, [0, 2]),
        ("amp_cast", "nd.amp_cast", [u(3, 4)], {"dtype": "float16"}, [0]),
        ("amp_cast_int", "nd.amp_cast", [np.arange(6, dtype=np.int32).reshape(2, 3)], {"dtype": "float16"}, []),
        ("cast_storage", "nd.cast_storage", [u(3, 4)], {"stype": "default"}, [0]),
        ("all_finite", "nd.all_finite", [u(3, 4)], {}, []),
        ("all_finite_inf", "nd.all_finite", [np.array([1.0, np.inf], f32)], {}, []),
        ("multi_all_finite", "nd.multi_all_finite", [u(3), np.array([np.nan], f32)], {"num_arrays": 2}, []),
        ("multi_sum_sq", "nd.multi_sum_sq", [u(3, 4), u(5), u(2, 2, 2)], {"num_arrays": 3}, []),
        (
            "slice_assign",
            "nd._internal._slice_assign",
            [u(4, 5), u(2, 2)],
            {"begin": (1, 0), "end": (3, 4), "step": (1, 2)},
            [],
        ),
        ("crop_assign", "nd._internal._crop_assign", [u(3, 4), u(3, 2)], {"begin": (None, 2), "end": (None, None)}, []),
        (
            "slice_assign_scalar",
            "nd._internal._slice_assign_scalar",
            [u(4, 5)],
            {"scalar": 2.5, "begin": (3, None), "end": (0, None), "step": (-2, None)},
            [],
        ),
        ("scatter_elemwise_div", "nd._internal._scatter_elemwise_div", [u(3, 4), u(3, 4, low=1, high=2)], {}, [0, 1]),
        ("scatter_plus_scalar", "nd._internal._scatter_plus_scalar", [u(3, 4)], {"scalar": 1.5, "is_int": False}, [0]),
        ("scatter_minus_scalar", "nd._internal._scatter_minus_scalar", [u(3, 4)], {"scalar": 2.0}, [0]),
        ("khatri_rao", "nd.khatri_rao", [u(2, 3), u(4, 3), u(2, 3)], {}, []),
        (
            "histogram_count",
            "nd._internal._histogram",
            [u(20, low=-1, high=3)],
            {"bin_cnt": 4, "range": (0.0, 2.0)},
            [],
        ),
        (
            "histogram_bins",
            "nd._internal._histogram",
            [u(20, low=-1, high=3), np.array([-0.5, 0, 1, 2.5], f32)],
            {},
            [],
        ),
        (
            "hawkesll",
            "nd.contrib.hawkesll",
            [
                u(3, 2, low=0.5, high=1.5),
                u(2, low=0.1, high=0.5),
                u(2, low=0.5, high=2.0),
                u(3, 2, low=0.0, high=0.5),
                u(3, 4, low=0.1, high=1.0),
                rng.integers(0, 2, (3, 4)).astype(np.int32),
                np.array([4, 2, 0], f32),
                np.array([5.0, 3.0, 2.0], f32),
            ],
            {},
            [0, 1, 2],  # MXNet 1.9.1 returns a zero gradient for state and ignores the states output's
            [1],
        ),
        ("selfatt_qk", "nd.contrib.interleaved_matmul_selfatt_qk", [u(3, 2, 2 * 3 * 2)], {"heads": 2}, [0]),
        (
            "selfatt_valatt",
            "nd.contrib.interleaved_matmul_selfatt_valatt",
            [u(3, 2, 2 * 3 * 2), u(4, 3, 3)],
            {"heads": 2},
            [0, 1],
        ),
        (
            "encdec_qk",
            "nd.contrib.interleaved_matmul_encdec_qk",
            [u(2, 2, 2 * 3), u(3, 2, 2 * 2 * 3)],
            {"heads": 2},
            [0, 1],
        ),
        (
            "encdec_valatt",
            "nd.contrib.interleaved_matmul_encdec_valatt",
            [u(3, 2, 2 * 2 * 3), u(4, 2, 3)],
            {"heads": 2},
            [0, 1],
        ),
    ]


def main(out_dir: str = HERE) -> None:
    # A case may leave out its zero_heads; these cases run in MXNet's default (training) mode.
    cases = [
        (cid, path, inputs, params, None, grad, *(rest or [[]]))
        for cid, path, inputs, params, grad, *rest in _cases(np.random.default_rng(17))
    ]
    record_cases(mx, cases, "ops_tensorutil", out_dir)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else HERE)

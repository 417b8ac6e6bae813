"""Reference outputs of MXNet 1.9.1 for the last single operators of issue 17.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_misc17.py [OUT_DIR]

It writes, next to this script (or into ``OUT_DIR``):

* ``ops_misc17.json``: one record per case: the front-end function (``nd.contrib.boolean_mask``,
  ``nd.contrib.RROIAlign``...), its keyword parameters, whether it ran in training mode, which
  inputs get a gradient, the outputs whose head gradient is 0, and the dtype and shape of every
  stored array: inputs (``in``), outputs (``out``) and, for differentiable cases, the input
  gradients MXNet's autograd computed (``grads``) for the head gradients of
  :func:`nd_case_store.head_gradient`;
* ``ops_misc17.npz``: the values, one flat array per dtype, in that order (case by case, ``in``,
  ``out``, ``grads``).

``_contrib_DeformablePSROIPooling`` has no case: MXNet 1.9.1 computes it on GPUs only (its CPU
forward leaves the output unwritten). ``_contrib_RROIAlign`` has no gradient in MXNet 1.9.1, so
its cases are forward only.

tests/operator/test_misc17_mxnet.py replays every case through MXLab and compares (it runs this
script live too when ``MXNET_PYTHON`` names an MXNet interpreter).
"""

from __future__ import annotations

import os
import sys

import mxnet as mx
import numpy as np
from nd_case_store import record_cases

HERE = os.path.dirname(os.path.abspath(__file__))


def _cases(rng: np.random.Generator) -> list[tuple]:
    """(case id, function, inputs, params, training, inputs to differentiate, outputs with a zero head gradient)."""
    f32 = np.float32

    def u(*shape, low=-1.0, high=1.0, dtype=f32):
        return rng.uniform(low, high, shape).astype(dtype)

    def batch_norm_inputs(shape):
        c = shape[1]
        return [u(*shape, low=-2, high=3), u(c, low=0.5, high=1.5), u(c), u(c), u(c, low=0.5, high=2)]

    rois6 = np.array(
        [[0, 3.5, 2.5, 4, 3, 30], [1, 2, 4, 3, 5, -45], [0, 0.5, 0.5, 1, 1, 0], [1, 7.5, 1, 6, 2, 90]], f32
    )
    return [
        ("boolean_mask", "nd.contrib.boolean_mask", [u(4, 3), np.array([1, 0, 1, 1], f32)], {}, True, [0], []),
        (
            "boolean_mask_int_index",
            "nd.contrib.boolean_mask",
            [u(3, 2, 2), np.array([0, 3, 0], np.int32)],
            {"axis": 0},
            True,
            [0],
            [],
        ),
        ("boolean_mask_none", "nd.contrib.boolean_mask", [u(3, 2), np.zeros(3, f32)], {}, False, [], []),
        (
            "sync_batch_norm_train",
            "nd.contrib.SyncBatchNorm",
            batch_norm_inputs((3, 2, 4, 2)),
            {"key": "bn0", "fix_gamma": False, "output_mean_var": True, "momentum": 0.8},
            True,
            [0, 1, 2],
            [1, 2],
        ),
        (
            "sync_batch_norm_infer",
            "nd.contrib.SyncBatchNorm",
            batch_norm_inputs((2, 3, 5)),
            {"key": "bn1"},  # in inference MXNet leaves the mean and var outputs unwritten
            False,
            [],
            [],
        ),
        (
            "batch_norm_relu_train",
            "nd.contrib.BatchNormWithReLU",
            batch_norm_inputs((4, 3, 3, 2)),
            {"fix_gamma": False, "eps": 1e-4},
            True,
            [0, 1, 2],
            [],
        ),
        (
            "batch_norm_relu_infer",
            "nd.contrib.BatchNormWithReLU",
            batch_norm_inputs((2, 2, 3, 3)),
            {"output_mean_var": True},
            False,
            [],
            [],
        ),
        ("make_loss", "nd.make_loss", [u(3, 4)], {}, True, [0], []),
        (
            "rroi_align",
            "nd.contrib.RROIAlign",
            [u(2, 3, 6, 8), rois6],
            {"pooled_size": (2, 3), "spatial_scale": 1.0},
            False,
            [],
            [],
        ),
        (
            "rroi_align_ratio",
            "nd.contrib.RROIAlign",
            [u(2, 2, 7, 5), rois6 * np.array([1, 2, 2, 2, 2, 1], f32)],
            {"pooled_size": (3, 2), "spatial_scale": 0.5, "sampling_ratio": 2},
            False,
            [],
            [],
        ),
    ]


def main(out_dir: str = HERE) -> None:
    record_cases(mx, _cases(np.random.default_rng(1717)), "ops_misc17", out_dir)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else HERE)

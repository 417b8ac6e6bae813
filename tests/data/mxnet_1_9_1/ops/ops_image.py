"""Write reference results of MXNet 1.9.1's image operators (``mx.nd.image.*``) to ``ops_image.npz``.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_image.py [output.npz]

For each case of :func:`cases` (an operator, its parameters and a seeded input), the file
holds, under ``<case>/``: ``op`` and ``params`` (JSON text), ``in0`` and ``out0``; and, for
the differentiable cases, ``head0`` (a random output gradient) and ``grad0`` (the input
gradient MXNet's autograd computes from it). The random operators appear with
``min_factor == max_factor``, which makes them deterministic.

tests/operator/test_image_ops.py compares MXLab against the committed file, and runs this
script live when ``MXNET_PYTHON`` names such an interpreter. It needs only MXNet and NumPy.
"""

from __future__ import annotations

import json
import os
import sys

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# MXNet 1.9.1's flips pass the output gradient through unflipped (MXLab flips it back; see
# docs/differences.md), and its to_tensor gradient fails: neither is recorded
DIFFERENTIABLE = ("normalize", "crop")


def cases() -> list[tuple[str, str, dict, np.ndarray]]:
    rng = np.random.default_rng(16)
    hwc_u8 = rng.integers(0, 256, (9, 11, 3)).astype(np.uint8)
    nhwc_u8 = rng.integers(0, 256, (2, 7, 6, 3)).astype(np.uint8)
    hwc_f32 = rng.uniform(0, 255, (9, 11, 3)).astype(np.float32)
    chw_f32 = rng.uniform(0, 1, (3, 5, 4)).astype(np.float32)
    nchw_f32 = rng.uniform(0, 1, (2, 3, 5, 4)).astype(np.float32)
    # MXNet 1.9.1's flips take one (H, W, C) image and leave the middle row/column of an odd size
    # unwritten: even sizes only
    even_f32 = rng.uniform(0, 255, (2, 8, 10, 3)).astype(np.float32)
    table = [
        ("to_tensor_hwc", "to_tensor", {}, hwc_u8),
        ("to_tensor_nhwc", "to_tensor", {}, nhwc_u8),
        ("normalize_chw", "normalize", {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}, chw_f32),
        ("normalize_nchw_one_value", "normalize", {"mean": (0.5,), "std": (0.25,)}, nchw_f32),
        ("crop_hwc", "crop", {"x": 2, "y": 1, "width": 5, "height": 6}, hwc_f32),
        ("crop_nhwc", "crop", {"x": 0, "y": 3, "width": 6, "height": 4}, nhwc_u8),
        ("flip_left_right", "flip_left_right", {}, even_f32[1]),
        ("flip_top_bottom", "flip_top_bottom", {}, even_f32[0]),
        ("adjust_lighting", "adjust_lighting", {"alpha": (0.1, -0.2, 0.3)}, hwc_f32),
        ("adjust_lighting_u8", "adjust_lighting", {"alpha": (0.5, 1.0, -2.0)}, hwc_u8),
        ("brightness_fixed", "random_brightness", {"min_factor": 0.7, "max_factor": 0.7}, hwc_f32),
        ("contrast_fixed", "random_contrast", {"min_factor": 0.6, "max_factor": 0.6}, hwc_f32),
        ("hue_fixed", "random_hue", {"min_factor": 0.15, "max_factor": 0.15}, hwc_f32),
        ("resize_keep_ratio", "resize", {"size": (5,), "keep_ratio": True, "interp": 1}, hwc_f32),
    ]
    for interp in range(5):
        table.append((f"resize_shrink_u8_{interp}", "resize", {"size": (6, 4), "interp": interp}, hwc_u8))
        table.append((f"resize_grow_f32_{interp}", "resize", {"size": (15, 13), "interp": interp}, hwc_f32))
        table.append((f"resize_batch_{interp}", "resize", {"size": (4, 5), "interp": interp}, nhwc_u8))
    return table


def main() -> None:
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "ops_image.npz")
    rng = np.random.default_rng(61)
    arrays: dict[str, np.ndarray] = {}
    for case, op, params, data in cases():
        fn = getattr(mx.nd.image, op)
        x = mx.nd.array(data, dtype=data.dtype)
        arrays[f"{case}/op"] = np.array(op)
        arrays[f"{case}/params"] = np.array(json.dumps(params))
        arrays[f"{case}/in0"] = data
        if op in DIFFERENTIABLE and data.dtype == np.float32:
            x.attach_grad()
            with mx.autograd.record():
                out = fn(x, **params)
            head = rng.uniform(-1, 1, out.shape).astype(np.float32)
            out.backward(mx.nd.array(head))
            arrays[f"{case}/head0"] = head
            arrays[f"{case}/grad0"] = x.grad.asnumpy()
        else:
            out = fn(x, **params)
        arrays[f"{case}/out0"] = out.asnumpy()
    np.savez_compressed(target, **arrays)


if __name__ == "__main__":
    main()

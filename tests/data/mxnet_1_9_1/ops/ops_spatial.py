"""Write MXNet 1.9.1's results for a sample of the spatial operators.

Run with an interpreter that has ``mxnet==1.9.1`` (and ``numpy<1.24``)::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_spatial.py [output folder]

For every case in ``cases`` (operator, parameters, input arrays drawn from a seeded
generator, the inputs that get gradients) it builds ``mx.sym.<op>(data=var("data"), ..., **params)``
(variadic operators take the inputs by position), binds it, runs a training forward pass and a backward
pass with seeded head gradients, and saves into ``ops_spatial.npz`` next to this script (or
in the folder given) the inputs, head gradients, outputs and input gradients, keyed
``<case>/<kind>/<name>``, plus ``ops_spatial.json`` with each case's operator, parameters and
input roles. tests/operator/test_spatial_mxnet.py runs the same steps in MXLab and compares.
``_contrib_ModulatedDeformableConvolution`` is missing: MXNet 1.9.1 implements it on GPU only.
"""

from __future__ import annotations

import json
import os
import sys

import mxnet as mx
import numpy as np
from symbol_step import training_step

HERE = os.path.dirname(os.path.abspath(__file__))


def _uniform(rng, low, high, shape):
    return rng.uniform(low, high, shape).astype(np.float32)


def cases(rng: np.random.Generator) -> dict:
    """Each case: op (the mx.sym name), params, args (name -> array, in input order), grads."""
    x = _uniform(rng, -2, 2, (2, 8, 4, 6))
    small = _uniform(rng, -2, 2, (2, 3, 2, 3))
    odd = _uniform(rng, -2, 2, (2, 3, 5, 7))
    features = _uniform(rng, -2, 2, (2, 3, 7, 9))
    rois = np.array(
        [[0, 1.2, 2.6, 11.0, 9.4], [1, 0, 0, 17, 13], [1, 5.0, 3.0, 5.9, 4.2], [0, -3, 2, 30, 20]], np.float32
    )
    return {
        "depth_to_space": {"op": "depth_to_space", "params": {"block_size": 2}, "args": {"data": x}},
        "space_to_depth": {"op": "space_to_depth", "params": {"block_size": 2}, "args": {"data": x}},
        "upsampling_nearest": {
            "op": "UpSampling",
            "params": {"scale": 3, "sample_type": "nearest", "num_args": 1},
            "args": {"arg0": small},
        },
        "upsampling_nearest_concat": {
            "op": "UpSampling",
            "params": {"scale": 2, "sample_type": "nearest", "num_args": 2},
            "args": {"arg0": small, "arg1": _uniform(rng, -2, 2, (2, 2, 4, 6))},
        },
        "upsampling_nearest_sum": {
            "op": "UpSampling",
            "params": {"scale": 4, "sample_type": "nearest", "num_args": 2, "multi_input_mode": "sum"},
            "args": {"arg0": small, "arg1": _uniform(rng, -2, 2, (2, 3, 4, 6))},
        },
        "upsampling_bilinear": {
            "op": "UpSampling",
            "params": {"scale": 2, "sample_type": "bilinear", "num_args": 1, "num_filter": 3},
            "args": {"data": small, "weight": _uniform(rng, 0, 1, (3, 1, 4, 4))},
        },
        "upsampling_bilinear_scale3": {
            "op": "UpSampling",
            "params": {"scale": 3, "sample_type": "bilinear", "num_args": 1, "num_filter": 3},
            "args": {"data": small, "weight": _uniform(rng, 0, 1, (3, 1, 5, 5))},
        },
        "resize_size": {
            "op": "contrib.BilinearResize2D",
            "params": {"height": 9, "width": 4},
            "args": {"data": odd},
        },
        "resize_scale_unaligned": {
            "op": "contrib.BilinearResize2D",
            "params": {"scale_height": 1.7, "scale_width": 0.6, "align_corners": False},
            "args": {"data": odd},
        },
        "resize_odd_scale": {
            "op": "contrib.BilinearResize2D",
            "params": {"scale_height": 2.0, "scale_width": 0.5, "mode": "odd_scale"},
            "args": {"data": _uniform(rng, -2, 2, (1, 2, 5, 8))},
        },
        "resize_like": {
            "op": "contrib.BilinearResize2D",
            "params": {"mode": "like", "align_corners": False},
            "args": {"data": odd, "like": np.zeros((2, 3, 3, 11), np.float32)},
            "grads": ["data"],
        },
        "resize_to_even_up": {
            "op": "contrib.BilinearResize2D",
            "params": {"mode": "to_even_up"},
            "args": {"data": odd},
        },
        "resize_to_odd_down": {
            "op": "contrib.BilinearResize2D",
            "params": {"mode": "to_odd_down"},
            "args": {"data": x},
        },
        "adaptive_avg_pool": {
            "op": "contrib.AdaptiveAvgPooling2D",
            "params": {"output_size": (3, 4)},
            "args": {"data": odd},
        },
        "adaptive_avg_pool_global": {"op": "contrib.AdaptiveAvgPooling2D", "params": {}, "args": {"data": odd}},
        "adaptive_avg_pool_grow": {
            "op": "contrib.AdaptiveAvgPooling2D",
            "params": {"output_size": 7},
            "args": {"data": small},
        },
        "im2col": {
            "op": "im2col",
            "params": {"kernel": (3, 2), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)},
            "args": {"data": odd},
        },
        "col2im": {
            "op": "col2im",
            "params": {"output_size": (5, 7), "kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)},
            "args": {"data": _uniform(rng, -2, 2, (2, 18, 12))},
        },
        "grid_affine": {
            "op": "GridGenerator",
            "params": {"transform_type": "affine", "target_shape": (4, 5)},
            "args": {"data": _uniform(rng, -1, 1, (2, 6))},
        },
        "grid_warp": {
            "op": "GridGenerator",
            "params": {"transform_type": "warp"},
            "args": {"data": _uniform(rng, -2, 2, (2, 2, 4, 5))},
        },
        "bilinear_sampler": {
            "op": "BilinearSampler",
            "params": {},
            "args": {"data": odd, "grid": _uniform(rng, -1.2, 1.2, (2, 2, 4, 6))},
        },
        "spatial_transformer": {
            "op": "SpatialTransformer",
            "params": {"target_shape": (4, 3), "transform_type": "affine", "sampler_type": "bilinear"},
            "args": {
                "data": odd,
                "loc": np.array([[0.9, 0.2, 0.1, -0.1, 0.8, 0.05], [1.1, 0, -0.2, 0.3, 0.7, 0.1]], np.float32),
            },
        },
        "crop_h_w": {
            "op": "Crop",
            "params": {"num_args": 1, "h_w": (3, 4), "offset": (1, 2)},
            "args": {"data": odd},
        },
        "crop_like_center": {
            "op": "Crop",
            "params": {"num_args": 2, "center_crop": True},
            "args": {"data": odd, "crop_like": np.zeros((2, 3, 2, 4), np.float32)},
            "grads": ["data"],
        },
        "roi_pooling": {
            "op": "ROIPooling",
            "params": {"pooled_size": (2, 3), "spatial_scale": 0.5},
            "args": {"data": features, "rois": rois},
            "grads": ["data"],
        },
        "psroi_pooling": {
            "op": "contrib.PSROIPooling",
            "params": {"pooled_size": 2, "output_dim": 2, "spatial_scale": 0.5},
            "args": {"data": _uniform(rng, -2, 2, (2, 8, 7, 9)), "rois": rois},
            "grads": ["data"],
        },
        "psroi_pooling_group": {
            "op": "contrib.PSROIPooling",
            "params": {"pooled_size": 3, "output_dim": 2, "spatial_scale": 0.5, "group_size": 2},
            "args": {"data": _uniform(rng, -2, 2, (2, 8, 7, 9)), "rois": rois},
            "grads": ["data"],
        },
        "roi_align": {
            "op": "contrib.ROIAlign",
            "params": {"pooled_size": (2, 3), "spatial_scale": 0.5},
            "args": {"data": features, "rois": rois},
            "grads": ["data"],
        },
        "roi_align_aligned_ratio": {
            "op": "contrib.ROIAlign",
            "params": {"pooled_size": (3, 2), "spatial_scale": 0.5, "sample_ratio": 2, "aligned": True},
            "args": {"data": features, "rois": rois},
            "grads": ["data"],
        },
        "roi_align_position_sensitive": {
            "op": "contrib.ROIAlign",
            "params": {"pooled_size": (2, 2), "spatial_scale": 0.5, "position_sensitive": True},
            "args": {"data": _uniform(rng, -2, 2, (2, 8, 7, 9)), "rois": rois},
            "grads": ["data"],
        },
        "correlation": {
            "op": "Correlation",
            "params": {"kernel_size": 3, "max_displacement": 2, "stride1": 2, "stride2": 1, "pad_size": 3},
            "args": {"data1": features, "data2": _uniform(rng, -2, 2, (2, 3, 7, 9))},
        },
        "correlation_subtract": {
            "op": "Correlation",
            "params": {"kernel_size": 1, "max_displacement": 4, "stride2": 2, "pad_size": 2, "is_multiply": False},
            "args": {"data1": features, "data2": _uniform(rng, -2, 2, (2, 3, 7, 9))},
        },
        "deformable_conv": {
            "op": "contrib.DeformableConvolution",
            "params": {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1), "num_group": 2, "num_deformable_group": 2},
            "args": {
                "data": _uniform(rng, -2, 2, (2, 4, 5, 6)),
                "offset": _uniform(rng, -1.5, 1.5, (2, 36, 5, 6)),
                "weight": _uniform(rng, -1, 1, (4, 2, 3, 3)),
                "bias": _uniform(rng, -1, 1, (4,)),
            },
        },
        "deformable_conv_strided": {
            "op": "contrib.DeformableConvolution",
            "params": {"kernel": (2, 3), "num_filter": 3, "stride": (2, 1), "dilate": (1, 2), "no_bias": True},
            "args": {
                "data": _uniform(rng, -2, 2, (1, 2, 7, 8)),
                "offset": _uniform(rng, -2.5, 2.5, (1, 12, 3, 4)),
                "weight": _uniform(rng, -1, 1, (3, 2, 2, 3)),
            },
        },
    }


def run_case(case: dict, heads_rng: np.random.Generator) -> dict:
    """One training step of ``case`` in MXNet: outputs and input gradients."""
    grads_of = case.get("grads", list(case["args"]))
    op = mx.sym
    for part in case["op"].split("."):
        op = getattr(op, part)
    variables = [mx.sym.var(n) for n in case["args"]]
    if "num_args" in case["params"]:  # variadic: inputs by position
        sym = op(*variables, name="op", **case["params"])
    else:
        sym = op(name="op", **dict(zip(case["args"], variables, strict=True)), **case["params"])
    return training_step(mx, sym, case["args"], grads_of, heads_rng)


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else HERE
    rng = np.random.default_rng(17)
    arrays, specs = {}, {}
    for index, (key, case) in enumerate(cases(rng).items()):
        result = run_case(case, np.random.default_rng(1000 + index))
        for name, value in case["args"].items():
            arrays[f"{key}/args/{name}"] = value
        for i, value in enumerate(result["heads"]):
            arrays[f"{key}/heads/{i}"] = value
        for i, value in enumerate(result["outputs"]):
            arrays[f"{key}/outputs/{i}"] = value
        for name, value in result["grads"].items():
            arrays[f"{key}/grads/{name}"] = value
        specs[key] = {
            "op": case["op"],
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in case["params"].items()},
            "args": list(case["args"]),
            "grads": list(result["grads"]),
            "num_outputs": len(result["outputs"]),
        }
    np.savez_compressed(os.path.join(folder, "ops_spatial.npz"), **arrays)
    with open(os.path.join(folder, "ops_spatial.json"), "w") as f:
        json.dump({"mxnet_version": mx.__version__, "cases": specs}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

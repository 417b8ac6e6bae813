"""Write MXNet 1.9.1's results for a sample of the detection operators.

Run with an interpreter that has ``mxnet==1.9.1`` (and ``numpy<1.24``)::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/ops/ops_detection.py [output folder]

Every case of ``cases`` is a symbol built by a function of the symbol namespace (``mx.sym`` here,
MXLab's ``mx.sym`` in tests/operator/test_detection.py, which imports this file for the same
builders) from inputs drawn from a seeded generator. The script binds it, runs a training forward
pass and a backward pass with seeded head gradients, and saves into ``ops_detection.npz`` the
inputs, outputs, and head and input gradients where a gradient is not all zeros, keyed
``<case>/<kind>/<name>``, plus ``ops_detection.json`` with each case's input names, output count
and the inputs whose gradients were all zeros. Among the cases are an
SSD pipeline (MultiBoxPrior -> MultiBoxTarget and softmax -> MultiBoxDetection) and Faster R-CNN
proposals (Proposal, MultiProposal) on small RPN outputs.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _random_boxes(rng: np.random.Generator, shape: tuple, scale: float = 1.0) -> np.ndarray:
    """Corner boxes of random position and size (..., 4)."""
    corner = rng.uniform(0, 0.7, (*shape, 2))
    size = rng.uniform(0.05, 0.5, (*shape, 2))
    return _f32(np.concatenate([corner, corner + size], axis=-1) * scale)


def _nms_records(rng: np.random.Generator) -> np.ndarray:
    """(2, 2, 10, 6) records [class, score, box]: overlapping boxes, a tie, an inverted box, background ids."""
    boxes = _random_boxes(rng, (2, 2, 10))
    boxes[..., 5:, :] = boxes[..., :5, :] + _f32(rng.uniform(-0.05, 0.05, (2, 2, 5, 4)))  # near-duplicates
    boxes[0, 0, 3] = [0.5, 0.5, 0.2, 0.2]  # inverted: overlaps nothing
    score = _f32(rng.permutation(np.linspace(0.02, 0.98, 2 * 2 * 10)).reshape(2, 2, 10))
    score[1, 1, 4] = score[1, 1, 7]  # a tie: input order decides
    classes = _f32(rng.integers(-1, 3, (2, 2, 10)))
    return np.concatenate([classes[..., None], score[..., None], boxes], axis=-1)


def ssd_pipeline(sym) -> object:
    """Anchors of a feature map, SSD targets of labelled boxes and decoded detections, as one group."""
    cls_pred = sym.var("cls_pred")
    anchors = sym.contrib.MultiBoxPrior(
        sym.var("feature"), sizes=(0.6, 0.3), ratios=(1, 2), steps=(0.3, 0.25), clip=True, name="prior"
    )
    targets = sym.contrib.MultiBoxTarget(
        anchors,
        sym.var("label"),
        cls_pred,
        overlap_threshold=0.4,
        negative_mining_ratio=2,
        negative_mining_thresh=0.45,
        minimum_negative_samples=3,
        name="target",
    )
    detections = sym.contrib.MultiBoxDetection(
        sym.softmax(cls_pred, axis=1),
        sym.var("loc_pred"),
        anchors,
        threshold=0.05,
        nms_threshold=0.45,
        nms_topk=20,
        name="detection",
    )
    return sym.Group([anchors, *targets, detections])


def _op(name: str, inputs: list[str], **params) -> Callable:
    """A builder of ``sym.<name>(**inputs as variables, **params)``; name may have a namespace."""

    def build(sym):
        fn = sym
        for part in name.split("."):
            fn = getattr(fn, part)
        return fn(name="op", **{n: sym.var(n) for n in inputs}, **params)

    return build


def cases(rng: np.random.Generator) -> dict:
    """Each case: build (symbol namespace -> symbol), args (name -> array in input order), grads."""
    records = _nms_records(rng)
    centre = records.copy()
    centre[..., 2:4] = (records[..., 2:4] + records[..., 4:6]) / 2
    centre[..., 4:6] = np.abs(records[..., 4:6] - records[..., 2:4])
    lhs = _random_boxes(rng, (2, 5))
    lhs[0, 1] = [0.3, 0.3, 0.3, 0.6]  # zero width
    scores = _f32(rng.permutation(np.linspace(0.01, 0.99, 2 * 5 * 7)).reshape(2, 5, 7))
    anchors = _random_boxes(rng, (2, 6))
    refs = _random_boxes(rng, (2, 3))
    label = np.full((2, 4, 5), -1, np.float32)
    label[0, :3] = np.concatenate([[[0], [2], [1]], _random_boxes(rng, (3,))], axis=1)
    label[1, :1] = np.concatenate([[[1]], _random_boxes(rng, (1,))], axis=1)
    num_anchors = 3 * 4 * 3  # MultiBoxPrior: 3 x 4 cells, 2 sizes + 2 ratios - 1 anchors each
    a, h, w = 6, 3, 4  # Proposal: 3 ratios x 2 scales anchors on a 3 x 4 feature map (a 48 x 64 image)
    rpn_cls = _f32(rng.uniform(0, 1, (2, 2 * a, h, w)))
    rpn_box = _f32(rng.normal(0, 0.2, (2, 4 * a, h, w)))
    proposal = {"scales": (2, 4), "ratios": (0.5, 1, 2), "feature_stride": 16, "rpn_min_size": 6}
    proposal.update(rpn_pre_nms_top_n=30, rpn_post_nms_top_n=10, threshold=0.6)
    return {
        "box_nms_classes": {
            "build": _op("contrib.box_nms", ["data"], overlap_thresh=0.3, valid_thresh=0.1, id_index=0),
            "args": {"data": records},
        },
        "box_nms_background_topk": {
            "build": _op(
                "contrib.box_nms", ["data"], overlap_thresh=0.25, topk=7, id_index=0, background_id=0, valid_thresh=0.2
            ),
            "args": {"data": records},
        },
        "box_nms_force_center": {
            "build": _op(
                "contrib.box_non_maximum_suppression",
                ["data"],
                overlap_thresh=0.2,
                id_index=0,
                force_suppress=True,
                in_format="center",
                out_format="corner",
            ),
            "args": {"data": centre},
        },
        "box_nms_no_ids": {
            "build": _op(
                "contrib.box_nms", ["data"], overlap_thresh=0.4, out_format="center", score_index=0, coord_start=1
            ),
            "args": {"data": records[0, :, :, 1:]},
        },
        "box_iou_corner": {
            "build": _op("contrib.box_iou", ["lhs", "rhs"]),
            "args": {"lhs": lhs, "rhs": _random_boxes(rng, (3,))},
        },
        "box_iou_center": {
            "build": _op("contrib.box_iou", ["lhs", "rhs"], format="center"),
            "args": {"lhs": lhs, "rhs": _random_boxes(rng, (2, 3))},
        },
        "bipartite_descending_topk": {
            "build": _op("contrib.bipartite_matching", ["data"], threshold=0.2, topk=3),
            "args": {"data": scores},
        },
        "bipartite_ascending": {
            "build": _op("contrib.bipartite_matching", ["data"], threshold=0.6, is_ascend=True),
            "args": {"data": scores},
        },
        "box_encode": {
            "build": _op("contrib.box_encode", ["samples", "matches", "anchors", "refs", "means", "stds"]),
            "args": {
                "samples": _f32([[1, -1, 1, 0, 1, 1], [0, 1, 1, -1, 1, 0]]),
                "matches": _f32(rng.integers(0, 3, (2, 6))),
                "anchors": anchors,
                "refs": refs,
                "means": _f32([0.01, -0.02, 0.0, 0.1]),
                "stds": _f32([0.1, 0.1, 0.2, 0.2]),
            },
        },
        "box_decode_center_clip": {
            "build": _op("contrib.box_decode", ["data", "anchors"], std0=0.1, std1=0.1, std2=0.2, std3=0.3, clip=0.3),
            "args": {"data": _f32(rng.normal(0, 1.5, (2, 6, 4))), "anchors": anchors[:1]},
        },
        "box_decode_corner": {
            "build": _op("contrib.box_decode", ["data", "anchors"], format="corner"),
            "args": {"data": _f32(rng.normal(0, 0.5, (2, 6, 4))), "anchors": anchors[:1]},
        },
        "ssd_pipeline": {
            "build": ssd_pipeline,
            "args": {
                "feature": _f32(rng.normal(size=(2, 3, 3, 4))),
                "label": label,
                "cls_pred": _f32(rng.normal(0, 2, (2, 4, num_anchors))),
                "loc_pred": _f32(rng.normal(0, 0.5, (2, num_anchors * 4))),
            },
        },
        "proposal": {
            "build": _op("contrib.Proposal", ["cls_prob", "bbox_pred", "im_info"], output_score=True, **proposal),
            "args": {"cls_prob": rpn_cls[:1], "bbox_pred": rpn_box[:1], "im_info": _f32([[48, 64, 1.0]])},
        },
        "multi_proposal": {
            "build": _op("contrib.MultiProposal", ["cls_prob", "bbox_pred", "im_info"], output_score=True, **proposal),
            "args": {"cls_prob": rpn_cls, "bbox_pred": rpn_box, "im_info": _f32([[48, 64, 1.0], [40, 60, 0.8]])},
        },
        "proposal_small_boxes_refilled": {  # boxes under rpn_min_size, rounded odd anchors, survivors repeated
            "build": _op(
                "contrib.Proposal",
                ["cls_prob", "bbox_pred", "im_info"],
                scales=(0.5, 1.7),
                ratios=(0.3, 1, 2.5),
                rpn_min_size=10,
                threshold=0.3,
                rpn_pre_nms_top_n=-1,
                rpn_post_nms_top_n=30,
                output_score=True,
            ),
            "args": {
                "cls_prob": _f32(rng.uniform(0, 1, (1, 12, 3, 3))),
                "bbox_pred": _f32(rng.normal(0, 0.3, (1, 24, 3, 3))),
                "im_info": _f32([[40, 45, 1.5]]),
            },
        },
        "proposal_iou_loss": {
            "build": _op("contrib.Proposal", ["cls_prob", "bbox_pred", "im_info"], **{**proposal, "iou_loss": True}),
            "args": {"cls_prob": rpn_cls[1:], "bbox_pred": rpn_box[1:] * 8, "im_info": _f32([[45, 55, 1.0]])},
        },
    }


def run_case(mx, case: dict, heads_rng: np.random.Generator) -> dict:
    """One training step of ``case`` in MXNet: outputs and input gradients."""
    from symbol_step import training_step  # noqa: PLC0415 - on sys.path only when this script runs

    return training_step(mx, case["build"](mx.sym), case["args"], case.get("grads", list(case["args"])), heads_rng)


def main() -> None:
    import mxnet as mx  # noqa: PLC0415 - only main() needs MXNet: the tests import this file for its builders

    folder = sys.argv[1] if len(sys.argv) > 1 else HERE
    arrays, specs = {}, {}
    for index, (key, case) in enumerate(cases(np.random.default_rng(17)).items()):
        result = run_case(mx, case, np.random.default_rng(1000 + index))
        for name, value in case["args"].items():
            arrays[f"{key}/args/{name}"] = value
        for i, value in enumerate(result["outputs"]):
            arrays[f"{key}/outputs/{i}"] = value
        # all-zero gradients (every operator here but box_nms) are recorded by name, not stored
        zero = [n for n, g in result["grads"].items() if not g.any()]
        if len(zero) < len(result["grads"]):
            for i, value in enumerate(result["heads"]):
                arrays[f"{key}/heads/{i}"] = value
            for name, value in result["grads"].items():
                arrays[f"{key}/grads/{name}"] = value
            zero = []
        specs[key] = {
            "args": list(case["args"]),
            "grads": [n for n in result["grads"] if n not in zero],
            "zero_grads": zero,
            "num_outputs": len(result["outputs"]),
        }
    np.savez_compressed(os.path.join(folder, "ops_detection.npz"), **arrays)
    with open(os.path.join(folder, "ops_detection.json"), "w") as f:
        json.dump({"mxnet_version": mx.__version__, "cases": specs}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

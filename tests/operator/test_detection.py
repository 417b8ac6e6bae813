"""The detection family (framework/operator/detection/): box_nms, box_iou, bipartite_matching,
box_encode/decode, MultiBoxPrior/Target/Detection, Proposal/MultiProposal.

Forward results are compared with plain NumPy references written as loops (one box at a time,
as the algorithms are usually stated), with MXNet 1.9.1's own results committed by
tests/data/mxnet_1_9_1/ops/ops_detection.py, and checked for req, inference, gradients and
parameter errors.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from needs import needs_env_path
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.imperative_test_utils import check_imperative_gradient, check_req
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "ops"


def _load_reference_script():
    spec = importlib.util.spec_from_file_location("ops_detection", DATA / "ops_detection.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCE = _load_reference_script()
SPECS = json.loads((DATA / "ops_detection.json").read_text())["cases"]


# ------------------------------------------------------------------ NumPy references (one box at a time)
def ref_iou(a: np.ndarray, b: np.ndarray, offset: float = 0.0) -> float:
    width = max(min(a[2], b[2]) - max(a[0], b[0]) + offset, 0)
    height = max(min(a[3], b[3]) - max(a[1], b[1]) + offset, 0)
    inter = width * height

    def area(x):
        return max(x[2] - x[0] + offset, 0) * max(x[3] - x[1] + offset, 0)

    union = area(a) + area(b) - inter
    return inter / union if union > 0 else 0.0


def ref_corner(box: np.ndarray, fmt: str) -> np.ndarray:
    if fmt == "corner":
        return np.asarray(box, dtype=np.float64)
    x, y, w, h = box
    return np.array([x - w / 2, y - h / 2, x + w / 2, y + h / 2])


def ref_box_nms(
    data,
    overlap_thresh=0.5,
    valid_thresh=0.0,
    topk=-1,
    coord_start=2,
    score_index=1,
    id_index=-1,
    background_id=-1,
    force_suppress=False,
    in_format="corner",
    out_format="corner",
):
    """Loops over each batch element: filter, sort (stable), greedy suppression, pack."""
    shape = data.shape
    flat = data.reshape(-1, *shape[-2:])
    out = np.full(flat.shape, -1.0)
    for b, records in enumerate(flat):
        valid = [
            i
            for i in range(len(records))
            if records[i, score_index] > valid_thresh and (id_index < 0 or records[i, id_index] != background_id)
        ]
        valid.sort(key=lambda i: -records[i, score_index])  # Python's sort is stable
        if topk > 0:
            valid = valid[:topk]
        kept = []
        for i in valid:
            box = ref_corner(records[i, coord_start : coord_start + 4], in_format)
            clash = [
                k
                for k in kept
                if (force_suppress or id_index < 0 or records[k, id_index] == records[i, id_index])
                and ref_iou(ref_corner(records[k, coord_start : coord_start + 4], in_format), box) > overlap_thresh
            ]
            if not clash:
                kept.append(i)
        for row, i in enumerate(kept):
            out[b, row] = records[i]
            corner = ref_corner(records[i, coord_start : coord_start + 4], in_format)
            if out_format == "center":
                corner = np.array(
                    [
                        (corner[0] + corner[2]) / 2,
                        (corner[1] + corner[3]) / 2,
                        corner[2] - corner[0],
                        corner[3] - corner[1],
                    ]
                )
            out[b, row, coord_start : coord_start + 4] = corner
    return out.reshape(shape)


def ref_bipartite(scores: np.ndarray, threshold: float, is_ascend=False, topk=-1):
    rows = np.full(scores.shape[:-1], -1.0)
    cols = np.full((*scores.shape[:-2], scores.shape[-1]), -1.0)
    for b in range(scores.shape[0]):
        pairs = sorted(np.ndindex(scores.shape[1:]), key=lambda rc: scores[b][rc] if is_ascend else -scores[b][rc])
        count = 0
        for r, c in pairs:
            s = scores[b, r, c]
            if rows[b, r] == -1 and cols[b, c] == -1 and (s < threshold if is_ascend else s > threshold):
                rows[b, r], cols[b, c] = c, r
                count += 1
                if 0 < topk < count:
                    break
    return rows, cols


def ref_prior(height, width, sizes, ratios, steps=(-1, -1), offsets=(0.5, 0.5), clip=False):
    step_y = steps[0] if steps[0] > 0 else 1 / height
    step_x = steps[1] if steps[1] > 0 else 1 / width
    out = []
    for r in range(height):
        for c in range(width):
            cy, cx = (r + offsets[0]) * step_y, (c + offsets[1]) * step_x
            for size, ratio in [(s, ratios[0]) for s in sizes] + [(sizes[0], q) for q in ratios[1:]]:
                w = size * height / width * np.sqrt(ratio) / 2
                h = size / np.sqrt(ratio) / 2
                out.append([cx - w, cy - h, cx + w, cy + h])
    out = np.array(out)[None]
    return np.clip(out, 0, 1) if clip else out


def _random_boxes(rng, shape):
    """Corner boxes (..., 4) of random position and size."""
    corner = rng.uniform(0, 0.6, (*shape, 2))
    return np.concatenate([corner, corner + rng.uniform(0.05, 0.5, (*shape, 2))], axis=-1)


def _random_records(rng, shape, width=6, id_index=0, score_index=1, coord_start=2):
    records = np.zeros((*shape, width))
    corner = rng.uniform(0, 0.6, (*shape, 2))
    records[..., coord_start : coord_start + 2] = corner
    records[..., coord_start + 2 : coord_start + 4] = corner + rng.uniform(0.05, 0.5, (*shape, 2))
    records[..., score_index] = rng.uniform(0, 1, shape)
    if id_index >= 0:
        records[..., id_index] = rng.integers(-1, 3, shape)
    return records


# ------------------------------------------------------------------ box_nms
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"id_index": 0, "valid_thresh": 0.2, "overlap_thresh": 0.3},
        {"id_index": 0, "background_id": 0, "topk": 5, "overlap_thresh": 0.2},
        {"id_index": 0, "force_suppress": True, "overlap_thresh": 0.1},
        {"in_format": "center", "out_format": "corner", "overlap_thresh": 0.25},
        {"in_format": "corner", "out_format": "center", "id_index": 0},
    ],
)
def test_box_nms_matches_reference(params):
    rng = seeded_rng(1)
    data = _random_records(rng, (2, 3, 15))
    data[0, 0, 4, 1] = data[0, 0, 9, 1]  # a tied score: input order decides
    data[1, 1, 2, 2:6] = [0.6, 0.6, 0.2, 0.1]  # an inverted box overlaps nothing
    data[1, 2, :, 1] = 0.05  # every box below the valid threshold of some cases
    data[0, 1, :3, 2] = -0.05  # negative first coordinates are converted like any other (MXNet skips them)
    got = mx.nd.contrib.box_nms(mx.nd.array(data, dtype="float64"), **params).asnumpy()
    assert_almost_equal(got, ref_box_nms(data, **params), rtol=1e-10, atol=1e-12)


def test_box_nms_alias_layout_and_dtypes():
    rng = seeded_rng(2)
    data = _random_records(rng, (7, 5), width=7, id_index=6, score_index=0, coord_start=1)
    params = {"score_index": 0, "coord_start": 1, "id_index": 6, "overlap_thresh": 0.3}
    expected = ref_box_nms(data, **params)
    for dtype in ("float32", "float64", "float16"):
        got = mx.nd.contrib.box_non_maximum_suppression(mx.nd.array(data, dtype=dtype), **params)
        assert got.dtype == np.dtype(dtype)
        tolerance = 1e-2 if dtype == "float16" else 1e-5
        assert_almost_equal(got.asnumpy().astype(np.float64), expected, rtol=tolerance, atol=tolerance)
    # one unbatched list of boxes works too
    assert_almost_equal(mx.nd.contrib.box_nms(mx.nd.array(data[0]), **params).asnumpy(), expected[0], rtol=1e-5)


def test_box_nms_gradient_goes_to_the_kept_rows():
    rng = seeded_rng(3)
    data = _random_records(rng, (2, 8))
    x = mx.nd.array(data, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        out = mx.nd.contrib.box_nms(x, overlap_thresh=0.3, id_index=0)
    head = rng.uniform(-1, 1, data.shape)
    out.backward(mx.nd.array(head, dtype="float64"))
    kept = out.asnumpy()
    expected = np.zeros_like(data)
    for b in range(2):
        for row in range(8):
            if kept[b, row, 1] != -1:
                source = np.flatnonzero((data[b] == kept[b, row]).all(axis=1))[0]
                expected[b, source] = head[b, row]
    assert_almost_equal(x.grad.asnumpy(), expected)
    assert (expected == 0).all(axis=-1).any(), "some rows are suppressed and get no gradient"


def test_box_nms_numeric_gradient():
    rng = seeded_rng(4)
    data = _random_records(rng, (2, 6), id_index=-1)
    data[..., 1] = np.linspace(0.1, 0.9, 12).reshape(2, 6)  # scores far apart: eps never reorders them
    check_imperative_gradient(lambda x: mx.nd.contrib.box_nms(x, overlap_thresh=0.4), [data])
    check_imperative_gradient(lambda x: mx.nd._internal._contrib_box_nms(x, overlap_thresh=0.4), [data])


def test_box_nms_hidden_output_and_inference():
    sym = mx.sym.contrib.box_nms(mx.sym.var("data"), name="nms")
    assert sym.list_outputs() == ["nms_output0"]
    assert sym.get_internals().list_outputs()[-1] == "nms_output0"
    ins, outs, done = infer_shapes("_contrib_box_nms", {}, [(2, 3, 10, 6)])
    assert done and outs == [(2, 3, 10, 6), (2, 3, 10, 1)]
    ins, outs, done = infer_shapes("_contrib_box_nms", {}, [None], [(4, 10, 6), None])
    assert ins == [(4, 10, 6)] and outs[1] == (4, 10, 1)
    ins, outs = infer_types("_contrib_box_nms", {}, [None], ["float64", None])
    assert ins == ["float64"] and outs == ["float64", "float64"]
    with pytest.raises(InferenceError, match="num_boxes"):
        infer_shapes("_contrib_box_nms", {}, [(6,)])
    with pytest.raises(InferenceError, match="floating-point"):
        infer_types("_contrib_box_nms", {}, ["int32"])


# ------------------------------------------------------------------ box_iou, bipartite_matching
@pytest.mark.parametrize("fmt", ["corner", "center"])
def test_box_iou_matches_reference(fmt):
    rng = seeded_rng(5)
    lhs = _random_boxes(rng, (2, 3))
    rhs = _random_boxes(rng, (4,))
    lhs[0, 0] = [0.4, 0.4, 0.4, 0.4]  # a point: empty union with itself
    rhs[1] = lhs[1, 2]
    got = mx.nd.contrib.box_iou(mx.nd.array(lhs, dtype="float64"), mx.nd.array(rhs, dtype="float64"), format=fmt)
    expected = np.zeros((2, 3, 4))
    for index in np.ndindex(2, 3, 4):
        expected[index] = ref_iou(ref_corner(lhs[index[:2]], fmt), ref_corner(rhs[index[2]], fmt))
    assert got.shape == (2, 3, 4)
    assert_almost_equal(got.asnumpy(), expected, rtol=1e-10, atol=1e-12)
    assert got.asnumpy()[1, 2, 1] == pytest.approx(1.0)
    if fmt == "corner":  # a point box overlaps nothing
        assert got.asnumpy()[0, 0].max() == 0


@pytest.mark.parametrize(
    "params", [{"threshold": 0.3}, {"threshold": 0.1, "topk": 2}, {"threshold": 0.7, "is_ascend": True}]
)
def test_bipartite_matching_matches_reference(params):
    scores = seeded_rng(6).permutation(np.linspace(0, 1, 3 * 5 * 4)).reshape(3, 5, 4)
    rows, cols = mx.nd.contrib.bipartite_matching(mx.nd.array(scores, dtype="float64"), **params)
    ref_rows, ref_cols = ref_bipartite(scores, **params)
    assert_almost_equal(rows.asnumpy(), ref_rows)
    assert_almost_equal(cols.asnumpy(), ref_cols)


# ------------------------------------------------------------------ box_encode, box_decode
def _center(boxes):
    return np.stack(
        [
            (boxes[..., 0] + boxes[..., 2]) / 2,
            (boxes[..., 1] + boxes[..., 3]) / 2,
            boxes[..., 2] - boxes[..., 0],
            boxes[..., 3] - boxes[..., 1],
        ],
        axis=-1,
    )


def test_box_encode_then_decode_round_trips():
    rng = seeded_rng(7)
    anchors = _random_boxes(rng, (2, 5))
    refs = _random_boxes(rng, (2, 3))
    samples = np.array([[1, -1, 1, 0, 1], [1, 1, -1, 1, 0]], dtype=np.float64)
    matches = rng.integers(0, 3, (2, 5)).astype(np.float64)
    means, stds = np.array([0.1, -0.1, 0.0, 0.05]), np.array([0.1, 0.1, 0.2, 0.2])
    arrays = [mx.nd.array(v, dtype="float64") for v in (samples, matches, anchors, refs, means, stds)]
    targets, masks = (o.asnumpy() for o in mx.nd.contrib.box_encode(*arrays))
    a, g = _center(anchors), _center(refs[np.arange(2)[:, None], matches.astype(int)])
    raw = np.stack(
        [
            (g[..., 0] - a[..., 0]) / a[..., 2],
            (g[..., 1] - a[..., 1]) / a[..., 3],
            np.log(g[..., 2] / a[..., 2]),
            np.log(g[..., 3] / a[..., 3]),
        ],
        axis=-1,
    )
    positive = (samples > 0.5)[..., None]
    assert_almost_equal(targets, np.where(positive, (raw - means) / stds, 0))
    assert_almost_equal(masks, np.broadcast_to(positive, masks.shape).astype(float))
    # box_decode undoes the encoding (one anchor set per batch element here)
    for b in range(2):
        decoded = mx.nd.contrib.box_decode(
            mx.nd.array(raw[b : b + 1] / [1, 1, 2, 4], dtype="float64"),
            mx.nd.array(_center(anchors[b : b + 1]), dtype="float64"),
            std2=2.0,
            std3=4.0,
        )
        expected = refs[b, matches[b].astype(int)]
        assert_almost_equal(decoded.asnumpy()[0], expected, rtol=1e-8, atol=1e-10)


def test_box_decode_clip_and_corner_anchors():
    anchors = np.array([[[0.0, 0.0, 2.0, 2.0]]])
    deltas = np.array([[[0.5, -0.5, 3.0, -1.0]], [[0.0, 0.0, 0.0, 0.0]]])  # batch 2 shares the anchors
    got = mx.nd.contrib.box_decode(mx.nd.array(deltas), mx.nd.array(anchors), format="corner", clip=1.0).asnumpy()
    half_w, half_h = np.exp(1.0), np.exp(-1.0)  # log-width offset 3 is clipped to 1
    assert_almost_equal(got[0, 0], np.array([2 - half_w, 0 - half_h, 2 + half_w, 0 + half_h]), rtol=1e-6)
    assert_almost_equal(got[1, 0], anchors[0, 0], rtol=1e-6)


# ------------------------------------------------------------------ MultiBox*
@pytest.mark.parametrize(
    "params",
    [
        {"sizes": (0.5, 0.25), "ratios": (1, 2, 0.5)},
        {"sizes": (0.7,), "ratios": (1, 3), "clip": True, "steps": (0.2, 0.1), "offsets": (0.3, 0.6)},
    ],
)
def test_multibox_prior_matches_reference(params):
    data = mx.nd.zeros((2, 3, 4, 6))
    got = mx.nd.contrib.MultiBoxPrior(data, **params)
    expected = ref_prior(4, 6, **params)
    assert got.shape == expected.shape and got.dtype == np.float32
    assert_almost_equal(got.asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_multibox_target_matching_and_mining():
    anchors = np.array(
        [
            [
                [0, 0, 0.5, 0.5],
                [0.05, 0, 0.5, 0.5],
                [0.5, 0.5, 1, 1],
                [0.1, 0.6, 0.4, 0.9],
                [0.6, 0.0, 0.9, 0.3],
                [0.0, 0.55, 0.3, 0.85],
            ]
        ],
        np.float32,
    )
    label = np.array([[[2, 0, 0, 0.5, 0.5], [0, 0.5, 0.45, 1, 1]], [[-1] * 5, [-1] * 5]], np.float32)
    cls_pred = np.zeros((2, 3, 6), np.float32)
    cls_pred[0, 1, 3] = 4  # anchor 3 looks least like background: the hardest negative
    loc, mask, cls = mx.nd.contrib.MultiBoxTarget(
        mx.nd.array(anchors), mx.nd.array(label), mx.nd.array(cls_pred), negative_mining_ratio=0.5, ignore_label=-2
    )
    # anchor 0 is gt 0's best, anchor 2 gt 1's; anchor 1 overlaps gt 0 by 0.9 > 0.5; one negative mined
    assert cls.asnumpy().tolist() == [[3, 3, 1, 0, -2, -2], [-2] * 6]
    assert mask.asnumpy()[0].reshape(6, 4)[:, 0].tolist() == [1, 1, 1, 0, 0, 0]
    a, g = anchors[0, 1], label[0, 0, 1:]
    aw, ah, gw, gh = a[2] - a[0], a[3] - a[1], g[2] - g[0], g[3] - g[1]
    expected = [
        ((g[0] + g[2]) - (a[0] + a[2])) / 2 / aw / 0.1,
        ((g[1] + g[3]) - (a[1] + a[3])) / 2 / ah / 0.1,
        np.log(gw / aw) / 0.2,
        np.log(gh / ah) / 0.2,
    ]
    assert_almost_equal(loc.asnumpy()[0, 4:8], np.array(expected, np.float32), rtol=1e-5, atol=1e-6)
    assert not loc.asnumpy()[1].any() and not mask.asnumpy()[1].any()


def test_multibox_target_mines_only_anchors_below_the_mining_threshold():
    anchors = mx.nd.array([[[0, 0, 1, 1], [0, 0, 1, 0.5], [0, 0, 0.5, 1], [2, 2, 3, 3], [0, 0, 0.25, 1]]])
    label, cls_pred = mx.nd.array([[[0, 0, 0, 1, 1]]]), mx.nd.zeros((1, 2, 5))

    def classes(**params):
        return mx.nd.contrib.MultiBoxTarget(anchors, label, cls_pred, **params)[2].asnumpy()[0].tolist()

    # IoUs with the ground truth: 1, 0.5, 0.5, 0, 0.25; a positive needs more than overlap_threshold
    assert classes() == [1, 0, 0, 0, 0]
    assert classes(overlap_threshold=0.4) == [1, 1, 1, 0, 0]
    # three negatives wanted, one anchor below 0.25: MXNet 1.9.1 fails here, MXLab mines the one it has
    assert classes(negative_mining_ratio=3, negative_mining_thresh=0.25) == [1, -1, -1, 0, -1]
    assert classes(negative_mining_ratio=1, negative_mining_thresh=0.5, minimum_negative_samples=2) == [1, -1, -1, 0, 0]


def test_multibox_detection_sorts_suppresses_and_thresholds():
    cls_prob = np.array(
        [[[0.1, 0.6, 0.2, 0.05, 0.3], [0.5, 0.2, 0.3, 0.9, 0.3], [0.4, 0.2, 0.5, 0.05, 0.4]]], np.float32
    )
    anchors = np.array(
        [[[0, 0, 0.5, 0.5], [0, 0, 0.5, 0.5], [0.1, 0.1, 0.6, 0.6], [0.5, 0.5, 1, 1], [0.02, 0, 0.5, 0.52]]], np.float32
    )
    loc = np.zeros((1, 20), np.float32)
    out = mx.nd.contrib.MultiBoxDetection(mx.nd.array(cls_prob), mx.nd.array(loc), mx.nd.array(anchors)).asnumpy()[0]
    # best foreground class per anchor, sorted by score; same-class overlaps >= 0.5 suppressed (id -1)
    assert out[:, 0].tolist() == [0, 0, 1, -1, -1]
    assert_almost_equal(out[:, 1], np.array([0.9, 0.5, 0.5, 0.4, 0.2], np.float32))
    assert_almost_equal(out[0, 2:], anchors[0, 3])
    out = mx.nd.contrib.MultiBoxDetection(
        mx.nd.array(cls_prob), mx.nd.array(loc), mx.nd.array(anchors), threshold=0.45, force_suppress=True
    ).asnumpy()[0]
    assert out[:, 0].tolist() == [0, 0, 1, -1, -1] and (out[3:] == -1).all()
    # background row 2 instead of 0: classes 0 and 1 compete
    out = mx.nd.contrib.MultiBoxDetection(
        mx.nd.array(cls_prob), mx.nd.array(loc), mx.nd.array(anchors), background_id=2, nms_threshold=0
    ).asnumpy()[0]
    assert out[:, 0].tolist() == [1, 0, 1, 1, 0]  # no NMS: anchor order


# ------------------------------------------------------------------ Proposal
def test_proposal_repeats_survivors_to_fill_rows_and_hides_score():
    rng = seeded_rng(8)
    cls_prob = rng.uniform(0, 1, (1, 2, 2, 2)).astype(np.float32)
    bbox = np.zeros((1, 4, 2, 2), np.float32)
    args = dict(scales=(1,), ratios=(1,), feature_stride=16, rpn_min_size=1, threshold=0.5, rpn_post_nms_top_n=7)
    out = mx.nd.contrib.Proposal(mx.nd.array(cls_prob), mx.nd.array(bbox), mx.nd.array([[32, 32, 1]]), **args)
    assert out.shape == (7, 5)
    # the four 16x16 cells do not overlap: all survive, best first, then repeated from the start
    order = np.argsort(-cls_prob[0, 1].ravel(), kind="stable")
    cells = np.array([[x * 16, y * 16, x * 16 + 15, y * 16 + 15] for y in range(2) for x in range(2)], np.float32)
    expected = cells[order[[0, 1, 2, 3, 0, 1, 2]]]
    assert_almost_equal(out.asnumpy()[:, 1:], expected)
    assert (out.asnumpy()[:, 0] == 0).all()
    outs = mx.nd.contrib.MultiProposal(
        mx.nd.array(np.concatenate([cls_prob] * 2)),
        mx.nd.array(np.concatenate([bbox] * 2)),
        mx.nd.array([[32, 32, 1], [16, 16, 1]]),
        output_score=True,
        **args,
    )
    assert len(outs) == 2 and outs[0].shape == (14, 5) and outs[1].shape == (14, 1)
    assert outs[0].asnumpy()[7:, 0].tolist() == [1] * 7
    # image 2 is 16x16: only the first cell is inside it, the others score -1
    assert outs[1].asnumpy()[7, 0] == pytest.approx(cls_prob[0, 1, 0, 0]) and (outs[1].asnumpy()[8:11] == -1).all()


def test_proposal_inference_and_errors():
    params = {"scales": (8, 16), "ratios": (0.5, 1, 2), "rpn_post_nms_top_n": 20}
    ins, outs, done = infer_shapes("_contrib_Proposal", params, [(1, 12, 5, 6), None, None])
    assert done and ins[1:] == [(1, 24, 5, 6), (1, 3)] and outs == [(20, 5), (20, 1)]
    ins, outs, done = infer_shapes("_contrib_MultiProposal", params, [None, (3, 24, 5, 6), None])
    assert ins[0] == (3, 12, 5, 6) and outs[0] == (60, 5)
    with pytest.raises(InferenceError, match="MultiProposal"):
        infer_shapes("_contrib_Proposal", params, [(2, 12, 5, 6), None, None])
    with pytest.raises(InferenceError, match="float32"):
        infer_types("_contrib_Proposal", params, ["float64", None, None])
    with pytest.raises(InferenceError):
        infer_shapes("_contrib_Proposal", params, [(1, 10, 5, 6), None, None])
    sym = mx.sym.contrib.Proposal(mx.sym.var("c"), mx.sym.var("b"), mx.sym.var("i"), name="p")
    assert sym.list_outputs() == ["p_output"]
    sym = mx.sym.contrib.Proposal(mx.sym.var("c"), mx.sym.var("b"), mx.sym.var("i"), output_score=True, name="p")
    assert sym.list_outputs() == ["p_output", "p_score"]


# ------------------------------------------------------------------ shared checks
def _req_inputs():
    rng = seeded_rng(9)
    records = _random_records(rng, (2, 6))
    boxes = _random_boxes(rng, (2, 4))
    label = np.array([[[1, 0.1, 0.1, 0.5, 0.5], [-1] * 5], [[0, 0.3, 0.2, 0.9, 0.8], [2, 0, 0, 0.3, 0.3]]])
    prior = ref_prior(2, 2, (0.5, 0.3), (1, 2)).astype(np.float32)  # 12 anchors
    rpn = (rng.uniform(0, 1, (2, 2, 3, 3)).astype(np.float32), rng.normal(0, 0.1, (2, 4, 3, 3)).astype(np.float32))
    f32 = np.float32
    return [
        ("_contrib_box_nms", [records], {"id_index": 0, "overlap_thresh": 0.3}),
        ("_contrib_box_iou", [boxes, boxes[0]], {}),
        ("_contrib_bipartite_matching", [rng.uniform(0, 1, (2, 3, 4))], {"threshold": 0.2}),
        (
            "_contrib_box_encode",
            [np.ones((2, 4)), rng.integers(0, 4, (2, 4)).astype(float), boxes, boxes, np.zeros(4), np.ones(4)],
            {},
        ),
        ("_contrib_box_decode", [rng.normal(0, 0.3, (2, 4, 4)), boxes[:1]], {"format": "corner"}),
        ("_contrib_MultiBoxPrior", [np.zeros((1, 2, 2, 2), f32)], {"sizes": (0.5, 0.3), "ratios": (1, 2)}),
        ("_contrib_MultiBoxTarget", [prior, label.astype(f32), rng.normal(0, 1, (2, 3, 12)).astype(f32)], {}),
        (
            "_contrib_MultiBoxDetection",
            [rng.uniform(0, 1, (2, 3, 12)).astype(f32), rng.normal(0, 0.1, (2, 48)).astype(f32), prior],
            {},
        ),
        (
            "_contrib_Proposal",
            [rpn[0][:1], rpn[1][:1], np.array([[48, 48, 1]], f32)],
            {"scales": (2,), "ratios": (1,), "rpn_min_size": 1, "rpn_post_nms_top_n": 5},
        ),
        (
            "_contrib_MultiProposal",
            [rpn[0], rpn[1], np.array([[48, 48, 1], [40, 30, 1]], f32)],
            {"scales": (2,), "ratios": (1,), "rpn_min_size": 1, "rpn_post_nms_top_n": 5},
        ),
    ]


@pytest.mark.parametrize("case", _req_inputs(), ids=lambda c: c[0] if isinstance(c, tuple) else None)
def test_req_write_add_null(case):
    name, inputs, params = case
    check_req(name, inputs, **params)


@pytest.mark.parametrize("case", _req_inputs()[1:], ids=lambda c: c[0] if isinstance(c, tuple) else None)
def test_non_differentiable_operators_give_zero_gradients(case):
    name, inputs, params = case
    arrays = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        out = getattr(mx.nd.contrib, name[len("_contrib_") :])(*arrays, **params)
        outs = out if isinstance(out, list) else [out]
    mx.autograd.backward(outs, [mx.nd.ones(o.shape, dtype=o.dtype) for o in outs])
    for a in arrays:
        assert not a.grad.asnumpy().any()


@pytest.mark.parametrize(
    ("name", "params", "parameter"),
    [
        ("_contrib_box_nms", {"in_format": "xywh"}, "in_format"),
        ("_contrib_box_nms", {"topk": "many"}, "topk"),
        ("_contrib_box_iou", {"format": "polar"}, "format"),
        ("_contrib_bipartite_matching", {}, "threshold"),
        ("_contrib_box_decode", {"clip": "x"}, "clip"),
        ("_contrib_MultiBoxTarget", {"minimum_negative_samples": -1}, "minimum_negative_samples"),
        ("_contrib_Proposal", {"rpn_post_nms_top_n": 0}, "rpn_post_nms_top_n"),
        ("_contrib_MultiProposal", {"feature_stride": 0}, "feature_stride"),
    ],
)
def test_bad_parameters_name_the_parameter(name, params, parameter):
    with pytest.raises(OperatorParamError, match=parameter):
        mx.operator.get(name).parse_attrs(params)


def test_parameter_values_checked_against_the_inputs():
    with pytest.raises(OperatorParamError, match="coord_start"):
        infer_shapes("_contrib_box_nms", {"coord_start": 3}, [(2, 5, 6)])
    with pytest.raises(OperatorParamError, match="score_index"):
        infer_shapes("_contrib_box_nms", {"score_index": 6}, [(2, 5, 6)])
    with pytest.raises(OperatorParamError, match="steps"):
        infer_shapes("_contrib_MultiBoxPrior", {"steps": (0.1,)}, [(1, 3, 4, 4)])
    with pytest.raises(OperatorParamError, match="variances"):
        mx.nd.contrib.MultiBoxTarget(
            mx.nd.array(np.zeros((1, 2, 4))), mx.nd.array(-np.ones((1, 1, 5))), mx.nd.zeros((1, 2, 2)), variances=(1, 2)
        )[0].asnumpy()
    with pytest.raises(OperatorParamError, match="background_id"):
        mx.nd.contrib.MultiBoxDetection(
            mx.nd.zeros((1, 3, 2)), mx.nd.zeros((1, 8)), mx.nd.zeros((1, 2, 4)), background_id=3
        ).asnumpy()
    with pytest.raises(OperatorParamError, match="scales"):
        infer_shapes("_contrib_Proposal", {"scales": ()}, [None, None, None])


def test_inference_in_both_directions():
    ins, outs, done = infer_shapes("_contrib_box_iou", {}, [(2, 3, 4), (5, 4)])
    assert done and outs == [(2, 3, 5)]
    ins, outs, done = infer_shapes("_contrib_box_iou", {}, [(2, 0, 0), (0, 0)], [(2, 3, 5)])
    assert done and ins == [(2, 3, 4), (5, 4)]
    ins, outs, done = infer_shapes("_contrib_bipartite_matching", {"threshold": 0.1}, [None], [(2, 5), (2, 7)])
    assert done and ins == [(2, 5, 7)]
    ins, outs, done = infer_shapes("_contrib_box_encode", {}, [(2, 6), None, None, (2, 3, 4), None, None])
    assert done and ins[1:3] == [(2, 6), (2, 6, 4)] and ins[4:] == [(4,), (4,)] and outs == [(2, 6, 4)] * 2
    ins, outs, done = infer_shapes("_contrib_box_decode", {}, [None, (1, 6, 4)], [(3, 6, 4)])
    assert done and ins[0] == (3, 6, 4)
    ins, outs, done = infer_shapes("_contrib_MultiBoxPrior", {"sizes": (0.5, 0.2), "ratios": (1, 2, 3)}, [(1, 8, 3, 4)])
    assert outs == [(1, 48, 4)]
    ins, outs, done = infer_shapes("_contrib_MultiBoxTarget", {}, [(1, 48, 4), (2, 5, 5), None])
    assert not done and outs == [(2, 192), (2, 192), (2, 48)] and ins[2] == (2, 0, 48)
    ins, outs, done = infer_shapes("_contrib_MultiBoxDetection", {}, [(2, 4, 48), None, None])
    assert done and ins[1:] == [(2, 192), (1, 48, 4)] and outs == [(2, 48, 6)]
    ins, outs, done = infer_shapes("_contrib_MultiBoxDetection", {}, [(0, 4, 0), None, None], [(2, 48, 6)])
    assert done and ins == [(2, 4, 48), (2, 192), (1, 48, 4)]
    ins, outs, done = infer_shapes("_contrib_MultiBoxTarget", {}, [None, (0, 5, 5), (0, 3, 0)], [None, None, (2, 48)])
    assert done and ins == [(1, 48, 4), (2, 5, 5), (2, 3, 48)]
    ins, outs = infer_types("_contrib_MultiBoxDetection", {}, [None, None, None], ["float32"])
    assert ins == ["float32"] * 3
    with pytest.raises(InferenceError, match="float32"):
        infer_types("_contrib_MultiBoxPrior", {}, ["float64"])
    with pytest.raises(InferenceError, match="label"):
        infer_shapes("_contrib_MultiBoxTarget", {}, [(1, 48, 4), (2, 5, 4), None])


def test_namespaces_and_signatures():
    for name in (
        "box_nms",
        "box_non_maximum_suppression",
        "box_iou",
        "bipartite_matching",
        "box_encode",
        "box_decode",
        "MultiBoxPrior",
        "MultiBoxTarget",
        "MultiBoxDetection",
        "Proposal",
        "MultiProposal",
    ):
        for namespace in (mx.nd.contrib, mx.sym.contrib):
            assert callable(getattr(namespace, name)), name
        assert callable(getattr(mx.nd._internal, f"_contrib_{name}"))
        assert callable(getattr(mx.sym._internal, f"_contrib_{name}"))
    assert (
        "overlap_thresh" in mx.nd.contrib.box_nms.__doc__
        and "negative_mining_ratio" in mx.nd.contrib.MultiBoxTarget.__doc__
    )
    sym = mx.sym.contrib.MultiBoxTarget(mx.sym.var("a"), mx.sym.var("l"), mx.sym.var("c"), name="t")
    assert sym.list_outputs() == ["t_loc_target", "t_loc_mask", "t_cls_target"]
    assert mx.sym.contrib.box_encode(*[mx.sym.var(n) for n in "abcdef"]).list_arguments() == list("abcdef")


def test_ssd_symbol_round_trips_through_json_and_simple_binds():
    sym = REFERENCE.ssd_pipeline(mx.sym)
    loaded = mx.sym.load_json(sym.tojson())
    assert loaded.tojson() == sym.tojson()
    ex = loaded.simple_bind(mx.cpu(), feature=(2, 3, 3, 4), label=(2, 4, 5), cls_pred=(2, 4, 36), loc_pred=(2, 144))
    rng = seeded_rng(10)
    ex.arg_dict["cls_pred"][:] = rng.normal(size=(2, 4, 36))
    ex.arg_dict["loc_pred"][:] = rng.normal(0, 0.1, size=(2, 144))
    ex.arg_dict["label"][:] = np.array([[[1, 0.1, 0.1, 0.6, 0.5]] + [[-1] * 5] * 3] * 2)
    outputs = ex.forward(is_train=True)
    assert [o.shape for o in outputs] == [(1, 36, 4), (2, 144), (2, 144), (2, 36), (2, 36, 6)]
    ex.backward([mx.nd.ones(o.shape) for o in outputs])
    assert not ex.grad_dict["cls_pred"].asnumpy().any() and not ex.grad_dict["loc_pred"].asnumpy().any()
    assert outputs[3].asnumpy().max() == 2  # some anchor is a positive of class 1


# ------------------------------------------------------------------ agreement with MXNet 1.9.1
def _run_mxlab(key: str, arrays: dict) -> tuple[list, dict]:
    spec = SPECS[key]
    sym = REFERENCE.cases(np.random.default_rng(17))[key]["build"](mx.sym)
    args = {n: mx.nd.array(arrays[f"{key}/args/{n}"], dtype="float32") for n in spec["args"]}
    grads = {n: mx.nd.zeros(a.shape, dtype="float32") for n, a in args.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads, grad_req="write")
    outputs = [o.asnumpy() for o in ex.forward(is_train=True)]
    heads = [arrays.get(f"{key}/heads/{i}", np.ones(o.shape, np.float32)) for i, o in enumerate(outputs)]
    ex.backward([mx.nd.array(h, dtype="float32") for h in heads])
    return outputs, {n: g.asnumpy() for n, g in grads.items()}


def _compare(folder: Path, key: str) -> None:
    spec = json.loads((folder / "ops_detection.json").read_text())["cases"][key]
    with np.load(folder / "ops_detection.npz") as npz:
        arrays = dict(npz)
    outputs, grads = _run_mxlab(key, arrays)
    assert len(outputs) == spec["num_outputs"]
    for i, got in enumerate(outputs):
        assert_almost_equal(got, arrays[f"{key}/outputs/{i}"], rtol=1e-4, atol=1e-5, names=("MXLab", "MXNet 1.9.1"))
    for name in spec["grads"]:
        assert_almost_equal(
            grads[name], arrays[f"{key}/grads/{name}"], rtol=1e-4, atol=1e-5, names=(f"d{name}", "MXNet")
        )
    for name in spec["zero_grads"]:
        assert not grads[name].any(), f"{key}: MXNet gives {name} a zero gradient"


@pytest.mark.parametrize("key", sorted(SPECS))
def test_agrees_with_committed_mxnet_results(key):
    _compare(DATA, key)


def test_agrees_with_mxnet_run_live(tmp_path):
    python = needs_env_path("MXNET_PYTHON", "it names an interpreter with mxnet 1.9.1, to rerun the reference script")
    subprocess.run(
        [python, str(DATA / "ops_detection.py"), str(tmp_path)], check=True, capture_output=True, timeout=600
    )
    for key in sorted(SPECS):
        _compare(tmp_path, key)

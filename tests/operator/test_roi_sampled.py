"""_contrib_RROIAlign and _contrib_DeformablePSROIPooling against sample-by-sample references.

The references below loop over regions, bins and samples with plain Python arithmetic, the
way the operators are described (docs/operators.md), so they share no code with the vectorised
operators. RROIAlign's agreement with MXNet 1.9.1 itself is in test_misc17_mxnet.py;
DeformablePSROIPooling runs on GPUs only in MXNet 1.9.1, so this file is its reference.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.operator import WRITE, InferenceError, OpContext, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req

nd = mx.nd


def _bilinear(plane: np.ndarray, x: float, y: float) -> float:
    h, w = plane.shape
    x, y = min(max(x, 0.0), w - 1.0), min(max(y, 0.0), h - 1.0)
    x0, y0, x1, y1 = math.floor(x), math.floor(y), math.ceil(x), math.ceil(y)
    fx, fy = x - x0, y - y0
    return (
        (1 - fy) * (1 - fx) * plane[y0, x0]
        + (1 - fy) * fx * plane[y0, x1]
        + fy * (1 - fx) * plane[y1, x0]
        + fy * fx * plane[y1, x1]
    )


# ------------------------------------------------------------------ RROIAlign
def _rroi_reference(data, rois, pooled, scale, ratio):
    _, c, h, w = data.shape
    ph, pw = pooled
    out = np.zeros((len(rois), c, ph, pw))
    for r, (b, centre_x, centre_y, width, height, angle) in enumerate(rois.astype(np.float64)):
        cx, cy, rw, rh = centre_x * scale, centre_y * scale, max(width * scale, 1.0), max(height * scale, 1.0)
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        gh = ratio if ratio > 0 else math.ceil(rh / ph)
        gw = ratio if ratio > 0 else math.ceil(rw / pw)
        for i in range(ph):
            for j in range(pw):
                total = np.zeros(c)
                for a in range(gh):
                    for bb in range(gw):
                        yy = -rh / 2 + (i + (a + 0.5) / gh) * rh / ph
                        xx = -rw / 2 + (j + (bb + 0.5) / gw) * rw / pw
                        x, y = xx * cos + yy * sin + cx, yy * cos - xx * sin + cy
                        if -1 <= x <= w and -1 <= y <= h:
                            total += [_bilinear(data[int(b), k], x, y) for k in range(c)]
                out[r, :, i, j] = total / (gh * gw)
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ratio", [-1, 1, 2])
def test_rroi_align_matches_the_reference(dtype, ratio):
    rng = seeded_rng(1)
    data = rng.uniform(-1, 1, (2, 3, 7, 9)).astype(dtype)
    rois = np.array(
        [
            [0, 4, 3, 5, 3, 20],
            [1, 2, 5, 3, 6, -70],
            [1, 8.5, 0, 4, 2, 180],
            [0, 30, 30, 2, 2, 0],
            [0, 3, 3, 0.2, 0, 45],
        ],
        dtype,
    )
    out = nd.contrib.RROIAlign(
        nd.array(data, dtype=dtype),
        nd.array(rois, dtype=dtype),
        pooled_size=(2, 3),
        spatial_scale=0.8,
        sampling_ratio=ratio,
    )
    assert out.dtype == np.dtype(dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    assert_almost_equal(out.asnumpy(), _rroi_reference(data, rois, (2, 3), 0.8, ratio), rtol=tol, atol=tol)


def test_rroi_align_gradient_and_req():
    rng = seeded_rng(2)
    rois = np.array([[0, 2.3, 2.1, 3, 2, 30], [1, 3.2, 1.7, 2, 3, -60]])
    data = rng.uniform(-1, 1, (2, 2, 5, 5))
    check_imperative_gradient(
        lambda d: nd.contrib.RROIAlign(d, nd.array(rois, dtype="float64"), pooled_size=(2, 2), spatial_scale=1.0),
        [data],
    )
    check_req(
        "_contrib_RROIAlign",
        [data.astype(np.float32), rois.astype(np.float32)],
        pooled_size=(2, 2),
        spatial_scale=1.0,
        sampling_ratio=2,
    )


def test_rroi_align_inference_and_errors():
    params = {"pooled_size": (2, 3), "spatial_scale": 1.0}
    ins, outs, done = infer_shapes("_contrib_RROIAlign", params, [(2, 4, 5, 5), None])
    assert not done and ins[1] == (0, 6) and outs == [(0, 4, 2, 3)]
    ins, outs, done = infer_shapes("_contrib_RROIAlign", params, [(2, 4, 5, 5), None], [(7, 4, 2, 3)])
    assert done and ins[1] == (7, 6)
    with pytest.raises(InferenceError, match="rois"):
        infer_shapes("_contrib_RROIAlign", params, [(2, 4, 5, 5), (3, 5)])
    with pytest.raises(InferenceError, match="data"):
        infer_shapes("_contrib_RROIAlign", params, [(4, 5, 5), (3, 6)])
    assert infer_types("_contrib_RROIAlign", params, ["float64", None])[1] == ["float64"]
    with pytest.raises(InferenceError, match="floating-point"):
        infer_types("_contrib_RROIAlign", params, ["int32", None])
    with pytest.raises(OperatorParamError, match="pooled_size"):
        nd.contrib.RROIAlign(nd.ones((1, 1, 3, 3)), nd.ones((1, 6)), pooled_size=(2,), spatial_scale=1.0)
    with pytest.raises(OperatorParamError, match="'spatial_scale'"):
        mx.operator.get("_contrib_RROIAlign").parse_attrs({"pooled_size": (2, 2)})


# ------------------------------------------------------------------ DeformablePSROIPooling
def _dpsroi_reference(data, rois, trans, p):
    h, w = data.shape[2:]
    k, group, s = p["pooled_size"], p["group_size"], p.get("sample_per_part", 1)
    part = p.get("part_size", 0) or k
    dim, std = p["output_dim"], p.get("trans_std", 0.0)
    classes = 1 if trans is None else trans.shape[1] // 2
    out, count = np.zeros((len(rois), dim, k, k)), np.zeros((len(rois), dim, k, k))

    def c_round(v):
        return math.copysign(math.floor(abs(v) + 0.5), v)

    for r, (b, x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        sx, sy = c_round(x1) * p["spatial_scale"] - 0.5, c_round(y1) * p["spatial_scale"] - 0.5
        ex, ey = (c_round(x2) + 1) * p["spatial_scale"] - 0.5, (c_round(y2) + 1) * p["spatial_scale"] - 0.5
        rw, rh = max(ex - sx, 0.1), max(ey - sy, 0.1)
        for d in range(dim):
            klass = d // (dim // classes)
            for i in range(k):
                for j in range(k):
                    pi, pj = math.floor(i / k * part), math.floor(j / k * part)
                    tx = 0.0 if trans is None else trans[r, 2 * klass, pi, pj] * std
                    ty = 0.0 if trans is None else trans[r, 2 * klass + 1, pi, pj] * std
                    gi, gj = min(i * group // k, group - 1), min(j * group // k, group - 1)
                    plane = data[int(b), (d * group + gi) * group + gj]
                    total, used = 0.0, 0
                    for a in range(s):
                        for bb in range(s):
                            x = sx + j * rw / k + tx * rw + bb * rw / k / s
                            y = sy + i * rh / k + ty * rh + a * rh / k / s
                            if -0.5 <= x <= w - 0.5 and -0.5 <= y <= h - 0.5:
                                total += _bilinear(plane, x, y)
                                used += 1
                    out[r, d, i, j] = total / used if used else 0.0
                    count[r, d, i, j] = used
    return out, count


DPSROI = {"spatial_scale": 0.71, "output_dim": 2, "group_size": 2, "pooled_size": 3, "sample_per_part": 2}


def _dpsroi_inputs(rng, dtype, classes=1, part=3):
    data = rng.uniform(-1, 1, (2, 2 * 4, 6, 7)).astype(dtype)
    rois = np.array([[0, 1, 1, 6, 7], [1, 0, 2, 9, 5], [1, 8, 8, 8, 8], [0, -3, -2, 2, 1]], dtype)
    trans = rng.uniform(-1, 1, (4, 2 * classes, part, part)).astype(dtype)
    return data, rois, trans


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "extra",
    [{"trans_std": 0.2}, {"trans_std": 0.1, "part_size": 2}, {"no_trans": True}, {"trans_std": 0.3, "classes": 2}],
)
def test_deformable_psroi_pooling_matches_the_reference(dtype, extra):
    extra = dict(extra)
    classes = extra.pop("classes", 1)
    params = {**DPSROI, **extra}
    data, rois, trans = _dpsroi_inputs(seeded_rng(3), dtype, classes, params.get("part_size", 0) or 3)
    args = [nd.array(data, dtype=dtype), nd.array(rois, dtype=dtype)]
    if not params.get("no_trans"):
        args.append(nd.array(trans, dtype=dtype))
    else:
        trans = None
    op = mx.operator.get("_contrib_DeformablePSROIPooling")
    attrs = op.parse_attrs(params)
    assert op.list_output_names(attrs) == ["output", "top_count"] and op.get_num_visible_outputs(attrs) == 1
    out = nd.contrib.DeformablePSROIPooling(*args, **params)
    want, count = _dpsroi_reference(data, rois, trans, params)
    tol = 1e-4 if dtype == "float32" else 1e-10
    assert_almost_equal(out.asnumpy(), want, rtol=tol, atol=tol)
    # the hidden top_count output, straight from the compute function
    raw = [data, rois] + ([] if trans is None else [trans])
    outputs = [np.zeros(want.shape, dtype), np.zeros(want.shape, dtype)]
    op.get_compute("cpu")(attrs, OpContext(False, mx.cpu(), None, []), raw, [WRITE, WRITE], outputs)
    np.testing.assert_array_equal(outputs[1], count)


def test_deformable_psroi_pooling_gradients():
    rng = seeded_rng(4)
    data, rois, trans = _dpsroi_inputs(rng, "float64")
    rois[:, 1:] += 0.3  # keep sample points off integer positions (bilinear kinks)
    params = {**DPSROI, "trans_std": 0.1, "spatial_scale": 0.73}
    rois_nd = nd.array(rois, dtype="float64")
    check_imperative_gradient(
        lambda d, t: nd.contrib.DeformablePSROIPooling(d, rois_nd, t, **params), [data, trans * 0.5], rtol=2e-2
    )
    check_imperative_gradient(
        lambda d: nd.contrib.DeformablePSROIPooling(d, rois_nd, **{**params, "no_trans": True}), [data]
    )
    check_req("_contrib_DeformablePSROIPooling", [data, rois, trans], **params)
    check_req("_contrib_DeformablePSROIPooling", [data, rois], **{**params, "no_trans": True})


def test_deformable_psroi_pooling_inference_and_errors():
    name = "_contrib_DeformablePSROIPooling"
    ins, outs, done = infer_shapes(name, DPSROI, [(2, 8, 6, 6), (5, 5), None])
    assert not done and ins[2] == (5, 0, 3, 3) and outs == [(5, 2, 3, 3)] * 2
    ins, outs, done = infer_shapes(name, DPSROI, [(2, 8, 6, 6), (5, 5), (5, 2, 3, 3)])
    assert done and outs == [(5, 2, 3, 3), (5, 2, 3, 3)]
    ins, outs, done = infer_shapes(name, {**DPSROI, "part_size": 2}, [(2, 8, 6, 6), None, None], [(4, 2, 3, 3), None])
    assert ins[1] == (4, 5) and ins[2] == (4, 0, 2, 2)
    ins, outs, done = infer_shapes(name, {**DPSROI, "no_trans": True}, [(2, 8, 6, 6), (5, 5)])
    assert done and len(ins) == 2
    with pytest.raises(InferenceError, match="output_dim \\* group_size"):
        infer_shapes(name, DPSROI, [(2, 9, 6, 6), (5, 5), None])
    with pytest.raises(InferenceError, match="classes"):
        infer_shapes(name, DPSROI, [(2, 8, 6, 6), (5, 5), (5, 6, 3, 3)])
    with pytest.raises(InferenceError, match="rois"):
        infer_shapes(name, DPSROI, [(2, 8, 6, 6), (5, 4), None])
    assert infer_types(name, DPSROI, ["float32", None, None])[0] == ["float32"] * 3
    with pytest.raises(OperatorParamError, match="'trans_std'"):
        mx.operator.get(name).parse_attrs({**DPSROI, "trans_std": 2.0})
    with pytest.raises(OperatorParamError, match="'group_size'"):
        mx.operator.get(name).parse_attrs({k: v for k, v in DPSROI.items() if k != "group_size"})
    sym = mx.sym.contrib.DeformablePSROIPooling(mx.sym.var("data"), mx.sym.var("rois"), mx.sym.var("trans"), **DPSROI)
    assert sym.list_arguments() == ["data", "rois", "trans"] and len(sym.list_outputs()) == 1

"""The image operators (``mx.nd.image.*``, ``_image_*``): forward against NumPy, gradients, req,
inference in both directions, parameter errors, and agreement with MXNet 1.9.1's committed outputs
(tests/data/mxnet_1_9_1/ops/ops_image.py wrote them; run live when ``MXNET_PYTHON`` is set)."""

from __future__ import annotations

import colorsys
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.operator.image.color import IMAGENET_EIGVAL, IMAGENET_EIGVEC, LUMA
from framework.test_utils import check_imperative_gradient, check_req

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "ops"
SCRIPT = DATA / "ops_image.py"
REFERENCE = DATA / "ops_image.npz"


def rgb(shape, dtype="float32", seed=0):
    values = seeded_rng(seed).uniform(0, 255, shape)
    return values.astype(dtype) if np.dtype(dtype).kind == "f" else np.rint(values).astype(dtype)


# ---------------------------------------------------------------- forward vs NumPy
@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64"])
@pytest.mark.parametrize("shape", [(5, 4, 3), (2, 5, 4, 3), (6, 3, 1)])
def test_to_tensor(shape, dtype):
    x = rgb(shape, dtype)
    out = mx.nd.image.to_tensor(mx.nd.array(x, dtype=dtype))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), np.moveaxis(x, -1, -3) / 255.0, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normalize_per_channel_and_one_value(dtype):
    x = seeded_rng(1).uniform(0, 1, (2, 3, 4, 5)).astype(dtype)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    out = mx.nd.image.normalize(mx.nd.array(x, dtype=dtype), mean=mean, std=std).asnumpy()
    expected = (x - np.array(mean).reshape(3, 1, 1)) / np.array(std).reshape(3, 1, 1)
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    one = mx.nd.image.normalize(mx.nd.array(x[0], dtype=dtype), mean=0.5, std=0.25).asnumpy()
    np.testing.assert_allclose(one, (x[0] - 0.5) / 0.25, rtol=1e-5)


@pytest.mark.parametrize("interp", [0, 1, 2, 3, 4])
def test_resize_shapes_and_constant_images(interp):
    x = mx.nd.full((2, 6, 8, 3), 50.0)
    out = mx.nd.image.resize(x, (5, 3), interp=interp)
    assert out.shape == (2, 3, 5, 3)
    np.testing.assert_allclose(out.asnumpy(), 50.0, rtol=1e-6)
    assert mx.nd.image.resize(mx.nd.zeros((10, 20, 3)), 5, keep_ratio=True).shape == (5, 10, 3)
    assert mx.nd.image.resize(mx.nd.zeros((20, 10, 3)), 5, keep_ratio=True).shape == (10, 5, 3)
    assert mx.nd.image.resize(mx.nd.zeros((10, 20, 3)), 5).shape == (5, 5, 3)


def test_resize_area_averages_blocks():
    x = seeded_rng(2).uniform(0, 1, (4, 6, 2)).astype(np.float32)
    out = mx.nd.image.resize(mx.nd.array(x), (3, 2), interp=3).asnumpy()
    np.testing.assert_allclose(out, x.reshape(2, 2, 3, 2, 2).mean(axis=(1, 3)), rtol=1e-5)


def test_crop_and_flips_select_pixels():
    x = rgb((2, 6, 7, 3))
    np.testing.assert_array_equal(mx.nd.image.crop(mx.nd.array(x), 1, 2, 3, 4).asnumpy(), x[:, 2:6, 1:4])
    np.testing.assert_array_equal(mx.nd.image.flip_left_right(mx.nd.array(x)).asnumpy(), x[:, :, ::-1])
    np.testing.assert_array_equal(mx.nd.image.flip_top_bottom(mx.nd.array(x[0])).asnumpy(), x[0, ::-1])


@pytest.mark.parametrize("op", ["random_flip_left_right", "random_flip_top_bottom"])
def test_random_flips_give_both_outcomes_and_repeat_with_the_seed(op):
    x = rgb((3, 4, 3))
    axis = 1 if op.endswith("left_right") else 0
    mx.random.seed(11)
    outcomes = [getattr(mx.nd.image, op)(mx.nd.array(x)).asnumpy() for _ in range(20)]
    flipped = [bool(np.array_equal(o, np.flip(x, axis))) for o in outcomes]
    assert all(f or np.array_equal(o, x) for f, o in zip(flipped, outcomes, strict=True))
    assert 0 < sum(flipped) < 20
    mx.random.seed(11)
    again = [
        bool(np.array_equal(getattr(mx.nd.image, op)(mx.nd.array(x)).asnumpy(), np.flip(x, axis))) for _ in range(20)
    ]
    assert again == flipped


def lighting_offset(alpha):
    return np.array(IMAGENET_EIGVEC) @ (np.array(alpha) * np.array(IMAGENET_EIGVAL))


def test_adjust_lighting_adds_the_pca_offset_and_saturates_uint8():
    x = rgb((4, 5, 3))
    out = mx.nd.image.adjust_lighting(mx.nd.array(x), alpha=(0.1, -0.2, 0.3)).asnumpy()
    np.testing.assert_allclose(out, x + lighting_offset((0.1, -0.2, 0.3)), rtol=1e-5)
    u8 = rgb((4, 5, 3), "uint8")
    out_u8 = mx.nd.image.adjust_lighting(mx.nd.array(u8, dtype="uint8"), alpha=(3, 0, 0)).asnumpy()
    expected = np.trunc(np.clip(u8 + lighting_offset((3, 0, 0)), 0, 255))  # MXNet's cast truncates
    np.testing.assert_array_equal(out_u8, expected)


def luma(x):
    return x @ np.array(LUMA)


@pytest.mark.parametrize("shape", [(4, 5, 3), (2, 4, 5, 3)])
def test_fixed_strength_colour_operators(shape):
    x = rgb(shape)
    nd = mx.nd.array(x)
    np.testing.assert_allclose(mx.nd.image.random_brightness(nd, 0.6, 0.6).asnumpy(), x * 0.6, rtol=1e-5)
    mean = luma(x).mean(axis=(-2, -1), keepdims=True)[..., None]
    np.testing.assert_allclose(mx.nd.image.random_contrast(nd, 0.6, 0.6).asnumpy(), 0.6 * x + 0.4 * mean, rtol=1e-4)
    gray = luma(x)[..., None]
    np.testing.assert_allclose(mx.nd.image.random_saturation(nd, 0.6, 0.6).asnumpy(), 0.6 * x + 0.4 * gray,
                               rtol=1e-4)  # fmt: skip


def test_hue_turns_like_colorsys():
    x = rgb((3, 4, 3)) / 255.0
    out = mx.nd.image.random_hue(mx.nd.array(x), 0.2, 0.2).asnumpy()
    expected = np.empty_like(x)
    for index in np.ndindex(x.shape[:2]):
        h, lightness, s = colorsys.rgb_to_hls(*x[index])
        expected[index] = colorsys.hls_to_rgb((h + 0.2) % 1.0, lightness, s)
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_random_strengths_stay_in_range_per_image():
    x = np.full((8, 2, 2, 3), 100.0, dtype=np.float32)
    mx.random.seed(3)
    out = mx.nd.image.random_brightness(mx.nd.array(x), 0.5, 1.5).asnumpy()
    factors = out[:, 0, 0, 0] / 100.0
    assert np.all((factors >= 0.5) & (factors <= 1.5)) and len(np.unique(factors)) == 8
    np.testing.assert_allclose(out, factors[:, None, None, None] * x, rtol=1e-5)


def test_color_jitter_and_random_lighting_run_and_repeat_with_the_seed():
    x = mx.nd.array(rgb((2, 4, 5, 3)))
    mx.random.seed(5)
    first = mx.nd.image.random_color_jitter(x, 0.2, 0.2, 0.2, 0.1).asnumpy()
    lit = mx.nd.image.random_lighting(x, alpha_std=0.1).asnumpy()
    mx.random.seed(5)
    np.testing.assert_array_equal(mx.nd.image.random_color_jitter(x, 0.2, 0.2, 0.2, 0.1).asnumpy(), first)
    np.testing.assert_array_equal(mx.nd.image.random_lighting(x, alpha_std=0.1).asnumpy(), lit)
    offsets = lit - x.asnumpy()  # one offset per image, the same at every pixel
    np.testing.assert_allclose(offsets, np.broadcast_to(offsets[:, :1, :1], offsets.shape), atol=1e-3)
    unchanged = mx.nd.image.random_color_jitter(x, 0.0, 0.0, 0.0, 0.0).asnumpy()
    np.testing.assert_array_equal(unchanged, x.asnumpy())


# ---------------------------------------------------------------- gradients
def test_gradients_against_finite_differences():
    x = seeded_rng(3).uniform(0, 1, (4, 3, 3))
    check_imperative_gradient(mx.nd.image.to_tensor, [x])
    check_imperative_gradient(lambda d: mx.nd.image.normalize(d, mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 4.0)),
                           [np.moveaxis(x, -1, 0)])  # fmt: skip
    check_imperative_gradient(lambda d: mx.nd.image.crop(d, x=1, y=0, width=2, height=3), [x])
    check_imperative_gradient(mx.nd.image.flip_left_right, [x])
    check_imperative_gradient(mx.nd.image.flip_top_bottom, [x[None]])


# ---------------------------------------------------------------- req
def test_req_write_add_null():
    x = rgb((4, 5, 3))
    check_req("_image_to_tensor", [x])
    check_req("_image_normalize", [np.moveaxis(x, -1, 0)], mean=(1.0, 2.0, 3.0), std=(2.0, 2.0, 2.0))
    check_req("_image_resize", [x], size=(3, 2), interp=2)
    check_req("_image_crop", [x], x=1, y=1, width=2, height=3)
    check_req("_image_flip_left_right", [x])
    check_req("_image_flip_top_bottom", [x])
    check_req("_image_adjust_lighting", [x], alpha=(0.1, 0.2, 0.3))
    for op in ("_image_random_brightness", "_image_random_contrast", "_image_random_saturation", "_image_random_hue"):
        check_req(op, [x], min_factor=0.5, max_factor=0.5)
    # the remaining random operators draw on every call: their req test fixes the draw
    check_req("_image_random_color_jitter", [x], brightness=0.0, contrast=0.0, saturation=0.0, hue=0.0)
    check_req("_image_random_lighting", [x], alpha_std=0.0)
    check_req("_image_random_flip_left_right", [np.full((2, 2, 3), 7.0)])
    check_req("_image_random_flip_top_bottom", [np.full((2, 2, 3), 7.0)])


# ---------------------------------------------------------------- inference
def test_shape_inference_both_ways():
    assert infer_shapes("_image_to_tensor", {}, [(4, 5, 3)])[1] == [(3, 4, 5)]
    assert infer_shapes("_image_to_tensor", {}, [None], [(2, 3, 4, 5)])[0] == [(2, 4, 5, 3)]
    assert infer_shapes("_image_normalize", {"mean": 0.5, "std": 2.0}, [None], [(3, 4, 5)])[0] == [(3, 4, 5)]
    assert infer_shapes("_image_resize", {"size": (7, 6)}, [(2, 4, 5, 3)])[1] == [(2, 6, 7, 3)]
    ins, _, done = infer_shapes("_image_resize", {"size": (7, 6)}, [None], [(2, 6, 7, 3)])
    assert ins == [(2, 0, 0, 3)] and not done
    assert infer_shapes("_image_crop", {"x": 1, "y": 2, "width": 3, "height": 4}, [(9, 9, 3)])[1] == [(4, 3, 3)]
    assert infer_shapes("_image_crop", {"x": 1, "y": 2, "width": 3, "height": 4}, [None], [(4, 3, 1)])[0] == [(0, 0, 1)]
    assert infer_shapes("_image_flip_left_right", {}, [None], [(4, 5, 3)])[0] == [(4, 5, 3)]
    assert infer_shapes("_image_random_hue", {"min_factor": 0, "max_factor": 0}, [None], [(4, 5, 3)])[0] == [(4, 5, 3)]


def test_type_inference_both_ways():
    assert infer_types("_image_to_tensor", {}, ["uint8"])[1] == ["float32"]
    assert infer_types("_image_normalize", {}, [None], ["float64"])[0] == ["float64"]
    assert infer_types("_image_resize", {"size": (2, 2)}, ["uint8"])[1] == ["uint8"]
    assert infer_types("_image_random_brightness", {"min_factor": 1, "max_factor": 1}, [None], ["uint8"])[0] == [
        "uint8"
    ]


@pytest.mark.parametrize(
    ("op", "params", "shape", "message"),
    [
        ("_image_to_tensor", {}, (4, 5), "expected an image"),
        ("_image_normalize", {"mean": (0.1, 0.2)}, (3, 4, 5), "mean must have 1 or 3 values"),
        ("_image_normalize", {}, (3, 4, 5), "mean must have 1 or 3 values"),  # MXNet's 4-value default
        ("_image_crop", {"x": 4, "y": 0, "width": 3, "height": 2}, (5, 6, 3), "x \\+ width = 7"),
        ("_image_crop", {"x": 0, "y": 4, "width": 3, "height": 2}, (5, 6, 3), "y \\+ height = 6"),
        ("_image_random_contrast", {"min_factor": 1, "max_factor": 1}, (4, 5, 4), "3 \\(RGB\\) channels"),
        ("_image_resize", {"size": (1, 2, 3)}, (4, 5, 3), "size must be"),
    ],
)
def test_inference_errors_name_the_problem(op, params, shape, message):
    with pytest.raises(InferenceError, match=message):
        infer_shapes(op, params, [shape])


@pytest.mark.parametrize(
    ("op", "params", "name"),
    [
        ("_image_resize", {"size": (2, 2), "interp": 7}, "interp"),
        ("_image_crop", {"x": -1, "y": 0, "width": 1, "height": 1}, "x"),
        ("_image_crop", {"x": 0, "y": 0, "width": 0, "height": 1}, "width"),
        ("_image_crop", {"x": 0, "y": 0, "width": 1}, "height"),
        ("_image_adjust_lighting", {}, "alpha"),
        ("_image_normalize", {"mean": "abc"}, "mean"),
        ("_image_random_brightness", {"min_factor": -1.0, "max_factor": 1.0}, "min_factor"),
        ("_image_random_lighting", {"alpha_std": -0.1}, "alpha_std"),
        ("_image_random_color_jitter", {"brightness": 0.1, "contrast": 0.1, "saturation": 0.1}, "hue"),
    ],
)
def test_parameter_errors_name_the_parameter(op, params, name):
    with pytest.raises(OperatorParamError, match=name):
        mx.operator.get(op).parse_attrs(params)


def test_compute_errors():
    with pytest.raises(Exception, match="alpha must have 3 values"):
        mx.nd.image.adjust_lighting(mx.nd.zeros((2, 2, 3)), alpha=(0.1, 0.2)).asnumpy()
    with pytest.raises(Exception, match="min_factor=2.0 is larger"):
        mx.nd.image.random_brightness(mx.nd.zeros((2, 2, 3)), 2.0, 1.0).asnumpy()
    with pytest.raises(Exception, match="zero"):
        mx.nd.image.normalize(mx.nd.zeros((3, 2, 2)), mean=0.0, std=0.0).asnumpy()


def test_symbols_and_namespaces():
    assert mx.nd.image.to_tensor is mx.nd.op._image_to_tensor or callable(mx.nd.image.to_tensor)
    assert "random_color_jitter" in dir(mx.sym.image)
    net = mx.sym.image.normalize(mx.sym.image.to_tensor(mx.sym.var("data")), mean=0.5, std=0.5)
    _, out_shapes, _ = net.infer_shape(data=(6, 7, 3))
    assert out_shapes == [(3, 6, 7)]
    restored = mx.sym.load_json(net.tojson())
    assert restored.infer_shape(data=(6, 7, 3))[1] == [(3, 6, 7)]


# ---------------------------------------------------------------- MXNet 1.9.1
def reference_cases():
    with np.load(REFERENCE) as data:
        arrays = dict(data)
    names = sorted({key.split("/")[0] for key in arrays})
    return [(name, {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(name + "/")}) for name in names]


# resize: OpenCV rounds from fixed point, MXLab from the exact value: one level for integer images
RESIZE_U8_LEVELS = 1


@pytest.mark.parametrize(("case", "arrays"), reference_cases(), ids=[c for c, _ in reference_cases()])
def test_matches_mxnet(case, arrays):
    op, params = str(arrays["op"]), json.loads(str(arrays["params"]))
    data = arrays["in0"]
    x = mx.nd.array(data, dtype=data.dtype)
    if "head0" in arrays:
        x.attach_grad()
        with mx.autograd.record():
            out = getattr(mx.nd.image, op)(x, **params)
        out.backward(mx.nd.array(arrays["head0"]))
        np.testing.assert_allclose(x.grad.asnumpy(), arrays["grad0"], rtol=1e-5, atol=1e-6)
    else:
        out = getattr(mx.nd.image, op)(x, **params)
    ours, theirs = out.asnumpy(), arrays["out0"]
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    if op == "resize" and theirs.dtype == np.uint8:
        assert np.abs(ours.astype(int) - theirs.astype(int)).max() <= RESIZE_U8_LEVELS
    elif theirs.dtype == np.uint8:
        np.testing.assert_array_equal(ours, theirs)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-3)


@pytest.mark.skipif(not os.environ.get("MXNET_PYTHON"), reason="set MXNET_PYTHON to an interpreter with MXNet 1.9.1")
def test_the_script_reproduces_the_committed_data(tmp_path):
    target = tmp_path / "ops_image.npz"
    subprocess.run([os.environ["MXNET_PYTHON"], str(SCRIPT), str(target)], check=True, timeout=600)
    with np.load(target) as fresh, np.load(REFERENCE) as committed:
        assert sorted(fresh.files) == sorted(committed.files)
        for key in committed.files:
            np.testing.assert_array_equal(fresh[key], committed[key], err_msg=key)

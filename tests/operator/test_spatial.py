"""Spatial operators: layout moves, resampling and im2col against NumPy references, with
gradients, req, inference in both directions and parameter errors."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import infer_shapes, infer_types, seeded_rng, to_nd

import framework as mx
from framework.operator import InferenceError, OperatorParamError
from framework.test_utils import assert_almost_equal, check_imperative_gradient, check_req


# ------------------------------------------------------------------ references (loops are fine here)
def depth_to_space_reference(x: np.ndarray, b: int) -> np.ndarray:
    n, c, h, w = x.shape
    cc = c // (b * b)
    out = np.empty((n, cc, h * b, w * b), x.dtype)
    for i in range(b):
        for j in range(b):
            out[:, :, i::b, j::b] = x[:, (i * b + j) * cc : (i * b + j + 1) * cc]
    return out


def resize_reference(x: np.ndarray, oh: int, ow: int, align_corners: bool) -> np.ndarray:
    """Bilinear interpolation pixel by pixel."""
    h, w = x.shape[2:]

    def source(o: int, size_in: int, size_out: int) -> tuple[int, int, float]:
        if align_corners:
            s = o * (size_in - 1) / (size_out - 1) if size_out > 1 else 0.0
        else:
            s = max((o + 0.5) * size_in / size_out - 0.5, 0.0)
        lo = min(int(np.floor(s)), size_in - 1)
        return lo, min(lo + 1, size_in - 1), s - lo

    out = np.zeros(x.shape[:2] + (oh, ow))
    for y in range(oh):
        y0, y1, fy = source(y, h, oh)
        for z in range(ow):
            x0, x1, fx = source(z, w, ow)
            top = (1 - fx) * x[:, :, y0, x0] + fx * x[:, :, y0, x1]
            bottom = (1 - fx) * x[:, :, y1, x0] + fx * x[:, :, y1, x1]
            out[:, :, y, z] = (1 - fy) * top + fy * bottom
    return out


def adaptive_reference(x: np.ndarray, oh: int, ow: int) -> np.ndarray:
    h, w = x.shape[2:]
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, he = (i * h) // oh, -(-(i + 1) * h // oh)
            ws, we = (j * w) // ow, -(-(j + 1) * w // ow)
            out[:, :, i, j] = x[:, :, hs:he, ws:we].mean(axis=(2, 3))
    return out


def im2col_reference(x, kernel, stride, dilate, pad) -> np.ndarray:
    """2-D im2col by explicit window positions."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dilate[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dilate[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    cols = np.zeros((n, c, kernel[0], kernel[1], oh, ow))
    for ki in range(kernel[0]):
        for kj in range(kernel[1]):
            for i in range(oh):
                for j in range(ow):
                    cols[:, :, ki, kj, i, j] = xp[:, :, i * stride[0] + ki * dilate[0], j * stride[1] + kj * dilate[1]]
    return cols.reshape(n, c * kernel[0] * kernel[1], oh * ow)


# ------------------------------------------------------------------ depth_to_space / space_to_depth
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
def test_depth_to_space_and_back(dtype):
    x = seeded_rng(1).integers(-50, 50, (2, 12, 3, 4)).astype(dtype)
    y = mx.nd.depth_to_space(to_nd(x, dtype), block_size=2)
    assert y.dtype == np.dtype(dtype)
    assert_almost_equal(y.asnumpy(), depth_to_space_reference(x, 2))
    assert_almost_equal(mx.nd.space_to_depth(y, block_size=2).asnumpy(), x)


def test_depth_space_gradients_and_req():
    x = seeded_rng(2).normal(size=(1, 8, 2, 3))
    check_imperative_gradient(lambda a: mx.nd.depth_to_space(a, block_size=2), [x])
    check_imperative_gradient(lambda a: mx.nd.space_to_depth(a, block_size=2), [x.reshape(1, 2, 4, 6)])
    check_req("depth_to_space", [x], block_size=2)
    check_req("space_to_depth", [x.reshape(1, 2, 4, 6)], block_size=2)


def test_depth_space_inference_both_ways_and_errors():
    assert infer_shapes("depth_to_space", {"block_size": 3}, [(2, 18, 4, 5)])[1] == [(2, 2, 12, 15)]
    assert infer_shapes("depth_to_space", {"block_size": 3}, [None], [(2, 2, 12, 15)])[0] == [(2, 18, 4, 5)]
    assert infer_shapes("space_to_depth", {"block_size": 2}, [(1, 3, 4, 6)])[1] == [(1, 12, 2, 3)]
    assert infer_shapes("space_to_depth", {"block_size": 2}, [None], [(1, 12, 2, 3)])[0] == [(1, 3, 4, 6)]
    assert infer_types("depth_to_space", {"block_size": 2}, [None], ["float16"])[0] == ["float16"]
    with pytest.raises(InferenceError, match="multiple of block_size"):
        mx.nd.depth_to_space(mx.nd.zeros((1, 6, 2, 2)), block_size=2)
    with pytest.raises(InferenceError, match="divisible by block_size"):
        mx.nd.space_to_depth(mx.nd.zeros((1, 1, 3, 4)), block_size=2)
    with pytest.raises(InferenceError, match="4-d"):
        mx.nd.depth_to_space(mx.nd.zeros((4, 2, 2)), block_size=2)
    with pytest.raises(OperatorParamError, match="block_size"):
        mx.nd.depth_to_space(mx.nd.zeros((1, 4, 2, 2)), block_size=0)


# ------------------------------------------------------------------ UpSampling
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_upsampling_nearest_concat_and_sum(dtype):
    rng = seeded_rng(3)
    a, b = rng.normal(size=(2, 3, 2, 3)).astype(dtype), rng.normal(size=(2, 3, 4, 6)).astype(dtype)
    up = mx.nd.UpSampling(to_nd(a, dtype), scale=2, sample_type="nearest", num_args=1)
    assert_almost_equal(up.asnumpy(), a.repeat(2, 2).repeat(2, 3))
    concat = mx.nd.UpSampling(to_nd(a, dtype), to_nd(b, dtype), scale=4, sample_type="nearest")
    expected = np.concatenate([a.repeat(4, 2).repeat(4, 3), b.repeat(2, 2).repeat(2, 3)], axis=1)
    assert_almost_equal(concat.asnumpy(), expected)
    total = mx.nd.UpSampling(to_nd(a, dtype), to_nd(b, dtype), scale=4, sample_type="nearest", multi_input_mode="sum")
    assert_almost_equal(total.asnumpy(), a.repeat(4, 2).repeat(4, 3) + b.repeat(2, 2).repeat(2, 3), rtol=1e-3)


def test_upsampling_bilinear_is_a_depthwise_deconvolution():
    rng = seeded_rng(4)
    x, weight = rng.normal(size=(1, 2, 3, 3)), rng.normal(size=(2, 1, 4, 4))
    got = mx.nd.UpSampling(to_nd(x), to_nd(weight), scale=2, sample_type="bilinear", num_filter=2)
    expected = mx.nd.Deconvolution(
        to_nd(x), to_nd(weight), kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_filter=2, num_group=2, no_bias=True
    )
    assert got.shape == (1, 2, 6, 6)
    assert_almost_equal(got.asnumpy(), expected.asnumpy())


def test_upsampling_gradients_and_req():
    rng = seeded_rng(5)
    a, b = rng.normal(size=(1, 2, 2, 2)), rng.normal(size=(1, 2, 4, 4))
    check_imperative_gradient(lambda x: mx.nd.UpSampling(x, scale=2, sample_type="nearest", num_args=1), [a])
    check_imperative_gradient(lambda x, y: mx.nd.UpSampling(x, y, scale=2, sample_type="nearest"), [a, b])
    check_imperative_gradient(
        lambda x, y: mx.nd.UpSampling(x, y, scale=4, sample_type="nearest", multi_input_mode="sum"), [a, b]
    )
    weight = rng.normal(size=(2, 1, 5, 5))
    check_imperative_gradient(
        lambda x, w: mx.nd.UpSampling(x, w, scale=3, sample_type="bilinear", num_filter=2, num_args=1), [a, weight]
    )
    check_req("UpSampling", [a, b], scale=4, sample_type="nearest", num_args=2, multi_input_mode="sum")
    check_req("UpSampling", [a, b], scale=4, sample_type="nearest", num_args=2)
    check_req("UpSampling", [a, weight], scale=3, sample_type="bilinear", num_args=1, num_filter=2)


def test_upsampling_inference_and_errors():
    nearest = {"scale": 2, "sample_type": "nearest", "num_args": 2}
    assert infer_shapes("UpSampling", nearest, [(1, 3, 2, 2), (1, 4, 4, 4)])[1] == [(1, 7, 4, 4)]
    bilinear = {"scale": 3, "sample_type": "bilinear", "num_args": 1, "num_filter": 3}
    ins, outs, _ = infer_shapes("UpSampling", bilinear, [(2, 3, 4, 5), None])
    assert ins[1] == (3, 1, 5, 5) and outs == [(2, 3, 12, 15)]
    assert infer_types("UpSampling", nearest, [None, None], ["float64"])[0] == ["float64", "float64"]
    arguments = mx.sym.UpSampling(mx.sym.var("x"), scale=2, sample_type="bilinear", num_args=1).list_arguments()
    assert len(arguments) == 2 and arguments[0] == "x" and arguments[1].endswith("_weight")
    nearest_args = mx.sym.UpSampling(mx.sym.var("a"), mx.sym.var("b"), scale=2, sample_type="nearest")
    assert nearest_args.list_arguments() == ["a", "b"]
    with pytest.raises(InferenceError, match="one integer factor"):
        mx.nd.UpSampling(mx.nd.zeros((1, 1, 2, 2)), mx.nd.zeros((1, 1, 3, 3)), scale=2, sample_type="nearest")
    with pytest.raises(InferenceError, match="equal channels"):
        mx.nd.UpSampling(
            mx.nd.zeros((1, 1, 2, 2)),
            mx.nd.zeros((1, 2, 2, 2)),
            scale=2,
            sample_type="nearest",
            multi_input_mode="sum",
        )
    with pytest.raises(OperatorParamError, match="sample_type"):
        mx.nd.UpSampling(mx.nd.zeros((1, 1, 2, 2)), scale=2, sample_type="cubic", num_args=1)
    with pytest.raises(OperatorParamError, match="scale"):
        mx.nd.UpSampling(mx.nd.zeros((1, 1, 2, 2)), scale=0, sample_type="nearest", num_args=1)


# ------------------------------------------------------------------ BilinearResize2D
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("size", [(7, 3), (2, 9), (1, 1)])
def test_bilinear_resize_matches_pixelwise_reference(align_corners, size):
    x = seeded_rng(6).normal(size=(2, 3, 4, 5))
    got = mx.nd.contrib.BilinearResize2D(to_nd(x), height=size[0], width=size[1], align_corners=align_corners)
    assert_almost_equal(got.asnumpy(), resize_reference(x, *size, align_corners))


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"scale_height": 1.5, "scale_width": 0.5}, (7, 3)),
        ({"mode": "odd_scale", "scale_height": 2.0, "scale_width": 2.0}, (9, 12)),
        ({"mode": "to_even_down"}, (4, 6)),
        ({"mode": "to_even_up"}, (6, 6)),
        ({"mode": "to_odd_down"}, (5, 5)),
        ({"mode": "to_odd_up"}, (5, 7)),
    ],
)
def test_bilinear_resize_modes_choose_the_size(params, expected):
    assert infer_shapes("_contrib_BilinearResize2D", params, [(1, 2, 5, 6)])[1] == [(1, 2, *expected)]


def test_bilinear_resize_like_gradients_and_req():
    rng = seeded_rng(7)
    x, like = rng.normal(size=(1, 2, 3, 4)), rng.normal(size=(1, 2, 5, 2))
    got = mx.nd.contrib.BilinearResize2D(data=to_nd(x), like=to_nd(like), mode="like")
    assert got.shape == (1, 2, 5, 2)
    check_imperative_gradient(lambda a: mx.nd.contrib.BilinearResize2D(a, height=5, width=6), [x])
    check_imperative_gradient(lambda a: mx.nd.contrib.BilinearResize2D(a, height=2, width=3, align_corners=False), [x])
    check_req("_contrib_BilinearResize2D", [x], height=4, width=7)
    check_req("_contrib_BilinearResize2D", [x, like], mode="like")
    assert infer_types("_contrib_BilinearResize2D", {"mode": "like"}, ["float32", None])[0] == ["float32"] * 2


def test_bilinear_resize_errors():
    with pytest.raises(OperatorParamError, match="needs scale_height"):
        mx.nd.contrib.BilinearResize2D(mx.nd.zeros((1, 1, 3, 3)), mode="odd_scale", scale_width=2.0)
    with pytest.raises(OperatorParamError, match="mode"):
        mx.nd.contrib.BilinearResize2D(mx.nd.zeros((1, 1, 3, 3)), mode="bicubic")
    with pytest.raises(InferenceError, match="at least 1"):
        mx.nd.contrib.BilinearResize2D(mx.nd.zeros((1, 1, 3, 3)), scale_height=0.1, scale_width=1.0)
    with pytest.raises(InferenceError, match="4-d"):
        mx.nd.contrib.BilinearResize2D(mx.nd.zeros((3, 3)), height=2, width=2)


# ------------------------------------------------------------------ AdaptiveAvgPooling2D
@pytest.mark.parametrize("output_size, expected", [((), (1, 1)), ((3,), (3, 3)), ((2, 4), (2, 4)), ((9, 6), (9, 6))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adaptive_avg_pooling_matches_bins(output_size, expected, dtype):
    x = seeded_rng(8).normal(size=(2, 3, 7, 5)).astype(dtype)
    got = mx.nd.contrib.AdaptiveAvgPooling2D(to_nd(x, dtype), output_size=output_size)
    assert got.shape == (2, 3, *expected) and got.dtype == np.dtype(dtype)
    assert_almost_equal(got.asnumpy(), adaptive_reference(x.astype(np.float64), *expected), rtol=1e-5, atol=1e-6)


def test_adaptive_avg_pooling_gradient_req_inference_errors():
    x = seeded_rng(9).normal(size=(1, 2, 5, 4))
    check_imperative_gradient(lambda a: mx.nd.contrib.AdaptiveAvgPooling2D(a, output_size=(3, 3)), [x])
    check_req("_contrib_AdaptiveAvgPooling2D", [x], output_size=(2, 3))
    ins, _outs, done = infer_shapes("_contrib_AdaptiveAvgPooling2D", {"output_size": 2}, [None], [(4, 3, 2, 2)])
    assert ins == [(4, 3, 0, 0)] and not done
    with pytest.raises(OperatorParamError, match="output_size"):
        mx.nd.contrib.AdaptiveAvgPooling2D(mx.nd.zeros((1, 1, 4, 4)), output_size=(1, 2, 3))


# ------------------------------------------------------------------ im2col / col2im
@pytest.mark.parametrize(
    "kernel, stride, dilate, pad",
    [((2, 2), (1, 1), (1, 1), (0, 0)), ((3, 2), (2, 1), (1, 2), (1, 1)), ((1, 3), (1, 2), (1, 1), (0, 2))],
)
def test_im2col_matches_window_reference_and_col2im_is_its_adjoint(kernel, stride, dilate, pad):
    rng = seeded_rng(10)
    x = rng.normal(size=(2, 3, 5, 6))
    params = {"kernel": kernel, "stride": stride, "dilate": dilate, "pad": pad}
    cols = mx.nd.im2col(to_nd(x), **params).asnumpy()
    assert_almost_equal(cols, im2col_reference(x, kernel, stride, dilate, pad))
    c = rng.normal(size=cols.shape)
    back = mx.nd.col2im(to_nd(c), output_size=(5, 6), **params).asnumpy()
    assert back.shape == x.shape
    assert np.isclose(np.sum(cols * c), np.sum(x * back))  # <im2col x, c> = <x, col2im c>


def test_im2col_1d_and_3d_shapes():
    assert mx.nd.im2col(mx.nd.zeros((2, 3, 9)), kernel=(3,), stride=(2,)).shape == (2, 9, 4)
    assert mx.nd.im2col(mx.nd.zeros((1, 2, 4, 4, 4)), kernel=(2, 2, 2), pad=(1, 1, 1)).shape == (1, 16, 125)


def test_im2col_col2im_gradients_and_req():
    rng = seeded_rng(11)
    x = rng.normal(size=(1, 2, 4, 5))
    params = {"kernel": (2, 3), "stride": (2, 1), "pad": (1, 1)}
    check_imperative_gradient(lambda a: mx.nd.im2col(a, **params), [x])
    cols = rng.normal(size=(1, 12, 15))
    check_imperative_gradient(lambda a: mx.nd.col2im(a, output_size=(4, 5), **params), [cols])
    check_req("im2col", [x], **params)
    check_req("col2im", [cols], output_size=(4, 5), **params)


def test_im2col_col2im_inference_and_errors():
    params = {"kernel": (2, 3), "stride": (2, 1), "pad": (1, 1)}
    assert infer_shapes("im2col", params, [(1, 2, 4, 5)])[1] == [(1, 12, 15)]
    assert infer_shapes("col2im", {**params, "output_size": (4, 5)}, [None], [(3, 2, 4, 5)])[0] == [(3, 12, 15)]
    assert infer_types("col2im", {**params, "output_size": (4, 5)}, [None], ["float64"])[0] == ["float64"]
    with pytest.raises(OperatorParamError, match="stride"):
        mx.nd.im2col(mx.nd.zeros((1, 1, 4, 4)), kernel=(2, 2), stride=(1,))
    with pytest.raises(OperatorParamError, match="output_size"):
        mx.nd.col2im(mx.nd.zeros((1, 4, 9)), kernel=(2, 2), output_size=(4,))
    with pytest.raises(InferenceError, match="does not fit"):
        mx.nd.im2col(mx.nd.zeros((1, 1, 2, 2)), kernel=(3, 3))
    with pytest.raises(InferenceError, match="windows"):
        mx.nd.col2im(mx.nd.zeros((1, 4, 5)), kernel=(2, 2), output_size=(3, 3))
    with pytest.raises(InferenceError, match="multiple of prod"):
        mx.nd.col2im(mx.nd.zeros((1, 5, 4)), kernel=(2, 2), output_size=(3, 3))


# ------------------------------------------------------------------ grids and samplers
def sample_reference(data: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Bilinear reading pixel by pixel, zero outside the image."""
    n, c, h, w = data.shape
    out = np.zeros((n, c, *grid.shape[2:]))
    for b in range(n):
        for i in range(grid.shape[2]):
            for j in range(grid.shape[3]):
                x = (grid[b, 0, i, j] + 1) * (w - 1) / 2
                y = (grid[b, 1, i, j] + 1) * (h - 1) / 2
                x0, y0 = int(np.floor(x)), int(np.floor(y))
                for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
                    for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                        if 0 <= yy < h and 0 <= xx < w:
                            out[b, :, i, j] += wy * wx * data[b, :, yy, xx]
    return out


def test_grid_generator_affine_identity_and_warp():
    identity = np.array([[1, 0, 0, 0, 1, 0]], np.float64)
    grid = mx.nd.GridGenerator(to_nd(identity), transform_type="affine", target_shape=(3, 4)).asnumpy()
    assert_almost_equal(grid[0, 0], np.tile(np.linspace(-1, 1, 4), (3, 1)))
    assert_almost_equal(grid[0, 1], np.tile(np.linspace(-1, 1, 3)[:, None], (1, 4)))
    flow = seeded_rng(12).normal(size=(2, 2, 3, 5))
    warped = mx.nd.GridGenerator(to_nd(flow), transform_type="warp").asnumpy()
    assert_almost_equal(warped[:, 0], (flow[:, 0] + np.arange(5)) / 2.0 - 1)
    assert_almost_equal(warped[:, 1], (flow[:, 1] + np.arange(3)[:, None]) / 1.0 - 1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bilinear_sampler_matches_reference_and_identity_grid_copies(dtype):
    rng = seeded_rng(13)
    data = rng.normal(size=(2, 3, 4, 5)).astype(dtype)
    grid = rng.uniform(-1.2, 1.2, size=(2, 2, 3, 6)).astype(dtype)
    got = mx.nd.BilinearSampler(to_nd(data, dtype), to_nd(grid, dtype))
    assert got.dtype == np.dtype(dtype)
    assert_almost_equal(got.asnumpy(), sample_reference(data.astype(np.float64), grid.astype(np.float64)), rtol=1e-4)
    theta = to_nd(np.array([[1, 0, 0, 0, 1, 0]] * 2, dtype), dtype)
    same = mx.nd.SpatialTransformer(
        to_nd(data, dtype), theta, target_shape=(4, 5), transform_type="affine", sampler_type="bilinear"
    )
    assert_almost_equal(same.asnumpy(), data, rtol=1e-4, atol=1e-5)


def test_sampler_gradients_and_req():
    rng = seeded_rng(14)
    data = rng.normal(size=(1, 2, 4, 5))
    grid = rng.uniform(-1.1, 1.1, size=(1, 2, 3, 3))
    theta = np.array([[0.9, 0.1, 0.05, -0.2, 0.8, 0.1]])
    check_imperative_gradient(lambda a: mx.nd.GridGenerator(a, transform_type="affine", target_shape=(3, 4)), [theta])
    check_imperative_gradient(lambda a: mx.nd.GridGenerator(a, transform_type="warp"), [grid])
    check_imperative_gradient(mx.nd.BilinearSampler, [data, grid], numeric_eps=1e-5)
    check_imperative_gradient(
        lambda d, t: mx.nd.SpatialTransformer(
            d, t, target_shape=(3, 3), transform_type="affine", sampler_type="bilinear"
        ),
        [data, theta],
        numeric_eps=1e-5,
    )
    check_req("GridGenerator", [theta], transform_type="affine", target_shape=(3, 4))
    check_req("GridGenerator", [grid], transform_type="warp")
    check_req("BilinearSampler", [data, grid])
    check_req(
        "SpatialTransformer", [data, theta], target_shape=(2, 3), transform_type="affine", sampler_type="bilinear"
    )


def test_sampler_inference_hidden_outputs_and_errors():
    ins, outs, done = infer_shapes("BilinearSampler", {}, [(2, 3, 9, 9), None], [(0, 0, 4, 5), None])
    assert done and ins[1] == (2, 2, 4, 5) and outs == [(2, 3, 4, 5), (2, 4, 5, 2)]
    affine = {"transform_type": "affine", "target_shape": (4, 5)}
    ins, outs, _ = infer_shapes("GridGenerator", affine, [None], [(7, 2, 4, 5), None])
    assert ins == [(7, 6)] and outs[1] == (3, 20)
    st = {"target_shape": (2, 3), "transform_type": "affine", "sampler_type": "bilinear"}
    _, outs, _ = infer_shapes("SpatialTransformer", st, [(4, 3, 8, 8), None])
    assert outs == [(4, 3, 2, 3), (3, 6), (4, 2, 6)]
    sampler = mx.sym.BilinearSampler(mx.sym.var("d"), mx.sym.var("g"), name="bs")
    assert sampler.list_outputs() == ["bs_output"]  # the hidden tmp output is not listed
    assert infer_types("BilinearSampler", {}, ["float64", None])[0] == ["float64", "float64"]
    with pytest.raises(InferenceError, match="floating-point"):
        mx.nd.BilinearSampler(mx.nd.zeros((1, 1, 2, 2), dtype="int32"), mx.nd.zeros((1, 2, 2, 2), dtype="int32"))
    with pytest.raises(OperatorParamError, match="target_shape"):
        mx.nd.GridGenerator(mx.nd.zeros((1, 6)), transform_type="affine")
    with pytest.raises(OperatorParamError, match="transform_type"):
        mx.nd.SpatialTransformer(
            mx.nd.zeros((1, 1, 2, 2)),
            mx.nd.zeros((1, 6)),
            target_shape=(2, 2),
            transform_type="tps",
            sampler_type="bilinear",
        )
    with pytest.raises(InferenceError, match=r"\(N, 6\)"):
        mx.nd.GridGenerator(mx.nd.zeros((1, 4)), transform_type="affine", target_shape=(2, 2))
    with pytest.raises(InferenceError, match="grid must be"):
        mx.nd.BilinearSampler(mx.nd.zeros((1, 1, 2, 2)), mx.nd.zeros((1, 3, 2, 2)))


# ------------------------------------------------------------------ Crop
def test_crop_by_size_offset_center_and_like():
    x = seeded_rng(15).normal(size=(2, 3, 7, 8))
    got = mx.nd.Crop(to_nd(x), num_args=1, h_w=(3, 4), offset=(2, 1))
    assert_almost_equal(got.asnumpy(), x[:, :, 2:5, 1:5])
    centred = mx.nd.Crop(to_nd(x), num_args=1, h_w=(3, 3), center_crop=True)
    assert_almost_equal(centred.asnumpy(), x[:, :, 2:5, 2:5])
    like = mx.nd.Crop(to_nd(x), mx.nd.zeros((1, 1, 4, 2), dtype="float64"), offset=(3, 6))
    assert_almost_equal(like.asnumpy(), x[:, :, 3:7, 6:8])


def test_crop_gradient_req_inference_errors():
    x, ref = seeded_rng(16).normal(size=(1, 2, 5, 6)), np.zeros((1, 2, 3, 3))
    check_imperative_gradient(lambda a: mx.nd.Crop(a, num_args=1, h_w=(2, 3), offset=(1, 2)), [x])
    check_imperative_gradient(lambda a, b: mx.nd.Crop(a, b, center_crop=True), [x, ref], grad_nodes=[0])
    check_req("Crop", [x], num_args=1, h_w=(2, 3), offset=(1, 2))
    check_req("Crop", [x, ref], num_args=2, center_crop=True)
    assert infer_shapes("Crop", {"num_args": 2}, [(4, 3, 9, 9), (1, 1, 5, 2)])[1] == [(4, 3, 5, 2)]
    assert infer_types("Crop", {"num_args": 1, "h_w": (1, 1)}, [None], ["float16"])[0] == ["float16"]
    with pytest.raises(InferenceError, match="reaches outside"):
        mx.nd.Crop(mx.nd.zeros((1, 1, 4, 4)), num_args=1, h_w=(2, 2), offset=(3, 0))
    with pytest.raises(InferenceError, match="larger than the data"):
        mx.nd.Crop(mx.nd.zeros((1, 1, 4, 4)), mx.nd.zeros((1, 1, 5, 5)))
    with pytest.raises(OperatorParamError, match="h_w"):
        mx.nd.Crop(mx.nd.zeros((1, 1, 4, 4)), num_args=1)
    with pytest.raises(OperatorParamError, match="num_args"):
        mx.nd.Crop(mx.nd.zeros((1, 1, 4, 4)), num_args=3, h_w=(1, 1))


# ------------------------------------------------------------------ ROIPooling / PSROIPooling
def c_round(v: float) -> int:
    return int(np.sign(v) * np.floor(abs(v) + 0.5))


def roi_pooling_reference(data, rois, pooled, scale):
    _, c, h, w = data.shape
    out = np.zeros((len(rois), c, *pooled))
    for r, roi in enumerate(rois):
        b, (x1, y1, x2, y2) = roi[0], (c_round(v * scale) for v in roi[1:])
        bh, bw = max(y2 - y1 + 1, 1) / pooled[0], max(x2 - x1 + 1, 1) / pooled[1]
        for i in range(pooled[0]):
            hs = min(max(int(np.floor(i * bh)) + y1, 0), h)
            he = min(max(int(np.ceil((i + 1) * bh)) + y1, 0), h)
            for j in range(pooled[1]):
                ws = min(max(int(np.floor(j * bw)) + x1, 0), w)
                we = min(max(int(np.ceil((j + 1) * bw)) + x1, 0), w)
                if he > hs and we > ws:
                    out[r, :, i, j] = data[int(b), :, hs:he, ws:we].max(axis=(1, 2))
    return out


def psroi_reference(data, rois, output_dim, k, group, scale):
    _, _, h, w = data.shape
    out = np.zeros((len(rois), output_dim, k, k))
    for r, (b, x1, y1, x2, y2) in enumerate(rois):
        sx, sy = c_round(x1) * scale, c_round(y1) * scale
        ex, ey = (c_round(x2) + 1) * scale, (c_round(y2) + 1) * scale
        bh, bw = max(ey - sy, 0.1) / k, max(ex - sx, 0.1) / k
        for i in range(k):
            hs = min(max(int(np.floor(i * bh + sy)), 0), h)
            he = min(max(int(np.ceil((i + 1) * bh + sy)), 0), h)
            for j in range(k):
                ws = min(max(int(np.floor(j * bw + sx)), 0), w)
                we = min(max(int(np.ceil((j + 1) * bw + sx)), 0), w)
                if he > hs and we > ws:
                    gi, gj = min(i * group // k, group - 1), min(j * group // k, group - 1)
                    for d in range(output_dim):
                        out[r, d, i, j] = data[int(b), (d * group + gi) * group + gj, hs:he, ws:we].mean()
    return out


ROIS = np.array([[0, 1.3, 2.6, 11.0, 9.4], [1, 0, 0, 17, 13], [1, 5.0, 3.0, 5.9, 4.2], [0, -3, 2, 30, 20]])


def test_roi_pooling_matches_reference_gradient_req():
    data = seeded_rng(17).normal(size=(2, 3, 7, 9))
    got = mx.nd.ROIPooling(to_nd(data), to_nd(ROIS), pooled_size=(2, 3), spatial_scale=0.5)
    assert_almost_equal(got.asnumpy(), roi_pooling_reference(data, ROIS, (2, 3), 0.5))
    check_imperative_gradient(
        lambda d, r: mx.nd.ROIPooling(d, r, pooled_size=(3, 2), spatial_scale=0.5), [data, ROIS], grad_nodes=[0]
    )
    check_req("ROIPooling", [data, ROIS], pooled_size=(2, 2), spatial_scale=0.5)
    sym = mx.sym.ROIPooling(mx.sym.var("d"), mx.sym.var("r"), pooled_size=(2, 2), spatial_scale=1.0, name="p")
    assert sym.list_outputs() == ["p_output"]  # maxidx is hidden
    _, outs, _ = infer_shapes("ROIPooling", {"pooled_size": (2, 2), "spatial_scale": 1.0}, [(2, 3, 7, 9), (4, 5)])
    assert outs == [(4, 3, 2, 2), (4, 3, 2, 2)]
    ins, _, _ = infer_shapes(
        "ROIPooling", {"pooled_size": (2, 2), "spatial_scale": 1.0}, [None, None], [(6, 3, 2, 2), None]
    )
    assert ins[1] == (6, 5)
    with pytest.raises(InferenceError, match="rois must be"):
        mx.nd.ROIPooling(mx.nd.zeros((1, 1, 4, 4)), mx.nd.zeros((2, 4)), pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(OperatorParamError, match="pooled_size"):
        mx.nd.ROIPooling(mx.nd.zeros((1, 1, 4, 4)), mx.nd.zeros((2, 5)), pooled_size=(2,), spatial_scale=1.0)


@pytest.mark.parametrize("k, group", [(2, 0), (3, 2)])
def test_psroi_pooling_matches_reference_gradient_req(k, group):
    group_used = group or k
    data = seeded_rng(18).normal(size=(2, 2 * group_used**2, 7, 9))
    params = {"pooled_size": k, "output_dim": 2, "spatial_scale": 0.5, "group_size": group}
    got = mx.nd.contrib.PSROIPooling(to_nd(data), to_nd(ROIS), **params)
    assert_almost_equal(got.asnumpy(), psroi_reference(data, ROIS, 2, k, group_used, 0.5))
    check_imperative_gradient(lambda d, r: mx.nd.contrib.PSROIPooling(d, r, **params), [data, ROIS], grad_nodes=[0])
    check_req("_contrib_PSROIPooling", [data, ROIS], **params)


def test_psroi_pooling_errors():
    with pytest.raises(InferenceError, match="output_dim \\* group_size"):
        mx.nd.contrib.PSROIPooling(
            mx.nd.zeros((1, 5, 4, 4)), mx.nd.zeros((1, 5)), pooled_size=2, output_dim=2, spatial_scale=1.0
        )
    with pytest.raises(OperatorParamError, match="output_dim"):
        mx.nd.contrib.PSROIPooling(
            mx.nd.zeros((1, 4, 4, 4)), mx.nd.zeros((1, 5)), pooled_size=2, output_dim=0, spatial_scale=1.0
        )
    with pytest.raises(InferenceError, match="floating-point"):
        mx.nd.contrib.PSROIPooling(
            mx.nd.zeros((1, 4, 4, 4), dtype="int32"),
            mx.nd.zeros((1, 5), dtype="int32"),
            pooled_size=2,
            output_dim=1,
            spatial_scale=1.0,
        )


# ------------------------------------------------------------------ ROIAlign
def roi_align_reference(data, rois, pooled, scale, ratio=-1, aligned=False):
    """Sample by sample, as the Mask R-CNN paper describes it."""
    _, c, h, w = data.shape
    out = np.zeros((len(rois), c, *pooled))
    shift = 0.5 if aligned else 0.0

    def read(img, y, x):
        if y < -1 or y > h or x < -1 or x > w:
            return np.zeros(c)
        y, x = max(y, 0.0), max(x, 0.0)
        y0, x0 = min(int(y), h - 1), min(int(x), w - 1)
        y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
        ly, lx = (y - y0 if y0 < h - 1 else 0.0), (x - x0 if x0 < w - 1 else 0.0)
        return (
            (1 - ly) * (1 - lx) * img[:, y0, x0]
            + (1 - ly) * lx * img[:, y0, x1]
            + ly * (1 - lx) * img[:, y1, x0]
            + ly * lx * img[:, y1, x1]
        )

    for r, roi in enumerate(rois):
        sx, sy, ex, ey = (v * scale - shift for v in roi[1:])
        rh, rw = ey - sy, ex - sx
        if not aligned:
            rh, rw = max(rh, 1.0), max(rw, 1.0)
        gh = ratio if ratio > 0 else int(np.ceil(rh / pooled[0]))
        gw = ratio if ratio > 0 else int(np.ceil(rw / pooled[1]))
        for i in range(pooled[0]):
            for j in range(pooled[1]):
                total = np.zeros(c)
                for a in range(gh):
                    for b in range(gw):
                        y = sy + (i + (a + 0.5) / gh) * rh / pooled[0]
                        x = sx + (j + (b + 0.5) / gw) * rw / pooled[1]
                        total += read(data[int(roi[0])], y, x)
                out[r, :, i, j] = total / max(gh * gw, 1)
    return out


@pytest.mark.parametrize("ratio, aligned", [(-1, False), (2, True), (3, False)])
def test_roi_align_matches_reference_gradient_req(ratio, aligned):
    data = seeded_rng(19).normal(size=(2, 3, 7, 9))
    params = {"pooled_size": (2, 3), "spatial_scale": 0.5, "sample_ratio": ratio, "aligned": aligned}
    got = mx.nd.contrib.ROIAlign(to_nd(data), to_nd(ROIS), **params)
    assert_almost_equal(got.asnumpy(), roi_align_reference(data, ROIS, (2, 3), 0.5, ratio, aligned))
    check_imperative_gradient(lambda d, r: mx.nd.contrib.ROIAlign(d, r, **params), [data, ROIS], grad_nodes=[0])
    check_req("_contrib_ROIAlign", [data, ROIS], **params)


def test_roi_align_position_sensitive_and_errors():
    data = seeded_rng(20).normal(size=(2, 8, 7, 9))
    params = {"pooled_size": (2, 2), "spatial_scale": 0.5}
    full = roi_align_reference(data, ROIS, (2, 2), 0.5)  # (R, 8, 2, 2)
    got = mx.nd.contrib.ROIAlign(to_nd(data), to_nd(ROIS), position_sensitive=True, **params).asnumpy()
    assert got.shape == (4, 2, 2, 2)
    for i in range(2):
        for j in range(2):
            assert_almost_equal(got[:, :, i, j], full[:, [(0 * 2 + i) * 2 + j, (1 * 2 + i) * 2 + j], i, j])
    check_imperative_gradient(
        lambda d, r: mx.nd.contrib.ROIAlign(d, r, position_sensitive=True, **params), [data, ROIS], grad_nodes=[0]
    )
    assert infer_shapes("_contrib_ROIAlign", params, [None, None], [(5, 3, 2, 2)])[0][1] == (5, 5)
    with pytest.raises(InferenceError, match="divisible by 4"):
        mx.nd.contrib.ROIAlign(mx.nd.zeros((1, 6, 4, 4)), mx.nd.zeros((1, 5)), position_sensitive=True, **params)
    with pytest.raises(OperatorParamError, match="spatial_scale"):
        mx.nd.contrib.ROIAlign(mx.nd.zeros((1, 4, 4, 4)), mx.nd.zeros((1, 5)), pooled_size=(2, 2))


# ------------------------------------------------------------------ Correlation
def correlation_reference(a, b, k, md, s1, s2, pad, multiply):
    a = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    b = np.pad(b, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, ph, pw = a.shape
    border = md + (k - 1) // 2
    oh, ow = -(-(ph - 2 * border) // s1), -(-(pw - 2 * border) // s1)
    radius = md // s2
    grid = 2 * radius + 1
    out = np.zeros((n, grid * grid, oh, ow))
    for i in range(oh):
        for j in range(ow):
            y, x = i * s1 + md, j * s1 + md
            for d in range(grid * grid):
                dy, dx = (d // grid - radius) * s2, (d % grid - radius) * s2
                wa = a[:, :, y : y + k, x : x + k]
                wb = b[:, :, y + dy : y + dy + k, x + dx : x + dx + k]
                out[:, d, i, j] = (wa * wb if multiply else np.abs(wa - wb)).sum(axis=(1, 2, 3)) / (k * k * c)
    return out


@pytest.mark.parametrize(
    "k, md, s1, s2, pad, multiply", [(1, 1, 1, 1, 0, True), (3, 2, 2, 1, 3, True), (1, 4, 1, 2, 2, False)]
)
def test_correlation_matches_reference_gradient_req(k, md, s1, s2, pad, multiply):
    rng = seeded_rng(21)
    a, b = rng.normal(size=(2, 3, 6, 7)), rng.normal(size=(2, 3, 6, 7))
    params = {
        "kernel_size": k,
        "max_displacement": md,
        "stride1": s1,
        "stride2": s2,
        "pad_size": pad,
        "is_multiply": multiply,
    }
    got = mx.nd.Correlation(to_nd(a), to_nd(b), **params)
    assert_almost_equal(got.asnumpy(), correlation_reference(a, b, k, md, s1, s2, pad, multiply))
    check_imperative_gradient(lambda x, y: mx.nd.Correlation(x, y, **params), [a[:1, :2], b[:1, :2]])
    check_req("Correlation", [a, b], **params)


def test_correlation_inference_and_errors():
    params = {"kernel_size": 3, "max_displacement": 2, "stride1": 2, "pad_size": 3}
    ins, outs, done = infer_shapes("Correlation", params, [None, (2, 3, 10, 12)])
    assert done and ins[0] == (2, 3, 10, 12) and outs == [(2, 25, 5, 6), (2, 16, 18, 3), (2, 16, 18, 3)]
    sym = mx.sym.Correlation(mx.sym.var("a"), mx.sym.var("b"), name="corr")
    assert sym.list_arguments() == ["a", "b"] and sym.list_outputs() == ["corr_output"]
    with pytest.raises(OperatorParamError, match="odd"):
        mx.nd.Correlation(mx.nd.zeros((1, 1, 8, 8)), mx.nd.zeros((1, 1, 8, 8)), kernel_size=2)
    with pytest.raises(InferenceError, match="too small"):
        mx.nd.Correlation(mx.nd.zeros((1, 1, 3, 3)), mx.nd.zeros((1, 1, 3, 3)), max_displacement=4)
    with pytest.raises(InferenceError, match="shape inconsistent"):
        mx.nd.Correlation(mx.nd.zeros((1, 1, 8, 8)), mx.nd.zeros((1, 2, 8, 8)))


# ------------------------------------------------------------------ deformable convolutions
def deformable_reference(x, offset, weight, pad, mask=None, dg=1):
    """Sample by sample with MXNet's CPU reading rule (stride 1, dilation 1, one group)."""
    n, c, h, w = x.shape
    f, _, kh, kw = weight.shape
    oh, ow = offset.shape[2:]
    out = np.zeros((n, f, oh, ow))

    def read(img, y, xx):
        if not (0 <= y < h and 0 <= xx < w):
            return 0.0
        y0, x0 = min(int(y), h - 1), min(int(xx), w - 1)
        fy = 0.0 if y0 >= h - 1 else y - y0
        fx = 0.0 if x0 >= w - 1 else xx - x0
        y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
        return (
            (1 - fy) * (1 - fx) * img[y0, x0]
            + (1 - fy) * fx * img[y0, x1]
            + fy * (1 - fx) * img[y1, x0]
            + fy * fx * img[y1, x1]
        )

    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for ch in range(c):
                    grp = ch // (c // dg)
                    for a in range(kh):
                        for t in range(kw):
                            k = a * kw + t
                            y = i - pad + a + offset[b, grp * 2 * kh * kw + 2 * k, i, j]
                            xx = j - pad + t + offset[b, grp * 2 * kh * kw + 2 * k + 1, i, j]
                            v = read(x[b, ch], y, xx)
                            if mask is not None:
                                v *= mask[b, grp * kh * kw + k, i, j]
                            out[b, :, i, j] += weight[:, ch, a, t] * v
    return out


def test_deformable_convolution_matches_reference_and_zero_offsets_give_convolution():
    rng = seeded_rng(22)
    x, weight, bias = rng.normal(size=(2, 4, 5, 6)), rng.normal(size=(3, 4, 3, 3)), rng.normal(size=3)
    offset = rng.uniform(-1.5, 1.5, size=(2, 36, 5, 6))
    got = mx.nd.contrib.DeformableConvolution(
        to_nd(x),
        to_nd(offset),
        to_nd(weight),
        to_nd(bias),
        kernel=(3, 3),
        pad=(1, 1),
        num_filter=3,
        num_deformable_group=2,
    )
    expected = deformable_reference(x, offset, weight, 1, dg=2) + bias.reshape(1, 3, 1, 1)
    assert_almost_equal(got.asnumpy(), expected)
    zero = mx.nd.contrib.DeformableConvolution(
        to_nd(x),
        to_nd(np.zeros((2, 18, 2, 2))),
        to_nd(weight),
        to_nd(bias),
        kernel=(3, 3),
        stride=(2, 3),
        num_filter=3,
    )
    conv = mx.nd.Convolution(to_nd(x), to_nd(weight), to_nd(bias), kernel=(3, 3), stride=(2, 3), num_filter=3)
    assert_almost_equal(zero.asnumpy(), conv.asnumpy())


def test_modulated_deformable_convolution_matches_reference():
    rng = seeded_rng(23)
    x, weight = rng.normal(size=(1, 2, 4, 5)), rng.normal(size=(2, 2, 3, 3))
    offset, mask = rng.uniform(-1.2, 1.2, size=(1, 18, 4, 5)), rng.uniform(0, 1, size=(1, 9, 4, 5))
    got = mx.nd.contrib.ModulatedDeformableConvolution(
        to_nd(x), to_nd(offset), to_nd(mask), to_nd(weight), kernel=(3, 3), pad=(1, 1), num_filter=2, no_bias=True
    )
    assert_almost_equal(got.asnumpy(), deformable_reference(x, offset, weight, 1, mask=mask))


def test_deformable_gradients_and_req():
    rng = seeded_rng(24)
    x, weight, bias = rng.normal(size=(1, 2, 4, 4)), rng.normal(size=(2, 1, 2, 2)), rng.normal(size=2)
    # offsets keep every read strictly inside the map, away from the cell edges (finite differences)
    offset = rng.uniform(0.2, 0.4, size=(1, 8, 3, 3))
    mask = rng.uniform(0.2, 1, size=(1, 4, 3, 3))
    params = {"kernel": (2, 2), "num_filter": 2, "num_group": 2}
    check_imperative_gradient(
        lambda d, o, w, b: mx.nd.contrib.DeformableConvolution(d, o, w, b, **params), [x, offset, weight, bias]
    )
    check_imperative_gradient(
        lambda d, o, m, w: mx.nd.contrib.ModulatedDeformableConvolution(d, o, m, w, no_bias=True, **params),
        [x, offset, mask, weight],
    )
    check_req("_contrib_DeformableConvolution", [x, offset, weight, bias], **params)
    check_req("_contrib_ModulatedDeformableConvolution", [x, offset, mask, weight, bias], **params)


def test_deformable_inference_and_errors():
    params = {"kernel": (3, 3), "num_filter": 6, "pad": (1, 1), "num_deformable_group": 2, "num_group": 2}
    ins, outs, done = infer_shapes("_contrib_DeformableConvolution", params, [(2, 4, 5, 6), None, None, None])
    assert done and ins[1:] == [(2, 36, 5, 6), (6, 2, 3, 3), (6,)] and outs == [(2, 6, 5, 6)]
    ins, _, _ = infer_shapes("_contrib_ModulatedDeformableConvolution", params, [(2, 4, 5, 6), None, None, None, None])
    assert ins[2] == (2, 18, 5, 6)
    sym = mx.sym.contrib.DeformableConvolution(mx.sym.var("x"), kernel=(3, 3), num_filter=2, no_bias=True, name="dc")
    assert sym.list_arguments() == ["x", "dc_offset", "dc_weight"]
    with pytest.raises(InferenceError, match="divisible"):
        mx.nd.contrib.DeformableConvolution(
            mx.nd.zeros((1, 3, 4, 4)),
            mx.nd.zeros((1, 18, 2, 2)),
            mx.nd.zeros((2, 1, 3, 3)),
            mx.nd.zeros(2),
            kernel=(3, 3),
            num_filter=2,
            num_group=2,
        )
    with pytest.raises(OperatorParamError, match="kernel"):
        mx.nd.contrib.DeformableConvolution(
            mx.nd.zeros((1, 2, 4, 4)),
            mx.nd.zeros((1, 6, 2)),
            mx.nd.zeros((2, 2, 3)),
            mx.nd.zeros(2),
            kernel=(3,),
            num_filter=2,
        )
    with pytest.raises(OperatorParamError, match="layout"):
        mx.nd.contrib.DeformableConvolution(
            mx.nd.zeros((1, 2, 4, 4)),
            mx.nd.zeros((1, 18, 2, 2)),
            mx.nd.zeros((2, 2, 3, 3)),
            mx.nd.zeros(2),
            kernel=(3, 3),
            num_filter=2,
            layout="NCDHW",
        )

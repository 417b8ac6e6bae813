"""Colour operators on RGB images ``(H, W, 3)`` or ``(N, H, W, 3)``: lighting, brightness, contrast,
saturation and hue, each fixed (``adjust_lighting``) or with a random strength (``random_*``).

Each is a blend computed in float and written back in the input's dtype (for uint8 clipped to
[0, 255] and truncated, as MXNet's kernels cast):

- brightness ``alpha``:  ``alpha * x``;
- contrast ``alpha``:    ``alpha * x + (1 - alpha) * mean gray of the image``;
- saturation ``alpha``:  ``alpha * x + (1 - alpha) * gray of the pixel``;
- hue ``alpha``:         the hue turned by ``alpha * 360`` degrees, lightness and saturation kept;
- lighting ``alpha``:    ``x + eigvec @ (alpha * eigval)``, AlexNet's PCA noise with ImageNet's
  RGB eigenvectors (``random_lighting`` draws ``alpha ~ N(0, alpha_std)``).

Gray is the luma ``0.299 R + 0.587 G + 0.114 B``. The random operators draw their strengths
from the device's random resource (``mx.random.seed`` makes them repeat): one draw per image
of a batch. ``random_color_jitter`` applies brightness, contrast, saturation and hue in that
order, each only when its range is non-zero. None of these has a gradient.
"""

from __future__ import annotations

from typing import Any

from ...resource import ResourceRequest
from ..infer import InferenceError, elemwise_shape, elemwise_type
from ..kernel import assign
from ..params import REQUIRED, FloatTuple, Param, ParamSet
from ..registry import register
from .common import check_rgb, saturate, work_dtype

LUMA = (0.299, 0.587, 0.114)
IMAGENET_EIGVAL = (55.46, 4.794, 1.148)
IMAGENET_EIGVEC = ((-0.5675, 0.7192, 0.4009), (-0.5808, -0.0045, -0.8140), (-0.5836, -0.6948, 0.4203))


def _rgb_shape(attrs: Any, in_shapes: list, out_shapes: list) -> bool:
    known = in_shapes[0] if in_shapes[0] is not None else out_shapes[0]
    if known is not None:
        check_rgb(attrs.name, known)
    return elemwise_shape(attrs, in_shapes, out_shapes)


def _per_image(xp: Any, values: Any, x: Any) -> Any:
    """Strengths of shape (N,) (or a scalar for one image) broadcast against (N, H, W, C)."""
    return xp.asarray(values, dtype=work_dtype(x.dtype)).reshape((-1, 1, 1, 1) if x.ndim == 4 else ())


def brightness(xp: Any, x: Any, alpha: Any) -> Any:
    return x * alpha


def contrast(xp: Any, x: Any, alpha: Any) -> Any:
    gray = x @ xp.asarray(LUMA, dtype=x.dtype)
    mean = gray.mean(axis=(-2, -1), keepdims=True)[..., None]
    return alpha * x + (1 - alpha) * mean


def saturation(xp: Any, x: Any, alpha: Any) -> Any:
    gray = (x @ xp.asarray(LUMA, dtype=x.dtype))[..., None]
    return alpha * x + (1 - alpha) * gray


def hue(xp: Any, x: Any, alpha: Any) -> Any:
    """Turn the hue on the colour hexagon: keep each pixel's max and min, move the middle channel.

    With ``M``/``m`` the largest/smallest channel and ``h`` the hue in sixths of a turn, channel
    ``n`` (R=5, G=3, B=1) is ``M - (M - m) * clip(min(k, 4 - k), 0, 1)`` for ``k = (n + h) mod 6``.
    """
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    high, low = x.max(axis=-1), x.min(axis=-1)
    chroma = high - low
    safe = xp.where(chroma > 0, chroma, 1)
    sector = xp.where(high == r, ((g - b) / safe) % 6, xp.where(high == g, (b - r) / safe + 2, (r - g) / safe + 4))
    turn = alpha[..., 0] if getattr(alpha, "ndim", 0) == 4 else alpha  # (N, 1, 1) against (N, H, W)
    turned = (sector + 6 * turn) % 6
    channels = []
    for n in (5, 3, 1):
        k = (n + turned) % 6
        channels.append(high - chroma * xp.clip(xp.minimum(k, 4 - k), 0, 1))
    return xp.stack(channels, axis=-1)


def lighting(xp: Any, x: Any, alpha: Any) -> Any:
    """Add ``eigvec @ (alpha * eigval)`` to every pixel; ``alpha`` is (3,) or (N, 1, 1, 3)."""
    eigvec = xp.asarray(IMAGENET_EIGVEC, dtype=x.dtype)
    return x + (alpha * xp.asarray(IMAGENET_EIGVAL, dtype=x.dtype)) @ eigvec.T


def _blend(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list, fn: Any, alpha: Any) -> None:
    xp, data = op_ctx.xp, inputs[0]
    x = data.astype(work_dtype(data.dtype))
    assign(outputs[0], req[0], saturate(xp, fn(xp, x, alpha), outputs[0].dtype, truncate=True))


def _register_rgb(name: str, params: type[ParamSet], compute: Any, description: str, random: bool) -> None:
    op = (
        register(name)
        .describe(description)
        .set_params(params)
        .set_num_inputs(1)
        .set_input_names(["data"])
        .set_infer_shape(_rgb_shape)
        .set_infer_type(elemwise_type)
        .set_compute(compute)
    )
    if random:
        op.set_resource_request(lambda attrs: [ResourceRequest.RANDOM])


class AdjustLightingParam(ParamSet):
    alpha = Param(FloatTuple, REQUIRED, "The strength of each of the 3 principal components of ImageNet's colours.")


def _adjust_lighting(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    alpha = attrs.parsed.alpha
    if len(alpha) != 3:
        raise InferenceError(f"{attrs.name}: alpha must have 3 values (one per principal component), got {alpha}")
    _blend(attrs, op_ctx, inputs, req, outputs, lighting, op_ctx.xp.asarray(alpha, dtype=work_dtype(inputs[0].dtype)))


_register_rgb("_image_adjust_lighting", AdjustLightingParam, _adjust_lighting,
              "Add AlexNet-style PCA lighting with the given strengths to RGB images.", random=False)  # fmt: skip


def _images(x: Any) -> int:
    return x.shape[0] if x.ndim == 4 else 1


class FactorRangeParam(ParamSet):
    min_factor = Param(float, REQUIRED, "Smallest strength drawn.", low=0.0)
    max_factor = Param(float, REQUIRED, "Largest strength drawn.", low=0.0)


def _draw_factors(attrs: Any, op_ctx: Any, x: Any, low: float, high: float) -> Any:
    if low > high:
        raise InferenceError(f"{attrs.name}: min_factor={low} is larger than max_factor={high}")
    draws = op_ctx.random_generator(attrs.name).uniform(low, high, size=_images(x))
    return _per_image(op_ctx.xp, draws, x)


def _random_factor_compute(fn: Any) -> Any:
    """The compute function of a ``random_<fn>`` operator: one strength in [min, max] per image."""

    def compute(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
        p = attrs.parsed
        alpha = _draw_factors(attrs, op_ctx, inputs[0], p.min_factor, p.max_factor)
        _blend(attrs, op_ctx, inputs, req, outputs, fn, alpha)

    return compute


for _kind, _fn in (("brightness", brightness), ("contrast", contrast), ("saturation", saturation)):
    _register_rgb(f"_image_random_{_kind}", FactorRangeParam, _random_factor_compute(_fn),
                  f"Random {_kind}: a factor drawn from [min_factor, max_factor] per image.", random=True)  # fmt: skip


class HueRangeParam(ParamSet):
    min_factor = Param(float, REQUIRED, "Smallest hue turn drawn (in turns: 0.5 is 180 degrees).")
    max_factor = Param(float, REQUIRED, "Largest hue turn drawn (in turns).")


_register_rgb("_image_random_hue", HueRangeParam, _random_factor_compute(hue),
              "Random hue: the hue turned by a fraction of a turn drawn from [min_factor, max_factor].",
              random=True)  # fmt: skip


class ColorJitterParam(ParamSet):
    brightness = Param(float, REQUIRED, "Brightness factor drawn from [1 - brightness, 1 + brightness].", low=0.0)
    contrast = Param(float, REQUIRED, "Contrast factor drawn from [1 - contrast, 1 + contrast].", low=0.0)
    saturation = Param(float, REQUIRED, "Saturation factor drawn from [1 - saturation, 1 + saturation].", low=0.0)
    hue = Param(float, REQUIRED, "Hue turn drawn from [-hue, hue].", low=0.0)


def _color_jitter(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    xp, p, data = op_ctx.xp, attrs.parsed, inputs[0]
    x = data.astype(work_dtype(data.dtype))
    for strength, fn, centre in ((p.brightness, brightness, 1.0), (p.contrast, contrast, 1.0),
                                 (p.saturation, saturation, 1.0), (p.hue, hue, 0.0)):  # fmt: skip
        if strength > 0:
            x = fn(xp, x, _draw_factors(attrs, op_ctx, x, centre - strength, centre + strength))
    assign(outputs[0], req[0], saturate(xp, x, outputs[0].dtype, truncate=True))


_register_rgb("_image_random_color_jitter", ColorJitterParam, _color_jitter,
              "Random brightness, contrast, saturation and hue, in that order.", random=True)  # fmt: skip


class RandomLightingParam(ParamSet):
    alpha_std = Param(float, 0.05, "Standard deviation of the strength of each principal component.", low=0.0)


def _random_lighting(attrs: Any, op_ctx: Any, inputs: list, req: list, outputs: list) -> None:
    x = inputs[0]
    draws = op_ctx.random_generator(attrs.name).normal(0.0, attrs.parsed.alpha_std, size=(_images(x), 3))
    alpha = op_ctx.xp.asarray(draws, dtype=work_dtype(x.dtype)).reshape((-1, 1, 1, 3) if x.ndim == 4 else (3,))
    _blend(attrs, op_ctx, inputs, req, outputs, lighting, alpha)


_register_rgb("_image_random_lighting", RandomLightingParam, _random_lighting,
              "AlexNet-style PCA lighting with strengths drawn from N(0, alpha_std).", random=True)  # fmt: skip

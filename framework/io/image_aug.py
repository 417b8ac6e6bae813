"""``ImageRecordIter``'s optional augmentations: padding, affine jitter, random-resized and
random-size crops, colour and lighting jitter, HLS jitter, and the legacy contrast/illumination.

They follow MXNet 1.9.1's default image augmenter, in its order (``image_record_iter`` does
the resize before and the mirror and normalisation after):

1. ``pad`` pixels of ``fill_value`` around the image;
2. an affine warp (OpenCV's ``warpAffine`` geometry, bilinear, ``fill_value`` outside) when any of
   ``rotate`` / ``max_rotate_angle`` (degrees), ``max_shear_ratio``, ``min_random_scale`` /
   ``max_random_scale`` or the aspect ratio (``[min_aspect_ratio, max_aspect_ratio]``, or
   ``1 +- max_aspect_ratio`` without a minimum) asks for one; the scaled size is kept within
   ``[min_img_size, max_img_size]``; with ``random_resized_crop`` only rotation and shear warp;
3. the crop: ``random_resized_crop`` (a window covering a fraction in ``[min_random_area,
   max_random_area]`` of the image with an aspect ratio in the same range, ten tries, then
   the centre), or a square of a side in
   ``[min_crop_size, max_crop_size]``, either resized to ``data_shape``; otherwise the
   plain crop of ``image_record_iter``;
4. colour: ``brightness``, ``contrast`` and ``saturation`` factors ``1 + U(-x, x)`` (contrast
   towards the mean gray, saturation towards each pixel's gray), ``pca_noise`` (AlexNet's PCA
   lighting, ImageNet's eigenvectors), and ``random_h`` / ``random_s`` / ``random_l`` offsets
   in OpenCV's 8-bit HLS space (hue in [0, 180)); results are rounded and clipped to uint8;
5. in the normalisation, ``max_random_contrast`` scales and ``max_random_illumination``
   shifts the normalised pixels.

Each image's random numbers come from its own generator, seeded by a number the loader
draws from the epoch's generator, so the output does not depend on the threads. The
arithmetic is vectorised over the pixels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)
IMAGENET_EIGVAL = np.array([55.46, 4.794, 1.148], dtype=np.float32)
IMAGENET_EIGVEC = np.array(
    [[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]], dtype=np.float32
)
# The augmentation parameters and their MXNet 1.9.1 defaults (a default value means "off")
DEFAULTS: dict[str, Any] = {
    "pad": 0,
    "fill_value": 255,
    "rotate": -1,
    "max_rotate_angle": 0,
    "max_shear_ratio": 0.0,
    "max_random_scale": 1.0,
    "min_random_scale": 1.0,
    "max_aspect_ratio": 0.0,
    "min_aspect_ratio": None,
    "max_img_size": 1e10,
    "min_img_size": 0.0,
    "random_resized_crop": False,
    "max_random_area": 1.0,
    "min_random_area": 1.0,
    "max_crop_size": -1,
    "min_crop_size": -1,
    "brightness": 0.0,
    "contrast": 0.0,
    "saturation": 0.0,
    "pca_noise": 0.0,
    "random_h": 0,
    "random_s": 0,
    "random_l": 0,
    "max_random_contrast": 0.0,
    "max_random_illumination": 0.0,
}


def warp_affine(
    pixels: np.ndarray, inverse: np.ndarray, offset: np.ndarray, width: int, height: int, fill: int, resample: Any
) -> np.ndarray:
    """OpenCV's ``warpAffine`` with a constant border: output pixel (x, y) (integer pixel centres)
    samples the input at ``inverse @ (x, y) + offset``; neighbours outside the image are ``fill``.

    Bilinear unless ``resample`` is Pillow's nearest filter; computed in float and rounded, where
    OpenCV quantises the positions to 1/32 pixel (so a pixel may differ by a level).
    """
    src_h, src_w = pixels.shape[:2]
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    sx = inverse[0, 0] * xs + inverse[0, 1] * ys + offset[0]
    sy = inverse[1, 0] * xs + inverse[1, 1] * ys + offset[1]
    planes = pixels.reshape(src_h, src_w, -1).astype(np.float32)
    if resample == Image.Resampling.NEAREST:
        taps = [(np.rint(sy).astype(np.intp), np.rint(sx).astype(np.intp), np.ones_like(sx))]
    else:
        x0, y0 = np.floor(sx).astype(np.intp), np.floor(sy).astype(np.intp)
        fx, fy = sx - x0, sy - y0
        taps = [
            (y0, x0, (1 - fx) * (1 - fy)),
            (y0, x0 + 1, fx * (1 - fy)),
            (y0 + 1, x0, (1 - fx) * fy),
            (y0 + 1, x0 + 1, fx * fy),
        ]
    out = np.zeros((height, width, planes.shape[2]), dtype=np.float32)
    for yy, xx, weight in taps:
        inside = (yy >= 0) & (yy < src_h) & (xx >= 0) & (xx < src_w)
        values = planes[np.clip(yy, 0, src_h - 1), np.clip(xx, 0, src_w - 1)]
        values = np.where(inside[..., None], values, np.float32(fill))
        out += values * weight[..., None].astype(np.float32)
    out = np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)
    return out.reshape((height, width, *pixels.shape[2:]))


class AugmentError(ValueError):
    """An augmentation parameter out of its range (the message names it)."""


@dataclass(frozen=True)
class ExtraAugmentation:
    """The optional augmentations of one iterator (the values of :data:`DEFAULTS`' keys)."""

    params: dict[str, Any]
    resample: Any  # Pillow's filter for the warps (None: bilinear)
    resize: Any  # resize(pixels, width, height) -> pixels, the iterator's resize for the crops

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any], resample: Any, resize: Any) -> ExtraAugmentation:
        params = dict(DEFAULTS)
        params.update({k: v for k, v in kwargs.items() if k in DEFAULTS})
        for name in ("pad", "max_rotate_angle", "random_h", "random_s", "random_l"):
            if params[name] < 0:
                raise AugmentError(f"{name} must be >= 0, got {params[name]}")
        for name in ("max_shear_ratio", "max_aspect_ratio", "brightness", "contrast", "saturation", "pca_noise",
                     "max_random_contrast", "max_random_illumination"):  # fmt: skip
            if params[name] < 0:
                raise AugmentError(f"{name} must be >= 0, got {params[name]}")
        if not 0 < params["min_random_scale"] <= params["max_random_scale"]:
            raise AugmentError(
                f"need 0 < min_random_scale <= max_random_scale, got {params['min_random_scale']} and "
                f"{params['max_random_scale']}"
            )
        if not 0 < params["min_random_area"] <= params["max_random_area"] <= 1:
            raise AugmentError(
                f"need 0 < min_random_area <= max_random_area <= 1, got {params['min_random_area']} and "
                f"{params['max_random_area']}"
            )
        if params["min_aspect_ratio"] is not None and not 0 < params["min_aspect_ratio"] <= params["max_aspect_ratio"]:
            raise AugmentError(
                f"need 0 < min_aspect_ratio <= max_aspect_ratio, got {params['min_aspect_ratio']} and "
                f"{params['max_aspect_ratio']}"
            )
        if params["min_aspect_ratio"] is None and params["max_aspect_ratio"] >= 1:
            raise AugmentError(
                f"without min_aspect_ratio the ratio is drawn from [1 - max_aspect_ratio, 1 + max_aspect_ratio]: "
                f"max_aspect_ratio must be < 1, got {params['max_aspect_ratio']}"
            )
        if (params["max_crop_size"] == -1) != (params["min_crop_size"] == -1) or params["max_crop_size"] < params[
            "min_crop_size"
        ]:
            raise AugmentError(
                f"give both min_crop_size <= max_crop_size, got {params['min_crop_size']} and {params['max_crop_size']}"
            )
        if not 0 <= params["fill_value"] <= 255:
            raise AugmentError(f"fill_value must be in [0, 255], got {params['fill_value']}")
        return cls(params, resample, resize)

    # -------------------------------------------------------------- what is on
    @property
    def warps(self) -> bool:
        """Rotation and shear always warp; scale and aspect jitter only without ``random_resized_crop``
        (which has its own area and aspect ratio)."""
        p = self.params
        turns = p["rotate"] > 0 or p["max_rotate_angle"] > 0 or p["max_shear_ratio"] > 0
        rescales = p["max_random_scale"] != 1 or p["min_random_scale"] != 1 or p["max_aspect_ratio"] > 0
        return turns or (rescales and not p["random_resized_crop"])

    def aspect_range(self) -> tuple[float, float]:
        """``[min_aspect_ratio, max_aspect_ratio]``, or ``[1 - max, 1 + max]`` without a minimum."""
        p = self.params
        if p["min_aspect_ratio"] is None:
            return 1.0 - p["max_aspect_ratio"], 1.0 + p["max_aspect_ratio"]
        return p["min_aspect_ratio"], p["max_aspect_ratio"]

    @property
    def crops(self) -> bool:
        return bool(self.params["random_resized_crop"]) or self.params["max_crop_size"] != -1

    @property
    def colours(self) -> bool:
        p = self.params
        return any(p[k] > 0 for k in ("brightness", "contrast", "saturation", "pca_noise", "random_h", "random_s",
                                      "random_l"))  # fmt: skip

    @property
    def active(self) -> bool:
        """Whether any augmentation here is on (the iterator then takes the general path)."""
        p = self.params
        return bool(
            p["pad"] > 0 or self.warps or self.crops or self.colours
            or p["max_random_contrast"] > 0 or p["max_random_illumination"] > 0
        )  # fmt: skip

    # -------------------------------------------------------------- geometry
    def geometry(self, pixels: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """Pad, then warp (both optional)."""
        p = self.params
        if p["pad"] > 0:
            width = ((p["pad"], p["pad"]), (p["pad"], p["pad"])) + ((0, 0),) * (pixels.ndim - 2)
            pixels = np.pad(pixels, width, mode="constant", constant_values=p["fill_value"])
        if self.warps:
            pixels = self._warp(pixels, rng)
        return pixels

    def _warp(self, pixels: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        p = self.params
        angle = p["rotate"] if p["rotate"] > 0 else rng.uniform(-p["max_rotate_angle"], p["max_rotate_angle"])
        shear = rng.uniform(-p["max_shear_ratio"], p["max_shear_ratio"])
        rescale = not p["random_resized_crop"]  # random_resized_crop brings its own area and aspect
        scale = rng.uniform(p["min_random_scale"], p["max_random_scale"]) if rescale else 1.0
        ratio = rng.uniform(*self.aspect_range()) if rescale else 1.0
        # the scale splits into height and width scales whose ratio is ``ratio``
        scale_h = 2 * scale / (1 + ratio)
        scale_w = ratio * scale_h
        height, width = pixels.shape[:2]
        new_w = int(min(max(width * scale, p["min_img_size"]), p["max_img_size"]))
        new_h = int(min(max(height * scale, p["min_img_size"]), p["max_img_size"]))
        a, b = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        # MXNet's forward map (source -> output pixel, integer pixel centres): rotation and shear,
        # then the two scales; the translation takes the source centre to the output centre
        forward = np.array(
            [[scale_h * a - shear * b * scale_w, scale_h * b + shear * a * scale_w], [-b * scale_w, a * scale_w]]
        )
        shift = (np.array([new_w, new_h]) - forward @ np.array([width, height])) / 2
        inverse = np.linalg.inv(forward)
        return warp_affine(pixels, inverse, -inverse @ shift, new_w, new_h, p["fill_value"], self.resample)

    def crop(
        self, pixels: np.ndarray, rng: np.random.RandomState, height: int, width: int, rand_crop: bool
    ) -> np.ndarray:
        """The random-resized or random-size crop, resized to (height, width)."""
        p = self.params
        src_h, src_w = pixels.shape[:2]
        if p["random_resized_crop"]:
            low, high = self.aspect_range()
            box = None
            for _ in range(10):
                area = rng.uniform(p["min_random_area"], p["max_random_area"]) * src_h * src_w
                aspect = rng.uniform(low, high) if high > low else high
                w = round(math.sqrt(area * aspect))
                h = round(math.sqrt(area / aspect))
                if 0 < w <= src_w and 0 < h <= src_h:
                    box = (rng.randint(0, src_h - h + 1), rng.randint(0, src_w - w + 1), h, w)
                    break
            if box is None:  # the centre square that fits
                side = min(src_h, src_w)
                box = ((src_h - side) // 2, (src_w - side) // 2, side, side)
        else:
            side = min(rng.randint(p["min_crop_size"], p["max_crop_size"] + 1), src_h, src_w)
            if rand_crop:
                box = (rng.randint(0, src_h - side + 1), rng.randint(0, src_w - side + 1), side, side)
            else:
                box = ((src_h - side) // 2, (src_w - side) // 2, side, side)
        y, x, h, w = box
        return self.resize(np.ascontiguousarray(pixels[y : y + h, x : x + w]), width, height)

    # -------------------------------------------------------------- colour
    def colour(self, pixels: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """Brightness, contrast, saturation, PCA lighting and HLS jitter on an RGB uint8 image."""
        p = self.params
        if pixels.ndim != 3 or pixels.shape[2] < 3:
            return pixels  # the colour jitters need red, green and blue
        values = pixels[..., :3].astype(np.float32)
        if p["brightness"] > 0:
            values *= np.float32(1.0 + rng.uniform(-p["brightness"], p["brightness"]))
        if p["contrast"] > 0:
            alpha = np.float32(1.0 + rng.uniform(-p["contrast"], p["contrast"]))
            values = alpha * values + (1 - alpha) * np.float32((values @ LUMA).mean())
        if p["saturation"] > 0:
            alpha = np.float32(1.0 + rng.uniform(-p["saturation"], p["saturation"]))
            values = alpha * values + (1 - alpha) * (values @ LUMA)[..., None]
        if p["pca_noise"] > 0:
            alpha = rng.normal(0.0, p["pca_noise"], 3).astype(np.float32)
            values = values + IMAGENET_EIGVEC @ (alpha * IMAGENET_EIGVAL)
        if p["random_h"] or p["random_s"] or p["random_l"]:
            values = self._hls_jitter(np.clip(values, 0, 255), rng)
        out = pixels.copy()
        out[..., :3] = np.clip(np.floor(values + 0.5), 0, 255).astype(np.uint8)
        return out

    def _hls_jitter(self, rgb: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """Add offsets to hue (OpenCV's 8-bit scale: 180 per turn), lightness and saturation (0-255)."""
        p = self.params
        dh = rng.uniform(-p["random_h"], p["random_h"])
        ds = rng.uniform(-p["random_s"], p["random_s"])
        dl = rng.uniform(-p["random_l"], p["random_l"])
        unit = rgb / 255.0
        high, low = unit.max(axis=-1), unit.min(axis=-1)
        lightness = (high + low) / 2
        chroma = high - low
        safe = np.where(chroma > 0, chroma, 1.0)
        saturation = np.where(chroma > 0, chroma / np.where(lightness < 0.5, high + low, 2 - high - low + 1e-12), 0.0)
        r, g, b = unit[..., 0], unit[..., 1], unit[..., 2]
        sector = np.where(high == r, ((g - b) / safe) % 6, np.where(high == g, (b - r) / safe + 2, (r - g) / safe + 4))
        hue = (sector * 30 + dh) % 180  # 0..180, OpenCV's 8-bit hue
        lightness = np.clip(lightness + dl / 255.0, 0, 1)
        saturation = np.clip(saturation + ds / 255.0, 0, 1)
        chroma = (1 - np.abs(2 * lightness - 1)) * saturation
        high = lightness + chroma / 2
        turned = hue / 30.0
        channels = [
            high - chroma * np.clip(np.minimum((n + turned) % 6, 4 - (n + turned) % 6), 0, 1) for n in (5, 3, 1)
        ]
        return np.stack(channels, axis=-1) * 255.0

    def normalize_jitter(self, rng: np.random.RandomState) -> tuple[float, float]:
        """(contrast factor, illumination offset) for the normalisation of one image."""
        p = self.params
        contrast = 1.0 + rng.uniform(-p["max_random_contrast"], p["max_random_contrast"])
        illumination = rng.uniform(-p["max_random_illumination"], p["max_random_illumination"])
        return contrast, illumination

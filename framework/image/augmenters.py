"""Augmenters: callable objects that each transform one HWC image NDArray, and ``CreateAugmenter``.

An augmenter is configured once and applied to every image; ``dumps()`` describes it as
JSON (its class name and arguments), so a pipeline can be logged or compared. The colour
augmenters work on float images (``CastAug`` comes first in :func:`CreateAugmenter`'s
list) and, as in MXNet, several change their input in place and return it.

Random draws come from Python's ``random`` module and NumPy's global generator (only
``LightingAug`` uses NumPy), the two MXNet's ``mx.image`` uses: ``random.seed(s)`` and
``np.random.seed(s)`` make a pipeline repeat, and draw the same numbers as MXNet's.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ndarray import NDArray, array
from .base import ImageError, like_source, pixels_of
from .crop import center_crop, random_crop, random_size_crop
from .resize import interp_method, resize_pixels, resize_short

# ITU-R BT.601 luma weights (R, G, B): the gray value the contrast/saturation jitters blend towards
LUMA = (0.299, 0.587, 0.114)
# RGB <-> YIQ: a hue rotation turns the (I, Q) chroma plane
RGB_TO_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
YIQ_TO_RGB = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])
# the gray conversion RandomGrayAug multiplies each RGB pixel by (every output channel the same)
GRAY_MIX = np.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])
# ImageNet's RGB statistics: mean=True / std=True in CreateAugmenter, and the PCA lighting noise
IMAGENET_MEAN = (123.68, 116.28, 103.53)
IMAGENET_STD = (58.395, 57.12, 57.375)
IMAGENET_EIGVAL = np.array([55.46, 4.794, 1.148])
IMAGENET_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])


def _jsonable(value: Any) -> Any:
    if isinstance(value, NDArray):
        return value.asnumpy().tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _float32_array(values: Any) -> NDArray | None:
    """An NDArray as given; anything else (list, NumPy array) as float32, as MXNet's ``nd.array`` makes it."""
    if values is None or isinstance(values, NDArray):
        return values
    return array(np.asarray(values, dtype=np.float32))


def color_normalize(src: NDArray, mean: Any, std: Any = None) -> NDArray:
    """``(src - mean) / std`` per channel, in place (``src`` is changed and returned, as in MXNet)."""
    src -= mean
    if std is not None:
        src /= std
    return src


class Augmenter:
    """Base class: remembers its arguments for :meth:`dumps`; subclasses define ``__call__(src)``."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = {key: _jsonable(value) for key, value in kwargs.items()}

    def dumps(self) -> Any:
        """``[class name in lower case, arguments]`` as a JSON string."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src: NDArray) -> NDArray:
        raise NotImplementedError(f"{type(self).__name__} does not define __call__(src)")


class SequentialAug(Augmenter):
    """Apply the augmenters ``ts`` one after the other."""

    def __init__(self, ts: Sequence[Augmenter]) -> None:
        super().__init__()
        self.ts = list(ts)

    def dumps(self) -> Any:
        """``[name, [each augmenter's dumps()]]`` (a list, not a JSON string, as in MXNet)."""
        return [type(self).__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src: NDArray) -> NDArray:
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(SequentialAug):
    """Apply the augmenters ``ts`` in a random order (``random.shuffle`` of the list, every call)."""

    def __call__(self, src: NDArray) -> NDArray:
        random.shuffle(self.ts)
        return super().__call__(src)


class ResizeAug(Augmenter):
    """Resize the shorter edge to ``size`` (:func:`framework.image.resize.resize_short`)."""

    def __init__(self, size: int, interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src: NDArray) -> NDArray:
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to exactly ``size=(w, h)``, whatever the aspect ratio."""

    def __init__(self, size: tuple[int, int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = tuple(size), interp

    def __call__(self, src: NDArray) -> NDArray:
        pixels = pixels_of(src, "ForceResizeAug")
        w, h = self.size
        method = interp_method(self.interp, (pixels.shape[0], pixels.shape[1], h, w))
        return like_source(resize_pixels(pixels, w, h, method), src)


class RandomCropAug(Augmenter):
    """Crop ``size=(w, h)`` at a random position (:func:`framework.image.crop.random_crop`)."""

    def __init__(self, size: tuple[int, int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src: NDArray) -> NDArray:
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """Crop a random area and aspect ratio, resized to ``size`` (:func:`framework.image.crop.random_size_crop`)."""

    def __init__(
        self,
        size: tuple[int, int],
        area: float | tuple[float, float],
        ratio: tuple[float, float],
        interp: int = 2,
        **kwargs: Any,
    ) -> None:
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.area, self.ratio, self.interp = size, area, ratio, interp
        self.kwargs = kwargs

    def __call__(self, src: NDArray) -> NDArray:
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp, **self.kwargs)[0]


class CenterCropAug(Augmenter):
    """Crop ``size=(w, h)`` at the centre."""

    def __init__(self, size: tuple[int, int], interp: int = 2) -> None:
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src: NDArray) -> NDArray:
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Multiply by ``1 + uniform(-brightness, brightness)`` (in place)."""

    def __init__(self, brightness: float) -> None:
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src: NDArray) -> NDArray:
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        src *= alpha
        return src


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean gray level: ``alpha * src + (1 - alpha) * mean_gray`` (in place)."""

    def __init__(self, contrast: float) -> None:
        super().__init__(contrast=contrast)
        self.contrast = contrast

    def __call__(self, src: NDArray) -> NDArray:
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        pixels = pixels_of(src, "ContrastJitterAug")
        gray = pixels * np.array(LUMA, dtype=pixels.dtype)
        # the mean over pixels of the luma, i.e. 3 * mean over every value of the weighted image
        offset = (3.0 * (1.0 - alpha) / gray.size) * gray.sum(dtype=np.float32)
        src *= alpha
        src += float(offset)
        return src


class SaturationJitterAug(Augmenter):
    """Blend each pixel with its own gray level: ``alpha * src + (1 - alpha) * gray`` (in place)."""

    def __init__(self, saturation: float) -> None:
        super().__init__(saturation=saturation)
        self.saturation = saturation

    def __call__(self, src: NDArray) -> NDArray:
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        pixels = pixels_of(src, "SaturationJitterAug")
        gray = (pixels * np.array(LUMA, dtype=pixels.dtype)).sum(axis=2, keepdims=True) * (1.0 - alpha)
        src *= alpha
        src += array(np.broadcast_to(gray, pixels.shape).astype(pixels.dtype), ctx=src.context)
        return src


class HueJitterAug(Augmenter):
    """Rotate the hue by ``uniform(-hue, hue) * 180`` degrees in YIQ space (returns a new array)."""

    def __init__(self, hue: float) -> None:
        super().__init__(hue=hue)
        self.hue = hue

    def __call__(self, src: NDArray) -> NDArray:
        alpha = random.uniform(-self.hue, self.hue)
        cos, sin = math.cos(alpha * math.pi), math.sin(alpha * math.pi)
        rotate = np.array([[1.0, 0.0, 0.0], [0.0, cos, -sin], [0.0, sin, cos]])
        transform = (YIQ_TO_RGB @ rotate @ RGB_TO_YIQ).T
        pixels = pixels_of(src, "HueJitterAug")
        return like_source((pixels @ transform.astype(pixels.dtype)).astype(pixels.dtype), src)


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those that are non-zero) in a random order."""

    def __init__(self, brightness: float, contrast: float, saturation: float) -> None:
        ts: list[Augmenter] = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA lighting noise: add ``eigvec @ (alpha * eigval)``, ``alpha ~ N(0, alphastd)`` (in place)."""

    def __init__(self, alphastd: float, eigval: Any, eigvec: Any) -> None:
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = np.asarray(eigval)
        self.eigvec = np.asarray(eigvec)

    def __call__(self, src: NDArray) -> NDArray:
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        src += array(rgb, ctx=src.context, dtype=src.dtype)
        return src


class ColorNormalizeAug(Augmenter):
    """Subtract ``mean`` and divide by ``std`` per channel (:func:`color_normalize`)."""

    def __init__(self, mean: Any, std: Any) -> None:
        super().__init__(mean=mean, std=std)
        self.mean = _float32_array(mean)
        self.std = _float32_array(std)

    def __call__(self, src: NDArray) -> NDArray:
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability ``p``, replace every channel by the pixel's gray level (returns a new array)."""

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray) -> NDArray:
        if random.random() < self.p:
            pixels = pixels_of(src, "RandomGrayAug")
            return like_source((pixels @ GRAY_MIX.astype(pixels.dtype)).astype(pixels.dtype), src)
        return src


class HorizontalFlipAug(Augmenter):
    """With probability ``p``, mirror left-right (returns a new array)."""

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray) -> NDArray:
        if random.random() < self.p:
            return like_source(pixels_of(src, "HorizontalFlipAug")[:, ::-1], src)
        return src


class CastAug(Augmenter):
    """Cast to ``typ`` (float32 by default): the colour augmenters need float pixels."""

    def __init__(self, typ: str = "float32") -> None:
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src: NDArray) -> NDArray:
        return src.astype(self.typ)


def _statistic(value: Any, default: tuple[float, ...], name: str) -> Any:
    """``True`` -> ImageNet's values; else an array of 1 or 3 values, or None."""
    if value is True:
        return array(default)
    if value is None:
        return None
    if not isinstance(value, np.ndarray | NDArray) or value.shape[0] not in (1, 3):
        raise ImageError(f"CreateAugmenter: {name} must be True, None or an array of 1 or 3 values, got {value!r}")
    return value


def CreateAugmenter(
    data_shape: tuple[int, int, int],
    resize: int = 0,
    rand_crop: bool = False,
    rand_resize: bool = False,
    rand_mirror: bool = False,
    mean: Any = None,
    std: Any = None,
    brightness: float = 0,
    contrast: float = 0,
    saturation: float = 0,
    hue: float = 0,
    pca_noise: float = 0,
    rand_gray: float = 0,
    inter_method: int = 2,
) -> list[Augmenter]:
    """The standard list of augmenters, in MXNet's order: resize, crop, mirror, cast, colour, normalise."""
    if len(data_shape) != 3:
        raise ImageError(f"CreateAugmenter: data_shape must be (channels, height, width), got {data_shape}")
    auglist: list[Augmenter] = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ImageError("CreateAugmenter: rand_resize=True needs rand_crop=True")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, IMAGENET_EIGVAL, IMAGENET_EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    mean = _statistic(mean, IMAGENET_MEAN, "mean")
    std = _statistic(std, IMAGENET_STD, "std")
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist

"""Image transforms as Blocks (``mx.gluon.data.vision.transforms``).

Images are (H, W, C) arrays, or (N, H, W, C) batches, until :class:`ToTensor` makes them
(C, H, W) float32 in [0, 1]; :class:`Normalize` works on that layout. The class kinds
(Block or HybridBlock) and arguments are MXNet 1.9.1's:

* the HybridBlocks (``ToTensor``, ``Normalize``, ``Resize``, ``CropResize``, ``Cast``, the
  random flips and colour changes) call the ``F.image.*`` operators, so they run imperatively,
  hybridize (a ``HybridSequential`` of transforms becomes one cached graph) and trace into a
  network like any layer;
* the Blocks (``Compose``, ``CenterCrop``, ``RandomResizedCrop``, ``Rotate``,
  ``RandomRotation``, ``RandomApply``) decide in Python per call (random crop windows,
  whether to apply at all), so they stay imperative. The crops compute on the array's values
  with NumPy (resizing with the OpenCV-exact bilinear of ``framework/io``); the rotations use
  ``mx.image.imrotate``.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
from PIL import Image

from .... import ndarray as nd
from ....image import imrotate, random_rotate
from ....io.pixels import resize_bilinear
from ....ndarray.ndarray import NDArray
from ....symbol.symbol import Symbol
from ...block import Block, BlockError, HybridBlock
from ...nn import HybridSequential, Sequential

__all__ = [
    "CenterCrop",
    "Cast",
    "Compose",
    "CropResize",
    "Normalize",
    "RandomApply",
    "RandomBrightness",
    "RandomColorJitter",
    "RandomContrast",
    "RandomFlipLeftRight",
    "RandomFlipTopBottom",
    "RandomHue",
    "RandomLighting",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomSaturation",
    "Resize",
    "Rotate",
    "ToTensor",
]


class Compose(Sequential):
    """Apply ``transforms`` in order; each run of two or more HybridBlocks becomes one hybridized graph.

    As in MXNet 1.9.1, consecutive HybridBlock transforms are gathered into a ``HybridSequential``
    that is hybridized, so ``ToTensor`` then ``Normalize`` runs as one cached graph per image.
    """

    def __init__(self, transforms: list[Block]) -> None:
        super().__init__()
        run: list[HybridBlock] = []

        def close_run() -> None:
            if len(run) == 1:
                self.add(run[0])
            elif run:
                graph = HybridSequential()
                graph.add(*run)
                graph.hybridize()
                self.add(graph)
            run.clear()

        with self.name_scope():
            for transform in transforms:
                if isinstance(transform, HybridBlock):
                    run.append(transform)
                    continue
                close_run()
                self.add(transform)
            close_run()


class RandomApply(Sequential):
    """Apply ``transforms`` (a Block) with probability ``p``, else pass the image through (Python's ``random``)."""

    def __init__(self, transforms: Block, p: float = 0.5) -> None:
        super().__init__()
        if not 0 <= p <= 1:
            raise BlockError(f"RandomApply: p must be a probability in [0, 1], got {p!r}")
        self.transforms = transforms
        self.p = p

    def forward(self, x: Any) -> Any:
        if self.p < random.random():
            return x
        return self.transforms(x)


class Cast(HybridBlock):
    """Cast to ``dtype``."""

    def __init__(self, dtype: str = "float32") -> None:
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.cast(x, self._dtype)


# ---------------------------------------------------------------------------- operator transforms
class ToTensor(HybridBlock):
    """(H, W, C) or (N, H, W, C) in [0, 255] -> (C, H, W) or (N, C, H, W) float32 in [0, 1]."""

    def __init__(self) -> None:
        super().__init__()

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """``(x - mean) / std`` per channel of a (C, H, W) or (N, C, H, W) tensor (scalars apply to every channel)."""

    def __init__(self, mean: float | tuple = 0.0, std: float | tuple = 1.0) -> None:
        super().__init__()
        if np.any(np.asarray(std, dtype=np.float64) == 0):
            raise BlockError(f"Normalize: std must not contain 0, got {std!r}")
        self._mean = mean
        self._std = std

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.normalize(x, self._mean, self._std)


class Resize(HybridBlock):
    """Resize to ``size`` ((width, height) or an int for a square); ``keep_ratio`` with an int scales the short side.

    ``interpolation`` is OpenCV's code (0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos).
    """

    def __init__(self, size: int | tuple[int, int], keep_ratio: bool = False, interpolation: int = 1) -> None:
        super().__init__()
        _size_pair(size, "Resize")
        self._size = size
        self._keep = keep_ratio
        self._interpolation = interpolation

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.resize(x, self._size, self._keep, self._interpolation)


class CropResize(HybridBlock):
    """Crop the window at (``x``, ``y``) of ``width`` x ``height``, then resize it to ``size`` when given."""

    def __init__(
        self,
        x: int,
        y: int,
        width: int,
        height: int,
        size: int | tuple[int, int] | None = None,
        interpolation: Any = None,
    ) -> None:
        super().__init__()
        if size is not None:
            _size_pair(size, "CropResize")
        self._window = (x, y, width, height)
        self._size = size
        self._interpolation = 1 if interpolation is None else interpolation

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        out = F.image.crop(x, *self._window)
        if self._size:
            out = F.image.resize(out, self._size, False, self._interpolation)
        return out


class RandomFlipLeftRight(HybridBlock):
    """Mirror the image left-right with probability 1/2."""

    def __init__(self) -> None:
        super().__init__()

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(HybridBlock):
    """Flip the image upside down with probability 1/2."""

    def __init__(self) -> None:
        super().__init__()

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.random_flip_top_bottom(x)


class _RandomFactor(HybridBlock):
    """A random colour change whose strength is drawn from [1 - amount, 1 + amount] by ``F.image.<_op>``."""

    _op = ""

    def __init__(self, amount: float, what: str) -> None:
        super().__init__()
        if amount < 0:
            raise BlockError(f"{type(self).__name__}: {what} must be >= 0, got {amount!r}")
        self._args = (max(0.0, 1.0 - amount), 1.0 + amount)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return getattr(F.image, self._op)(x, *self._args)


class RandomBrightness(_RandomFactor):
    """Scale every pixel by a factor drawn from [1 - brightness, 1 + brightness]."""

    _op = "random_brightness"

    def __init__(self, brightness: float) -> None:
        super().__init__(brightness, "brightness")


class RandomContrast(_RandomFactor):
    """Blend with the image's mean gray level by a factor drawn from [1 - contrast, 1 + contrast]."""

    _op = "random_contrast"

    def __init__(self, contrast: float) -> None:
        super().__init__(contrast, "contrast")


class RandomSaturation(_RandomFactor):
    """Blend each pixel with its own gray level by a factor drawn from [1 - saturation, 1 + saturation]."""

    _op = "random_saturation"

    def __init__(self, saturation: float) -> None:
        super().__init__(saturation, "saturation")


class RandomHue(_RandomFactor):
    """Turn the hue by a number of full turns drawn from [1 - hue, 1 + hue], as MXNet asks the operator.

    A whole turn changes nothing, so the effect is a turn of at most ``hue`` either way.
    """

    _op = "random_hue"

    def __init__(self, hue: float) -> None:
        super().__init__(hue, "hue")


class RandomColorJitter(HybridBlock):
    """Brightness, contrast, saturation and hue changes (each when its amount is > 0) in one operator."""

    def __init__(self, brightness: float = 0, contrast: float = 0, saturation: float = 0, hue: float = 0) -> None:
        super().__init__()
        for what, amount in (("brightness", brightness), ("contrast", contrast), ("saturation", saturation)):
            if amount < 0:
                raise BlockError(f"RandomColorJitter: {what} must be >= 0, got {amount!r}")
        if hue < 0:
            raise BlockError(f"RandomColorJitter: hue must be >= 0, got {hue!r}")
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.random_color_jitter(x, *self._args)


class RandomLighting(HybridBlock):
    """Add AlexNet's PCA colour noise, each component's strength drawn from N(0, ``alpha``)."""

    def __init__(self, alpha: float) -> None:
        super().__init__()
        if alpha < 0:
            raise BlockError(f"RandomLighting: alpha must be >= 0, got {alpha!r}")
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.image.random_lighting(x, self._alpha)


# ---------------------------------------------------------------------------- rotations (float CHW tensors)
def _check_float32(block: Block, x: Any) -> None:
    if not isinstance(x, NDArray) or x.dtype != np.float32:
        raise BlockError(
            f"{block.name} ({type(block).__name__}): this transformation only supports float32 NDArrays (C, H, W) "
            f"or (N, C, H, W), got {getattr(x, 'dtype', type(x).__name__)}; apply it after ToTensor"
        )


class Rotate(Block):
    """Rotate a float32 (C, H, W) tensor by ``rotation_degrees`` (``zoom_in``/``zoom_out``: hide or keep corners)."""

    def __init__(self, rotation_degrees: float, zoom_in: bool = False, zoom_out: bool = False) -> None:
        super().__init__()
        if zoom_in and zoom_out:
            raise BlockError("Rotate: zoom_in and zoom_out cannot both be True")
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x: Any) -> Any:
        _check_float32(self, x)
        return imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotate by an angle drawn from ``angle_limits`` (degrees), with probability ``rotate_with_proba``."""

    def __init__(
        self,
        angle_limits: tuple[float, float],
        zoom_in: bool = False,
        zoom_out: bool = False,
        rotate_with_proba: float = 1.0,
    ) -> None:
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise BlockError(f"RandomRotation: angle_limits must be an ordered (lower, upper), got {angle_limits!r}")
        if not 0 <= rotate_with_proba <= 1:
            raise BlockError(f"RandomRotation: rotate_with_proba must be in [0, 1], got {rotate_with_proba!r}")
        if zoom_in and zoom_out:
            raise BlockError("RandomRotation: zoom_in and zoom_out cannot both be True")
        self._args = ((lower, upper), zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x: Any) -> Any:
        if np.random.random() > self._rotate_with_proba:
            return x
        _check_float32(self, x)
        return random_rotate(x, *self._args)


# ---------------------------------------------------------------------------- crops (Python per call)
def _values(block: Block, x: Any) -> np.ndarray:
    """The NumPy values of ``x``; a Symbol (tracing) gets an error naming the block."""
    if isinstance(x, Symbol):
        raise BlockError(
            f"{block.name} ({type(block).__name__}): this transform is a Block (it draws its crop in Python), so "
            "it cannot be traced into a graph; keep it out of the hybridized network"
        )
    if isinstance(x, NDArray):
        return x.asnumpy()
    if isinstance(x, np.ndarray):
        return x
    raise BlockError(f"{block.name} ({type(block).__name__}): expected an NDArray image, got {type(x).__name__}")


def _like(values: np.ndarray, x: Any) -> Any:
    """``values`` as the same kind of array as ``x`` (an NDArray on x's context, or NumPy)."""
    if isinstance(x, NDArray):
        return nd.array(np.ascontiguousarray(values), ctx=x.context, dtype=values.dtype)
    return values


def _check_image(block: Block, values: np.ndarray, layouts: str) -> None:
    if values.ndim not in (3, 4):
        raise BlockError(
            f"{block.name} ({type(block).__name__}): expected an image of layout {layouts}, got shape {values.shape}"
        )


def _size_pair(size: Any, what: str) -> tuple[int, int]:
    """(width, height) from an int or a pair, as MXNet's transforms take it."""
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(s, (int, np.integer)) for s in size):
        return int(size[0]), int(size[1])
    raise BlockError(f"{what}: size must be an int or a (width, height) pair, got {size!r}")


def resize_image(values: np.ndarray, width: int, height: int) -> np.ndarray:
    """Bilinear resize of an (H, W, C) image: OpenCV's arithmetic for uint8, Pillow's per channel otherwise."""
    if values.dtype == np.uint8:
        return resize_bilinear(values, width, height)
    planes = [Image.fromarray(values[:, :, c].astype(np.float32), mode="F") for c in range(values.shape[2])]
    channels = [np.asarray(plane.resize((width, height), Image.BILINEAR)) for plane in planes]
    return np.stack(channels, axis=2).astype(values.dtype)


def _each_image(values: np.ndarray, fn: Any) -> np.ndarray:
    """``fn`` on an (H, W, C) image or on every image of an (N, H, W, C) batch."""
    if values.ndim == 3:
        return fn(values)
    return np.stack([fn(image) for image in values])


def _scale_down(src_w: int, src_h: int, w: int, h: int) -> tuple[int, int]:
    """Shrink a (w, h) crop, keeping its ratio, until it fits in (src_w, src_h)."""
    if h > src_h:
        w, h = w * src_h / h, src_h
    if w > src_w:
        w, h = src_w, h * src_w / w
    return int(w), int(h)


def _crop_resize(image: np.ndarray, x0: int, y0: int, w: int, h: int, size: tuple[int, int]) -> np.ndarray:
    out = image[y0 : y0 + h, x0 : x0 + w]
    if (w, h) != size:
        out = resize_image(np.ascontiguousarray(out), *size)
    return out


def center_crop(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The centre crop of ``size`` (width, height), shrunk to fit and resized back if the image is smaller."""
    src_h, src_w = image.shape[:2]
    w, h = _scale_down(src_w, src_h, *size)
    x0, y0 = (src_w - w) // 2, (src_h - h) // 2
    return _crop_resize(image, x0, y0, w, h, size)


class CenterCrop(Block):
    """Crop the centre to ``size`` ((width, height) or an int)."""

    def __init__(self, size: int | tuple[int, int], interpolation: int = 1) -> None:
        super().__init__()
        self._size = _size_pair(size, "CenterCrop")

    def forward(self, x: Any) -> Any:
        values = _values(self, x)
        _check_image(self, values, "(H, W, C) or (N, H, W, C)")
        return _like(_each_image(values, lambda image: center_crop(image, self._size)), x)


class RandomResizedCrop(Block):
    """A crop of random area (``scale`` of the image) and aspect ``ratio``, resized to ``size``.

    Ten draws look for a crop that fits; if none does, the centre crop is used.
    """

    def __init__(
        self,
        size: int | tuple[int, int],
        scale: tuple[float, float] = (0.08, 1.0),
        ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: int = 1,
    ) -> None:
        super().__init__()
        self._size = _size_pair(size, "RandomResizedCrop")
        if not 0 < scale[0] <= scale[1]:
            raise BlockError(f"RandomResizedCrop: scale must be (low, high) with 0 < low <= high, got {scale!r}")
        if not 0 < ratio[0] <= ratio[1]:
            raise BlockError(f"RandomResizedCrop: ratio must be (low, high) with 0 < low <= high, got {ratio!r}")
        self._scale = scale
        self._ratio = ratio

    def _crop(self, image: np.ndarray) -> np.ndarray:
        src_h, src_w = image.shape[:2]
        area = src_h * src_w
        log_ratio = (math.log(self._ratio[0]), math.log(self._ratio[1]))
        for _ in range(10):
            target_area = np.random.uniform(*self._scale) * area
            aspect = math.exp(np.random.uniform(*log_ratio))
            w = round(math.sqrt(target_area * aspect))
            h = round(math.sqrt(target_area / aspect))
            if 0 < w <= src_w and 0 < h <= src_h:
                x0 = np.random.randint(0, src_w - w + 1)
                y0 = np.random.randint(0, src_h - h + 1)
                return _crop_resize(image, x0, y0, w, h, self._size)
        return center_crop(image, self._size)

    def forward(self, x: Any) -> Any:
        values = _values(self, x)
        _check_image(self, values, "(H, W, C) or (N, H, W, C)")
        return _like(_each_image(values, self._crop), x)

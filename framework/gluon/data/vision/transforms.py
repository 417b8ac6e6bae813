"""Image transforms as Blocks (``mx.gluon.data.vision.transforms``).

Images are (H, W, C) arrays, or (N, H, W, C) batches, until :class:`ToTensor` makes them
(C, H, W) float32 in [0, 1]; :class:`Normalize` works on that layout. The class kinds
(Block or HybridBlock) and arguments are MXNet 1.9.1's. MXLab computes them with NumPy on
the array's values (resizing with the OpenCV-exact bilinear of ``framework/io``), so they
run imperatively, in DataLoader workers, without the ``mx.nd.image`` operators; only
:class:`Cast` is a graph operation. The others raise a clear error when traced
(``hybridize`` on a network containing them): once ``mx.nd.image.to_tensor``, ``normalize``,
``resize``, ``flip_left_right`` and the ``random_*`` colour operators exist, each
``hybrid_forward`` can call ``F.image.<op>`` instead and become traceable.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PIL import Image

from .... import ndarray as nd
from ....io.pixels import resize_bilinear
from ....ndarray.ndarray import NDArray
from ....symbol.symbol import Symbol
from ...block import Block, BlockError, HybridBlock
from ...nn import Sequential

__all__ = [
    "CenterCrop",
    "Cast",
    "Compose",
    "Normalize",
    "RandomBrightness",
    "RandomColorJitter",
    "RandomContrast",
    "RandomFlipLeftRight",
    "RandomFlipTopBottom",
    "RandomHue",
    "RandomLighting",
    "RandomResizedCrop",
    "RandomSaturation",
    "Resize",
    "ToTensor",
]


class Compose(Sequential):
    """Apply ``transforms`` in order."""

    def __init__(self, transforms: list[Block]) -> None:
        super().__init__()
        with self.name_scope():
            for transform in transforms:
                self.add(transform)


class Cast(HybridBlock):
    """Cast to ``dtype`` (a graph operation: traceable)."""

    def __init__(self, dtype: str = "float32") -> None:
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.cast(x, self._dtype)


def _values(block: Block, x: Any) -> np.ndarray:
    """The NumPy values of ``x``; a Symbol (tracing) gets an error naming the block."""
    if isinstance(x, Symbol):
        raise BlockError(
            f"{block.name} ({type(block).__name__}): this transform computes on array values in MXLab and "
            "cannot be traced into a graph; do not hybridize it (keep transforms out of the hybridized network)"
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


class _ValueTransform(HybridBlock):
    """A transform computed on the values of one image or batch: subclasses implement ``_apply``."""

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        values = _values(self, x)
        return _like(self._apply(values), x)

    def _apply(self, values: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class ToTensor(_ValueTransform):
    """(H, W, C) or (N, H, W, C) in [0, 255] -> (C, H, W) or (N, C, H, W) float32 in [0, 1]."""

    def _apply(self, values: np.ndarray) -> np.ndarray:
        _check_image(self, values, "(H, W, C) or (N, H, W, C)")
        axes = (2, 0, 1) if values.ndim == 3 else (0, 3, 1, 2)
        return (values.astype(np.float32) / 255.0).transpose(axes)


class Normalize(_ValueTransform):
    """``(x - mean) / std`` per channel of a (C, H, W) or (N, C, H, W) tensor (scalars apply to every channel)."""

    def __init__(self, mean: float | tuple = 0.0, std: float | tuple = 1.0) -> None:
        super().__init__()
        self._mean = np.asarray(mean, dtype=np.float32).reshape(-1)
        self._std = np.asarray(std, dtype=np.float32).reshape(-1)
        if np.any(self._std == 0):
            raise BlockError(f"{self.name} (Normalize): std must not contain 0, got {std!r}")

    def _apply(self, values: np.ndarray) -> np.ndarray:
        _check_image(self, values, "(C, H, W) or (N, C, H, W)")
        channels = values.shape[-3]
        for name, stat in (("mean", self._mean), ("std", self._std)):
            if stat.size not in (1, channels):
                raise BlockError(
                    f"{self.name} (Normalize): {name} has {stat.size} values for an input of {channels} channels"
                )
        shape = (-1, 1, 1)
        return ((values.astype(np.float32) - self._mean.reshape(shape)) / self._std.reshape(shape)).astype(np.float32)


# ---------------------------------------------------------------------------- geometry
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


class Resize(_ValueTransform):
    """Resize to ``size`` ((width, height) or an int for a square); ``keep_ratio`` with an int scales the short side."""

    def __init__(self, size: int | tuple[int, int], keep_ratio: bool = False, interpolation: int = 1) -> None:
        super().__init__()
        self._keep = keep_ratio
        self._size = size
        _size_pair(size, "Resize")
        if interpolation != 1:
            raise BlockError(f"Resize: MXLab has bilinear interpolation only (interpolation=1), got {interpolation}")

    def _target(self, height: int, width: int) -> tuple[int, int]:
        if self._keep and isinstance(self._size, int):
            if height > width:
                return self._size, int(self._size * height / width)
            return int(self._size * width / height), self._size
        return _size_pair(self._size, "Resize")

    def _apply(self, values: np.ndarray) -> np.ndarray:
        _check_image(self, values, "(H, W, C) or (N, H, W, C)")
        height, width = values.shape[-3:-1]
        new_w, new_h = self._target(height, width)
        return _each_image(values, lambda image: resize_image(image, new_w, new_h))


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


class RandomFlipLeftRight(_ValueTransform):
    """Mirror the image left-right with probability 1/2."""

    _axis = -2  # width of (H, W, C) / (N, H, W, C)

    def _apply(self, values: np.ndarray) -> np.ndarray:
        _check_image(self, values, "(H, W, C) or (N, H, W, C)")
        if np.random.uniform() < 0.5:
            return np.flip(values, axis=self._axis)
        return values


class RandomFlipTopBottom(RandomFlipLeftRight):
    """Flip the image upside down with probability 1/2."""

    _axis = -3


# ---------------------------------------------------------------------------- colour
GRAY_WEIGHTS = np.array([0.299, 0.587, 0.114], dtype=np.float32)  # ITU-R 601 luma of RGB


def _as_float(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32)


def _back(result: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``result`` in ``like``'s dtype; integer images are rounded and clipped to their range."""
    if np.issubdtype(like.dtype, np.integer):
        info = np.iinfo(like.dtype)
        return np.clip(np.rint(result), info.min, info.max).astype(like.dtype)
    return result.astype(like.dtype)


class _ColorTransform(_ValueTransform):
    """A random colour change of an RGB (H, W, 3) image or batch, computed in float32."""

    def __init__(self, amount: float, what: str) -> None:
        super().__init__()
        if amount < 0:
            raise BlockError(f"{type(self).__name__}: {what} must be >= 0, got {amount!r}")
        self._amount = float(amount)

    def _apply(self, values: np.ndarray) -> np.ndarray:
        _check_image(self, values, "(H, W, 3) or (N, H, W, 3)")
        if values.shape[-1] != 3:
            raise BlockError(f"{self.name} ({type(self).__name__}): expects 3 RGB channels, got shape {values.shape}")
        return _back(self._change(_as_float(values)), values)

    def _change(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class RandomBrightness(_ColorTransform):
    """Scale every pixel by ``1 + u``, ``u`` uniform in [-brightness, brightness]."""

    def __init__(self, brightness: float) -> None:
        super().__init__(brightness, "brightness")

    def _change(self, x: np.ndarray) -> np.ndarray:
        return x * (1.0 + np.random.uniform(-self._amount, self._amount))


class RandomContrast(_ColorTransform):
    """Blend with the image's mean gray level: ``alpha * x + (1 - alpha) * mean``, alpha in 1 +- contrast."""

    def __init__(self, contrast: float) -> None:
        super().__init__(contrast, "contrast")

    def _change(self, x: np.ndarray) -> np.ndarray:
        alpha = 1.0 + np.random.uniform(-self._amount, self._amount)
        mean = (x @ GRAY_WEIGHTS).mean(axis=(-2, -1), keepdims=True)[..., None]
        return x * alpha + mean * (1.0 - alpha)


class RandomSaturation(_ColorTransform):
    """Blend each pixel with its own gray level: ``alpha * x + (1 - alpha) * gray``."""

    def __init__(self, saturation: float) -> None:
        super().__init__(saturation, "saturation")

    def _change(self, x: np.ndarray) -> np.ndarray:
        alpha = 1.0 + np.random.uniform(-self._amount, self._amount)
        gray = (x @ GRAY_WEIGHTS)[..., None]
        return x * alpha + gray * (1.0 - alpha)


# RGB <-> YIQ: a hue shift is a rotation of the (I, Q) chroma plane
_RGB_TO_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]], dtype=np.float32)
_YIQ_TO_RGB = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]], dtype=np.float32)


class RandomHue(_ColorTransform):
    """Rotate the chroma by an angle uniform in [-hue, hue] half-turns (YIQ space)."""

    def __init__(self, hue: float) -> None:
        super().__init__(hue, "hue")

    def _change(self, x: np.ndarray) -> np.ndarray:
        angle = np.random.uniform(-self._amount, self._amount) * math.pi
        cos, sin = math.cos(angle), math.sin(angle)
        rotate = np.array([[1.0, 0.0, 0.0], [0.0, cos, -sin], [0.0, sin, cos]], dtype=np.float32)
        matrix = _YIQ_TO_RGB @ rotate @ _RGB_TO_YIQ
        return x @ matrix.T


class RandomColorJitter(Sequential):
    """Brightness, contrast, saturation and hue changes, each enabled when its amount is > 0, in random order."""

    def __init__(self, brightness: float = 0, contrast: float = 0, saturation: float = 0, hue: float = 0) -> None:
        super().__init__()
        with self.name_scope():
            for cls, amount in (
                (RandomBrightness, brightness),
                (RandomContrast, contrast),
                (RandomSaturation, saturation),
                (RandomHue, hue),
            ):
                if amount > 0:
                    self.add(cls(amount))

    def forward(self, x: Any) -> Any:
        children = list(self._children.values())
        for i in np.random.permutation(len(children)):
            x = children[i](x)
        return x


# AlexNet's PCA colour noise: eigenvalues and eigenvectors of ImageNet's RGB covariance
_EIGVAL = np.array([55.46, 4.794, 1.148], dtype=np.float32)
_EIGVEC = np.array(
    [[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]], dtype=np.float32
)


class RandomLighting(_ColorTransform):
    """Add AlexNet's PCA noise: ``eigvec @ (alpha * eigval)`` with alpha ~ N(0, alpha_std) per component."""

    def __init__(self, alpha: float) -> None:
        super().__init__(alpha, "alpha")

    def _change(self, x: np.ndarray) -> np.ndarray:
        alpha = np.random.normal(0.0, self._amount, size=3).astype(np.float32)
        return x + _EIGVEC @ (alpha * _EIGVAL)

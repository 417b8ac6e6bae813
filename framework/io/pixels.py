"""Pixel operations on decoded images that must match MXNet's OpenCV results, not just look alike.

``ImageRecordIter`` (and ``mx.image``, ``im2rec``) resize with the ``inter_method`` codes of
MXNet; bilinear resizing is done here in OpenCV's fixed point (weights in 1/2048 steps) so
that pixels equal MXNet's, the other filters come from Pillow. Kept apart from the iterator
because the image package and the ``.rec`` packer use the same arithmetic.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from PIL import Image

# inter_method -> Pillow resampling filter name (MXNet: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 lanczos)
INTER_METHODS = {0: "NEAREST", 1: "BILINEAR", 2: "BICUBIC", 3: "BOX", 4: "LANCZOS"}
AUTO_INTER, RANDOM_INTER = 9, 10  # per resize: cubic to enlarge, area to shrink, else bilinear; one of 0-4 at random

COEF_BITS = 11  # OpenCV's INTER_RESIZE_COEF_BITS: interpolation weights in 1/2048 steps


@functools.lru_cache(maxsize=512)
def _linear_taps(n_in: int, n_out: int, channels: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each output sample along one axis reads, and with which fixed-point weights.

    Returns ``(index, weight)`` of shape ``(2, channels, n_out)``: ``[0]`` is the left (or
    upper) neighbour, ``[1]`` the right (or lower) one, with one plane per channel (the
    flat index of that channel's value in an interleaved row whose pixels are ``step``
    values apart), so that whole image rows can be gathered and weighted in one NumPy call,
    channel by channel. Cached per size: many images share one.
    """
    src = ((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5).astype(np.float32)  # pixel centres line up
    lo = np.floor(src).astype(np.intp)
    frac = src - lo.astype(np.float32)
    frac[lo < 0], lo[lo < 0] = 0, 0  # clamp at the borders (weight 1 on the edge pixel)
    last = lo >= n_in - 1
    frac[last], lo[last] = 0, n_in - 1
    w0 = np.rint((1 - frac) * (1 << COEF_BITS)).astype(np.int32)
    index = np.stack([lo, np.minimum(lo + 1, n_in - 1)])
    weight = np.stack([w0, (1 << COEF_BITS) - w0])
    index = index[:, None, :] * step + np.arange(channels)[None, :, None]
    weight = np.broadcast_to(weight[:, None, :], index.shape).copy()
    index.flags.writeable = weight.flags.writeable = False
    return index, weight


@functools.lru_cache(maxsize=4096)
def _window_taps(n_in: int, n_out: int, channels: int, step: int, start: int, count: int) -> tuple[np.ndarray, ...]:
    """The taps of ``count`` output samples from ``start`` on, flattened as the gathers use them.

    ``(index, weight, first, last)``: index and weight of shape ``(2 * channels * count,)``
    (both neighbours, channel by channel), and the first and last source sample read.
    Cached per window: a random crop has a few hundred positions per size, and building
    these small arrays per image costs more Python (GIL-held) time than their gather.
    """
    index, weight = (t[:, :, start : start + count].reshape(-1) for t in _linear_taps(n_in, n_out, channels, step))
    index.flags.writeable = weight.flags.writeable = False
    return index, weight, int(index[0]) // step, int(index[-1]) // step


def resize_bilinear(
    pixels: np.ndarray,
    width: int,
    height: int,
    region: tuple[int, int, int, int] | None = None,
) -> np.ndarray:
    """Bilinear resize as OpenCV's ``INTER_LINEAR`` for uint8 images (MXNet's default).

    Each output pixel blends the 2x2 source pixels around its centre, without antialiasing
    (Pillow's bilinear filter widens when shrinking, which blurs; OpenCV's does not). The
    arithmetic is OpenCV's fixed point: 11-bit weights, a horizontal pass into integers
    with 4 fractional bits dropped, a vertical pass keeping the high 16 bits of each
    product (as its SIMD code does). Shrinking gives MXNet's output exactly; enlarging may
    differ by one level at the borders.

    ``region=(y, x, h, w)`` computes only that window of the resized image: a crop that
    follows the resize then costs only the pixels it keeps. The work is a handful of large
    NumPy calls (each releases the GIL), so that it runs well on several threads.

    ``pixels`` may be a view whose pixels lie further apart than their channels (the RGB
    view of a 4-byte-per-pixel buffer, :func:`framework.io.decode.decode_pixels`): it is read
    in place, without a copy.
    """
    src_h, src_w = pixels.shape[:2]
    channels = pixels.shape[2] if pixels.ndim == 3 else 1
    y, x, h, w = region if region is not None else (0, 0, height, width)
    if (src_h, src_w) == (height, width):  # OpenCV copies an image that keeps its size
        return pixels[y : y + h, x : x + w]
    rows, row_weight, first, last = _window_taps(src_h, height, 1, 1, y, h)  # upper rows, then lower rows
    if last - first < 2 * h:  # gather the band of source rows this window reads as it is (a view)
        band, rows = pixels[first : last + 1], rows - first
    else:  # strong shrinking: gather only the rows in use
        used, rows = np.unique(rows, return_inverse=True)
        band = np.take(pixels, used, axis=0)
    flat, step = _rows_of_values(band, channels)
    cols, col_weight, _, _ = _window_taps(src_w, width, channels, step, x, w)
    # horizontal pass: left and right neighbours gathered and weighted in one go
    horizontal = np.multiply(np.take(flat, cols, axis=1), col_weight)  # uint8 * int32 -> int32
    width_c = w * channels
    horizontal = np.add(horizontal[:, :width_c], horizontal[:, width_c:])
    horizontal >>= 4
    # vertical pass: upper and lower neighbours, the high 16 bits of each product
    vertical = np.take(horizontal, rows.reshape(-1), axis=0)
    vertical *= row_weight[:, None]
    vertical >>= 16
    total = np.add(vertical[:h], vertical[h:])
    total += 2
    out = np.right_shift(total, 2, out=np.empty(total.shape, np.uint8), casting="unsafe")  # 0..255: fits
    if pixels.ndim == 2:
        return out
    # computed channel-planar, (h, channels, w); returned as an (h, w, channels) view of it,
    # so that the (channels, h, w) layout the network wants is a cheap transpose
    return out.reshape(h, channels, w).transpose(0, 2, 1)


def _rows_of_values(pixels: np.ndarray, channels: int) -> tuple[np.ndarray, int]:
    """A 2-D view (rows, values) of an HWC uint8 image, and the step between its pixels in a row.

    A contiguous image is a plain reshape. A view whose pixels are further apart (``step``
    bytes, channels adjacent) becomes rows spanning from its first value to its last: the
    bytes between pixels (an RGBX pad byte) are inside the view's memory but never gathered.
    """
    if pixels.flags.c_contiguous:
        return pixels.reshape(len(pixels), -1), channels
    if pixels.ndim != 3 or pixels.strides[2] != 1 or pixels.strides[1] < channels:
        pixels = np.ascontiguousarray(pixels)
        return pixels.reshape(len(pixels), -1), channels
    step = pixels.strides[1]
    span = (pixels.shape[1] - 1) * step + channels
    return np.lib.stride_tricks.as_strided(pixels, (len(pixels), span), (pixels.strides[0], 1), writeable=False), step


def resize_pixels(pixels: np.ndarray, width: int, height: int, resample: Any) -> np.ndarray:
    """Resize an HWC uint8 image: OpenCV's bilinear (``resample=None``) or a Pillow filter."""
    if resample is None:
        return np.ascontiguousarray(resize_bilinear(pixels, width, height))
    return np.asarray(Image.fromarray(pixels).resize((width, height), resample))


def concrete_inter_method(inter_method: int, src_w: int, src_h: int, dst_w: int, dst_h: int, draw: int = 0) -> int:
    """The method (0-4) a resize uses: ``inter_method`` itself, or what 9 (auto) / 10 (random, from ``draw``) pick."""
    if inter_method == AUTO_INTER:
        if dst_w > src_w and dst_h > src_h:
            return 2
        if dst_w < src_w and dst_h < src_h:
            return 3
        return 1
    if inter_method == RANDOM_INTER:
        return draw % 5
    return inter_method


def resize_with(pixels: np.ndarray, width: int, height: int, inter_method: int, draw: int = 0) -> np.ndarray:
    """Resize with ``inter_method`` (0-4, 9 or 10)."""
    code = concrete_inter_method(inter_method, pixels.shape[1], pixels.shape[0], width, height, draw)
    return resize_pixels(pixels, width, height, pillow_filter(code))


def pillow_filter(inter_method: int) -> Any:
    """Pillow's resampling filter for ``inter_method``; None for bilinear (done as OpenCV does here)."""
    method = INTER_METHODS[inter_method]
    return None if method == "BILINEAR" else getattr(Image.Resampling, method)


def rgb_to_gray(pixels: np.ndarray) -> np.ndarray:
    """OpenCV's ``BGR2GRAY`` in fixed point (0.299 R + 0.587 G + 0.114 B, 14-bit weights)."""
    rgb = pixels.astype(np.uint32)
    return ((rgb[..., 0] * 4899 + rgb[..., 1] * 9617 + rgb[..., 2] * 1868 + 8192) >> 14).astype(np.uint8)

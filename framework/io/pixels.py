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
def _window_taps(
    n_in: int, n_out: int, channels: int, step: int, start: int, count: int, mirror: bool = False
) -> tuple[np.ndarray, ...]:
    """The taps of ``count`` output samples from ``start`` on, flattened as the gathers use them.

    ``(index, weight, first, last)``: index and weight of shape ``(2 * channels * count,)``
    (both neighbours, channel by channel), and the first and last source sample read.
    ``mirror`` lists the samples last to first: each is computed as before, so the result
    is exactly the window flipped. Cached per window: a random crop has a few hundred
    positions per size, and building these small arrays per image costs more Python
    (GIL-held) time than their gather.
    """
    window = slice(start, start + count) if not mirror else slice(start + count - 1, start - 1 if start else None, -1)
    index, weight = (t[:, :, window].reshape(-1) for t in _linear_taps(n_in, n_out, channels, step))
    index.flags.writeable = weight.flags.writeable = False
    return index, weight, int(index.min()) // step, int(index.max()) // step


class BilinearResizer:
    """OpenCV's bilinear resize of several images to one window size, the vertical pass done once for all.

    The arithmetic is OpenCV's ``INTER_LINEAR`` for uint8 in fixed point: 11-bit weights, a
    horizontal pass into integers with 4 fractional bits dropped, a vertical pass keeping the
    high 16 bits of each product (as its SIMD code does). Shrinking gives MXNet's output
    exactly; enlarging may differ by one level at the borders. No antialiasing: Pillow's
    bilinear filter widens when shrinking, which blurs; OpenCV's does not.

    Each :meth:`add` runs one image's horizontal pass (two NumPy calls over the source rows
    its window reads) into a shared block of rows; :meth:`finish` runs the vertical pass of
    all of them in six calls, because every image has the same output size. A call holds the
    GIL for its set-up (5 to 10 us in a pipeline) and releases it for the pixel loop, so on
    several threads the number of calls, not the pixels, is what stays serial. The arrays
    are reused from one round to the next (no fresh pages to fault in): one resizer per
    thread, and the result of :meth:`finish` is valid until the next :meth:`begin`.
    """

    def __init__(self) -> None:
        self._spaces: dict[str, np.ndarray] = {}
        self.begin(0, 0, 1)

    def begin(self, height: int, width: int, channels: int) -> None:
        """Start a round of images, each resized and cropped to ``(height, width)`` with ``channels`` channels."""
        self.height, self.width, self.channels = height, width, channels
        self._rows = 0  # rows of the shared horizontal block used so far
        self._taps: list[np.ndarray] = []  # per image: its vertical taps, rows of its own band
        self._weights: list[np.ndarray] = []
        self._shifts: list[int] = []  # per image: where its band's row 0 lies in the shared block

    def _space(self, name: str, rows: int, values: int, dtype: type, keep: int = 0) -> np.ndarray:
        """A reused ``(rows, values)`` array of ``dtype`` (one dtype per name); its first ``keep`` rows
        survive when it has to grow."""
        size = rows * values
        space = self._spaces.get(name)
        if space is None or len(space) < size:
            grown = np.empty(max(size, 2 * len(space) if space is not None else 0), dtype)
            if keep and space is not None:
                grown[: keep * values] = space[: keep * values]
            self._spaces[name] = space = grown
        return space[:size].reshape(rows, values)

    def add(
        self,
        pixels: np.ndarray,
        width: int,
        height: int,
        y: int,
        x: int,
        mirror: bool = False,
        channels: int | None = None,
    ) -> None:
        """Resize ``pixels`` (HWC or HW uint8) to ``(height, width)``, keeping the window at ``(y, x)``.

        Only the window is computed: a crop that follows the resize costs only the pixels it
        keeps. ``mirror`` flips the window left-right. ``channels`` (default: all) reads the first
        channels only, so an RGB image decoded 4 bytes per pixel (RGBX) is read in place, the
        pad byte never gathered. ``pixels`` may also be a view whose pixels lie further apart
        than their channels (see :func:`_rows_of_values`).
        """
        h, w = self.height, self.width
        if channels is None:
            channels = pixels.shape[2] if pixels.ndim == 3 else 1
        if channels != self.channels:
            raise ValueError(f"BilinearResizer: an image of {channels} channels in a round of {self.channels}")
        rows, row_weight, first, last = _window_taps(pixels.shape[0], height, 1, 1, y, h)  # upper rows, then lower
        if last - first < 2 * h:  # gather the band of source rows this window reads as it is (a view)
            band, shift = pixels[first : last + 1], self._rows - first
        else:  # strong shrinking: gather only the rows in use
            used, rows = np.unique(rows, return_inverse=True)
            band, shift = np.take(pixels, used, axis=0), self._rows
        flat, step = _rows_of_values(band, channels)
        cols, col_weight, _, _ = _window_taps(pixels.shape[1], width, channels, step, x, w, mirror)
        # horizontal pass: left and right neighbours gathered in one call, weighted and summed into the
        # block in another (einsum: the products are never stored; uint8 * int32 sums exactly in int32)
        n, width_c = len(flat), w * channels
        taken = self._space("taken", n, 2 * width_c, np.uint8)
        np.take(flat, cols, axis=1, out=taken, mode="clip")  # (indices are in range; "raise" would buffer)
        block = self._space("block", self._rows + n, width_c, np.int32, keep=self._rows)
        np.einsum("rnv,nv->rv", taken.reshape(n, 2, width_c), col_weight.reshape(2, width_c), out=block[self._rows :])
        self._taps.append(rows)
        self._weights.append(row_weight)
        self._shifts.append(shift)
        self._rows += n

    def finish(self) -> np.ndarray:
        """The windows of the images added since :meth:`begin`, ``(images, height, channels, width)`` uint8.

        Channel-planar rows, so that the ``(channels, height, width)`` layout a network wants
        is a transpose away. The array is reused by the next round.
        """
        if not self._taps:
            raise ValueError("BilinearResizer.finish: no image was added since begin()")
        count, h, width_c = len(self._taps), self.height, self.width * self.channels
        block = self._space("block", self._rows, width_c, np.int32)
        block >>= 4  # the horizontal pass's last step, for all images at once
        # vertical pass: upper and lower neighbours, the high 16 bits of each product
        taps = np.concatenate(self._taps)
        taps.reshape(count, 2 * h)[...] += np.array(self._shifts, dtype=taps.dtype)[:, None]
        vertical = self._space("vertical", count * 2 * h, width_c, np.int32)
        np.take(block, taps, axis=0, out=vertical, mode="clip")  # (indices are in range; "raise" would buffer)
        vertical *= np.concatenate(self._weights)[:, None]
        vertical >>= 16
        pairs = vertical.reshape(count, 2, h * width_c)  # per image: its upper rows, then its lower rows
        total = np.add(pairs[:, 0], pairs[:, 1], out=self._space("total", count, h * width_c, np.int32))
        total += 2
        out = np.right_shift(total, 2, out=self._space("out", count, h * width_c, np.uint8), casting="unsafe")  # fits
        return out.reshape(count, h, self.channels, self.width)


def resize_bilinear(
    pixels: np.ndarray,
    width: int,
    height: int,
    region: tuple[int, int, int, int] | None = None,
) -> np.ndarray:
    """Bilinear resize as OpenCV's ``INTER_LINEAR`` for uint8 images (MXNet's default), one image.

    The arithmetic is :class:`BilinearResizer`'s. ``region=(y, x, h, w)`` computes only that
    window of the resized image: a crop that follows the resize then costs only the pixels it
    keeps. ``pixels`` may be a view whose pixels lie further apart than their channels (the
    RGB view of a 4-byte-per-pixel buffer, :func:`framework.io.decode.decode_pixels`): it is
    read in place, without a copy.
    """
    src_h, src_w = pixels.shape[:2]
    y, x, h, w = region if region is not None else (0, 0, height, width)
    if (src_h, src_w) == (height, width):  # OpenCV copies an image that keeps its size
        return pixels[y : y + h, x : x + w]
    resizer = BilinearResizer()
    resizer.begin(h, w, pixels.shape[2] if pixels.ndim == 3 else 1)
    resizer.add(pixels, width, height, y, x)
    out = resizer.finish()[0]
    if pixels.ndim == 2:
        return out.reshape(h, w)
    # computed channel-planar, (h, channels, w); returned as an (h, w, channels) view of it,
    # so that the (channels, h, w) layout the network wants is a cheap transpose
    return out.transpose(0, 2, 1)


def _rows_of_values(pixels: np.ndarray, channels: int) -> tuple[np.ndarray, int]:
    """A 2-D view (rows, values) of an HWC uint8 image, and the step between its pixels in a row.

    A contiguous image is a plain reshape (its pixels ``pixels.shape[2]`` values apart, of
    which the first ``channels`` are read). A view whose pixels are further apart (``step``
    bytes, channels adjacent) becomes rows spanning from its first value to its last: the
    bytes between pixels (an RGBX pad byte) are inside the view's memory but never gathered.
    """
    if pixels.flags.c_contiguous:
        return pixels.reshape(len(pixels), -1), pixels.shape[2] if pixels.ndim == 3 else 1
    if pixels.ndim != 3 or pixels.strides[2] != 1 or pixels.strides[1] < channels:
        pixels = np.ascontiguousarray(pixels)
        return pixels.reshape(len(pixels), -1), pixels.shape[2] if pixels.ndim == 3 else 1
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

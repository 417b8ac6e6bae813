"""``ImageRecordIter``: decode and augment images from a ``.rec`` file on several threads.

The pipeline, per epoch::

    consumer (next())            loader thread                    preprocess_threads workers
    ------------------           ----------------------------     -----------------------------
    plan the epoch: order,  -->  for each batch: read its    -->  unpack header + label,
    batches (round_batch)        records (one file handle),       decode (Pillow), resize,
                                 draw the random numbers,         crop, mirror, normalise,
                                 allocate the batch NDArray,      write into the batch NDArray
                                 submit a few pieces of work,
    wait for the next batch <--  queue it (prefetch_buffer
    hand it out                  batches ahead) and go on

Memory stays bounded whatever the file holds: the queue holds at most ``prefetch_buffer``
batches (the loader blocks when it is full), and an image whose header declares more than
``max_decoded_pixels`` pixels (default 64 megapixels) is refused, naming the record, before
it is decoded: a few hundred KiB of PNG can otherwise unpack to gigabytes. (Pillow refuses
images above twice its own ``Image.MAX_IMAGE_PIXELS`` regardless.)

The loader never waits for a batch to be finished, so the workers always have work; on a
CPU context they write straight into the memory of the batch's NDArray (a block from the
storage pool), so no copy follows. Pillow's decoder and NumPy's arithmetic release the GIL,
so the workers really run in parallel; the Python glue between them does not, which is
what keeps 2 threads from being twice as fast as 1 (``benchmarks/io.py`` measures it).

Each image goes through MXNet's default augmenter in MXNet's order:

1. ``resize > 0``: the shorter edge becomes ``resize`` (the other ``resize * long // short``);
2. crop ``data_shape[1:]``: at a random position with ``rand_crop``, else at the centre;
3. flip left-right with ``mirror``, or with probability 1/2 with ``rand_mirror``;
4. ``(pixel - mean) * (scale / std)`` per channel (RGB order), in float32; skipped for
   ``dtype='uint8'``.

When any of MXNet's other augmentation parameters is set (``pad``, ``max_rotate_angle``,
``random_resized_crop``, ``brightness``, ``pca_noise``, ...), the image takes the general path
of :mod:`framework.io.image_aug` between the resize and the mirror: pad and warp, the crop,
the colour jitters, and a contrast/illumination jitter in the normalisation.

``data_shape[0]`` chooses the colour mode: 1 grayscale, 3 RGB, 4 RGBA. Labels come from the
record header: a scalar label needs ``label_width=1``; an array label must have exactly
``label_width`` values.

The random numbers of an epoch come from a generator seeded with ``(seed_aug, epoch)``
and drawn batch by batch in the loader, so the output does not depend on how the work is
split between threads. Shuffling permutes the records with ``seed``. (Both differ from
MXNet's C++ generators.) The default bilinear resize (``inter_method=1``) reproduces
OpenCV's fixed-point arithmetic (:func:`resize_bilinear`), so its output equals MXNet's;
the other ``inter_method`` values use Pillow's filters, which differ from OpenCV's; 9 picks
per resize (bicubic to enlarge, area to shrink, else bilinear) and 10 one of 0-4 per image.

``num_parts`` / ``part_index`` split the file as MXNet's readers do: with an index file by
record count (``ceil(n / num_parts)`` records per part), without one by byte ranges of
``ceil(size / num_parts)`` rounded up to 4 (a part holds the records that start in its
range). ``round_batch`` (default True) completes the last batch from the start of the part
and starts the next epoch after the records used (see :func:`framework.io.base.plan_epoch`);
without it the last batch is zero-filled and ``pad`` counts the missing images.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from PIL import Image

from .. import recordio
from ..context import Context, current_context
from ..ndarray import empty
from .base import (
    DataBatch,
    DataDesc,
    DataIterError,
    PreparedBatchIter,
    check_batch_size,
    check_part,
    ignore_unknown,
    plan_epoch,
    to_ndarray,
)
from .image_aug import DEFAULTS as AUGMENTATION_DEFAULTS
from .image_aug import AugmentError, ExtraAugmentation

_END = object()
DTYPES = ("float32", "float16", "float64", "uint8")
# inter_method -> Pillow resampling filter name (MXNet: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 lanczos)
INTER_METHODS = {0: "NEAREST", 1: "BILINEAR", 2: "BICUBIC", 3: "BOX", 4: "LANCZOS"}
AUTO_INTER, RANDOM_INTER = 9, 10  # per resize: cubic to enlarge, area to shrink, else bilinear; one of 0-4 at random
MODES = {1: "L", 3: "RGB", 4: "RGBA"}
# MXNet parameters this iterator accepts but does not implement (any non-default value is an error)
UNSUPPORTED = {
    "path_imglist": "",
    "aug_seq": "aug_default",
    "mean_img": "",
    "shuffle_chunk_size": 0,
}
# MXNet parameters about devices and chunked shuffling, which have no effect here
IGNORED = ("device_id", "shuffle_chunk_seed")


def partition(offsets: list[int], file_size: int, num_parts: int, part_index: int, indexed: bool) -> list[int]:
    """The record offsets of one part, split as MXNet's (indexed) RecordIO splitter does."""
    if indexed:
        step = -(-len(offsets) // num_parts)
        return offsets[min(step * part_index, len(offsets)) : min(step * (part_index + 1), len(offsets))]
    step = -(-file_size // num_parts)
    step = (step + 3) // 4 * 4
    begin, end = step * part_index, step * (part_index + 1)
    return [o for o in offsets if begin <= o < end]


def read_index_offsets(path: str) -> list[int]:
    """Record offsets listed by a ``.idx`` file, in file order (sorted)."""
    if not os.path.isfile(path):
        raise recordio.RecordIOFileNotFoundError(f"ImageRecordIter: index file not found: {path!r}")
    offsets = []
    with open(path) as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            fields = line.split()
            try:
                offsets.append(int(fields[1]))
            except (IndexError, ValueError):
                raise recordio.RecordIOError(f"{path}: line {lineno} is not 'key<TAB>offset': {line!r}") from None
    return sorted(offsets)


COEF_BITS = 11  # OpenCV's INTER_RESIZE_COEF_BITS: interpolation weights in 1/2048 steps


@functools.lru_cache(maxsize=512)
def _linear_taps(n_in: int, n_out: int, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each output sample along one axis reads, and with which fixed-point weights.

    Returns ``(index, weight)`` of shape ``(2, channels, n_out)``: ``[0]`` is the left (or
    upper) neighbour, ``[1]`` the right (or lower) one, with one plane per channel (the
    flat index of that channel's value in an interleaved row), so that whole image rows can
    be gathered and weighted in one NumPy call, channel by channel. Cached per size: many
    images share one.
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
    index = index[:, None, :] * channels + np.arange(channels)[None, :, None]
    weight = np.broadcast_to(weight[:, None, :], index.shape).copy()
    index.flags.writeable = weight.flags.writeable = False
    return index, weight


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
    """
    src_h, src_w = pixels.shape[:2]
    channels = pixels.shape[2] if pixels.ndim == 3 else 1
    y, x, h, w = region if region is not None else (0, 0, height, width)
    if (src_h, src_w) == (height, width):  # OpenCV copies an image that keeps its size
        return pixels[y : y + h, x : x + w]
    rows, row_weight = (t[:, 0, y : y + h] for t in _linear_taps(src_h, height, 1))
    cols, col_weight = (t[:, :, x : x + w] for t in _linear_taps(src_w, width, channels))
    row_size = src_w * channels
    first, last = int(rows[0, 0]), int(rows[1, -1])  # the band of source rows this window reads
    if last - first < 2 * h:  # gather the band as it is (a view)
        flat, inverse = pixels[first : last + 1].reshape(-1, row_size), rows - first
    else:  # strong shrinking: gather only the rows in use
        used, inverse = np.unique(rows, return_inverse=True)
        flat = np.take(pixels, used, axis=0).reshape(len(used), row_size)
    # horizontal pass: left and right neighbours gathered and weighted in one go
    horizontal = np.take(flat, cols.reshape(-1), axis=1).astype(np.int32)
    horizontal *= col_weight.reshape(-1)
    width_c = w * channels
    horizontal = np.add(horizontal[:, :width_c], horizontal[:, width_c:])
    horizontal >>= 4
    # vertical pass: upper and lower neighbours, the high 16 bits of each product
    vertical = np.take(horizontal, inverse.reshape(-1), axis=0)
    vertical *= row_weight.reshape(-1, 1)
    vertical >>= 16
    out = np.add(vertical[:h], vertical[h:])
    out += 2
    out >>= 2
    out = out.astype(np.uint8)
    if pixels.ndim == 2:
        return out
    # computed channel-planar, (h, channels, w); returned as an (h, w, channels) view of it,
    # so that the (channels, h, w) layout the network wants is a cheap transpose
    return out.reshape(h, channels, w).transpose(0, 2, 1)


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


class _Augmenter:
    """The per-image work: unpack, check the label, decode, resize, crop, mirror, normalise."""

    def __init__(self, path: str, data_shape: tuple[int, int, int], label_width: int, p: dict[str, Any]) -> None:
        self.path = path
        self.channels, self.height, self.width = data_shape
        self.mode = MODES[self.channels]
        self.label_width = label_width
        self.resize = p["resize"]
        self.rand_crop = p["rand_crop"]
        self.rand_mirror = p["rand_mirror"]
        self.mirror = p["mirror"]
        self.inter_method = p["inter_method"]
        self.normalize = p["dtype"] != "uint8"
        means = [p["mean_r"], p["mean_g"], p["mean_b"], p["mean_a"]][: self.channels]
        stds = [p["std_r"], p["std_g"], p["std_b"], p["std_a"]][: self.channels]
        self.mean = np.array(means, dtype=np.float32).reshape(-1, 1, 1)
        # MXNet multiplies by scale / std, computed once per channel in float32
        self.mult = np.float32(p["scale"]) / np.array(stds, dtype=np.float32).reshape(-1, 1, 1)
        self.max_pixels = p["max_decoded_pixels"]
        self._fromarray = Image.fromarray
        self.extra: ExtraAugmentation = p["extra"]

    def label_of(self, header: Any, offset: int) -> Any:
        if header.flag > 0:
            if header.flag != self.label_width:
                raise DataIterError(
                    f"ImageRecordIter: {self.path}, record at byte offset {offset}: label of width {header.flag} "
                    f"but label_width is {self.label_width}"
                )
            return header.label
        if self.label_width != 1:
            raise DataIterError(
                f"ImageRecordIter: {self.path}, record at byte offset {offset}: a scalar label (width 1) but "
                f"label_width is {self.label_width}; pack label arrays (im2rec --pack-label) for wider labels"
            )
        return header.label

    def __call__(self, record: bytes, offset: int, randoms: np.ndarray, out: np.ndarray) -> tuple[Any, int]:
        """Process one record into ``out`` (C, H, W); returns (label, record id)."""
        try:
            header, payload = recordio.unpack(record)
        except recordio.RecordIOError as err:
            raise DataIterError(f"ImageRecordIter: {self.path}, record at byte offset {offset}: {err}") from None
        label = self.label_of(header, offset)
        try:
            img = recordio.open_image(payload, self.max_pixels)  # the size is checked before decoding
            img.load()
            target = "RGB" if self.mode == "L" else self.mode
            if img.mode != target:
                img = img.convert(target)
        except recordio.ImageTooLargeError as err:
            raise DataIterError(f"ImageRecordIter: {self.path}, record at byte offset {offset}: {err}") from None
        except Exception as err:
            raise DataIterError(
                f"ImageRecordIter: {self.path}, record at byte offset {offset}: cannot decode the image: {err}"
            ) from None
        pixels = np.asarray(img)
        if self.mode == "L":  # decoded as RGB, converted with OpenCV's weights
            pixels = rgb_to_gray(pixels)
        if self.extra.active:
            return self._augmented(pixels, header, offset, randoms, out, label)
        src_h, src_w = h, w = pixels.shape[:2]
        if self.resize > 0:
            w, h = self._resized_size(w, h)
        y, x = self._crop_position(h, w, offset, randoms)
        resample = pillow_filter(concrete_inter_method(self.inter_method, src_w, src_h, w, h, self._draw(randoms)))
        if self.resize > 0 and resample is None:  # resize only the window the crop keeps
            crop = resize_bilinear(pixels, w, h, (y, x, self.height, self.width))
        else:
            if self.resize > 0:
                pixels = np.asarray(self._fromarray(pixels).resize((w, h), resample))
            crop = pixels[y : y + self.height, x : x + self.width]
        self._finish(crop, randoms, out)
        return label, header.id

    @property
    def needs_seed(self) -> bool:
        """Whether each image needs a seed of its own (augmentations, or a random ``inter_method``)."""
        return self.extra.active or self.inter_method == RANDOM_INTER

    @staticmethod
    def _draw(randoms: np.ndarray) -> int:
        return int(randoms[3]) if len(randoms) > 3 else 0

    def _resized_size(self, w: int, h: int) -> tuple[int, int]:
        """The size after ``resize``: the shorter edge becomes ``resize``."""
        return (self.resize, self.resize * h // w) if h > w else (self.resize * w // h, self.resize)

    def _crop_position(self, h: int, w: int, offset: int, randoms: np.ndarray) -> tuple[int, int]:
        if h < self.height or w < self.width:
            raise DataIterError(
                f"ImageRecordIter: {self.path}, record at byte offset {offset}: image is {h}x{w} (HxW), smaller "
                f"than data_shape {self.height}x{self.width}; set resize= to scale it up"
            )
        if self.rand_crop:
            return int(randoms[0] * (h - self.height + 1)), int(randoms[1] * (w - self.width + 1))
        return (h - self.height) // 2, (w - self.width) // 2

    def _augmented(
        self, pixels: np.ndarray, header: Any, offset: int, randoms: np.ndarray, out: np.ndarray, label: Any
    ) -> tuple[Any, int]:
        """The general path: resize, pad/warp, crop, colour (see :mod:`framework.io.image_aug`)."""
        rng = np.random.RandomState(int(randoms[3]))
        if self.resize > 0:
            w, h = self._resized_size(pixels.shape[1], pixels.shape[0])
            pixels = resize_with(pixels, w, h, self.inter_method, self._draw(randoms))
        pixels = self.extra.geometry(pixels, rng)
        if self.extra.crops:
            crop = self.extra.crop(pixels, rng, self.height, self.width, self.rand_crop)
        else:
            y, x = self._crop_position(pixels.shape[0], pixels.shape[1], offset, randoms)
            crop = pixels[y : y + self.height, x : x + self.width]
        crop = self.extra.colour(crop, rng)
        contrast, illumination = self.extra.normalize_jitter(rng)
        self._finish(crop, randoms, out, contrast, illumination)
        return label, header.id

    def _finish(
        self, crop: np.ndarray, randoms: np.ndarray, out: np.ndarray, contrast: float = 1.0, illumination: float = 0.0
    ) -> None:
        """Mirror, then ``(pixel - mean) * scale / std`` (times ``contrast``, plus ``illumination``) into ``out``."""
        if self.mirror or (self.rand_mirror and randoms[2] < 0.5):
            crop = crop[:, ::-1]
        chw = crop[None] if crop.ndim == 2 else crop.transpose(2, 0, 1)
        if self.normalize:
            np.subtract(chw, self.mean, out=out)
            out *= self.mult if contrast == 1.0 else self.mult * np.float32(contrast)
            if illumination:
                out += np.float32(illumination)
        else:
            out[...] = chw


class _Loader:
    """One epoch's producer: reads the records of each batch and hands their processing to the pool.

    The loader does not wait for a batch to be finished: it queues the batch with the
    futures of its pieces and goes on with the next one, so the workers always have work
    (up to ``prefetch_buffer`` batches ahead). The consumer waits for a batch's futures.
    """

    def __init__(self, owner: ImageRecordIter, batches: list[tuple[np.ndarray, int]], epoch: int) -> None:
        self.path = owner.path_imgrec
        self.records = [owner._records[i] for i in owner._order]
        self.batches = batches
        self.augment = owner._augment
        self.pool = owner._pool
        # a few pieces per worker: enough to balance the load, few enough to keep the overhead small
        self.piece = max(1, -(-owner.batch_size // (4 * owner.preprocess_threads)))
        self.batch_size = owner.batch_size
        self.data_shape = owner.data_shape
        self.label_shape = owner.provide_label[0].shape
        self.dtype = owner._np_dtype
        self.ctx = owner.ctx
        self.rng = np.random.RandomState([owner.seed_aug & 0xFFFFFFFF, epoch])
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=owner.prefetch_buffer)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="ImageRecordIter-loader", daemon=True)
        self.thread.start()

    def put(self, item: Any) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def run(self) -> None:
        try:
            with open(self.path, "rb") as f:
                for positions, pad in self.batches:
                    if self.stop.is_set() or not self.put(self.start_batch(f, positions, pad)):
                        return
        except BaseException as err:  # handed to the consumer
            self.put(err)
            return
        self.put(_END)

    def cancel(self) -> None:
        """Stop producing and drop the queued batches' pending work."""
        self.stop.set()
        self.thread.join()
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, tuple):
                for future in item[-1]:
                    future.cancel()

    def start_batch(self, f: Any, positions: np.ndarray, pad: int) -> tuple[Any, ...]:
        offsets = [self.records[p] for p in positions]
        raw = []
        for offset in offsets:
            f.seek(offset)
            record = recordio.read_record(f, self.path)
            if record is None:
                raise DataIterError(f"ImageRecordIter: {self.path}: no record at byte offset {offset}")
            raw.append(record)
        randoms = self.rng.random_sample((len(raw), 3))  # crop position (y, x), mirror
        if self.augment.needs_seed:  # and a seed for each image's own generator
            randoms = np.column_stack([randoms, self.rng.randint(0, 2**31 - 1, size=len(raw))])
        n = len(raw)
        if self.ctx.device_type == "cpu":
            # decode straight into the batch NDArray's memory (a block from the storage pool):
            # no copy afterwards, and no fresh pages to fault in for every batch

            batch = empty((self.batch_size, *self.data_shape), ctx=self.ctx, dtype=self.dtype)
            data = batch._data
            data[n:] = 0
        else:
            batch = None
            data = np.zeros((self.batch_size, *self.data_shape), dtype=self.dtype)
        label = np.zeros(self.label_shape, dtype=np.float32)
        ids = np.zeros(len(raw), dtype=np.uint64)

        def work(lo: int, hi: int) -> None:
            for k in range(lo, hi):
                label[k], ids[k] = self.augment(raw[k], offsets[k], randoms[k], data[k])

        futures = [self.pool.submit(work, lo, min(lo + self.piece, n)) for lo in range(0, n, self.piece)]
        return batch if batch is not None else data, label, int(pad), ids, futures


class ImageRecordIter(PreparedBatchIter):
    """Iterate over images in a RecordIO file with decoding on worker threads (``mx.io.ImageRecordIter``)."""

    def __init__(
        self,
        *,
        path_imgrec: str,
        data_shape: tuple[int, int, int],
        batch_size: int,
        path_imgidx: str = "",
        label_width: int = 1,
        shuffle: bool = False,
        seed: int = 0,
        seed_aug: int | None = None,
        preprocess_threads: int = 4,
        prefetch_buffer: int = 4,
        max_decoded_pixels: int = recordio.MAX_DECODED_PIXELS,
        round_batch: bool = True,
        num_parts: int = 1,
        part_index: int = 0,
        resize: int = -1,
        rand_crop: bool = False,
        rand_mirror: bool = False,
        mirror: bool = False,
        mean_r: float = 0.0,
        mean_g: float = 0.0,
        mean_b: float = 0.0,
        mean_a: float = 0.0,
        std_r: float = 1.0,
        std_g: float = 1.0,
        std_b: float = 1.0,
        std_a: float = 1.0,
        scale: float = 1.0,
        inter_method: int = 1,
        dtype: str | None = None,
        data_name: str = "data",
        label_name: str = "softmax_label",
        verbose: bool = True,
        ctx: Context | str | None = None,
        **kwargs: Any,
    ) -> None:
        batch_size = check_batch_size("ImageRecordIter", batch_size)
        super().__init__(batch_size)
        for name, value in kwargs.items():
            if name in UNSUPPORTED and value != UNSUPPORTED[name]:
                raise DataIterError(f"ImageRecordIter: {name}={value!r} is not implemented in MXLab")
        ignore_unknown("ImageRecordIter", kwargs, (*UNSUPPORTED, *IGNORED, *AUGMENTATION_DEFAULTS))
        data_shape = tuple(int(d) for d in data_shape)
        if len(data_shape) != 3 or data_shape[0] not in MODES or min(data_shape) <= 0:
            raise DataIterError(
                f"ImageRecordIter: data_shape must be (channels, height, width) with 1, 3 or 4 channels, "
                f"got {data_shape}"
            )
        if label_width < 1:
            raise DataIterError(f"ImageRecordIter: label_width must be >= 1, got {label_width}")
        if preprocess_threads < 1:
            raise DataIterError(f"ImageRecordIter: preprocess_threads must be >= 1, got {preprocess_threads}")
        if prefetch_buffer < 1:
            raise DataIterError(f"ImageRecordIter: prefetch_buffer must be >= 1, got {prefetch_buffer}")
        if isinstance(max_decoded_pixels, bool) or not isinstance(max_decoded_pixels, int) or max_decoded_pixels < 1:
            raise DataIterError(f"ImageRecordIter: max_decoded_pixels must be an int >= 1, got {max_decoded_pixels!r}")
        if inter_method not in (*INTER_METHODS, AUTO_INTER, RANDOM_INTER):
            raise DataIterError(
                f"ImageRecordIter: inter_method must be one of {[*sorted(INTER_METHODS), AUTO_INTER, RANDOM_INTER]}, "
                f"got {inter_method}"
            )
        dtype = dtype or "float32"
        if dtype not in DTYPES:
            raise DataIterError(f"ImageRecordIter: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        check_part("ImageRecordIter", num_parts, part_index)
        self.path_imgrec = os.fspath(path_imgrec)
        self.path_imgidx = os.fspath(path_imgidx) if path_imgidx else ""
        self.data_shape = data_shape
        self.label_width = int(label_width)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.seed_aug = int(seed if seed_aug is None else seed_aug)
        self.preprocess_threads = int(preprocess_threads)
        self.prefetch_buffer = int(prefetch_buffer)
        self.round_batch = bool(round_batch)
        self.ctx = ctx if isinstance(ctx, Context) else current_context()
        self._np_dtype = np.dtype(dtype)

        size = recordio._file_size(self.path_imgrec)
        if self.path_imgidx:
            offsets = read_index_offsets(self.path_imgidx)
        else:
            offsets = recordio.scan_record_offsets(self.path_imgrec)
        self._records = partition(offsets, size, num_parts, part_index, bool(self.path_imgidx))
        if not self._records:
            raise DataIterError(
                f"ImageRecordIter: part {part_index} of {num_parts} of {self.path_imgrec!r} holds no records "
                f"({len(offsets)} records in the file)"
            )
        params = dict(
            resize=int(resize),
            rand_crop=bool(rand_crop),
            rand_mirror=bool(rand_mirror),
            mirror=bool(mirror),
            inter_method=inter_method,
            dtype=dtype,
            mean_r=mean_r,
            mean_g=mean_g,
            mean_b=mean_b,
            mean_a=mean_a,
            std_r=std_r,
            std_g=std_g,
            std_b=std_b,
            std_a=std_a,
            scale=scale,
            max_decoded_pixels=max_decoded_pixels,
        )
        try:
            warp_filter = pillow_filter(inter_method) if inter_method in INTER_METHODS else None
            params["extra"] = ExtraAugmentation.from_kwargs(
                kwargs, warp_filter, functools.partial(resize_with, inter_method=inter_method)
            )
        except AugmentError as err:
            raise DataIterError(f"ImageRecordIter: {err}") from None
        self._augment = _Augmenter(self.path_imgrec, data_shape, self.label_width, params)
        label_shape = (batch_size,) if self.label_width == 1 else (batch_size, self.label_width)
        self.provide_data = [DataDesc(data_name, (batch_size, *data_shape), self._np_dtype.type)]
        self.provide_label = [DataDesc(label_name, label_shape, np.float32)]
        if verbose:
            logging.getLogger(__name__).info(
                "ImageRecordIter: %s, %d records in this part, %d decoding threads",
                self.path_imgrec,
                len(self._records),
                self.preprocess_threads,
            )
        self._pool = ThreadPoolExecutor(
            max_workers=self.preprocess_threads, thread_name_prefix=f"ImageRecordIter-{id(self):x}"
        )
        self._shuffle_rng = np.random.RandomState(self.seed)
        self._epoch = 0
        self._order = np.arange(len(self._records))
        self._loader: _Loader | None = None
        self._closed = False
        self._start_epoch(0)

    # ---------------------------------------------------------------- epochs
    def _start_epoch(self, start: int) -> None:
        if start == 0 and self.shuffle:
            self._order = self._shuffle_rng.permutation(len(self._records))
        self._plan = plan_epoch(len(self._records), self.batch_size, self.round_batch, start, "ImageRecordIter")
        self._served = 0
        self._loader = _Loader(self, self._plan, self._epoch)
        self._epoch += 1

    def _stop_loader(self) -> None:
        loader, self._loader = self._loader, None
        if loader is None:
            return
        loader.cancel()

    def reset(self) -> None:
        """Next epoch: after a wrapped last batch it continues after the images used as filler."""
        if self._closed:
            raise DataIterError("ImageRecordIter: used after close()")
        finished = self._served == len(self._plan)
        wrapped = self.round_batch and finished and self._plan and self._plan[-1][1] > 0
        self._stop_loader()
        self._start_epoch(int(self._plan[-1][1]) if wrapped else 0)

    def iter_next(self) -> bool:
        if self._closed:
            raise DataIterError("ImageRecordIter: used after close()")
        if self._served >= len(self._plan):
            return False
        assert self._loader is not None
        item = self._loader.queue.get()
        try:
            if isinstance(item, BaseException):
                raise item
            data, label, pad, ids, futures = item
            for future in futures:
                future.result()  # re-raises a worker's error
        except BaseException:
            self._served = len(self._plan)  # the epoch is over; reset() starts the next
            raise
        self._served += 1
        if isinstance(data, np.ndarray):
            data = to_ndarray(data, self.ctx)
        self._current = DataBatch(data=[data], label=[to_ndarray(label, self.ctx)], pad=pad, index=ids)
        return True

    def close(self) -> None:
        """Stop the loader thread and the decoding workers."""
        self._closed = True
        self._stop_loader()
        self._pool.shutdown(wait=True)

    def __del__(self) -> None:
        # Garbage collection may run this on any thread, even one holding a lock our loader
        # waits for: only signal the loader to stop; never wait here. Once the loader has
        # stopped, nothing refers to the pool any more and its idle workers exit.
        loader = getattr(self, "_loader", None)
        if loader is not None:
            loader.stop.set()

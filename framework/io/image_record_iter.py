"""``ImageRecordIter``: decode and augment images from a ``.rec`` file on several threads.

The pipeline, per epoch::

    consumer (next())            loader thread                    preprocess_threads workers
    ------------------           ----------------------------     -----------------------------
    plan the epoch: order,  -->  for each batch: read its    -->  unpack header + label,
    batches (round_batch)        records (the file mapped),       decode (Pillow), resize,
                                 draw the random numbers,         crop, mirror, normalise,
                                 allocate the batch NDArrays,     write into the batch NDArrays
                                 submit a few pieces of work,
    wait for the next batch <--  queue it (prefetch_buffer
    hand it out                  batches ahead) and go on

Memory stays bounded whatever the file holds: the queue holds at most ``prefetch_buffer``
batches (the loader blocks when it is full), and an image whose header declares more than
``max_decoded_pixels`` pixels (default 64 megapixels) is refused, naming the record, before
it is decoded: a few hundred KiB of PNG can otherwise unpack to gigabytes. (Pillow refuses
images above twice its own ``Image.MAX_IMAGE_PIXELS`` regardless.)

The loader never waits for a batch to be finished, so the workers always have work; on a
CPU context they write straight into the memory of the batch's NDArrays, data and label
(blocks from the storage pool), so no copy follows. Pillow's decoder and NumPy's arithmetic
release the GIL, so the workers really run in parallel; the Python glue between them does
not, which is what keeps 2 threads from being twice as fast as 1 (``benchmarks/io.py``
measures it). Hence the work goes out in pieces of a few images that share their NumPy calls
(:meth:`RecordAugmenter.process`); the last batch of an epoch goes out in shrinking pieces
(:func:`piece_bounds`), so that several workers finish the epoch together.

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
``label_width`` values (one value with ``label_width=1`` is read as a scalar label).

The random numbers of an epoch come from a generator seeded with ``(seed_aug, epoch)``
and drawn batch by batch in the loader, so the output does not depend on how the work is
split between threads. Shuffling permutes the records with ``seed``. (Both differ from
MXNet's C++ generators.) The default bilinear resize (``inter_method=1``) reproduces
OpenCV's fixed-point arithmetic (:func:`framework.io.pixels.resize_bilinear`), so its output equals MXNet's;
the other ``inter_method`` values use Pillow's filters, which differ from OpenCV's; 9 picks
per resize (bicubic to enlarge, area to shrink, else bilinear) and 10 one of 0-4 per image.

``mean_img`` names a file holding a mean image, subtracted instead of the per-channel means
(computed over the part's records and saved when the file is absent); ``path_imglist`` takes
the labels from a ``.lst`` by record id (:mod:`framework.io.label_list`); with ``shuffle``,
``shuffle_chunk_size`` (MB) reads the file a whole chunk at a time, the chunks in a random
order drawn with ``shuffle_chunk_seed``.

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
import mmap
import os
import queue
import threading
from typing import Any

import numpy as np

from .. import recordio
from ..context import Context, current_context
from ..ndarray import array, empty, load, save
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
from .label_list import read_label_list
from .piece_workers import PendingBatch, PieceWorkers
from .pixels import AUTO_INTER, INTER_METHODS, RANDOM_INTER, pillow_filter, resize_with
from .record_augmenter import MODES, RecordAugmenter

_END = object()
DTYPES = ("float32", "float16", "float64", "uint8", "int8")
# MXNet parameters about devices, which have no effect here
IGNORED = ("device_id",)
# the MXNet parameters taken through **kwargs (the others are named in the signature)
KEYWORDS = (*IGNORED, *AUGMENTATION_DEFAULTS)
# the augmenter sequences MXNet 1.9.1 registers: this iterator's and ImageDetRecordIter's
AUG_SEQUENCES = {"ImageRecordIter": "aug_default", "ImageDetRecordIter": "det_aug_default"}
MEAN_IMG_KEY = "mean_img"  # the name the mean image is saved under, as MXNet does
PIECE_IMAGES = 8  # at most this many images per piece of work (about 3 MB of work arrays per 224x224 image)
TAIL_PIECE_IMAGES = 2  # the smallest piece of an epoch's last batch (see piece_bounds)


def piece_bounds(count: int, piece: int, threads: int, last: bool) -> list[tuple[int, int]]:
    """How a batch of ``count`` images is cut into pieces of work: ``(lo, hi)`` ranges, in order.

    Pieces of ``piece`` images, except in the last batch of an epoch when several workers
    share it: the epoch ends when the slowest worker finishes, and with pieces of equal size
    one worker may still have most of a piece to do (about 1.5 ms an image) while the other
    waits for the next epoch. So the last batch is cut in shrinking pieces, each about
    ``1 / (2 * threads)`` of what remains (guided scheduling), down to ``TAIL_PIECE_IMAGES``:
    the workers then finish within a small piece of each other. Small pieces cost more
    Python per image (a piece shares its NumPy calls), so only that batch gets them.
    """
    if not last or threads == 1:
        return [(lo, min(lo + piece, count)) for lo in range(0, count, piece)]
    bounds, lo = [], 0
    while lo < count:
        size = max(TAIL_PIECE_IMAGES, min(piece, -(-(count - lo) // (2 * threads))))
        bounds.append((lo, min(lo + size, count)))
        lo += size
    return bounds


def check_aug_seq(api: str, aug_seq: str) -> None:
    """``aug_seq`` names augmenter sequences; MXNet 1.9.1 registers one per record iterator."""
    names = [name.strip() for name in str(aug_seq).split(",") if name.strip()]
    expected = AUG_SEQUENCES[api]
    if names != [expected]:
        raise DataIterError(
            f"{api}: aug_seq={aug_seq!r}: the augmenters MXNet 1.9.1 registers are 'aug_default' "
            f"(ImageRecordIter) and 'det_aug_default' (ImageDetRecordIter); this iterator takes {expected!r}"
        )


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


def _mapped(path: str) -> memoryview:
    """The bytes of the file at ``path``: a view of a read-only memory mapping (of ``b""`` when the
    file is empty, which cannot be mapped).

    A record read from the mapping (:func:`recordio.read_record_at`) is a slice of this view:
    no copy, and no system call, so the loader does not give up the GIL once or more per
    record (each time a possible hand-over between threads) as a buffered file's seek and
    read do. An iterator maps its file once: the pages stay mapped from epoch to epoch, so
    reading a record faults nothing in after the first epoch. The mapping is never closed
    explicitly: the records handed to the workers keep it alive, and it is unmapped when the
    last of them is dropped (closing it while a worker reads a record would raise BufferError).
    """
    with recordio._open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return memoryview(b"")
        return memoryview(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))


class _Loader:
    """One epoch's producer: reads the records of each batch and hands their processing to the pool.

    The loader does not wait for a batch to be finished: it queues the batch with its
    :class:`PendingBatch` and goes on with the next one, so the workers always have work
    (up to ``prefetch_buffer`` batches ahead). The consumer waits for the batch's last piece.
    """

    def __init__(self, owner: ImageRecordIter, batches: list[tuple[np.ndarray, int]], epoch: int) -> None:
        self.path = owner.path_imgrec
        self.view = owner._file_view
        self.records = owner._record_offsets[owner._order]  # in the epoch's order
        self.batches = batches
        self.augment = owner._augment
        self.pool = owner._pool
        # two pieces per worker and batch: the loader keeps several batches queued, so that is enough
        # to balance the load; and a piece's images share their NumPy calls, so larger pieces hold the
        # GIL for less time per image, up to PIECE_IMAGES (the work arrays grow with the piece)
        self.piece = max(1, min(PIECE_IMAGES, -(-owner.batch_size // (2 * owner.preprocess_threads))))
        self.threads = owner.preprocess_threads
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
            last = len(self.batches) - 1
            for number, (positions, pad) in enumerate(self.batches):
                if self.stop.is_set() or not self.put(self.start_batch(positions, pad, number == last)):
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
                item[-1].cancel()

    def start_batch(self, positions: np.ndarray, pad: int, last: bool = False) -> tuple[Any, ...]:
        offsets = self.records[positions].tolist()
        raw = []
        for offset in offsets:
            record = recordio.read_record_at(self.view, offset, self.path)  # a slice of the mapping, no copy
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
            labels = empty(self.label_shape, ctx=self.ctx, dtype=np.float32)
            label = labels._data
            label[n:] = 0
        else:
            batch = labels = None
            data = np.zeros((self.batch_size, *self.data_shape), dtype=self.dtype)
            label = np.zeros(self.label_shape, dtype=np.float32)
        ids = np.zeros(len(raw), dtype=np.uint64)

        def work(lo: int, hi: int) -> None:
            done = self.augment.process(raw[lo:hi], offsets[lo:hi], randoms[lo:hi], data[lo:hi])
            values, record_ids = zip(*done, strict=True)  # one NumPy assignment each per piece, not two per image
            label[lo:hi] = values
            ids[lo:hi] = record_ids

        pieces = piece_bounds(n, self.piece, self.threads, last)
        pending = PendingBatch(len(pieces))
        for number, (lo, hi) in enumerate(pieces):
            self.pool.submit(functools.partial(pending.run, number, functools.partial(work, lo, hi)))
        return batch if batch is not None else data, labels if labels is not None else label, int(pad), ids, pending


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
        path_imglist: str = "",
        mean_img: str = "",
        aug_seq: str = "aug_default",
        shuffle_chunk_size: int = 0,
        shuffle_chunk_seed: int = 0,
        **kwargs: Any,
    ) -> None:
        batch_size = check_batch_size("ImageRecordIter", batch_size)
        super().__init__(batch_size)
        ignore_unknown("ImageRecordIter", kwargs, KEYWORDS)
        check_aug_seq("ImageRecordIter", aug_seq)
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

        self._records = self._part_records(num_parts, part_index)
        self._set_chunk_shuffle(shuffle_chunk_size, shuffle_chunk_seed)
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
        if path_imglist:
            params["label_map"] = read_label_list(os.fspath(path_imglist), self.label_width, "ImageRecordIter")
        if mean_img:
            params["mean_img"] = self._mean_image(os.fspath(mean_img), params)
        self._augment = RecordAugmenter(self.path_imgrec, data_shape, self.label_width, params)
        label_shape = (batch_size,) if self.label_width == 1 else (batch_size, self.label_width)
        self.provide_data = [DataDesc(data_name, (batch_size, *data_shape), self._np_dtype.type)]
        self.provide_label = [DataDesc(label_name, label_shape, np.float32)]
        self._start_workers(verbose)

    # ---------------------------------------------------------------- setup shared with ImageDetRecordIter
    def _part_records(self, num_parts: int, part_index: int) -> list[int]:
        """The byte offsets of the records of this iterator's part of ``path_imgrec``."""
        size = recordio._file_size(self.path_imgrec)
        # mapped once: its pages stay mapped from epoch to epoch, and the scan reads the headers from it
        self._file_view = _mapped(self.path_imgrec)
        if self.path_imgidx:
            offsets = read_index_offsets(self.path_imgidx)
        else:
            offsets = recordio.scan_buffer_offsets(self._file_view, self.path_imgrec)
        records = partition(offsets, size, num_parts, part_index, bool(self.path_imgidx))
        if not records:
            raise DataIterError(
                f"{type(self).__name__}: part {part_index} of {num_parts} of {self.path_imgrec!r} holds no records "
                f"({len(offsets)} records in the file)"
            )
        return records

    def _set_chunk_shuffle(self, chunk_mb: int, chunk_seed: int) -> None:
        """With ``shuffle`` and ``shuffle_chunk_size`` (MB): cut the part into chunks of that many bytes."""
        if chunk_mb < 0:
            raise DataIterError(f"{type(self).__name__}: shuffle_chunk_size must be >= 0 (MB), got {chunk_mb}")
        self._chunks: np.ndarray | None = None
        if chunk_mb and self.shuffle:
            offsets = np.asarray(self._records, dtype=np.int64)
            self._chunks = (offsets - offsets[0]) // (int(chunk_mb) << 20)
            self._chunk_rng = np.random.RandomState(int(chunk_seed))

    def _epoch_order(self) -> np.ndarray:
        """The record order of a shuffled epoch: a permutation, or with chunks the chunks in a random
        order and each chunk's records permuted (a file read a chunk at a time, as MXNet's chunked shuffle)."""
        order = self._shuffle_rng.permutation(len(self._records))
        if self._chunks is None:
            return order
        rank = self._chunk_rng.permutation(int(self._chunks.max()) + 1)  # the position of each chunk
        return order[np.argsort(rank[self._chunks[order]], kind="stable")]

    def _unrandom_augmenter(self, params: dict[str, Any]) -> Any:
        """The per-record work for the mean image: the pipeline without its random crop and mirror.

        MXNet averages the images as its pipeline outputs them, normalisation (``mean_*``,
        ``std_*``, ``scale``) included; the batches then subtract this mean image.
        """
        plain = dict(params, rand_crop=False, rand_mirror=False, dtype="float32")
        return RecordAugmenter(self.path_imgrec, self.data_shape, self.label_width, plain)

    def _mean_image(self, path: str, params: dict[str, Any]) -> np.ndarray:
        """The (C, H, W) mean image from ``path``; when the file is absent, computed over this part's
        records and saved there, as MXNet does (centre crop, no random mirror; other augmentations
        with one fixed draw for every image)."""
        if os.path.isfile(path):
            try:
                loaded = load(path)
            except Exception as err:
                raise DataIterError(f"{type(self).__name__}: mean_img {path!r} cannot be read: {err}") from None
            if not isinstance(loaded, dict) or MEAN_IMG_KEY not in loaded:
                raise DataIterError(f"{type(self).__name__}: mean_img {path!r} holds no array named {MEAN_IMG_KEY!r}")
            mean = loaded[MEAN_IMG_KEY].asnumpy().astype(np.float32)
            if mean.shape != self.data_shape:
                raise DataIterError(
                    f"{type(self).__name__}: mean_img {path!r} has shape {mean.shape}, data_shape is {self.data_shape}"
                )
            return mean
        augment = self._unrandom_augmenter(params)
        total = np.zeros(self.data_shape, dtype=np.float64)
        image = np.empty(self.data_shape, dtype=np.float32)
        no_randoms = np.zeros(4 if augment.needs_seed else 3)  # the other augmentations with one fixed draw
        with open(self.path_imgrec, "rb") as f:
            for offset in self._records:
                f.seek(offset)
                augment(recordio.read_record(f, self.path_imgrec), offset, no_randoms, image)
                total += image
        mean = (total / len(self._records)).astype(np.float32)
        save(path, {MEAN_IMG_KEY: array(mean)})
        logging.getLogger(__name__).info(
            "%s: saved the mean image of %d images to %s", type(self).__name__, len(self._records), path
        )
        return mean

    def _start_workers(self, verbose: bool) -> None:
        """Start the decoding pool and the first epoch (``_records``, ``_augment`` and the shapes are set)."""
        if verbose:
            logging.getLogger(__name__).info(
                "%s: %s, %d records in this part, %d decoding threads",
                type(self).__name__,
                self.path_imgrec,
                len(self._records),
                self.preprocess_threads,
            )
        self._record_offsets = np.asarray(self._records, dtype=np.int64)  # once: every epoch indexes it
        self._pool = PieceWorkers(self.preprocess_threads, f"{type(self).__name__}-{id(self):x}")
        self._shuffle_rng = np.random.RandomState(self.seed)
        self._epoch = 0
        self._order = np.arange(len(self._records))
        self._loader: _Loader | None = None
        self._closed = False
        self._start_epoch(0)

    # ---------------------------------------------------------------- epochs
    def _start_epoch(self, start: int) -> None:
        if start == 0 and self.shuffle:
            self._order = self._epoch_order()
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
            data, label, pad, ids, pending = item
            pending.wait()  # re-raises a worker's error
        except BaseException:
            self._served = len(self._plan)  # the epoch is over; reset() starts the next
            raise
        self._served += 1
        if isinstance(data, np.ndarray):  # not on a CPU context: shipped now
            data, label = to_ndarray(data, self.ctx), to_ndarray(label, self.ctx)
        self._current = DataBatch(data=[data], label=[label], pad=pad, index=ids)
        return True

    def close(self) -> None:
        """Stop the loader thread and the decoding workers."""
        self._closed = True
        self._stop_loader()
        self._pool.shutdown()
        self._file_view = memoryview(b"")  # the mapping goes when the last record viewing it does

    def __del__(self) -> None:
        # Garbage collection may run this on any thread, even one holding a lock our loader
        # waits for: only signal the loader to stop; never wait here. Once the loader has
        # stopped, nothing refers to the pool any more and its idle workers exit.
        loader = getattr(self, "_loader", None)
        if loader is not None:
            loader.stop.set()

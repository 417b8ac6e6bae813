"""``ImageDetRecordIter``: images and their object boxes from a detection ``.rec`` file, decoded on threads.

It shares ``ImageRecordIter``'s machinery (:mod:`framework.io.image_record_iter`: the loader
thread, the worker pool, parts, shuffling, ``round_batch``); only the per-record work differs
(:mod:`framework.io.det_record_augmenter`) and the label. Records hold labels of varying
length (``label_width=-1``, the default), so each batch's label is
``(batch_size, 4 + label_pad_width)``: per image its size, the length of its label, the label,
then ``label_pad_value``. ``label_pad_width`` 0 or -1 means "the longest label in the file",
found by reading every record's header when the iterator is made; a width too small for
some label is an error, as in MXNet.

The random crop samplers (``rand_crop_prob`` and the ``*_crop_*`` parameters) are
:mod:`framework.io.det_crop_sampler`; the colour jitters reuse ``ImageRecordIter``'s
(:mod:`framework.io.image_aug`). ``path_imglist`` (labels of any length from a ``.lst``, by
record id), ``mean_img`` (used only when ``mean_r/g/b`` are all 0, as in MXNet) and
``shuffle_chunk_size`` work as in ``ImageRecordIter``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import recordio
from ..context import Context, current_context
from .base import DataDesc, DataIterError, PreparedBatchIter, check_batch_size, check_part, ignore_unknown
from .det_crop_sampler import CropSampler
from .det_record_augmenter import LABEL_HEADER, RESIZE_MODES, DetRecordAugmenter, checked_det_label
from .image_aug import AugmentError, ExtraAugmentation
from .image_record_iter import ImageRecordIter, check_aug_seq
from .label_list import read_label_list
from .pixels import AUTO_INTER, INTER_METHODS, RANDOM_INTER, resize_with

DTYPES = ("float32", "float16", "float64")
# MXNet parameters MXLab does not implement, with their defaults (another value is an error)
# the colour jitters: (probability parameter, strength parameter, the ImageRecordIter jitter it is)
COLOUR_JITTERS = (
    ("random_hue_prob", "max_random_hue", "random_h"),
    ("random_saturation_prob", "max_random_saturation", "random_s"),
    ("random_illumination_prob", "max_random_illumination", "random_l"),
    ("random_contrast_prob", "max_random_contrast", "contrast"),
)
# parameters of the crop samplers (framework/io/det_crop_sampler.py), used with rand_crop_prob > 0
CROP_SAMPLER_PARAMS = (
    "min_crop_scales",
    "max_crop_scales",
    "min_crop_aspect_ratios",
    "max_crop_aspect_ratios",
    "min_crop_overlaps",
    "max_crop_overlaps",
    "min_crop_sample_coverages",
    "max_crop_sample_coverages",
    "min_crop_object_coverages",
    "max_crop_object_coverages",
    "num_crop_sampler",
    "crop_emit_mode",
    "emit_overlap_thresh",
    "max_crop_trials",
)
IGNORED = ("device_id", "mean_a", "std_a")
# the MXNet parameters taken through **kwargs (the others are named in the signature)
KEYWORDS = ("rand_crop_prob", *CROP_SAMPLER_PARAMS, *(name for names in COLOUR_JITTERS for name in names[:2]), *IGNORED)


class ImageDetRecordIter(ImageRecordIter):
    """Iterate over a detection RecordIO file (``mx.io.ImageDetRecordIter``)."""

    def __init__(
        self,
        *,
        path_imgrec: str,
        data_shape: tuple[int, int, int],
        batch_size: int,
        path_imgidx: str = "",
        label_width: int = -1,
        label_pad_width: int = 0,
        label_pad_value: float = -1.0,
        shuffle: bool = False,
        seed: int = 0,
        preprocess_threads: int = 4,
        prefetch_buffer: int = 4,
        max_decoded_pixels: int = recordio.MAX_DECODED_PIXELS,
        round_batch: bool = True,
        num_parts: int = 1,
        part_index: int = 0,
        resize: int = -1,
        resize_mode: str = "force",
        rand_mirror_prob: float = 0.0,
        rand_pad_prob: float = 0.0,
        max_pad_scale: float = 1.0,
        fill_value: int = 127,
        inter_method: int = 1,
        mean_r: float = 0.0,
        mean_g: float = 0.0,
        mean_b: float = 0.0,
        std_r: float = 0.0,
        std_g: float = 0.0,
        std_b: float = 0.0,
        scale: float = 1.0,
        dtype: str | None = None,
        data_name: str = "data",
        label_name: str = "label",
        verbose: bool = True,
        ctx: Context | str | None = None,
        path_imglist: str = "",
        mean_img: str = "",
        aug_seq: str = "det_aug_default",
        shuffle_chunk_size: int = 0,
        shuffle_chunk_seed: int = 0,
        **kwargs: Any,
    ) -> None:
        api = "ImageDetRecordIter"
        batch_size = check_batch_size(api, batch_size)
        PreparedBatchIter.__init__(self, batch_size)
        check_aug_seq(api, aug_seq)
        ignore_unknown(api, kwargs, KEYWORDS)
        data_shape = tuple(int(d) for d in data_shape)
        if len(data_shape) != 3 or data_shape[0] != 3 or min(data_shape) <= 0:
            raise DataIterError(f"{api}: data_shape must be (3, height, width) (RGB images), got {data_shape}")
        if label_width != -1 and label_width < 1:
            raise DataIterError(f"{api}: label_width must be -1 (varying) or >= 1, got {label_width}")
        if resize_mode not in RESIZE_MODES:
            raise DataIterError(f"{api}: resize_mode must be one of {RESIZE_MODES}, got {resize_mode!r}")
        if inter_method not in (*INTER_METHODS, AUTO_INTER, RANDOM_INTER):
            raise DataIterError(f"{api}: inter_method must be 0-4, 9 or 10, got {inter_method}")
        rand_crop_prob = float(kwargs.get("rand_crop_prob", 0.0))
        probabilities = [("rand_mirror_prob", rand_mirror_prob), ("rand_pad_prob", rand_pad_prob)]
        probabilities += [("rand_crop_prob", rand_crop_prob)]
        probabilities += [(prob, float(kwargs.get(prob, 0.0))) for prob, _, _ in COLOUR_JITTERS]
        for name, value in probabilities:
            if not 0 <= value <= 1:
                raise DataIterError(f"{api}: {name} must be a probability in [0, 1], got {value}")
        if max_pad_scale < 1:
            raise DataIterError(f"{api}: max_pad_scale must be >= 1, got {max_pad_scale}")
        if preprocess_threads < 1 or prefetch_buffer < 1:
            raise DataIterError(f"{api}: preprocess_threads and prefetch_buffer must be >= 1")
        dtype = dtype or "float32"
        if dtype not in DTYPES:
            raise DataIterError(f"{api}: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        check_part(api, num_parts, part_index)
        self.path_imgrec = os.fspath(path_imgrec)
        self.path_imgidx = os.fspath(path_imgidx) if path_imgidx else ""
        self.data_shape = data_shape
        self.label_width = int(label_width)
        self.shuffle = bool(shuffle)
        self.seed = self.seed_aug = int(seed)
        self.preprocess_threads = int(preprocess_threads)
        self.prefetch_buffer = int(prefetch_buffer)
        self.round_batch = bool(round_batch)
        self.ctx = ctx if isinstance(ctx, Context) else current_context()
        self._np_dtype = np.dtype(dtype)
        self._records = self._part_records(num_parts, part_index)
        self._set_chunk_shuffle(shuffle_chunk_size, shuffle_chunk_seed)
        self._label_map = read_label_list(os.fspath(path_imglist), -1, api) if path_imglist else None
        longest = self._longest_label()
        if label_pad_width <= 0:
            label_pad_width = longest
        elif label_pad_width < longest:
            raise DataIterError(
                f"{api}: label_pad_width {label_pad_width} is smaller than the longest label, {longest}"
            )
        try:
            crop_sampler = CropSampler(kwargs) if rand_crop_prob > 0 else None
            colour_jitters = []
            for prob, strength, jitter in COLOUR_JITTERS:
                if float(kwargs.get(prob, 0.0)) > 0 and float(kwargs.get(strength, 0)) > 0:
                    augmentation = ExtraAugmentation.from_kwargs({jitter: kwargs[strength]}, None, resize_with)
                    colour_jitters.append((float(kwargs[prob]), augmentation))
        except (ValueError, AugmentError) as err:
            raise DataIterError(f"{api}: {err}") from None
        params = dict(
            rand_crop_prob=rand_crop_prob,
            crop_sampler=crop_sampler,
            colour_jitters=colour_jitters,
            label_pad_width=int(label_pad_width),
            label_pad_value=float(label_pad_value),
            resize=int(resize),
            resize_mode=resize_mode,
            inter_method=inter_method,
            rand_mirror_prob=float(rand_mirror_prob),
            rand_pad_prob=float(rand_pad_prob),
            max_pad_scale=float(max_pad_scale),
            fill_value=int(fill_value),
            max_decoded_pixels=max_decoded_pixels,
            mean_r=mean_r,
            mean_g=mean_g,
            mean_b=mean_b,
            std_r=std_r,
            std_g=std_g,
            std_b=std_b,
            scale=scale,
        )
        params["label_map"] = self._label_map
        if mean_img:
            params["mean_img"] = self._mean_image(os.fspath(mean_img), params)
        self._augment = DetRecordAugmenter(self.path_imgrec, data_shape, self.label_width, params)
        self.label_pad_width = int(label_pad_width)
        self.provide_data = [DataDesc(data_name, (batch_size, *data_shape), self._np_dtype.type)]
        self.provide_label = [DataDesc(label_name, (batch_size, LABEL_HEADER + self.label_pad_width), np.float32)]
        self._start_workers(verbose)

    def _unrandom_augmenter(self, params: dict[str, Any]) -> DetRecordAugmenter:
        """The per-record work for the mean image: no random crop, pad, mirror or colour."""
        plain = dict(params, rand_crop_prob=0.0, crop_sampler=None, colour_jitters=[], rand_pad_prob=0.0)
        plain["rand_mirror_prob"] = 0.0
        return DetRecordAugmenter(self.path_imgrec, self.data_shape, self.label_width, plain)

    def _longest_label(self) -> int:
        """The most values any record's label has (read from the headers only), checking each label."""
        longest = 0
        with open(self.path_imgrec, "rb") as f:
            for offset in self._records:
                f.seek(offset)
                record = recordio.read_record(f, self.path_imgrec)
                if record is None:
                    raise DataIterError(f"ImageDetRecordIter: {self.path_imgrec}: no record at byte offset {offset}")
                header, _ = recordio.unpack(record)
                where = f"ImageDetRecordIter: {self.path_imgrec}, record at byte offset {offset}"
                longest = max(longest, checked_det_label(header, self.label_width, where, self._label_map).size)
        return longest


__all__ = ["ImageDetRecordIter"]

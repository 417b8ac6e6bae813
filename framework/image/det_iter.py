"""``ImageDetIter``: batches of images with their object boxes, for detection networks.

A detection label, as packed in a ``.rec`` header or written in a ``.lst`` line, is one flat
array: a header (its width, the object width, ...) and then the objects, each at least
``[class, xmin, ymin, xmax, ymax]`` (the layout is :mod:`framework.io.det_label`'s). The
iterator parses it into an ``(objects, object_width)`` array, runs the detection augmenters
(:mod:`framework.image.det_augmenters`) on image and boxes together, and writes each image's
objects into a ``(batch, max_objects, object_width)`` label padded with rows of -1.
``max_objects`` is the largest object count in the data (one pass over the labels when the
iterator is made); :meth:`ImageDetIter.reshape` and :meth:`ImageDetIter.sync_label_shape`
enlarge it, e.g. to give a training and a validation iterator the same label shape.

Samples whose label has no valid box (after parsing or after augmentation) are skipped, as
in MXNet; a label that cannot be parsed at all is an error when the iterator is made.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from ..io.base import DataDesc
from ..io.det_label import MIN_OBJECT_WIDTH, DetLabelError, split_det_label
from ..ndarray import NDArray
from .augmenters import IMAGENET_MEAN, IMAGENET_STD
from .base import ImageError
from .det_augmenters import CreateDetAugmenter, DetAugmenter
from .image_iter import ImageIter


def parse_det_label(label: Any) -> np.ndarray:
    """A flat detection label as an ``(objects, object_width)`` array of its valid boxes (xmax > xmin, ymax > ymin)."""
    _, objects = split_det_label(label.asnumpy() if isinstance(label, NDArray) else label)
    valid = (objects[:, 3] > objects[:, 1]) & (objects[:, 4] > objects[:, 2])
    if not valid.any():
        raise DetLabelError("detection label has no valid box (every object has xmax <= xmin or ymax <= ymin)")
    return objects[valid]


def check_det_label(label: np.ndarray) -> None:
    """After augmentation: a 2-d array of objects of width >= 5 with at least one valid labelled box."""
    if label.ndim != 2 or label.shape[1] < MIN_OBJECT_WIDTH:
        raise DetLabelError(f"detection label must have shape (objects, 5 or more), got {label.shape}")
    valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
    if not valid.any():
        raise DetLabelError("detection label has no valid object left after augmentation")


class ImageDetIter(ImageIter):
    """Iterate over images and their object boxes with detection augmentation (``mx.image.ImageDetIter``)."""

    def __init__(
        self,
        batch_size: int,
        data_shape: tuple[int, int, int],
        path_imgrec: str | None = None,
        path_imglist: str | None = None,
        path_root: str | None = None,
        path_imgidx: str | None = None,
        shuffle: bool = False,
        part_index: int = 0,
        num_parts: int = 1,
        aug_list: list[DetAugmenter] | None = None,
        imglist: list[Any] | None = None,
        data_name: str = "data",
        label_name: str = "label",
        last_batch_handle: str = "pad",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            batch_size=batch_size,
            data_shape=data_shape,
            path_imgrec=path_imgrec,
            path_imglist=path_imglist,
            path_root=path_root,
            path_imgidx=path_imgidx,
            shuffle=shuffle,
            part_index=part_index,
            num_parts=num_parts,
            aug_list=[],
            imglist=imglist,
            data_name=data_name,
            label_name=label_name,
            last_batch_handle=last_batch_handle,
        )
        self.auglist = CreateDetAugmenter(self.data_shape, **kwargs) if aug_list is None else aug_list
        self.label_shape = self._estimate_label_shape()
        self.provide_label = [DataDesc(label_name, (self.batch_size, *self.label_shape), np.float32)]

    def _estimate_label_shape(self) -> tuple[int, int]:
        """(most objects in one image, object width), from one pass over every label."""
        most, width = 0, None
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                try:
                    objects = parse_det_label(label)
                except DetLabelError as err:
                    raise DetLabelError(f"ImageDetIter: sample #{self.cur - 1}: {err}") from None
                if width is not None and objects.shape[1] != width:
                    raise DetLabelError(
                        f"ImageDetIter: sample #{self.cur - 1} has objects of width {objects.shape[1]}, "
                        f"the samples before it {width}"
                    )
                most, width = max(most, objects.shape[0]), objects.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise ImageError("ImageDetIter: the source holds no images")
        return most, width

    def check_valid_image(self, data: NDArray) -> None:
        """An image without pixels is skipped like a sample without boxes."""
        if min(data.shape) == 0:
            raise DetLabelError(f"ImageDetIter: an image of shape {tuple(data.shape)} has no pixels")

    # ------------------------------------------------------------------ batches
    def new_label_batch(self) -> np.ndarray:
        """Every row -1: the rows past an image's objects stay padding."""
        return np.full(self.provide_label[0].shape, -1.0, dtype=np.float32)

    def augmentation_transform(self, data: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:  # type: ignore[override]
        """Apply every detection augmenter to the image and its boxes in turn."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def _fill(self, data: np.ndarray, label: np.ndarray, start: int = 0) -> int:
        """Fill the batch from position ``start``, skipping images without a valid box; returns the count."""
        i = start
        try:
            while i < self.batch_size:
                raw, encoded = self.next_sample()
                image = self.imdecode(encoded)
                try:
                    self.check_valid_image(image)
                    objects = parse_det_label(raw)
                    image, objects = self.augmentation_transform(image, objects)
                    check_det_label(objects)
                except DetLabelError as err:  # (check_valid_image raises one too)
                    logging.getLogger(__name__).debug("Invalid sample, skipping: %s", err)
                    continue
                chw = self.postprocess_data(image)
                if chw.shape != self.data_shape:
                    raise ImageError(
                        f"ImageDetIter: the augmenters made an image of shape {chw.shape} (CHW), "
                        f"not data_shape {self.data_shape}"
                    )
                if objects.shape[0] > label.shape[1] or objects.shape[1] != label.shape[2]:
                    raise DetLabelError(
                        f"ImageDetIter: an image with objects {objects.shape} does not fit the label shape "
                        f"{self.label_shape} (objects, object width)"
                    )
                data[i] = chw
                label[i, : objects.shape[0]] = objects
                label[i, objects.shape[0] :] = -1
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    # ------------------------------------------------------------------ label shape
    def check_label_shape(self, label_shape: tuple[int, int]) -> None:
        """A new label shape may hold more objects per image, never fewer, and keeps the object width."""
        if len(label_shape) != 2:
            raise ImageError(f"ImageDetIter: label_shape must be (objects, object width), got {label_shape}")
        if label_shape[0] < self.label_shape[0]:
            raise ImageError(
                f"ImageDetIter: cannot reduce the objects per image from {self.label_shape[0]} to {label_shape[0]}"
            )
        if label_shape[1] != self.provide_label[0].shape[2]:
            raise ImageError(
                f"ImageDetIter: label_shape's object width {label_shape[1]} differs from the data's "
                f"{self.provide_label[0].shape[2]}"
            )

    def reshape(
        self, data_shape: tuple[int, int, int] | None = None, label_shape: tuple[int, int] | None = None
    ) -> None:
        """Change the image shape and/or enlarge the label shape of the batches to come."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.data_shape = tuple(data_shape)
            self.provide_data = [
                DataDesc(self.provide_data[0].name, (self.batch_size, *self.data_shape), self.provide_data[0].dtype)
            ]
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.label_shape = tuple(label_shape)
            self.provide_label = [
                DataDesc(self.provide_label[0].name, (self.batch_size, *self.label_shape), np.float32)
            ]

    def sync_label_shape(self, it: ImageDetIter, verbose: bool = False) -> ImageDetIter:
        """Give this iterator and ``it`` the same label shape (the larger object count); returns ``it``."""
        if not isinstance(it, ImageDetIter):
            raise ImageError(f"ImageDetIter.sync_label_shape: expected an ImageDetIter, got {type(it).__name__}")
        if self.label_shape[1] != it.label_shape[1]:
            raise ImageError(
                f"ImageDetIter.sync_label_shape: object widths differ ({self.label_shape[1]} vs {it.label_shape[1]})"
            )
        most = max(self.label_shape[0], it.label_shape[0])
        if most > self.label_shape[0]:
            self.reshape(None, (most, self.label_shape[1]))
        if most > it.label_shape[0]:
            it.reshape(None, (most, it.label_shape[1]))
        if verbose and most > min(self.label_shape[0], it.label_shape[0]):
            logging.getLogger(__name__).info("Resized label_shape to (%d, %d).", most, self.label_shape[1])
        return it

    # ------------------------------------------------------------------ looking at the data
    def draw_next(
        self,
        color: tuple[int, int, int] | None = None,
        thickness: int = 2,
        mean: Any = None,
        std: Any = None,
        clip: bool = True,
        waitKey: int | None = None,
        window_name: str = "draw_next",
        id2labels: dict[int, str] | None = None,
    ) -> Iterator[np.ndarray]:
        """Yield the next images, augmented, with their boxes drawn (HWC uint8 in BGR order, as MXNet's).

        ``mean`` / ``std`` (True for ImageNet's) undo a normalisation; ``color`` is RGB (random per
        box when None); ``id2labels`` writes class names. Drawing uses Pillow: MXLab opens no window,
        so ``waitKey`` only warns (docs/differences.md).
        """
        if waitKey is not None:
            warnings.warn(
                f"ImageDetIter.draw_next: MXLab does not open a window ({window_name!r}); the images are yielded",
                stacklevel=2,
            )
        std = np.array(IMAGENET_STD) if std is True else std
        mean = np.array(IMAGENET_MEAN) if mean is True else mean
        shown = 0
        while True:
            try:
                raw, encoded = self.next_sample()
            except StopIteration:
                return
            image = self.imdecode(encoded)
            try:
                self.check_valid_image(image)
                objects = parse_det_label(raw)
            except DetLabelError as err:
                logging.getLogger(__name__).debug("Invalid sample, skipping: %s", err)
                continue
            shown += 1
            data, objects = self.augmentation_transform(image, objects)
            pixels = data.asnumpy().astype(np.float64)
            if std is not None:
                pixels *= np.asarray(std)
            if mean is not None:
                pixels += np.asarray(mean)
            if clip:
                pixels = np.clip(pixels, 0, 255)
            yield self._draw_boxes(pixels.astype(np.uint8), objects, color, thickness, id2labels)

    @staticmethod
    def _draw_boxes(
        rgb: np.ndarray,
        objects: np.ndarray,
        color: tuple[int, int, int] | None,
        thickness: int,
        id2labels: dict[int, str] | None,
    ) -> np.ndarray:
        """Boxes (and class names) drawn on an RGB image with Pillow; returned in BGR order."""
        canvas = Image.fromarray(np.ascontiguousarray(rgb[:, :, :3]))
        draw = ImageDraw.Draw(canvas)
        height, width = rgb.shape[:2]
        for row in objects:
            x1 = int(row[1] * width)
            if x1 < 0:
                continue  # a padding row
            y1, x2, y2 = int(row[2] * height), int(row[3] * width), int(row[4] * height)
            box_color = tuple(int(c) for c in (color if color else np.random.rand(3) * 255))
            draw.rectangle([x1, y1, x2, y2], outline=box_color, width=thickness)
            if id2labels is not None and int(row[0]) in id2labels:
                draw.text((x1 + 5, y1 + 5), str(id2labels[int(row[0])]), fill=(255, 255, 255))
        return np.asarray(canvas)[:, :, ::-1].copy()


__all__ = ["DetLabelError", "ImageDetIter", "check_det_label", "parse_det_label"]

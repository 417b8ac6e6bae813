"""``mx.image.detection`` (also ``mx.image.det``): the detection half of ``mx.image`` under MXNet's name.

The augmenters live in :mod:`framework.image.det_augmenters`, the iterator in
:mod:`framework.image.det_iter`, OpenCV-style padding in :mod:`framework.image.border`;
this module gathers them as MXNet 1.9.1's ``mxnet.image.detection`` does.
"""

from __future__ import annotations

from .border import copyMakeBorder
from .det_augmenters import (
    CreateDetAugmenter,
    CreateMultiRandCropAugmenter,
    DetAugmenter,
    DetBorrowAug,
    DetHorizontalFlipAug,
    DetRandomCropAug,
    DetRandomPadAug,
    DetRandomSelectAug,
)
from .det_iter import DetLabelError, ImageDetIter

__all__ = [
    "CreateDetAugmenter",
    "CreateMultiRandCropAugmenter",
    "DetAugmenter",
    "DetBorrowAug",
    "DetHorizontalFlipAug",
    "DetLabelError",
    "DetRandomCropAug",
    "DetRandomPadAug",
    "DetRandomSelectAug",
    "ImageDetIter",
    "copyMakeBorder",
]

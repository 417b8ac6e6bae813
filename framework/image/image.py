"""``mx.image.image``: the classification half of ``mx.image`` under MXNet's submodule name.

MXNet 1.9.1 splits ``mx.image`` into ``image`` (decoding, augmenters, ``ImageIter``) and
``detection``; MXLab splits it finer (see :mod:`framework.image`). This module gathers the
classification names again, so code that imports ``mxnet.image.image`` finds them.
"""

from __future__ import annotations

from .. import io, recordio
from .. import ndarray as nd
from ..base import numeric_types
from ..util import is_np_array
from .augmenters import (
    Augmenter,
    BrightnessJitterAug,
    CastAug,
    CenterCropAug,
    ColorJitterAug,
    ColorNormalizeAug,
    ContrastJitterAug,
    CreateAugmenter,
    ForceResizeAug,
    HorizontalFlipAug,
    HueJitterAug,
    LightingAug,
    RandomCropAug,
    RandomGrayAug,
    RandomOrderAug,
    RandomSizedCropAug,
    ResizeAug,
    SaturationJitterAug,
    SequentialAug,
    color_normalize,
)
from .crop import center_crop, fixed_crop, random_crop, random_size_crop
from .decode import imdecode, imread
from .image_iter import ImageIter
from .resize import imresize, resize_short, scale_down
from .rotate import imrotate, random_rotate

__all__ = [
    "Augmenter",
    "BrightnessJitterAug",
    "CastAug",
    "CenterCropAug",
    "ColorJitterAug",
    "ColorNormalizeAug",
    "ContrastJitterAug",
    "CreateAugmenter",
    "ForceResizeAug",
    "HorizontalFlipAug",
    "HueJitterAug",
    "ImageIter",
    "LightingAug",
    "RandomCropAug",
    "RandomGrayAug",
    "RandomOrderAug",
    "RandomSizedCropAug",
    "ResizeAug",
    "SaturationJitterAug",
    "SequentialAug",
    "center_crop",
    "color_normalize",
    "fixed_crop",
    "imdecode",
    "imread",
    "imresize",
    "imrotate",
    "io",
    "is_np_array",
    "nd",
    "numeric_types",
    "random_crop",
    "random_rotate",
    "random_size_crop",
    "recordio",
    "resize_short",
    "scale_down",
]

"""``mx.image`` (also ``mx.img``): decode, resize, crop and augment images, and iterate over them.

- :mod:`.base`: the error type and the NDArray <-> NumPy crossing every function shares;
- :mod:`.decode`: ``imdecode`` / ``imread`` (Pillow; MXNet uses OpenCV);
- :mod:`.resize`: ``imresize`` with MXNet's interpolation codes, ``scale_down``, ``resize_short``;
- :mod:`.crop`: ``fixed_crop``, ``center_crop``, ``random_crop``, ``random_size_crop``;
- :mod:`.rotate`: ``imrotate``, ``random_rotate`` (CHW float images, as in MXNet);
- :mod:`.augmenters`: the ``Augmenter`` classes, ``color_normalize`` and ``CreateAugmenter``;
- :mod:`.image_iter`: ``ImageIter``, batches from a ``.rec`` file or a list of image files.

Images are HWC NDArrays (height, width, channels) in RGB order until ``ImageIter`` turns
them into NCHW batches. The package sits with the data iterators (it builds on ``mx.io``
and ``mx.recordio``); the image *operators* (``mx.nd.image.*``) are registered operators in
``framework/operator/image/``.
"""

from __future__ import annotations

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
from .base import ImageError
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
    "ImageError",
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
    "random_crop",
    "random_rotate",
    "random_size_crop",
    "resize_short",
    "scale_down",
]

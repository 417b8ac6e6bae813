"""``mx.image`` (also ``mx.img``): decode, resize, crop and augment images, and iterate over them.

- :mod:`.base`: the error type and the NDArray <-> NumPy crossing every function shares;
- :mod:`.decode`: ``imdecode`` / ``imread`` (Pillow; MXNet uses OpenCV);
- :mod:`.resize`: ``imresize`` with MXNet's interpolation codes, ``scale_down``, ``resize_short``;
- :mod:`.crop`: ``fixed_crop``, ``center_crop``, ``random_crop``, ``random_size_crop``;
- :mod:`.rotate`: ``imrotate``, ``random_rotate`` (CHW float images, as in MXNet);
- :mod:`.augmenters`: the ``Augmenter`` classes, ``color_normalize`` and ``CreateAugmenter``;
- :mod:`.image_iter`: ``ImageIter``, batches from a ``.rec`` file or a list of image files;
- :mod:`.border`: ``copyMakeBorder``, OpenCV's padding;
- :mod:`.det_augmenters`: the detection augmenters (image and boxes together), ``CreateDetAugmenter``;
- :mod:`.det_iter`: ``ImageDetIter``, batches of images with their object boxes;
- :mod:`.image` and :mod:`.detection` (also ``det``): MXNet 1.9.1's two submodule names,
  gathering the classification and the detection names.

Images are HWC NDArrays (height, width, channels) in RGB order until ``ImageIter`` turns
them into NCHW batches. The package sits with the data iterators (it builds on ``mx.io``
and ``mx.recordio``); the image *operators* (``mx.nd.image.*``) are registered operators in
``framework/operator/image/``.
"""

from __future__ import annotations

from . import detection, image
from . import detection as det
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
from .border import copyMakeBorder
from .crop import center_crop, fixed_crop, random_crop, random_size_crop
from .decode import imdecode, imread
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
from .image import io, is_np_array, nd, numeric_types, recordio
from .image_iter import ImageIter
from .resize import imresize, resize_short, scale_down
from .rotate import imrotate, random_rotate

__all__ = [
    "Augmenter",
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
    "det",
    "detection",
    "image",
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
    "io",
    "is_np_array",
    "nd",
    "numeric_types",
    "recordio",
    "random_crop",
    "random_rotate",
    "random_size_crop",
    "resize_short",
    "scale_down",
]

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
from .base import ImageError
from .detection import *  # noqa: F403  (the detection names, listed once in detection.__all__)
from .image import *  # noqa: F403  (the classification names, listed once in image.__all__)

# The package's names are its two MXNet submodules' names plus its own; each submodule's
# ``__all__`` is the one list of what it gathers, so nothing is listed twice.
__all__ = ["ImageError", "det", "detection", "image"]
__all__ += image.__all__
__all__ += detection.__all__

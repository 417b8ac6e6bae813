"""The flat detection label of MXNet's ``.rec`` / ``.lst`` files, and its error type.

A detection label is one flat array::

    header_width, object_width, [more header...], obj0 (object_width values), obj1, ...

``header_width >= 2`` counts the header's own values; each object holds at least
``[class, xmin, ymin, xmax, ymax]`` with the corners as fractions of the image's width and
height. Both ``mx.io.ImageDetRecordIter`` and ``mx.image.ImageDetIter`` read this layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXLabError

MIN_OBJECT_WIDTH = 5  # class id and the four corners
MIN_RAW_LABEL = 7  # a header of two values and one object


class DetLabelError(MXLabError, ValueError, RuntimeError):
    """A detection label that cannot be used (also a ``RuntimeError``, what MXNet raises for one)."""


def split_det_label(label: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(header, objects)`` of a flat detection label; ``objects`` has shape ``(count, object_width)``."""
    raw = np.asarray(label, dtype=np.float32).ravel()
    if raw.size < MIN_RAW_LABEL:
        raise DetLabelError(
            f"detection label of {raw.size} values: need at least {MIN_RAW_LABEL} "
            "(header_width, object_width, then objects of [class, xmin, ymin, xmax, ymax, ...])"
        )
    header_width, object_width = int(raw[0]), int(raw[1])
    if header_width < 2 or object_width < MIN_OBJECT_WIDTH or header_width >= raw.size:
        raise DetLabelError(
            f"detection label starts with header_width={raw[0]:g}, object_width={raw[1]:g}: the header holds "
            f"at least 2 values and each object at least {MIN_OBJECT_WIDTH}"
        )
    if (raw.size - header_width) % object_width:
        raise DetLabelError(
            f"detection label of {raw.size} values: {raw.size - header_width} after the header of {header_width} "
            f"is not a whole number of objects of width {object_width}"
        )
    return raw[:header_width], raw[header_width:].reshape(-1, object_width)


__all__ = ["MIN_OBJECT_WIDTH", "DetLabelError", "split_det_label"]

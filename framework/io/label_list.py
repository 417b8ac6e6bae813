"""Labels from a ``.lst`` file, by image index: ``ImageRecordIter(path_imglist=...)``.

A ``.lst`` line is ``index<TAB>label...<TAB>path`` (what ``im2rec --list`` writes). Given one,
``ImageRecordIter`` takes each record's label from the line whose index is the record
header's ``id`` instead of from the header, as MXNet's ``ImageLabelMap`` does: a way to
relabel a packed ``.rec`` without repacking it. Each line must hold exactly ``label_width``
labels (any number for ``label_width=-1``, the detection iterator's varying-length labels).
"""

from __future__ import annotations

import os

import numpy as np

from .base import DataIterError


def read_label_list(path: str, label_width: int, api: str) -> dict[int, np.ndarray]:
    """``{index: float32 labels}`` of a ``.lst`` file; malformed lines are errors naming file and line."""
    if not os.path.isfile(path):
        raise DataIterError(f"{api}: path_imglist: file not found: {path!r}")
    labels: dict[int, np.ndarray] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            where = f"{api}: {path}, line {lineno}"
            if len(fields) < 3 or (label_width != -1 and len(fields) != label_width + 2):
                raise DataIterError(
                    f"{where}: expected index, {label_width if label_width != -1 else 'some'} label(s) and a path, "
                    f"got {len(fields)} fields: {line.strip()!r:.120}"
                )
            try:
                labels[int(float(fields[0]))] = np.array([float(v) for v in fields[1:-1]], dtype=np.float32)
            except ValueError:
                raise DataIterError(f"{where}: index and labels must be numbers: {line.strip()!r:.120}") from None
    return labels


__all__ = ["read_label_list"]

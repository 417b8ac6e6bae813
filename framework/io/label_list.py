"""Reading ``.lst`` files: the one parser behind ``im2rec``, ``ImageIter`` and ``path_imglist``.

A ``.lst`` line is ``index<TAB>label...<TAB>path`` (what ``im2rec --list`` writes). Three
readers need it: ``im2rec`` packs the listed images, ``mx.image.ImageIter`` loads them, and
``ImageRecordIter(path_imglist=...)`` takes each record's label from the line whose index is
the record header's ``id`` instead of from the header, as MXNet's ``ImageLabelMap`` does (a way
to relabel a packed ``.rec`` without repacking it). :func:`read_list_file` is the shared parser;
each caller passes its own error type so its users keep catching what they already catch.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .base import DataIterError


@dataclass(frozen=True)
class ListLine:
    """One parsed ``.lst`` line; ``lineno`` (from 1) lets a caller name the line in its own checks."""

    index: int
    labels: list[float]
    path: str
    lineno: int


def _parse_index(text: str) -> int:
    """The image index; ``3`` and ``3.0`` both read as 3 (MXNet's C++ reader parses a float), ``3.5`` is an error."""
    try:
        return int(text)
    except ValueError as not_an_int:
        try:
            value = float(text)
        except ValueError:
            raise not_an_int from None
        if not value.is_integer():  # also rejects inf and nan
            raise not_an_int from None
        return int(value)


def read_list_file(path: str, api: str, error: type[Exception] = DataIterError) -> Iterator[ListLine]:
    """The lines of a ``.lst`` file in file order; a malformed line raises ``error`` naming file, line and offset.

    The file is read as bytes so that text which is not UTF-8 can be reported by its byte
    offset, the way a damaged file is found with a hex editor. Blank lines are skipped.
    """
    with open(path, "rb") as f:
        raw_lines = f.read().splitlines(keepends=True)
    at = 0
    for lineno, raw in enumerate(raw_lines, start=1):
        where, at = f"{api}: {path}, line {lineno} (byte offset {at})", at + len(raw)
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise error(f"{where}: not UTF-8 text at byte {err.start} of the line: {raw[:40]!r}") from None
        if not line.strip():
            continue
        fields = [x.strip() for x in line.strip().split("\t")]
        if len(fields) < 3:
            raise error(f"{where}: needs index, label(s) and path, got {line!r:.120}")
        try:
            index = _parse_index(fields[0])
            labels = [float(x) for x in fields[1:-1]]
        except ValueError as err:
            raise error(f"{where}: {err} (index and labels must be numbers)") from None
        yield ListLine(index, labels, fields[-1], lineno)


def read_label_list(path: str, label_width: int, api: str) -> dict[int, np.ndarray]:
    """``{index: float32 labels}`` of a ``.lst`` file; each line must hold ``label_width`` labels (-1: any)."""
    if not os.path.isfile(path):
        raise DataIterError(f"{api}: path_imglist: file not found: {path!r}")
    labels: dict[int, np.ndarray] = {}
    for entry in read_list_file(path, api):
        if label_width != -1 and len(entry.labels) != label_width:
            raise DataIterError(
                f"{api}: {path}, line {entry.lineno}: expected index, {label_width} label(s) and a path, "
                f"got {len(entry.labels)} label(s)"
            )
        labels[entry.index] = np.array(entry.labels, dtype=np.float32)
    return labels


__all__ = ["ListLine", "read_label_list", "read_list_file"]

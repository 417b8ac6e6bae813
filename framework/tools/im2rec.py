"""im2rec: pack a folder of images into a RecordIO file, in two steps (MXNet's ``tools/im2rec.py``).

1. ``python -m framework.tools.im2rec --list [--recursive] PREFIX ROOT`` walks ROOT and
   writes ``PREFIX.lst``: one line per image, ``index<TAB>label<TAB>relative path``. With
   ``--recursive`` every sub-folder is a class (labels 0, 1, ... in sorted folder order);
   without it the images directly in ROOT all get label 0. The list is shuffled with
   Python's ``random.seed(100)`` unless ``--no-shuffle``: the same order as MXNet's tool.
   ``--train-ratio`` / ``--test-ratio`` split it into ``PREFIX_train.lst`` (and ``_val``,
   ``_test``); ``--chunks`` cuts it into ``PREFIX_<i>.lst`` pieces.
2. ``python -m framework.tools.im2rec PREFIX ROOT`` reads every ``PREFIX*.lst`` and writes
   ``.rec`` + ``.idx`` next to it: each image is loaded (optionally centre-cropped to a
   square and resized so its shorter edge is ``--resize``), re-encoded (``--encoding``
   ``.jpg`` with ``--quality``, or ``.png``) and packed with its label and index. With
   ``--pass-through`` the file's bytes are packed as they are. ``--pack-label`` stores all
   the label columns of the list as an array label.

Images are encoded on ``--num-thread`` threads; records are written in list order.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from PIL import Image

from .. import recordio
from ..atomic_file import atomic_write
from ..base import MXLabError
from ..io.label_list import read_list_file
from ..io.pixels import resize_bilinear


def list_images(root: str, recursive: bool, exts: Sequence[str]) -> Iterator[tuple[int, str, int]]:
    """``(index, relative path, label)`` for every image under ``root``, in sorted order."""
    exts = [e.lower() for e in exts]
    index = 0
    if recursive:
        classes: dict[str, int] = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(path, name)
                if os.path.isfile(full) and os.path.splitext(name)[1].lower() in exts:
                    label = classes.setdefault(path, len(classes))
                    yield index, os.path.relpath(full, root), label
                    index += 1
        for path, label in sorted(classes.items(), key=lambda item: item[1]):
            print(os.path.relpath(path, root), label)
    else:
        for name in sorted(os.listdir(root)):
            full = os.path.join(root, name)
            if os.path.isfile(full) and os.path.splitext(name)[1].lower() in exts:
                yield index, os.path.relpath(full, root), 0
                index += 1


def write_list(path: str, items: Sequence[Sequence[Any]]) -> None:
    """Write ``index<TAB>label...<TAB>path`` lines (labels as ``%f``, as MXNet's tool)."""
    with atomic_write(path, "w") as f:
        for item in items:
            labels = "".join(f"{float(label):f}\t" for label in item[2:])
            f.write(f"{int(item[0])}\t{labels}{item[1]}\n")


class ListFileError(MXLabError, ValueError):
    """A ``.lst`` file has a malformed line; the message names the file, line and byte offset."""


def read_list(path: str) -> Iterator[list[Any]]:
    """Items ``[index, path, label, ...]`` of a ``.lst`` file; malformed lines raise ListFileError."""
    for entry in read_list_file(path, "im2rec", ListFileError):
        yield [entry.index, entry.path, *entry.labels]


def make_list(args: argparse.Namespace) -> None:
    """Step 1: write the ``.lst`` file(s)."""
    items = list(list_images(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.seed(100)
        random.shuffle(items)
    chunk_size = (len(items) + args.chunks - 1) // args.chunks if items else 0
    for c in range(args.chunks):
        chunk = items[c * chunk_size : (c + 1) * chunk_size]
        suffix = f"_{c}" if args.chunks > 1 else ""
        n_train, n_test = int(chunk_size * args.train_ratio), int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(args.prefix + suffix + ".lst", chunk)
            continue
        if args.test_ratio:
            write_list(args.prefix + suffix + "_test.lst", chunk[:n_test])
        if args.train_ratio + args.test_ratio < 1.0:
            write_list(args.prefix + suffix + "_val.lst", chunk[n_test + n_train :])
        write_list(args.prefix + suffix + "_train.lst", chunk[n_test : n_test + n_train])


def encode(args: argparse.Namespace, item: list[Any]) -> bytes:
    """One record: the (re-encoded) image of ``item`` packed with its label and index."""
    full = os.path.join(args.root, item[1])
    label = item[2:] if len(item) > 3 and args.pack_label else item[2]
    header = recordio.IRHeader(0, label, item[0], 0)
    if args.pass_through:
        with open(full, "rb") as f:
            return recordio.pack(header, f.read())
    mode = {1: "RGB", 0: "L", -1: None}[args.color]
    with Image.open(full) as opened:
        img = np.asarray(opened.convert(mode or ("RGBA" if "A" in opened.mode else "RGB")))
    if args.center_crop:
        h, w = img.shape[:2]
        if h > w:
            img = img[(h - w) // 2 : (h - w) // 2 + w]
        else:
            img = img[:, (w - h) // 2 : (w - h) // 2 + h]
    if args.resize:
        h, w = img.shape[:2]
        size = (args.resize, h * args.resize // w) if h > w else (w * args.resize // h, args.resize)
        img = resize_bilinear(img, *size)  # OpenCV's bilinear, as MXNet's tool
    if img.ndim == 3:  # pack_img takes OpenCV's channel order
        img = img[:, :, [2, 1, 0, 3][: img.shape[2]]]
    return recordio.pack_img(header, img, quality=args.quality, img_fmt=args.encoding)


def make_record(args: argparse.Namespace, lst: str) -> int:
    """Step 2 for one list: write ``.rec`` and ``.idx`` beside it; returns the record count."""
    items = list(read_list(lst))
    base = os.path.splitext(lst)[0]
    count = 0
    with (
        ThreadPoolExecutor(max_workers=max(1, args.num_thread)) as pool,
        recordio.MXIndexedRecordIO(base + ".idx", base + ".rec", "w") as rec,
    ):
        for item, record in zip(items, pool.map(lambda it: _try_encode(args, it), items), strict=True):
            if record is not None:
                rec.write_idx(item[0], record)
                count += 1
    return count


def _try_encode(args: argparse.Namespace, item: list[Any]) -> bytes | None:
    try:
        return encode(args, item)
    except Exception as err:  # one unreadable image does not stop the packing, as in MXNet's tool
        print(f"im2rec: skipping {item[1]}: {err}", file=sys.stderr)
        return None


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m framework.tools.im2rec",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list, or pack the images of a list into a RecordIO file.",
    )
    parser.add_argument("prefix", help="prefix of the .lst / .rec / .idx files")
    parser.add_argument("root", help="folder holding the images")
    group = parser.add_argument_group("listing images")
    group.add_argument("--list", action="store_true", help="write PREFIX.lst from the images under ROOT")
    group.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"], help="image file extensions")
    group.add_argument("--chunks", type=int, default=1, help="number of list chunks")
    group.add_argument("--train-ratio", type=float, default=1.0, help="fraction of images for training")
    group.add_argument("--test-ratio", type=float, default=0.0, help="fraction of images for testing")
    group.add_argument("--recursive", action="store_true", help="one label per sub-folder")
    group.add_argument("--no-shuffle", dest="shuffle", action="store_false", help="keep the sorted order")
    group = parser.add_argument_group("packing records")
    group.add_argument("--pass-through", action="store_true", help="pack the files' bytes unchanged")
    group.add_argument("--resize", type=int, default=0, help="resize the shorter edge to this size")
    group.add_argument("--center-crop", action="store_true", help="crop the centre square first")
    group.add_argument("--quality", type=int, default=95, help="JPEG quality 1-100 or PNG compression 0-9")
    group.add_argument("--num-thread", type=int, default=1, help="encoding threads")
    group.add_argument("--color", type=int, default=1, choices=[-1, 0, 1], help="1 colour, 0 grey, -1 unchanged")
    group.add_argument("--encoding", default=".jpg", choices=[".jpg", ".png"], help="image encoding")
    group.add_argument("--pack-label", action="store_true", help="store every label column as an array label")
    args = parser.parse_args(argv)
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = parse_args(argv)
    if not os.path.isdir(args.root):
        print(f"im2rec: image folder not found: {args.root}", file=sys.stderr)
        return 2
    if args.list:
        make_list(args)
        return 0
    folder = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    lists = sorted(
        os.path.join(folder, name)
        for name in os.listdir(folder)
        if os.path.join(folder, name).startswith(args.prefix) and name.endswith(".lst")
    )
    if not lists:
        print(f"im2rec: no .lst file with prefix {args.prefix}; run with --list first", file=sys.stderr)
        return 1
    for lst in lists:
        try:
            count = make_record(args, lst)
        except ListFileError as err:
            print(err, file=sys.stderr)
            return 1
        print(f"im2rec: {lst} -> {os.path.splitext(lst)[0]}.rec: {count} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())

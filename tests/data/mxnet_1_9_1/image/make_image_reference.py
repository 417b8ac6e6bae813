"""Write the ``mx.image`` reference data with real MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1`` (no OpenCV or Pillow needed in Python:
MXNet decodes with the OpenCV built into libmxnet)::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/image/make_image_reference.py [OUT_DIR]

It writes into OUT_DIR (default: this folder):

- ``images/img_<k>.png`` and ``images.lst``: ten small RGB PNGs of different sizes with a
  deterministic pattern (encoded here by a few lines of zlib, so the bytes never depend on
  an image library), labels ``k % 3`` and ``[k, 10 + k]``;
- ``images.rec`` / ``images.idx``: the same PNGs as RecordIO records (key ``k``, label ``k % 3``);
- ``reference.npz``: the ImageIter batches (data, label, pad per batch) for several pipelines
  of deterministic augmenters, and of random ones under a fixed ``random.seed``, plus
  ``imresize`` / ``resize_short`` outputs for each interpolation code, ``imrotate``'s, and
  ``ImageRecordIter`` batches with its deterministic augmentations (pad, rotate, crop size).

tests/image/test_mxnet_reference.py compares MXLab against these files (and runs this script
live when ``MXNET_PYTHON`` names an interpreter with MXNet 1.9.1). The functions take the
library as their ``mx`` argument, so the test runs the very same pipelines with MXLab
(``import framework as mx``); MXNet is imported only when the script runs.
"""

from __future__ import annotations

import os
import random
import struct
import sys
import zlib
from types import ModuleType
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [(20, 24), (32, 18), (17, 17), (40, 30), (16, 16), (25, 40), (19, 21), (48, 33), (18, 26), (30, 30)]
MEAN = np.array([123.68, 116.28, 103.53], dtype=np.float32)
STD = np.array([58.395, 57.12, 57.375], dtype=np.float32)


def make_image(k: int, height: int, width: int) -> np.ndarray:
    """A pattern with both smooth gradients and sharp edges (what resizing methods disagree on)."""
    y, x = np.mgrid[0:height, 0:width]
    r = (x * 255 // max(width - 1, 1) + 17 * k) % 256
    g = (y * 255 // max(height - 1, 1) + 31 * k) % 256
    b = np.where((x // 3 + y // 4 + k) % 2 == 0, 40 + 9 * k, 220 - 7 * k)
    return np.stack([r, g, b], axis=2).astype(np.uint8)


def encode_png(rgb: np.ndarray) -> bytes:
    """A minimal RGB PNG: IHDR, one zlib IDAT of unfiltered rows, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    height, width, _ = rgb.shape
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + rgb[row].tobytes() for row in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def write_inputs(mx: ModuleType, out: str) -> None:
    os.makedirs(os.path.join(out, "images"), exist_ok=True)
    record = mx.recordio.MXIndexedRecordIO(os.path.join(out, "images.idx"), os.path.join(out, "images.rec"), "w")
    lines = []
    for k, (height, width) in enumerate(SIZES):
        png = encode_png(make_image(k, height, width))
        with open(os.path.join(out, "images", f"img_{k}.png"), "wb") as f:
            f.write(png)
        record.write_idx(k, mx.recordio.pack(mx.recordio.IRHeader(0, float(k % 3), k, 0), png))
        lines.append(f"{k}\t{k}\t{10 + k}\timages/img_{k}.png\n")
    record.close()
    with open(os.path.join(out, "images.lst"), "w") as f:
        f.writelines(lines)


def pipelines(mx: ModuleType) -> tuple[dict, tuple[int, int, int]]:
    """name -> (ImageIter keyword arguments, seed or None, epochs)."""
    img = mx.image
    shape = (3, 16, 16)
    return {
        "bilinear_center": (
            dict(
                aug_list=[
                    img.ResizeAug(16, interp=1),
                    img.CenterCropAug((16, 16), interp=1),
                    img.CastAug(),
                    img.ColorNormalizeAug(mx.nd.array(MEAN), mx.nd.array(STD)),
                ]
            ),
            None,
            1,
        ),
        "create_default": (dict(resize=18, mean=True, std=True), None, 1),
        "force_nearest": (dict(aug_list=[img.ForceResizeAug((16, 16), interp=0), img.CastAug()]), None, 1),
        "discard": (
            dict(aug_list=[img.ForceResizeAug((16, 16), interp=1), img.CastAug()], last_batch_handle="discard"),
            None,
            2,
        ),
        "roll_over": (
            dict(aug_list=[img.ForceResizeAug((16, 16), interp=1), img.CastAug()], last_batch_handle="roll_over"),
            None,
            2,
        ),
        "seeded_random": (
            dict(
                aug_list=[
                    img.ResizeAug(20, interp=1),
                    img.RandomCropAug((16, 16), interp=1),
                    img.HorizontalFlipAug(0.5),
                    img.CastAug(),
                    img.BrightnessJitterAug(0.3),
                ],
                shuffle=True,
            ),
            7,
            2,
        ),
        "imglist_multilabel": (
            dict(
                path_imgrec=None,
                path_imgidx=None,
                path_imglist="images.lst",
                path_root=".",
                label_width=2,
                aug_list=[img.ForceResizeAug((16, 16), interp=1), img.CastAug()],
            ),
            None,
            1,
        ),
    }, shape


def pipeline_args(out: str, stem: str, shape: tuple, kwargs: dict, image_root: str) -> dict:
    """One pipeline's iterator arguments: ``stem.rec``/``.idx`` in ``out``, a ``.lst`` in ``out`` naming
    images under ``image_root``, then the pipeline's own ``kwargs`` (the detection script uses it too)."""
    args = dict(
        batch_size=4,
        data_shape=shape,
        path_imgrec=os.path.join(out, stem + ".rec"),
        path_imgidx=os.path.join(out, stem + ".idx"),
    )
    args.update(kwargs)
    if args.get("path_imglist"):
        args["path_imglist"] = os.path.join(out, args["path_imglist"])
        args["path_root"] = image_root
    return args


def seed_random(seed: int | None) -> None:
    """Seed Python's and NumPy's generators (the augmenters draw from both); None leaves them alone."""
    if seed is not None:
        random.seed(seed)
        np.random.seed(seed)


def run_epochs(it: Any, epochs: int) -> list:
    """Every batch of ``epochs`` epochs, each started with ``reset()`` (the detection script uses it too)."""
    batches = []
    for _ in range(epochs):
        it.reset()
        batches.extend(it)
    return batches


def store_batches(batches: list, name: str, arrays: dict) -> None:
    """Save the batches' data, label and pad under ``name/`` (the detection script uses it too)."""
    arrays[f"{name}/data"] = np.stack([b.data[0].asnumpy() for b in batches])
    arrays[f"{name}/label"] = np.stack([b.label[0].asnumpy() for b in batches])
    arrays[f"{name}/pad"] = np.array([b.pad for b in batches])


def run_pipelines(mx: ModuleType, out: str, arrays: dict) -> None:
    table, shape = pipelines(mx)
    for name, (kwargs, seed, epochs) in table.items():
        args = pipeline_args(out, "images", shape, kwargs, image_root=out)
        seed_random(seed)
        store_batches(run_epochs(mx.image.ImageIter(**args), epochs), name, arrays)


def run_functions(mx: ModuleType, out: str, arrays: dict) -> None:
    with open(os.path.join(out, "images", "img_3.png"), "rb") as f:
        src = mx.image.imdecode(f.read())
    arrays["decoded/img_3"] = src.asnumpy()
    for interp in range(5):
        arrays[f"imresize/shrink/{interp}"] = mx.image.imresize(src, 13, 22, interp=interp).asnumpy()
        arrays[f"imresize/grow/{interp}"] = mx.image.imresize(src, 45, 52, interp=interp).asnumpy()
    arrays["resize_short/20"] = mx.image.resize_short(src, 20, interp=1).asnumpy()
    arrays["fixed_crop"] = mx.image.fixed_crop(src, 3, 5, 20, 24, size=(10, 12), interp=1).asnumpy()
    chw = mx.nd.array(src.asnumpy().transpose(2, 0, 1).astype(np.float32))
    arrays["imrotate/30"] = mx.image.imrotate(chw, 30).asnumpy()
    arrays["imrotate/zoom_in"] = mx.image.imrotate(chw, -40, zoom_in=True).asnumpy()
    arrays["imrotate/zoom_out"] = mx.image.imrotate(chw, 25, zoom_out=True).asnumpy()
    batch = mx.nd.array(np.stack([chw.asnumpy(), chw.asnumpy()[:, ::-1]]))
    arrays["imrotate/batch"] = mx.image.imrotate(batch, mx.nd.array(np.array([10.0, -95.0], np.float32))).asnumpy()
    with open(os.path.join(out, "images", "img_3.png"), "rb") as f:
        arrays["gray"] = mx.image.imdecode(f.read(), flag=0).asnumpy()


RECORD_ITER_CASES = {
    "pad": dict(data_shape=(3, 20, 20), pad=3, fill_value=9, resize=16),
    "rotate90": dict(data_shape=(3, 16, 16), rotate=90, resize=16, fill_value=0),
    "rotate30": dict(data_shape=(3, 16, 16), rotate=30, resize=18, fill_value=50),
    "crop_size": dict(data_shape=(3, 12, 12), resize=16, min_crop_size=14, max_crop_size=14),
}


def run_record_iter(mx: ModuleType, out: str, arrays: dict) -> None:
    """ImageRecordIter with its deterministic augmentations (padding, a fixed rotation, a fixed crop size)."""
    for name, kwargs in RECORD_ITER_CASES.items():
        it = mx.io.ImageRecordIter(path_imgrec=os.path.join(out, "images.rec"), batch_size=4, preprocess_threads=1,
                                   **kwargs)  # fmt: skip
        arrays[f"record_iter/{name}"] = next(iter(it)).data[0].asnumpy()
        if hasattr(it, "close"):
            it.close()


def main(mx: ModuleType) -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    write_inputs(mx, out)
    arrays: dict = {}
    run_pipelines(mx, out, arrays)
    run_functions(mx, out, arrays)
    run_record_iter(mx, out, arrays)
    np.savez_compressed(os.path.join(out, "reference.npz"), **arrays)


if __name__ == "__main__":
    import mxnet

    main(mxnet)

"""Write the reference RecordIO files with real MXNet 1.9.1 (and OpenCV, which pack_img uses).

Run from this directory with the MXNet environment::

    /work/mxvenv/bin/python make_recordio.py

It writes:

- ``raw.rec`` / ``raw.idx``: the byte strings RAW below, with MXIndexedRecordIO (keys 0..n-1);
  several contain the RecordIO magic, so the file exercises the continuation flags.
- ``images.rec`` / ``images.idx``: 7 PNG image records made with ``pack_img`` from small
  generated images (label i, id i), ``images_multilabel.rec``: the same images with the
  label array [i, 10 + i], ``jpeg.rec``: one JPEG record (label [1.5, 2.5], id 42).
- ``expected.json`` / ``expected.npz``: what MXNet reads back: record offsets, ``pack``
  bytes, ImageRecordIter batches (labels, pads, data) for several settings, the JPEG
  decoded by OpenCV.
"""

import json
import struct

import cv2
import mxnet as mx
import numpy as np

MAGIC = struct.pack("<I", 0xCED7230A)
RAW = [
    b"",
    b"a",
    b"abcd",
    b"hello world",
    MAGIC,
    b"xy" + MAGIC,
    b"1234" + MAGIC + b"5678" + MAGIC,
    MAGIC + MAGIC,
    b"12" + MAGIC + b"34",
    bytes(range(256)),
]


def images():
    """Seven small RGB images (10-12 rows, 12 columns), reproducible with any NumPy."""
    rng = np.random.RandomState(0)
    return [rng.randint(0, 256, size=(10 + i % 3, 12, 3)).astype(np.uint8) for i in range(7)]


def main():
    expected = {}
    rec = mx.recordio.MXIndexedRecordIO("raw.idx", "raw.rec", "w")
    for i, buf in enumerate(RAW):
        rec.write_idx(i, buf)
    rec.close()
    expected["raw_offsets"] = [int(line.split("\t")[1]) for line in open("raw.idx")]

    imgs = images()
    rec = mx.recordio.MXIndexedRecordIO("images.idx", "images.rec", "w")
    for i, img in enumerate(imgs):
        rec.write_idx(i, mx.recordio.pack_img(mx.recordio.IRHeader(0, float(i), i, 0), img[:, :, ::-1], img_fmt=".png"))
    rec.close()
    rec = mx.recordio.MXRecordIO("images_multilabel.rec", "w")
    for i, img in enumerate(imgs):
        header = mx.recordio.IRHeader(0, [i, 10 + i], i, 0)
        rec.write(mx.recordio.pack_img(header, img[:, :, ::-1], img_fmt=".png"))
    rec.close()
    smooth = np.zeros((16, 16, 3), np.uint8)
    smooth[..., 0] = np.arange(16)[:, None] * 16
    smooth[..., 1] = np.arange(16)[None, :] * 16
    smooth[..., 2] = 128
    rec = mx.recordio.MXRecordIO("jpeg.rec", "w")
    rec.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, [1.5, 2.5], 42, 0), smooth[:, :, ::-1], quality=90))
    rec.close()
    rec = mx.recordio.MXRecordIO("jpeg.rec", "r")
    header, jpeg_bgr = mx.recordio.unpack_img(rec.read())
    rec.close()

    expected["pack"] = {
        "scalar": mx.recordio.pack(mx.recordio.IRHeader(5, 3.0, 7, 9), b"img").hex(),
        "array": mx.recordio.pack(mx.recordio.IRHeader(0, [1.5, 2.5], 7, 9), b"img").hex(),
        "int_label": mx.recordio.pack((0, 2, 1, 0), b"img").hex(),
        "array1": mx.recordio.pack(mx.recordio.IRHeader(5, np.array([3.0]), 7, 9), b"img").hex(),
    }

    arrays = {"jpeg_bgr": jpeg_bgr}
    norm = dict(mean_r=10, mean_g=20, mean_b=30, std_r=2, std_g=3, std_b=4, scale=0.5)
    it = mx.io.ImageRecordIter(path_imgrec="images.rec", data_shape=(3, 8, 8), batch_size=3, **norm)
    epochs = []
    for epoch in range(3):
        batches = []
        for k, batch in enumerate(it):
            batches.append({"label": batch.label[0].asnumpy().tolist(), "pad": batch.pad})
            arrays[f"norm_e{epoch}_b{k}"] = batch.data[0].asnumpy()
        epochs.append(batches)
        it.reset()
    expected["norm_epochs"] = epochs
    expected["norm_provide"] = [str(it.provide_data), str(it.provide_label)]

    it = mx.io.ImageRecordIter(path_imgrec="images_multilabel.rec", data_shape=(3, 8, 8), batch_size=3, label_width=2)
    expected["multilabel"] = [{"label": b.label[0].asnumpy().tolist(), "pad": b.pad} for b in it]
    cases = [
        ("mirror", dict(mirror=True)),
        ("uint8", dict(dtype="uint8")),
        ("resize16", dict(resize=16)),
        ("resize9", dict(resize=9)),
    ]
    for name, kwargs in cases:
        shape = (3, 16, 16) if name == "resize16" else (3, 8, 8)
        it = mx.io.ImageRecordIter(path_imgrec="images.rec", data_shape=shape, batch_size=7, **kwargs)
        batch = next(it)
        arrays[name] = batch.data[0].asnumpy()
        expected[name + "_label"] = batch.label[0].asnumpy().tolist()
    parts = {}
    for num_parts, part_index in [(2, 0), (2, 1), (3, 0), (3, 1), (3, 2)]:
        common = dict(data_shape=(3, 8, 8), batch_size=1, num_parts=num_parts, part_index=part_index)
        by_bytes = mx.io.ImageRecordIter(path_imgrec="images.rec", round_batch=False, **common)
        by_index = mx.io.ImageRecordIter(path_imgrec="images.rec", path_imgidx="images.idx", **common)
        parts[f"{num_parts}/{part_index}"] = {
            "bytes": [int(b.label[0].asnumpy()[0]) for b in by_bytes],
            "index": [int(b.label[0].asnumpy()[0]) for b in by_index],
        }
    expected["parts"] = parts
    with open("expected.json", "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    np.savez_compressed("expected.npz", **arrays)


if __name__ == "__main__":
    assert cv2 is not None
    main()

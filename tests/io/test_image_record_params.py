"""ImageRecordIter's ``mean_img``, ``path_imglist``, ``aug_seq`` and chunked shuffling (MXNet's agreement
on the first two is in tests/image/test_det_mxnet_reference.py)."""

from __future__ import annotations

import inspect
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import framework as mx
from framework import recordio
from framework.io import DataIterError, ImageRecordIter, det_record_iter, image_record_iter

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "image"
REC, LST = str(DATA / "images.rec"), str(DATA / "images.lst")
COMMON = dict(path_imgrec=REC, batch_size=5, data_shape=(3, 16, 16), resize=16, verbose=False, preprocess_threads=1)


def test_mean_img_is_computed_saved_and_reused(tmp_path):
    path = tmp_path / "mean.bin"
    first = ImageRecordIter(mean_img=str(path), **COMMON)
    saved = mx.nd.load(str(path))["mean_img"].asnumpy()
    plain = np.concatenate([b.data[0].asnumpy() for b in ImageRecordIter(**COMMON)])
    np.testing.assert_allclose(saved, plain.mean(axis=0), rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(first.next().data[0].asnumpy(), plain[:5] - saved, atol=1e-3)
    path.write_bytes(path.read_bytes())  # the file now exists: it is read, not recomputed
    again = ImageRecordIter(mean_img=str(path), scale=2.0, **COMMON)
    np.testing.assert_allclose(again.next().data[0].asnumpy(), 2 * (plain[:5] - saved), atol=1e-3)


def test_bad_mean_img_files_are_named(tmp_path):
    wrong = tmp_path / "wrong.bin"
    mx.nd.save(str(wrong), {"mean_img": mx.nd.zeros((3, 8, 8))})
    with pytest.raises(DataIterError, match=r"has shape \(3, 8, 8\), data_shape is \(3, 16, 16\)"):
        ImageRecordIter(mean_img=str(wrong), **COMMON)
    unnamed = tmp_path / "unnamed.bin"
    mx.nd.save(str(unnamed), [mx.nd.zeros((3, 16, 16))])
    with pytest.raises(DataIterError, match="no array named 'mean_img'"):
        ImageRecordIter(mean_img=str(unnamed), **COMMON)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"not an ndarray file")
    with pytest.raises(DataIterError, match="cannot be read"):
        ImageRecordIter(mean_img=str(garbage), **COMMON)


def test_path_imglist_supplies_the_labels(tmp_path):
    it = ImageRecordIter(path_imglist=LST, label_width=2, **COMMON)
    labels = np.concatenate([b.label[0].asnumpy() for b in it])
    np.testing.assert_array_equal(labels, [[k, 10 + k] for k in range(10)])
    short = tmp_path / "short.lst"
    short.write_text("0\t5\timages/img_0.png\n")
    with pytest.raises(DataIterError, match="image index 1 is not in path_imglist"):
        list(ImageRecordIter(path_imglist=str(short), **COMMON))
    with pytest.raises(DataIterError, match=r"line 1: expected index, 2 label\(s\)"):
        ImageRecordIter(path_imglist=str(short), label_width=2, **COMMON)
    bad = tmp_path / "bad.lst"
    bad.write_text("x\t5\timages/img_0.png\n")
    with pytest.raises(DataIterError, match="must be numbers"):
        ImageRecordIter(path_imglist=str(bad), **COMMON)


def test_aug_seq_names_the_registered_sequences():
    ImageRecordIter(aug_seq="aug_default", **COMMON).close()
    with pytest.raises(DataIterError, match="'aug_default'"):
        ImageRecordIter(aug_seq="det_aug_default", **COMMON)
    with pytest.raises(DataIterError, match="'det_aug_default'"):
        mx.io.ImageDetRecordIter(path_imgrec=str(DATA.parent / "image_det" / "det.rec"), batch_size=2,
                                 data_shape=(3, 16, 16), aug_seq="aug_default")  # fmt: skip


def noisy_rec(path: Path, count: int) -> tuple[str, list[int]]:
    """Records of incompressible PNGs (~200 KB each), so a file spans several 1 MB chunks."""
    rng = np.random.RandomState(0)
    writer = recordio.MXRecordIO(str(path), "w")
    offsets = []
    for k in range(count):
        buf = io.BytesIO()
        Image.fromarray(rng.randint(0, 256, (260, 260, 3), dtype=np.uint8)).save(buf, format="PNG")
        offsets.append(writer.tell())
        writer.write(recordio.pack(recordio.IRHeader(0, float(k), k, 0), buf.getvalue()))
    writer.close()
    return str(path), offsets


def test_chunked_shuffle_reads_whole_chunks_in_a_random_order(tmp_path):
    path, offsets = noisy_rec(tmp_path / "big.rec", 16)
    chunk_of = {k: (offset - offsets[0]) >> 20 for k, offset in enumerate(offsets)}
    assert len(set(chunk_of.values())) >= 3
    args = dict(path_imgrec=path, batch_size=16, data_shape=(3, 8, 8), verbose=False, preprocess_threads=1)
    it = ImageRecordIter(shuffle=True, shuffle_chunk_size=1, shuffle_chunk_seed=4, **args)
    chunk_orders = set()
    for _ in range(6):
        it.reset()
        ids = [int(v) for v in it.next().label[0].asnumpy()]
        assert sorted(ids) == list(range(16))
        chunks = [chunk_of[k] for k in ids]
        runs = [c for i, c in enumerate(chunks) if i == 0 or c != chunks[i - 1]]
        assert len(runs) == len(set(runs))  # each chunk's records are read together
        chunk_orders.add(tuple(runs))
    assert len(chunk_orders) > 1  # and the chunk order changes between epochs
    with pytest.raises(DataIterError, match="shuffle_chunk_size must be >= 0"):
        ImageRecordIter(shuffle=True, shuffle_chunk_size=-1, **args)


@pytest.mark.parametrize(
    "name", ["ImageRecordIter", "ImageRecordIter_v1", "ImageRecordUInt8Iter", "ImageDetRecordIter"]
)
def test_every_documented_mxnet_parameter_is_taken(name):
    documented = json.loads((DATA.parent / "image_det" / "iterator_params.json").read_text())[name]
    assert len(documented) > 30
    module = det_record_iter if name == "ImageDetRecordIter" else image_record_iter
    cls = mx.io.ImageDetRecordIter if name == "ImageDetRecordIter" else ImageRecordIter
    taken = set(inspect.signature(cls).parameters) | set(module.KEYWORDS)
    assert [p for p in documented if p not in taken] == []

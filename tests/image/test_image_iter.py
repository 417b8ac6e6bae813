"""``ImageIter``: its sources (.rec with and without .idx, .lst, a Python list), parts, last batch and errors."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework import recordio
from framework.image import ImageError

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "image"
REC, IDX, LST = str(DATA / "images.rec"), str(DATA / "images.idx"), str(DATA / "images.lst")
N_IMAGES = 10


def plain_augs():
    return [mx.image.ForceResizeAug((8, 8), interp=0), mx.image.CastAug()]


def epoch(it):
    it.reset()
    return list(it)


def test_a_rec_without_index_is_read_in_file_order_and_padded():
    it = mx.image.ImageIter(4, (3, 8, 8), path_imgrec=REC, aug_list=plain_augs())
    assert it.provide_data[0].shape == (4, 3, 8, 8) and it.provide_label[0].shape == (4,)
    batches = epoch(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    labels = np.concatenate([b.label[0].asnumpy() for b in batches])
    np.testing.assert_array_equal(labels, [k % 3 for k in range(N_IMAGES)] + [0, 1])
    assert batches[0].data[0].shape == (4, 3, 8, 8) and batches[0].data[0].dtype == np.float32
    assert len(epoch(it)) == 3  # reset starts a new epoch


def test_discard_drops_the_last_batch():
    it = mx.image.ImageIter(4, (3, 8, 8), path_imgrec=REC, path_imgidx=IDX, aug_list=plain_augs(),
                            last_batch_handle="discard")  # fmt: skip
    assert [b.pad for b in epoch(it)] == [0, 0]


def test_roll_over_completes_the_last_batch_in_the_next_epoch():
    it = mx.image.ImageIter(4, (3, 8, 8), path_imgrec=REC, path_imgidx=IDX, aug_list=plain_augs(),
                            last_batch_handle="roll_over")  # fmt: skip
    first, second = epoch(it), epoch(it)
    assert len(first) == 2
    np.testing.assert_array_equal(second[0].label[0].asnumpy(), [8 % 3, 9 % 3, 0, 1])


def test_hard_reset_drops_the_held_roll_over_batch():
    it = mx.image.ImageIter(4, (3, 8, 8), path_imgrec=REC, path_imgidx=IDX, aug_list=plain_augs(),
                            last_batch_handle="roll_over")  # fmt: skip
    epoch(it)
    it.hard_reset()
    np.testing.assert_array_equal(next(it).label[0].asnumpy(), [0, 1, 2, 0])
    with pytest.raises(ImageError, match="data_shape"):
        it.check_data_shape((3, 8))


def test_shuffle_uses_python_random_and_needs_the_index():
    random.seed(2)
    it = mx.image.ImageIter(5, (3, 8, 8), path_imgrec=REC, path_imgidx=IDX, shuffle=True, aug_list=plain_augs())
    labels = np.concatenate([b.label[0].asnumpy() for b in epoch(it)])
    assert sorted(labels.tolist()) == sorted(k % 3 for k in range(N_IMAGES))
    with pytest.raises(ImageError, match="path_imgidx"):
        mx.image.ImageIter(5, (3, 8, 8), path_imgrec=REC, shuffle=True, aug_list=plain_augs())


def test_parts_split_the_keys():
    seen = []
    for part in range(2):
        it = mx.image.ImageIter(5, (3, 8, 8), path_imgrec=REC, path_imgidx=IDX, num_parts=2, part_index=part,
                                aug_list=plain_augs())  # fmt: skip
        seen.append(np.concatenate([b.label[0].asnumpy() for b in epoch(it)]).tolist())
    assert seen == [[0, 1, 2, 0, 1], [2, 0, 1, 2, 0]]


def test_an_image_list_gives_multi_labels(tmp_path):
    it = mx.image.ImageIter(5, (3, 8, 8), path_imglist=LST, path_root=str(DATA), label_width=2, aug_list=plain_augs())
    assert it.provide_label[0].shape == (5, 2)
    labels = np.concatenate([b.label[0].asnumpy() for b in epoch(it)])
    np.testing.assert_array_equal(labels, [[k, 10 + k] for k in range(N_IMAGES)])


def test_a_python_list_of_label_and_path():
    imglist = [[float(k), f"images/img_{k}.png"] for k in range(3)]
    it = mx.image.ImageIter(3, (3, 8, 8), imglist=imglist, path_root=str(DATA), aug_list=plain_augs())
    (batch,) = epoch(it)
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [0, 1, 2])
    expected = mx.image.imread(str(DATA / "images" / "img_1.png"))
    expected = mx.image.imresize(expected, 8, 8, interp=0).asnumpy().transpose(2, 0, 1)
    np.testing.assert_array_equal(batch.data[0].asnumpy()[1], expected)


def test_keywords_build_the_default_augmenters():
    it = mx.image.ImageIter(2, (3, 8, 8), path_imgrec=REC, resize=10, rand_crop=True, rand_mirror=True)
    assert [type(a).__name__ for a in it.auglist] == ["ResizeAug", "RandomCropAug", "HorizontalFlipAug", "CastAug"]
    assert next(iter(it)).data[0].shape == (2, 3, 8, 8)


def test_a_broken_record_is_named(tmp_path):
    rec = tmp_path / "bad.rec"
    writer = recordio.MXRecordIO(str(rec), "w")
    writer.write(recordio.pack(recordio.IRHeader(0, 1.0, 0, 0), b"not an image"))
    writer.close()
    it = mx.image.ImageIter(1, (3, 8, 8), path_imgrec=str(rec), aug_list=plain_augs())
    with pytest.raises(ImageError, match="record #0 of .*bad.rec"):
        next(iter(it))


def test_augmenters_must_produce_data_shape():
    it = mx.image.ImageIter(2, (3, 8, 8), path_imgrec=REC, aug_list=[mx.image.CastAug()])
    with pytest.raises(ImageError, match="data_shape"):
        next(iter(it))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(), "path_imgrec, path_imglist or imglist"),
        (dict(path_imgrec=REC, dtype="uint8"), "dtype"),
        (dict(path_imgrec=REC, last_batch_handle="wrap"), "last_batch_handle"),
        (dict(path_imgrec=REC, data_shape=(1, 8, 8)), "data_shape"),
        (dict(path_imgrec=REC, path_imgidx=IDX, num_parts=2, part_index=2), "part_index"),
        (dict(path_imgrec=REC, aug_list=[], resize=3), "aug_list"),
        (dict(path_imgrec=REC, label_width=2, aug_list=[mx.image.ForceResizeAug((8, 8)), mx.image.CastAug()]),
         "label_width"),
    ],
)  # fmt: skip
def test_bad_arguments_are_named(kwargs, message):
    args = dict(batch_size=2, data_shape=(3, 8, 8))
    args.update(kwargs)
    with pytest.raises(ImageError, match=message):
        next(iter(mx.image.ImageIter(**args)))


def test_a_bad_list_line_is_named(tmp_path):
    lst = tmp_path / "bad.lst"
    lst.write_text("0\tx\timg.png\n")
    with pytest.raises(ImageError, match="line 1"):
        mx.image.ImageIter(1, (3, 8, 8), path_imglist=str(lst))
    missing = tmp_path / "missing.lst"
    missing.write_text("0\t1\tnowhere.png\n")
    it = mx.image.ImageIter(1, (3, 8, 8), path_imglist=str(missing), path_root=str(tmp_path))
    with pytest.raises(ImageError, match="nowhere.png"):
        next(iter(it))

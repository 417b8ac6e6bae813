"""The one ``.lst`` parser (:mod:`framework.io.label_list`) as its three users see it."""

import pytest

import framework as mx
from framework.image import ImageError
from framework.io import DataIterError
from framework.io.label_list import read_label_list, read_list_file
from framework.tools.im2rec import ListFileError, read_list

LST = b"0\t1.0\t2.0\ta.jpg\n\n3.0\t4.0\t5.0\tsub/b c.png\n"


def test_the_three_readers_agree_on_a_well_formed_file(tmp_path):
    path = tmp_path / "ok.lst"
    path.write_bytes(LST)
    entries = list(read_list_file(str(path), "test"))
    assert [(e.index, e.labels, e.path, e.lineno) for e in entries] == [
        (0, [1.0, 2.0], "a.jpg", 1),
        (3, [4.0, 5.0], "sub/b c.png", 3),
    ]
    assert list(read_list(str(path))) == [[0, "a.jpg", 1.0, 2.0], [3, "sub/b c.png", 4.0, 5.0]]
    labels = read_label_list(str(path), 2, "ImageRecordIter")
    assert sorted(labels) == [0, 3] and labels[3].tolist() == [4.0, 5.0]
    it = mx.image.ImageIter(1, (3, 8, 8), path_imglist=str(path), label_width=2)
    assert it.seq == [0, 3] and it.imglist[3][1] == "sub/b c.png"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"1.5\t1\ta.jpg\n", r"line 1 \(byte offset 0\): invalid literal for int"),
        (b"0\t1\ta.jpg\ninf\t1\tb.jpg\n", r"line 2 \(byte offset 10\): invalid literal for int"),
        (b"0\t1\t\xe9.jpg\n", r"line 1 \(byte offset 0\): not UTF-8 text at byte 4"),
        (b"0\ta.jpg\n", r"line 1 \(byte offset 0\): needs index, label\(s\) and path"),
    ],
)
def test_each_reader_raises_its_own_error_naming_the_line(tmp_path, content, message):
    path = tmp_path / "bad.lst"
    path.write_bytes(content)
    with pytest.raises(ListFileError, match=r"im2rec: .*bad\.lst, " + message):
        list(read_list(str(path)))
    with pytest.raises(ImageError, match=r"ImageIter: .*bad\.lst, " + message):
        mx.image.ImageIter(1, (3, 8, 8), path_imglist=str(path))
    with pytest.raises(DataIterError, match=r"ImageRecordIter: .*bad\.lst, " + message):
        read_label_list(str(path), -1, "ImageRecordIter")

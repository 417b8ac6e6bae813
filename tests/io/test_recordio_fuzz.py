"""Fuzzing RecordIO (``.rec``, ``.idx``) and im2rec's ``.lst``: damage raises the loader's own error."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from fuzz_helpers import mutants, only_raises, peak_allocation

from framework import recordio
from framework.base import MXLabError
from framework.recordio import MXIndexedRecordIO, MXRecordIO, RecordIOError
from framework.tools import im2rec
from framework.tools.im2rec import ListFileError, read_list

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "recordio"


def _read_everything(path: Path) -> None:
    """Read every record sequentially and decode each image, as a training loop would."""
    recordio.scan_record_offsets(str(path))
    with MXRecordIO(path, "r") as rec:
        while (record := rec.read()) is not None:
            recordio.unpack_img(record)


def test_damaged_rec_files_raise_recordio_errors(tmp_path):
    path = tmp_path / "fuzzed.rec"
    for what, damaged in mutants((DATA / "images.rec").read_bytes(), seed=4, count=150):
        path.write_bytes(damaged)
        err = only_raises(RecordIOError, lambda: _read_everything(path), what)
        if err is not None and "unpack" not in str(err):
            assert "fuzzed.rec" in str(err) and "byte offset" in str(err), (what, str(err))


def test_damaged_idx_files_raise_recordio_errors(tmp_path):
    rec = tmp_path / "images.rec"
    rec.write_bytes((DATA / "images.rec").read_bytes())
    idx = tmp_path / "fuzzed.idx"
    for what, damaged in mutants((DATA / "images.idx").read_bytes(), seed=5, count=100):
        idx.write_bytes(damaged)

        def read_all() -> None:
            with MXIndexedRecordIO(idx, rec, "r") as indexed:
                for key in indexed.keys:
                    indexed.read_idx(key)

        err = only_raises(RecordIOError, read_all, what)
        if err is not None:
            assert "fuzzed.idx" in str(err) or "images.rec" in str(err), (what, str(err))


def test_a_non_utf8_idx_names_the_line_and_offset(tmp_path):
    idx = tmp_path / "latin1.idx"
    idx.write_bytes(b"0\t0\n1\xe9\t472\n")
    with pytest.raises(RecordIOError, match=r"latin1\.idx: line 2 \(byte offset 5\) is not UTF-8"):
        MXIndexedRecordIO(idx, DATA / "images.rec", "r")


def test_damaged_lst_files_raise_list_file_errors(tmp_path):
    good = b"0\t1.000000\ta/x.jpg\n1\t0.000000\t2.5\tb/y.png\n2\t3.000000\tc d/z.jpg\n"
    path = tmp_path / "fuzzed.lst"
    for what, damaged in mutants(good, seed=6, count=150):
        path.write_bytes(damaged)
        err = only_raises(ListFileError, lambda: list(read_list(str(path))), what)
        if err is not None:
            assert "fuzzed.lst, line" in str(err) and "byte offset" in str(err), (what, str(err))
    assert issubclass(ListFileError, MXLabError) and issubclass(ListFileError, ValueError)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"0\t1.0\tok.jpg\nnot a line\n", r"line 2 \(byte offset 13\): needs index, label\(s\) and path"),
        (b"x\t1.0\ta.jpg\n", r"line 1 \(byte offset 0\): invalid literal for int"),
        (b"0\t1.0\ta.jpg\n1\tlots\tb.jpg\n", r"line 2 \(byte offset 12\): could not convert string to float"),
        (b"0\t1.0\t\xff.jpg\n", r"line 1 \(byte offset 0\): not UTF-8 text at byte 6"),
    ],
)
def test_malformed_lst_lines_are_named(tmp_path, content, message):
    path = tmp_path / "bad.lst"
    path.write_bytes(content)
    with pytest.raises(ListFileError, match=r"bad\.lst, " + message):
        list(read_list(str(path)))


def test_the_index_is_written_atomically_when_the_writer_closes(tmp_path):
    idx, rec = tmp_path / "out.idx", tmp_path / "out.rec"
    idx.write_text("0\t0\n")  # the previous index
    writer = MXIndexedRecordIO(idx, rec, "w")
    writer.write_idx(0, b"first")
    writer.write_idx(1, b"second")
    assert idx.read_text() == "0\t0\n"  # untouched until close
    writer.close()
    assert idx.read_text() == "0\t0\n1\t16\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.idx", "out.rec"]
    with MXIndexedRecordIO(idx, rec, "r") as reader:
        assert reader.read_idx(1) == b"second"


def test_im2rec_reports_a_malformed_list_and_exits_1(tmp_path, capsys):
    (tmp_path / "images").mkdir()
    (tmp_path / "set.lst").write_bytes(b"0\t1.0\ta.jpg\nbroken\n")
    assert im2rec.main([str(tmp_path / "set"), str(tmp_path / "images")]) == 1
    assert "set.lst, line 2 (byte offset 12): needs index, label(s) and path" in capsys.readouterr().err
    assert not (tmp_path / "set.rec").exists() and not (tmp_path / "set.idx").exists()


def test_a_corrupt_record_length_is_refused_without_allocating_it(tmp_path):
    path = tmp_path / "liar.rec"
    path.write_bytes(recordio.MAGIC_BYTES + struct.pack("<I", (1 << 29) - 1))  # promises 512 MiB
    with MXRecordIO(path, "r") as rec:
        peak = peak_allocation(rec.read)
    assert peak < 10 * 2**20
    with MXRecordIO(path, "r") as rec, pytest.raises(RecordIOError, match=r"liar\.rec: record at byte offset 0 is "):
        rec.read()

"""RecordIO: byte-for-byte compatibility with MXNet 1.9.1, image records, and damaged files.

The reference files in tests/data/mxnet_1_9_1/recordio were written by MXNet 1.9.1
(make_recordio.py there). Writing the same records here must give the same bytes, which is
also what makes a file written here readable by MXNet.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
from fuzz_helpers import mutants
from PIL import Image

from framework import recordio
from framework.recordio import IRHeader, MXIndexedRecordIO, MXRecordIO, RecordIOError, RecordIOFileNotFoundError

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "recordio"
MAGIC = struct.pack("<I", 0xCED7230A)
RAW = [  # the records of raw.rec, as in make_recordio.py
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
EXPECTED = json.loads((DATA / "expected.json").read_text())


def reference_images() -> list[np.ndarray]:
    rng = np.random.RandomState(0)
    return [rng.randint(0, 256, size=(10 + i % 3, 12, 3)).astype(np.uint8) for i in range(7)]


def read_all(path: Path) -> list[bytes]:
    with MXRecordIO(path, "r") as rec:
        out = []
        while (buf := rec.read()) is not None:
            out.append(buf)
    return out


# ------------------------------------------------------------------ MXNet's files
def test_reads_the_records_mxnet_wrote():
    assert read_all(DATA / "raw.rec") == RAW


def test_writes_the_same_bytes_as_mxnet(tmp_path):
    with MXIndexedRecordIO(tmp_path / "raw.idx", tmp_path / "raw.rec", "w") as rec:
        for i, buf in enumerate(RAW):
            rec.write_idx(i, buf)
    assert (tmp_path / "raw.rec").read_bytes() == (DATA / "raw.rec").read_bytes()
    assert (tmp_path / "raw.idx").read_text() == (DATA / "raw.idx").read_text()


def test_magic_inside_a_payload_is_split_into_continuation_parts():
    encoded = recordio.encode_record(MAGIC)
    words = struct.unpack("<4I", encoded)
    assert words == (0xCED7230A, 1 << 29, 0xCED7230A, 3 << 29)  # first part (empty), last part (empty)
    # an unaligned magic stays inside the payload; padding to 4 bytes
    assert recordio.encode_record(b"xy" + MAGIC) == MAGIC + struct.pack("<I", 6) + b"xy" + MAGIC + b"\0\0"
    middle = recordio.encode_record(MAGIC + MAGIC)
    assert [w >> 29 for w in struct.unpack("<6I", middle)[1::2]] == [1, 2, 3]


def test_indexed_random_access_and_offsets():
    with MXIndexedRecordIO(DATA / "raw.idx", DATA / "raw.rec", "r") as rec:
        assert rec.keys == list(range(len(RAW)))
        assert [rec.idx[k] for k in rec.keys] == EXPECTED["raw_offsets"]
        for key in reversed(rec.keys):
            assert rec.read_idx(key) == RAW[key]
        rec.seek(6)
        assert rec.read() == RAW[6] and rec.read() == RAW[7]
    assert recordio.scan_record_offsets(str(DATA / "raw.rec")) == EXPECTED["raw_offsets"]


def test_round_trip_tell_reset_and_string_keys(tmp_path):
    rec = MXIndexedRecordIO(tmp_path / "k.idx", tmp_path / "k.rec", "w", key_type=str)
    assert rec.tell() == 0
    rec.write_idx("first", b"x" * 5)
    assert rec.tell() == 8 + 8
    rec.write_idx("second", b"yz")
    rec.close()
    rec.close()  # idempotent
    rec = MXIndexedRecordIO(tmp_path / "k.idx", tmp_path / "k.rec", "r", key_type=str)
    assert rec.read_idx("second") == b"yz"
    rec.reset()
    assert rec.read() == b"x" * 5
    clone = pickle.loads(pickle.dumps(rec))
    assert clone.read_idx("first") == b"x" * 5


# ------------------------------------------------------------------ image records
def test_pack_matches_mxnet_bytes():
    assert recordio.pack(IRHeader(5, 3.0, 7, 9), b"img").hex() == EXPECTED["pack"]["scalar"]
    assert recordio.pack(IRHeader(0, [1.5, 2.5], 7, 9), b"img").hex() == EXPECTED["pack"]["array"]
    assert recordio.pack((0, 2, 1, 0), b"img").hex() == EXPECTED["pack"]["int_label"]
    assert recordio.pack(IRHeader(5, np.array([3.0]), 7, 9), b"img").hex() == EXPECTED["pack"]["array1"]


def test_unpack_scalar_and_array_labels():
    header, payload = recordio.unpack(recordio.pack(IRHeader(0, 4.0, 11, 1), b"data"))
    assert header == IRHeader(0, 4.0, 11, 1) and payload == b"data"
    header, payload = recordio.unpack(recordio.pack(IRHeader(0, [1, 2, 3], 11, 0), b"data"))
    assert header.flag == 3 and header.label.dtype == np.float32
    np.testing.assert_array_equal(header.label, [1, 2, 3])
    assert payload == b"data"
    assert repr(IRHeader(0, 1.0, 2, 3)) == "HEADER(flag=0, label=1.0, id=2, id2=3)"


def test_unpack_img_decodes_mxnets_png_records_exactly():
    records = read_all(DATA / "images.rec")
    for i, (record, rgb) in enumerate(zip(records, reference_images(), strict=True)):
        header, bgr = recordio.unpack_img(record)
        assert header.label == i and header.id == i
        np.testing.assert_array_equal(bgr, rgb[:, :, ::-1])  # OpenCV's channel order, as MXNet
    _, gray = recordio.unpack_img(records[0], iscolor=0)
    assert gray.shape == rgb_shape(0)[:2]
    _, color = recordio.unpack_img(records[0], iscolor=1)
    assert color.shape == rgb_shape(0)


def rgb_shape(i: int) -> tuple[int, int, int]:
    return reference_images()[i].shape


def test_unpack_img_decodes_mxnets_jpeg_like_opencv():
    (record,) = read_all(DATA / "jpeg.rec")
    header, bgr = recordio.unpack_img(record)
    assert header.id == 42 and header.flag == 2
    np.testing.assert_array_equal(header.label, [1.5, 2.5])
    expected = np.load(DATA / "expected.npz")["jpeg_bgr"]
    assert bgr.shape == expected.shape
    assert np.abs(bgr.astype(int) - expected).max() <= 1


def test_pack_img_round_trips(tmp_path):
    rng = np.random.RandomState(3)
    bgr = rng.randint(0, 256, size=(9, 13, 3)).astype(np.uint8)
    header, back = recordio.unpack_img(recordio.pack_img(IRHeader(0, 2.0, 5, 0), bgr, img_fmt=".png"))
    np.testing.assert_array_equal(back, bgr)
    gray = rng.randint(0, 256, size=(9, 13)).astype(np.uint8)
    _, back = recordio.unpack_img(recordio.pack_img(IRHeader(0, 2.0, 5, 0), gray, img_fmt=".png"))
    np.testing.assert_array_equal(back, gray)
    smooth = np.tile(np.arange(0, 256, 16, dtype=np.uint8), (16, 1))[:, :, None].repeat(3, axis=2)
    packed = recordio.pack_img(IRHeader(0, [1, 2], 5, 0), smooth, quality=95)
    header, back = recordio.unpack_img(packed)
    assert Image.open(io.BytesIO(recordio.unpack(packed)[1])).format == "JPEG"
    assert np.abs(back.astype(int) - smooth).max() <= 8
    np.testing.assert_array_equal(header.label, [1, 2])


# ------------------------------------------------------------------ damaged files and misuse
def corrupt(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "bad.rec"
    path.write_bytes(data)
    return path


def test_truncated_payload_names_file_and_offset(tmp_path):
    good = (DATA / "raw.rec").read_bytes()
    path = corrupt(tmp_path, good[:40])  # inside record 3 ('hello world' at offset 32)
    rec = MXRecordIO(path, "r")
    assert [rec.read() for _ in range(3)] == RAW[:3]
    with pytest.raises(RecordIOError, match=r"bad\.rec: record at byte offset 32 is truncated.*promises 11"):
        rec.read()


def test_truncated_header_and_missing_last_part(tmp_path):
    good = (DATA / "raw.rec").read_bytes()
    rec = MXRecordIO(corrupt(tmp_path, good[: 20 + 3]), "r")
    rec.read()
    rec.read()
    with pytest.raises(RecordIOError, match=r"truncated record header at byte offset 20: 8 bytes needed, 3 left"):
        rec.read()
    offset = EXPECTED["raw_offsets"][4]  # the record that is only a magic: two parts
    rec = MXRecordIO(corrupt(tmp_path, good[: offset + 8]), "r")
    for _ in range(4):
        rec.read()
    with pytest.raises(RecordIOError, match=rf"byte offset {offset} is truncated: its continuation part"):
        rec.read()


def test_wrong_magic_names_file_and_offset(tmp_path):
    good = bytearray((DATA / "raw.rec").read_bytes())
    good[8:12] = b"\1\0\0\0"
    rec = MXRecordIO(corrupt(tmp_path, bytes(good)), "r")
    rec.read()
    with pytest.raises(RecordIOError, match=r"bad\.rec: bad magic 0x00000001 at byte offset 8"):
        rec.read()
    with pytest.raises(RecordIOError, match=r"bad magic 0x00000001 at byte offset 8"):
        recordio.scan_record_offsets(str(tmp_path / "bad.rec"))


def test_continuation_flag_out_of_sequence(tmp_path):
    rec = MXRecordIO(corrupt(tmp_path, MAGIC + struct.pack("<I", 3 << 29)), "r")
    with pytest.raises(RecordIOError, match=r"continuation flag 3 at byte offset 0 is out of sequence"):
        rec.read()


# ------------------------------------------------------------------ reading from a buffer (a memory mapping)
def _outcome(read):
    """What a read gives: the record's bytes, None, or the error message."""
    try:
        record = read()
    except RecordIOError as err:
        return "error", str(err)
    return "record", None if record is None else bytes(record)


def _read_from_file(data: bytes, offset: int):
    f = io.BytesIO(data)
    f.seek(offset)
    return recordio.read_record(f, "x.rec")


def test_read_record_at_gives_the_records_mxnet_wrote_without_copying_whole_ones():
    data = (DATA / "raw.rec").read_bytes()
    view = memoryview(data)
    parts = 0
    for offset, expected in zip(EXPECTED["raw_offsets"], RAW, strict=True):
        record = recordio.read_record_at(view, offset, "raw.rec")
        assert isinstance(record, memoryview) and bytes(record) == expected
        in_parts = struct.unpack_from("<I", data, offset + 4)[0] >> 29 != 0  # the first part's flag
        assert (record.obj is data) != in_parts, (offset, expected)  # parts are glued into new memory
        parts += in_parts
    assert parts == 3  # MAGIC, 1234..., MAGIC + MAGIC: an aligned magic inside (xy + MAGIC keeps it whole)
    assert recordio.read_record_at(view, len(data), "raw.rec") is None
    assert recordio.read_record_at(view, len(data) + 64, "raw.rec") is None
    with pytest.raises(RecordIOError, match=r"raw\.rec: byte offset -4 is negative"):
        recordio.read_record_at(view, -4, "raw.rec")


def test_read_record_at_checks_and_names_damage_as_read_record_does():
    """Every cut of the file, damaged copies and hand-made bad headers: at every record start, the
    buffer reader gives the same record, or the same error message, as the file reader."""
    good = (DATA / "raw.rec").read_bytes()
    bad_flag = MAGIC + struct.pack("<I", 5 << 29)  # continuation flag 5 does not exist
    first_then_whole = recordio.encode_record(MAGIC)[:8] + recordio.encode_record(b"abcd")  # flag 1, then 0
    last_alone = MAGIC + struct.pack("<I", 3 << 29)  # a last part where a record should start
    damaged = [("whole", good), *mutants(good, seed=7, count=60)]
    damaged += [("flag 5", bad_flag), ("1, 0", first_then_whole), ("3 alone", last_alone)]
    errors = []
    for what, data in damaged:
        for offset in [0, *EXPECTED["raw_offsets"]]:
            from_file = _outcome(lambda: _read_from_file(data, offset))
            from_buffer = _outcome(lambda: recordio.read_record_at(memoryview(data), offset, "x.rec"))
            assert from_buffer == from_file, (what, offset)
            if from_file[0] == "error":
                errors.append(from_file[1])
    for check in (
        "truncated record header",
        "bad magic",
        "invalid continuation flag 5",
        "is out of sequence (expected 0 (whole) or 1 (first))",
        "is out of sequence (expected 2 (middle) or 3 (last))",
        "with padding) but the file ends after",
        "its continuation part at byte offset",
    ):  # every check was reached, so the comparison above covered it
        assert any(check in message for message in errors), check


def _offsets_read_one_by_one(path: Path) -> list[int]:
    offsets = []
    with MXRecordIO(path, "r") as rec:
        while True:
            offset = rec.tell()
            if rec.read() is None:
                return offsets
            offsets.append(offset)


def test_scanning_a_damaged_file_stops_where_reading_it_does(tmp_path):
    """scan_record_offsets and scan_buffer_offsets walk the same headers as sequential reading: the
    same offsets, and for a damaged file the same first error."""
    good = (DATA / "raw.rec").read_bytes()
    path = tmp_path / "x.rec"
    for what, data in [("whole", good), ("empty", b""), *mutants(good, seed=8, count=60)]:
        path.write_bytes(data)
        outcomes = []
        readers = (
            _offsets_read_one_by_one,
            lambda p: recordio.scan_record_offsets(str(p)),
            lambda p: recordio.scan_buffer_offsets(memoryview(p.read_bytes()), str(p)),
        )
        for read in readers:
            try:
                outcomes.append(read(path))
            except RecordIOError as err:
                outcomes.append(str(err))
        assert outcomes[0] == outcomes[1] == outcomes[2], what
        if what == "whole":
            assert outcomes[0] == EXPECTED["raw_offsets"]


def test_missing_and_malformed_index_files(tmp_path):
    with pytest.raises(RecordIOFileNotFoundError, match=r"index file not found: '.*nope\.idx'"):
        MXIndexedRecordIO(tmp_path / "nope.idx", DATA / "raw.rec", "r")
    with pytest.raises(FileNotFoundError, match=r"RecordIO file not found: '.*nope\.rec'"):
        MXRecordIO(tmp_path / "nope.rec", "r")
    (tmp_path / "bad.idx").write_text("0\t0\n1 12\n")
    with pytest.raises(RecordIOError, match=r"bad\.idx: line 2 is not 'key<TAB>offset'"):
        MXIndexedRecordIO(tmp_path / "bad.idx", DATA / "raw.rec", "r")
    (tmp_path / "bad.idx").write_text("0\t0\n1\t13\n")
    with pytest.raises(RecordIOError, match=r"line 2: offset 13 of key 1 is not a record start"):
        MXIndexedRecordIO(tmp_path / "bad.idx", DATA / "raw.rec", "r")
    (tmp_path / "bad.idx").write_text("0\t0\n1\t4\n")  # inside record 0: found when read
    rec = MXIndexedRecordIO(tmp_path / "bad.idx", DATA / "raw.rec", "r")
    with pytest.raises(RecordIOError, match=r"raw\.rec: bad magic 0x00000000 at byte offset 4"):
        rec.read_idx(1)
    with pytest.raises(RecordIOError, match=r"key 7 is not in"):
        rec.read_idx(7)


def test_misuse_is_refused(tmp_path):
    with pytest.raises(RecordIOError, match=r"flag must be 'r' or 'w', got 'a'"):
        MXRecordIO(tmp_path / "x.rec", "a")
    rec = MXRecordIO(tmp_path / "x.rec", "w")
    with pytest.raises(RecordIOError, match=r"a record is bytes, got str"):
        rec.write("text")
    with pytest.raises(RecordIOError, match=r"was opened with flag 'w'"):
        rec.read()
    rec.close()
    with pytest.raises(RecordIOError, match=r"is closed"):
        rec.write(b"x")
    with pytest.raises(RecordIOError, match=r"shorter than the 24-byte image record header"):
        recordio.unpack(b"\0" * 10)
    with pytest.raises(RecordIOError, match=r"flag 3 promises 3 float32 labels \(12 bytes\) but only 4"):
        recordio.unpack(struct.pack("<IfQQ", 3, 0, 0, 0) + b"abcd")
    with pytest.raises(RecordIOError, match=r"img_fmt must be"):
        recordio.pack_img(IRHeader(0, 1, 0, 0), np.zeros((2, 2, 3), np.uint8), img_fmt=".bmp")
    with pytest.raises(RecordIOError, match=r"uint8"):
        recordio.pack_img(IRHeader(0, 1, 0, 0), np.zeros((2, 2, 3), np.float32))
    with pytest.raises(RecordIOError, match=r"cannot decode the image \(3 bytes\)"):
        recordio.unpack_img(recordio.pack(IRHeader(0, 1, 0, 0), b"xyz"))

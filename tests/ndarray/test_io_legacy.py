"""MXNet's pre-1.0 "v0" NDArray files load through ``mx.nd.load`` and ``mx.nd.load_frombuffer``.

The reference files were crafted from the documented layout and read by real MXNet 1.9.1
(tests/data/mxnet_1_9_1/make_legacy_v0.py); legacy_v0.json holds what MXNet returned.
The byte-level cases below build v0 records here, independently of MXLab's reader.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import framework as mx
from framework.ndarray.io import NDArrayFileError, load_frombuffer, save_tobuffer

DATA = Path(__file__).resolve().parent.parent / "data" / "mxnet_1_9_1"
EXPECTED = json.loads((DATA / "legacy_v0.json").read_text())
FLAGS = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4}


def v0_record(values: np.ndarray, device: tuple[int, int] = (1, 0)) -> bytes:
    """One array in the v0 layout: uint32 ndim, uint32 dims, int32 x2 context, int32 flag, values."""
    head = struct.pack("<I", values.ndim) + struct.pack(f"<{values.ndim}I", *values.shape)
    return head + struct.pack("<iii", *device, FLAGS[values.dtype.name]) + values.tobytes()


def v0_file(*records: bytes, names: tuple[str, ...] = ()) -> bytes:
    body = struct.pack("<QQQ", 0x112, 0, len(records)) + b"".join(records) + struct.pack("<Q", len(names))
    return body + b"".join(struct.pack("<Q", len(n.encode())) + n.encode() for n in names)


def expected_values(entry: dict) -> np.ndarray:
    raw = [float(v) if isinstance(v, str) else v for v in entry["values"]]
    return np.array(raw, dtype=entry["dtype"]).reshape(entry["shape"])


@pytest.mark.parametrize("fname", ["legacy_v0.nd", "legacy_v0.params"])
def test_v0_files_load_as_mxnet_1_9_1_loads_them(fname):
    spec = EXPECTED[fname]
    for loaded in (mx.nd.load(str(DATA / fname)), mx.nd.load_frombuffer((DATA / fname).read_bytes())):
        assert isinstance(loaded, dict) == (spec["form"] == "dict")
        items = list(loaded.items()) if isinstance(loaded, dict) else [(None, a) for a in loaded]
        assert [name for name, _ in items] == [e["name"] for e in spec["entries"]]
        for (_, arr), entry in zip(items, spec["entries"], strict=True):
            want = expected_values(entry)
            got = arr.asnumpy()
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
            assert [arr.context.device_type, arr.context.device_id] == entry["context"]


def test_v0_and_v2_arrays_mix_in_one_file():
    # A file is a sequence of self-describing records: each one is read by its own first word.
    new = save_tobuffer([mx.nd.array([7.0, 8.0])])
    v2_record = new[24:-8]
    buf = struct.pack("<QQQ", 0x112, 0, 2) + v0_record(np.array([1, 2, 3], np.int32)) + v2_record + b"\0" * 8
    first, second = load_frombuffer(buf)
    assert first.dtype == np.int32 and first.asnumpy().tolist() == [1, 2, 3]
    assert second.asnumpy().tolist() == [7.0, 8.0]


def test_v0_dimensions_are_uint32():
    big = np.zeros((70000, 1), np.uint8)  # 70000 needs more than 16 bits: read as one uint32
    (arr,) = load_frombuffer(v0_file(v0_record(big)))
    assert arr.shape == (70000, 1)


def test_v0_entry_of_ndim_0_is_refused_as_mxnet_refuses_it():
    assert EXPECTED["ndim0_entry"].startswith("refused")
    with pytest.raises(NDArrayFileError, match=r"<buffer>: byte 24: array 0: a legacy v0 entry of ndim 0 holds no"):
        load_frombuffer(struct.pack("<QQQ", 0x112, 0, 1) + struct.pack("<I", 0) + struct.pack("<Q", 0))


def test_a_first_word_that_is_neither_magic_nor_ndim_is_named():
    buf = v0_file(struct.pack("<I", 33) + b"\0" * 64)
    with pytest.raises(
        NDArrayFileError,
        match=r"byte 24: array 0: expected array magic .* or a legacy v0 ndim "
        r"between 1 and 32, got 0x21",
    ):
        load_frombuffer(buf)


def test_every_truncation_of_a_v0_file_is_reported(tmp_path):
    buf = v0_file(v0_record(np.arange(6, dtype=np.float32).reshape(2, 3)), names=("arg:w",))
    assert mx.nd.load_frombuffer(buf)["arg:w"].shape == (2, 3)
    for cut in range(len(buf)):
        path = tmp_path / "old.nd"
        path.write_bytes(buf[:cut])
        with pytest.raises(NDArrayFileError, match=r"old\.nd: byte \d+: truncated: expected \d+ bytes \(.+\)"):
            mx.nd.load(str(path))


def test_truncated_v0_values_name_the_array_and_shape():
    buf = v0_file(v0_record(np.arange(6, dtype=np.float32).reshape(2, 3)))
    with pytest.raises(
        NDArrayFileError,
        match=r"byte 48: truncated: expected 24 bytes \(the 6 float32 values of array 0, shape \(2, 3\)\)",
    ):
        load_frombuffer(buf[:60])


def test_bad_v0_context_and_type_flag_are_named():
    record = bytearray(v0_record(np.ones(2, np.float32)))
    bad_device = bytes(record[:8]) + struct.pack("<i", 9) + bytes(record[12:])  # after ndim and 1 dim
    with pytest.raises(NDArrayFileError, match=r"byte 32: array 0: expected a context .* got device type 9"):
        load_frombuffer(v0_file(bad_device))
    bad_flag = bytes(record[:16]) + struct.pack("<i", 12) + bytes(record[20:])
    with pytest.raises(NDArrayFileError, match=r"byte 40: array 0: expected a type flag .* got 12"):
        load_frombuffer(v0_file(bad_flag))


def test_load_frombuffer_takes_bytes_only():
    buf = (DATA / "legacy_v0.nd").read_bytes()
    assert len(mx.nd.load_frombuffer(bytearray(buf))) == 5
    with pytest.raises(NDArrayFileError, match="buf must be bytes or bytearray, got str"):
        mx.nd.load_frombuffer(str(DATA / "legacy_v0.nd"))

"""Fuzzing ``mx.nd.load``: a damaged ``.params`` file raises NDArrayFileError naming file and offset."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from fuzz_helpers import mutants, only_raises, peak_allocation

import framework as mx
from framework.ndarray.io import ARRAY_MAGIC_V2, LIST_MAGIC, NDArrayFileError, load_frombuffer

SOURCE = "fuzzed.params"


def _valid_file() -> bytes:
    rng = np.random.default_rng(0)
    return mx.nd.save_tobuffer(
        {
            "arg:w": mx.nd.array(rng.standard_normal((3, 4)).astype(np.float32)),
            "arg:b": mx.nd.array(np.arange(4, dtype=np.int64)),
            "aux:m": mx.nd.array(np.ones((2, 1, 2), dtype=np.float16)),
        }
    )


def _one_array(shape: tuple[int, ...], payload: bytes = b"") -> bytes:
    header = struct.pack("<QQQ", LIST_MAGIC, 0, 1) + struct.pack("<Ii", ARRAY_MAGIC_V2, 0)
    header += struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}q", *shape) + struct.pack("<iii", 1, 0, 0)
    return header + payload + struct.pack("<Q", 0)


def test_every_mutation_gives_the_loaders_error_or_loads():
    data = _valid_file()
    failures = 0
    for what, damaged in mutants(data, seed=1, count=300):
        err = only_raises(NDArrayFileError, lambda d=damaged: load_frombuffer(d, source=SOURCE), what)
        if err is not None:
            failures += 1
            assert SOURCE in str(err) and "byte" in str(err), (what, str(err))
    assert failures > 300  # most damage is detected (the harness really damages the file)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ((0, 2**62), r"shape \(0, 4611686018427387904\) is too large"),
        ((2**31, 0, 2**31), "is too large"),
        ((2**40, 2**20), r"truncated: expected \d+ bytes"),
        ((2**62, 2**62), "is too large"),
        ((5,), r"truncated: expected 20 bytes"),
    ],
)
def test_absurd_shapes_are_refused_before_allocating(shape, message):
    data = _one_array(shape)
    with pytest.raises(NDArrayFileError, match=f"{SOURCE}: byte \\d+: .*{message}"):
        load_frombuffer(data, source=SOURCE)
    assert peak_allocation(lambda: load_frombuffer(data, source=SOURCE)) < 10 * 2**20


def test_a_name_length_past_the_end_is_refused_without_allocating():
    good = mx.nd.save_tobuffer({"w": mx.nd.zeros((2,))})
    length_at = len(good) - 1 - 8
    damaged = good[:length_at] + struct.pack("<Q", 2**62) + good[length_at + 8 :]
    with pytest.raises(NDArrayFileError, match=f"{SOURCE}: byte {length_at + 8}: truncated"):
        load_frombuffer(damaged, source=SOURCE)
    assert peak_allocation(lambda: load_frombuffer(damaged, source=SOURCE)) < 10 * 2**20


def test_load_names_the_file(tmp_path):
    path = tmp_path / "broken.params"
    path.write_bytes(_valid_file()[:50])
    with pytest.raises(NDArrayFileError, match=r"broken\.params: byte \d+: truncated"):
        mx.nd.load(str(path))

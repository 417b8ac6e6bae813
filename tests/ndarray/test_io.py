"""mx.nd.save / mx.nd.load against files written by real MXNet 1.9.1 (tests/data/mxnet_1_9_1).

The reference files and expected.json were produced by tests/data/mxnet_1_9_1/make_files.py
with MXNet installed; these tests need no MXNet. The round trip through MXNet itself runs
only when MXNET_PYTHON names an interpreter that can ``import mxnet``.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from needs import needs_env_path

import framework as mx
from framework.base import MXLabError
from framework.ndarray.io import (
    ARRAY_MAGIC_V1,
    ARRAY_MAGIC_V3,
    NDArrayFileError,
    load,
    load_frombuffer,
    save,
    save_tobuffer,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "mxnet_1_9_1"
EXPECTED = json.loads((DATA / "expected.json").read_text())
FILES = ["list_form.nd", "mlp.params", "all_dtypes.nd", "np_shape.nd"]
# Files MXLab writes identically (np_shape.nd uses the V3 header MXLab reads but never writes).
V2_FILES = ["list_form.nd", "mlp.params", "all_dtypes.nd"]
DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool"]


def expected_values(entry: dict) -> np.ndarray:
    """The values recorded in expected.json, as an array of the recorded dtype."""
    raw = [float(v) if isinstance(v, str) else v for v in entry["values"]]
    return np.array(raw, dtype=entry["dtype"]).reshape(entry["shape"])


def assert_identical(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype, shape and values, NaN == NaN and -0.0 != 0.0."""
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f")
    if want.dtype.kind == "f":
        assert np.array_equal(np.signbit(got), np.signbit(want))


def entries_of(loaded) -> list[tuple[str | None, mx.nd.NDArray]]:
    return list(loaded.items()) if isinstance(loaded, dict) else [(None, a) for a in loaded]


def rebuild(fname: str):
    """The arrays of an MXNet file, rebuilt in MXLab from expected.json (same contexts, names, order)."""
    spec = EXPECTED[fname]
    arrays = [
        mx.nd.array(expected_values(e), ctx=mx.Context(e["context"][0], e["context"][1]), dtype=e["dtype"])
        for e in spec["entries"]
    ]
    if spec["form"] == "dict":
        return {e["name"]: a for e, a in zip(spec["entries"], arrays, strict=True)}
    return arrays


def small_file() -> bytes:
    """One float32 vector [1, 2] in list form: header 24 B, array at 24, names count at 64."""
    return save_tobuffer([mx.nd.array(np.array([1.0, 2.0], np.float32))])


def patched(buf: bytes, offset: int, value: int, fmt: str) -> bytes:
    raw = np.array([value], fmt).tobytes()
    return buf[:offset] + raw + buf[offset + len(raw) :]


# --------------------------------------------------------------------------- MXNet -> MXLab
@pytest.mark.parametrize("fname", FILES)
def test_mxnet_files_load_with_exact_values(fname):
    loaded = load(DATA / fname)
    spec = EXPECTED[fname]
    assert isinstance(loaded, dict) == (spec["form"] == "dict")
    got = entries_of(loaded)
    assert len(got) == len(spec["entries"])
    for (name, arr), entry in zip(got, spec["entries"], strict=True):
        assert name == entry["name"]
        assert arr.context == mx.cpu(0)  # MXNet's rule: CPU arrays load onto cpu(0)
        assert_identical(arr.asnumpy(), expected_values(entry))


def test_params_file_has_arg_and_aux_entries_in_several_dtypes():
    params = load(DATA / "mlp.params")
    assert {k.split(":", 1)[0] for k in params} == {"arg", "aux"}
    assert params["arg:fc1_weight"].shape == (8, 4)
    assert params["aux:bn1_running_var"].dtype == np.float64
    assert params["arg:fc2_weight"].dtype == np.float16
    assert {a.dtype.__name__ for a in params.values()} == {"float16", "float32", "float64"}


def test_every_type_flag_is_covered_by_the_reference_file():
    loaded = load(DATA / "all_dtypes.nd")
    assert {a.dtype.__name__ for a in loaded} == set(DTYPES)  # MXNet's dtype: the NumPy scalar type
    shapes = [a.shape for a in loaded]
    assert (0,) in shapes and (2, 0, 3) in shapes and () in shapes


def test_load_frombuffer_matches_load():
    from_file = load(DATA / "mlp.params")
    from_buffer = load_frombuffer((DATA / "mlp.params").read_bytes())
    assert list(from_file) == list(from_buffer)
    for key in from_file:
        assert_identical(from_buffer[key].asnumpy(), from_file[key].asnumpy())


# --------------------------------------------------------------------------- MXLab -> bytes
@pytest.mark.parametrize("fname", V2_FILES)
def test_files_written_here_are_byte_identical_to_mxnets(fname, tmp_path):
    target = tmp_path / fname
    save(target, rebuild(fname))
    assert target.read_bytes() == (DATA / fname).read_bytes()


def test_context_is_recorded_as_saved():
    buf = save_tobuffer([mx.nd.array(np.array([1.0], np.float32), ctx=mx.cpu(3))])
    dev_type, dev_id = np.frombuffer(buf, "<i4", count=2, offset=44)
    assert (dev_type, dev_id) == (1, 3)
    assert load_frombuffer(buf)[0].context == mx.cpu(0)
    assert load_frombuffer(buf, ctx=mx.cpu(2))[0].context == mx.cpu(2)


@pytest.mark.skipif(mx.num_gpus() > 0, reason="checks the no-GPU fallback")
def test_gpu_saved_arrays_load_onto_cpu0_without_a_gpu():
    buf = patched(small_file(), 44, 2, "<i4")  # device type 2 = gpu, id 0
    (arr,) = load_frombuffer(buf)
    assert arr.context == mx.cpu(0)
    assert arr.asnumpy().tolist() == [1.0, 2.0]


# --------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3, 1, 2)])
def test_round_trip_every_dtype_and_shape(dtype, shape, tmp_path):
    rng = np.random.default_rng(10 * len(shape) + DTYPES.index(dtype))
    draws = rng.standard_normal(shape) * 50
    values = np.asarray(np.abs(draws) if dtype == "uint8" else draws).astype(dtype)
    save(tmp_path / "a.nd", {"x": mx.nd.array(values, dtype=dtype), "y": mx.nd.array(values, dtype=dtype)})
    loaded = load(tmp_path / "a.nd")
    assert list(loaded) == ["x", "y"]
    assert_identical(loaded["x"].asnumpy(), values)


def test_single_array_saves_as_a_one_element_list(tmp_path):
    save(tmp_path / "one.nd", mx.nd.array(np.arange(4, dtype=np.int64), dtype="int64"))
    (arr,) = load(tmp_path / "one.nd")
    assert arr.asnumpy().tolist() == [0, 1, 2, 3]


def test_empty_dict_and_list_load_as_empty_list(tmp_path):
    for data in ([], {}):
        save(tmp_path / "e.nd", data)
        assert load(tmp_path / "e.nd") == []


@pytest.mark.parametrize("kind", ["NaiveEngine", "ThreadedEngine", "ThreadedEnginePerDevice"])
def test_save_waits_for_pending_writes(kind, make_engine, tmp_path):
    engine = make_engine(kind, 2)
    with mx.engine.use(engine):
        x = mx.nd.zeros((64,))
        slow_done = []

        def slow_fill(run_ctx):
            time.sleep(0.05)
            x._data[...] = 7.0
            slow_done.append(True)

        engine.push_sync(slow_fill, x.context, [], [x._chunk.var], name="slow_fill")
        save(tmp_path / "p.nd", {"arg:x": x})
        assert slow_done == [True]
        assert (load(tmp_path / "p.nd")["arg:x"].asnumpy() == 7.0).all()
        engine.wait_for_all()


def test_mx_nd_save_and_load_are_wired(tmp_path):
    """After integration (framework/ndarray/__init__.py imports io.save/load) these are mx.nd's."""
    data = {"arg:w": mx.nd.array(np.eye(3, dtype=np.float32)), "aux:n": mx.nd.array([5], dtype="int32")}
    mx.nd.save(str(tmp_path / "w.params"), data)
    loaded = mx.nd.load(str(tmp_path / "w.params"))
    assert (loaded["arg:w"].asnumpy() == np.eye(3)).all()
    assert loaded["aux:n"].dtype == np.int32
    assert mx.nd.load(str(DATA / "list_form.nd"))[0].shape == (5,)


# --------------------------------------------------------------------------- other header versions
def test_legacy_v1_header_is_read():
    buf = small_file()
    # V1: magic 0xF993FAC8 and no storage-type field.
    v1 = patched(buf, 24, ARRAY_MAGIC_V1, "<u4")
    v1 = v1[:28] + v1[32:]
    (arr,) = load_frombuffer(v1)
    assert arr.asnumpy().tolist() == [1.0, 2.0]


def test_v3_header_with_unknown_shape_is_refused():
    buf = patched(patched(small_file(), 24, ARRAY_MAGIC_V3, "<u4"), 32, -1, "<i4")
    with pytest.raises(NDArrayFileError, match=r"byte 32: array 0: the shape is unknown"):
        load_frombuffer(buf)


# --------------------------------------------------------------------------- malformed files
def load_bytes(tmp_path: Path, buf: bytes):
    path = tmp_path / "bad.nd"
    path.write_bytes(buf)
    return load(path), str(path)


@pytest.mark.parametrize(
    ("offset", "value", "fmt", "match"),
    [
        (0, 0x113, "<u8", r"byte 0: not an MXNet NDArray file: expected magic 0x112, got 0x113"),
        (24, 0xDEADBEEF, "<u4", r"byte 24: array 0: expected array magic 0xF993FAC9 .* got 0xDEADBEEF"),
        (28, 1, "<i4", r"byte 28: array 0: expected storage type 0 \(dense\), got 1 \(row_sparse\)"),
        (28, 2, "<i4", r"byte 28: array 0: expected storage type 0 \(dense\), got 2 \(csr\)"),
        (28, -1, "<i4", r"byte 28: array 0: expected storage type 0 \(dense\), got -1"),
        (32, 99, "<u4", r"byte 32: array 0: expected ndim between 0 and 32, got 99"),
        (36, -2, "<i8", r"byte 36: array 0: expected dimensions >= 0, got shape \(-2,\)"),
        (44, 4, "<i4", r"byte 44: array 0: expected a context .* got device type 4, id 0"),
        (52, 8, "<i4", r"byte 52: array 0: expected a type flag \(0 float32, .*7 bool\), got 8"),
        (52, -1, "<i4", r"byte 52: array 0: expected a type flag .* got -1"),
        (64, 2, "<u8", r"byte 64: expected 0 names \(list form\) or 1 \(one per array\), got 2"),
        (16, 2**40, "<u8", r"byte 16: expected a plausible number of arrays"),
    ],
)
def test_malformed_fields_are_reported_with_file_and_offset(tmp_path, offset, value, fmt, match):
    with pytest.raises(NDArrayFileError, match=match) as info:
        load_bytes(tmp_path, patched(small_file(), offset, value, fmt))
    assert str(tmp_path / "bad.nd") in str(info.value)
    assert isinstance(info.value, MXLabError)


def test_every_truncation_is_reported(tmp_path):
    buf = small_file()
    for cut in range(len(buf)):
        with pytest.raises(NDArrayFileError, match=r"bad\.nd: byte \d+: truncated: expected \d+ bytes \(.+\)"):
            load_bytes(tmp_path, buf[:cut])


def test_truncated_values_name_the_array_and_shape(tmp_path):
    buf = small_file()
    with pytest.raises(
        NDArrayFileError,
        match=r"byte 56: truncated: expected 8 bytes \(the 2 float32 values of "
        r"array 0, shape \(2,\)\), only 4 left",
    ):
        load_bytes(tmp_path, buf[:60])


def test_trailing_garbage_is_reported(tmp_path):
    with pytest.raises(NDArrayFileError, match=r"byte 72: expected the end of the file, found 3 trailing bytes"):
        load_bytes(tmp_path, small_file() + b"xyz")


def test_bad_utf8_name_is_reported():
    buf = save_tobuffer({"ab": mx.nd.array(np.array([1.0], np.float32))})
    with pytest.raises(NDArrayFileError, match=r"<buffer>: byte 76: name 0: expected UTF-8 text"):
        load_frombuffer(buf[:-2] + b"\xff\xfe")


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({1: mx.nd.zeros((1,))}, r"dict keys must be str, got int 1"),
        ({"a": np.zeros(1)}, r"dict value for key 'a' must be an NDArray, got ndarray"),
        ([mx.nd.zeros((1,)), 3.0], r"list entry 1 must be an NDArray, got float"),
        ("weights", r"data must be an NDArray, a list of NDArrays or a dict"),
        (np.zeros(3), r"data must be an NDArray, a list of NDArrays or a dict"),
    ],
)
def test_save_refuses_what_the_format_cannot_hold(tmp_path, data, match):
    with pytest.raises(NDArrayFileError, match=match):
        save(tmp_path / "x.nd", data)
    assert not (tmp_path / "x.nd").exists()


def test_missing_file_raises_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nope.params")


# --------------------------------------------------------------------------- MXLab -> real MXNet
def test_mxnet_loads_files_written_here(tmp_path):
    mxnet_python = needs_env_path("MXNET_PYTHON", "it names an interpreter with mxnet 1.x, to run MXNet itself")
    rng = np.random.default_rng(5)
    data = {f"arg:{d}": mx.nd.array((rng.standard_normal((2, 3)) * 40).astype(d), dtype=d) for d in DTYPES}
    data["aux:empty"] = mx.nd.array(np.zeros((0, 2), np.float32))
    save(tmp_path / "mxlab.params", data)
    script = textwrap.dedent(
        """
        import json, sys
        import mxnet as mx
        loaded = mx.nd.load(sys.argv[1])
        print(json.dumps({k: [str(v.dtype.__name__ if hasattr(v.dtype, '__name__') else v.dtype),
                              list(v.shape), v.asnumpy().astype('float64').ravel().tolist()]
                          for k, v in loaded.items()}))
        """
    )
    result = subprocess.run(
        [mxnet_python, "-c", script, str(tmp_path / "mxlab.params")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert list(seen) == list(data)
    for key, arr in data.items():
        dtype, shape, values = seen[key]
        assert np.dtype(dtype) == arr.dtype
        assert tuple(shape) == arr.shape
        want = arr.asnumpy().astype(np.float64).ravel().tolist()
        assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(values, want, strict=True))


def test_reference_files_are_small():
    assert sum(p.stat().st_size for p in DATA.iterdir() if p.is_file()) < 50_000  # the files MXNet wrote here
    assert sys.modules.get("make_files") is None  # the generator script is never imported by tests

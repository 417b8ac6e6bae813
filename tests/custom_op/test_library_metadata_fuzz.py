"""Fuzzing what a custom-operator library reports about its operators.

A hand-written library exports the C ABI of lib_api.h directly, returning metadata read from
global variables this test sets through ctypes before each ``mx.library.load``: operator
counts, names (NULL, non-UTF-8, not identifiers, repeated), flags, input/output counts,
output ranks, type codes and mutated-input indices, at their extremes. Whatever it reports,
loading and calling the operator raise LibraryError (the loader's own class; metadata
errors are LibraryMetadataError, a ValueError) or an operator error that names the library,
never a raw exception, a crash or a huge allocation.
"""

from __future__ import annotations

import ctypes
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import framework as mx
from framework import library
from framework.base import MXLabError
from framework.library import LibraryError, LibraryMetadataError

FUZZ_LIB_SRC = r"""
#include <string.h>
extern "C" {
int fz_size = 1, fz_name_null = 0, fz_flags = 1 | 2 | 8 | 32;
char fz_names[2][64] = {"fuzz_op", "fuzz_op2"};
int fz_num_in = 1, fz_num_out = 1, fz_out_ndim = 1, fz_type = 0, fz_mutate_count = 0, fz_mutate_index = 0;

int _opVersion() { return 1; }
const char* _opLastError() { return "fuzz library said no"; }
int _opInitialize(int) { return 1; }
int _opRegSize() { return fz_size; }
const char* _opRegGetName(int i) { return fz_name_null ? 0 : fz_names[i % 2]; }
int _opRegGetFlags(int) { return fz_flags; }
int _opCallParseAttrs(int, const char**, const char**, int, int* nin, int* nout) {
  *nin = fz_num_in; *nout = fz_num_out; return 1;
}
int _opCallInferType(int, const char**, const char**, int, int* types, int nin, int nout) {
  for (int i = nin; i < nin + nout; ++i) types[i] = fz_type;
  return 1;
}
int _opCallInferSType(int, const char**, const char**, int, int*, int, int) { return 1; }
int _opCallInferShape(int, const char**, const char**, int, int, int*, unsigned*, int nout, int* out_ndims,
                      unsigned* out_dims) {
  for (int i = 0; i < nout; ++i) {
    out_ndims[i] = fz_out_ndim;
    for (int d = 0; d < 32; ++d) out_dims[i * 32 + d] = 2;  /* never past the caller's buffer */
  }
  return 1;
}
int _opCallMutateInputs(int, const char**, const char**, int, int nin, int* idx, int* count) {
  *count = fz_mutate_count;
  for (int i = 0; i < fz_mutate_count && i < nin; ++i) idx[i] = fz_mutate_index;
  return 1;
}
int _opCallFCompute() { return 1; }
int _opCallCreateOpState() { return 0; }
int _opCallFStatefulCompute() { return 0; }
void _opDestroyOpState(void*) {}
}
"""

INT_EXTREMES = [-(2**31), -1, 0, 1, 2, 3, 33, 4097, 2**31 - 1]
NAMES = [b"fuzz_op", b"", b"1abc", b"a b", b"caf\xe9", b"\xff\xfe", b"x" * 63, "ok_\u00e9".encode()]


@pytest.fixture(scope="module")
def fuzz_lib(tmp_path_factory) -> Path:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed: cannot build the fuzz library")
    out = tmp_path_factory.mktemp("fuzz_lib")
    (out / "fuzz.cc").write_text(FUZZ_LIB_SRC)
    subprocess.run([gxx, "-shared", "-fPIC", "-o", str(out / "libfuzz.so"), str(out / "fuzz.cc")], check=True)
    return out / "libfuzz.so"


def _configure(handle: ctypes.CDLL, settings: dict) -> None:
    for key, value in settings.items():
        if key == "names":
            buf = (ctypes.c_char * 128).in_dll(handle, "fz_names")
            buf[:] = b"".join(name[:63].ljust(64, b"\0") for name in value)
        else:
            ctypes.c_int.in_dll(handle, f"fz_{key}").value = value


def _cases(seed: int, count: int):
    rng = random.Random(seed)
    for k in range(count):
        yield (
            k,
            {
                "size": rng.choice([1, 1, 1, 2, *INT_EXTREMES]),
                "name_null": int(rng.random() < 0.1),
                "names": [rng.choice(NAMES), rng.choice(NAMES)],
                "flags": rng.choice([1 | 2 | 8 | 32, 1 | 2 | 8 | 16 | 32, rng.randrange(0, 2048), -1]),
                "num_in": rng.choice([1, 1, *INT_EXTREMES]),
                "num_out": rng.choice([1, 1, *INT_EXTREMES]),
                "out_ndim": rng.choice([1, 2, *INT_EXTREMES]),
                "type": rng.choice([0, 1, 6, 7, 99, -1, 100]),
                "mutate_count": rng.choice([0, 1, *INT_EXTREMES]),
                "mutate_index": rng.choice([0, *INT_EXTREMES]),
            },
        )


def test_whatever_the_library_reports_only_library_errors_come_out(fuzz_lib, tmp_path):
    loaded = 0
    for k, settings in _cases(seed=8, count=80):
        copy = tmp_path / f"libfuzz{k}.so"  # a fresh copy: its own globals, not cached by load
        shutil.copyfile(fuzz_lib, copy)
        handle = ctypes.CDLL(str(copy))  # the same handle load() will get from dlopen
        unique = f"fz{k}_".encode()
        settings["names"] = [unique + n if n and n[:1].isalpha() and n.isascii() else n for n in settings["names"]]
        _configure(handle, settings)
        try:
            lib = library.load(str(copy), verbose=False)
        except LibraryError as err:
            assert lib_name_in(err, copy), (settings, str(err))
            continue
        except Exception as err:
            pytest.fail(f"load with {settings}: leaked {type(err).__name__}: {err}")
        loaded += 1
        for name in lib.operators:
            try:
                getattr(mx.nd, name)(mx.nd.ones((2, 2))).wait_to_read()
            except MXLabError as err:
                assert copy.name in str(err) or name in str(err), (settings, str(err))
            except Exception as err:
                pytest.fail(f"calling {name} with {settings}: leaked {type(err).__name__}: {err}")
    assert loaded > 0  # some libraries were sane enough to load: the call path was exercised too


def lib_name_in(err: Exception, path: Path) -> bool:
    return path.name in str(err)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"size": -1}, r"reports -1 operators \(_opRegSize\); expected 0 to 4096"),
        ({"size": 2**31 - 1}, r"reports 2147483647 operators"),
        ({"name_null": 1}, r"operator 0 \(_opRegGetName\) has no name \(NULL\)"),
        ({"names": [b"caf\xe9", b"x"]}, r"name is not UTF-8 at byte 3"),
        ({"names": [b"a b", b"x"]}, r"name 'a b' is not a Python identifier"),
        (
            {"size": 2, "names": [b"twice_op", b"twice_op"]},
            r"operator 1 \(_opRegGetName\): name 'twice_op' is declared twice",
        ),
    ],
)
def test_impossible_metadata_is_a_library_metadata_error(fuzz_lib, tmp_path, settings, message):
    copy = tmp_path / "libmeta.so"
    shutil.copyfile(fuzz_lib, copy)
    _configure(ctypes.CDLL(str(copy)), settings)
    with pytest.raises(LibraryMetadataError, match=r"libmeta\.so.*" + message):
        library.load(str(copy), verbose=False)
    assert issubclass(LibraryMetadataError, ValueError) and issubclass(LibraryMetadataError, MXLabError)


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"num_in": 2**31 - 1}, library.LibraryParamError, r"parseAttrs set num_in=2147483647"),
        ({"out_ndim": 33}, library.LibraryInferenceError, r"inferShape gave output 0 33 dimensions; at most 32"),
        (
            {"flags": 1 | 2 | 8 | 16 | 32, "mutate_count": 2**31 - 1},
            LibraryMetadataError,
            r"mutateInputs reported 2147483647 indices, but the operator has 1 inputs",
        ),
    ],
)
def test_impossible_call_time_metadata_is_refused(fuzz_lib, tmp_path, settings, error, message):
    copy = tmp_path / "libcall.so"
    shutil.copyfile(fuzz_lib, copy)
    name = f"fz_call_{abs(hash(message)) % 10**8}"
    _configure(ctypes.CDLL(str(copy)), {**settings, "names": [name.encode(), b"unused"]})
    library.load(str(copy), verbose=False)
    with pytest.raises(error, match=message):
        getattr(mx.nd, name)(mx.nd.ones((2, 2))).wait_to_read()

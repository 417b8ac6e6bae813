"""mx.util (NumPy-shape switch, environment, GPU queries), mx.runtime, mx.libinfo and mx.base's helpers."""

from __future__ import annotations

import logging
import os
import sys
import threading
import tomllib
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import framework as mx
from framework import backend
from framework.base import ContextError, MXLabError

ROOT = Path(__file__).resolve().parents[1]

# MXNet 1.9.1's mx.runtime.feature_list() names, in its order.
MXNET_FEATURES = [
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3", "CPU_SSE4_1",
    "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C", "JEMALLOC", "BLAS_OPEN",
    "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN", "OPENCV", "CAFFE", "PROFILER",
    "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP",
]  # fmt: skip


@pytest.fixture(autouse=True)
def legacy_shapes():
    """Every test starts and ends with legacy shape semantics in every thread."""
    mx.util.set_np_shape(False)
    yield
    mx.util.set_np_shape(False)


def in_thread(fn):
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", fn()))
    thread.start()
    thread.join()
    return result["value"]


# ---------------------------------------------------------------------- NumPy shape semantics
def test_np_shape_is_off_by_default_and_set_returns_the_previous_state():
    assert mx.util.is_np_shape() is False
    assert mx.util.set_np_shape(True) is False
    assert mx.util.is_np_shape() is True and mx.is_np_shape() is True
    assert mx.set_np_shape(False) is True
    assert mx.util.is_np_shape() is False


def test_np_shape_true_is_per_thread_and_two_is_process_wide():
    mx.util.set_np_shape(True)
    assert in_thread(mx.util.is_np_shape) is False
    mx.util.set_np_shape(2)
    assert in_thread(mx.util.is_np_shape) is True
    # Switching off in another thread clears the process-wide switch; this thread keeps its own.
    assert in_thread(lambda: mx.util.set_np_shape(False)) is True
    assert in_thread(mx.util.is_np_shape) is False
    assert mx.util.is_np_shape() is True


def test_np_shape_scope_restores_the_previous_state_even_on_error():
    with mx.util.np_shape():
        assert mx.util.is_np_shape()
        with mx.np_shape(False):
            assert not mx.util.is_np_shape()
        assert mx.util.is_np_shape()
    assert not mx.util.is_np_shape()
    with pytest.raises(KeyError), mx.util.np_shape(True):
        raise KeyError("boom")
    assert not mx.util.is_np_shape()


def test_use_np_shape_decorates_functions_and_classes():
    @mx.use_np_shape
    def inside():
        return mx.util.is_np_shape()

    assert inside() is True and inside.__name__ == "inside"
    assert not mx.util.is_np_shape()

    @mx.util.use_np_shape
    class Probe:
        def method(self):
            return mx.util.is_np_shape()

        @staticmethod
        def static():
            return mx.util.is_np_shape()

        @classmethod
        def klass(cls):
            return mx.util.is_np_shape()

        @property
        def prop(self):
            return mx.util.is_np_shape()

    probe = Probe()
    assert probe.method() and Probe.static() and Probe.klass() and probe.prop
    assert not mx.util.is_np_shape()
    with pytest.raises(MXLabError, match="use_np_shape decorates a function or a class, got int"):
        mx.util.use_np_shape(3)


@pytest.mark.parametrize("bad", [3, -1, "yes", None, 1.5])
def test_set_np_shape_rejects_values_that_are_not_a_state(bad):
    with pytest.raises(MXLabError, match="set_np_shape: active must be"):
        mx.util.set_np_shape(bad)
    assert not mx.util.is_np_shape()


def test_set_np_shape_logs_once_when_first_activated(caplog, monkeypatch):
    monkeypatch.setattr(mx.util, "_announced", False)
    with caplog.at_level(logging.INFO):
        mx.util.set_np_shape(True)
        mx.util.set_np_shape(True)
    assert sum("NumPy-shape semantics activated" in r.message for r in caplog.records) == 1


def test_is_np_array_is_always_false():
    assert mx.util.is_np_array() is False and mx.is_np_array() is False


# ---------------------------------------------------------------------- environment and GPUs
def test_getenv_and_setenv_read_and_write_the_environment(monkeypatch):
    monkeypatch.delenv("MXLAB_TEST_VARIABLE", raising=False)
    assert mx.util.getenv("MXLAB_TEST_VARIABLE") is None
    mx.util.setenv("MXLAB_TEST_VARIABLE", "42")
    assert os.environ["MXLAB_TEST_VARIABLE"] == "42" and mx.util.getenv("MXLAB_TEST_VARIABLE") == "42"
    mx.util.setenv("MXLAB_TEST_VARIABLE", None)
    assert "MXLAB_TEST_VARIABLE" not in os.environ


def test_gpu_queries_follow_the_backend():
    count = mx.util.get_gpu_count()
    assert count == backend.num_gpus()
    with pytest.raises(ContextError, match=f"get_gpu_memory: no GPU {count} \\(this machine has {count}\\)"):
        mx.util.get_gpu_memory(count)
    with pytest.raises(ContextError, match="expects a GPU context such as mx.gpu\\(0\\), got cpu\\(0\\)"):
        mx.util.get_cuda_compute_capability(mx.cpu())


@pytest.mark.gpu
def test_gpu_memory_and_compute_capability_on_a_gpu():
    if backend.num_gpus() == 0:
        pytest.skip("no GPU")
    free, total = mx.util.get_gpu_memory(0)
    assert 0 < free <= total
    assert mx.util.get_cuda_compute_capability(mx.gpu(0)) >= 30


# ---------------------------------------------------------------------- mx.runtime
def test_features_list_mxnets_names_in_order_once_per_process():
    features = mx.runtime.Features()
    assert list(features) == MXNET_FEATURES
    assert mx.runtime.Features() is features and mx.runtime.Features.instance is features
    listed = mx.runtime.feature_list()
    assert [f.name for f in listed] == MXNET_FEATURES
    assert all(isinstance(f, mx.runtime.Feature) and f.reason for f in listed)
    assert repr(features) == str(listed)


def test_features_answer_for_mxlab():
    features = mx.runtime.Features()
    assert features.is_enabled("CUDA") == (backend.num_gpus() > 0)
    for absent in ("CUDNN", "MKLDNN", "TENSORRT", "OPENMP", "TVM_OP", "OPENCV"):
        assert features.is_enabled(absent) is False, absent
    blas = {info["internal_api"] for info in threadpool_info() if info["user_api"] == "blas"}
    assert features.is_enabled("blas_open") == ("openblas" in blas)
    assert features.is_enabled("Blas_Mkl") == ("mkl" in blas)
    assert features.is_enabled("PROFILER") and features.is_enabled("LAPACK")
    assert repr(features["PROFILER"]) == "✔ PROFILER" and repr(features["CUDNN"]) == "✖ CUDNN"


def test_unknown_feature_and_read_only_fields():
    features = mx.runtime.Features()
    with pytest.raises(mx.runtime.FeatureError, match="Feature 'WARP_DRIVE' is unknown, known features are: "):
        features.is_enabled("warp_drive")
    with pytest.raises(RuntimeError):
        features.is_enabled("nope")
    with pytest.raises(AttributeError):
        features["CUDA"].enabled = True


# ---------------------------------------------------------------------- mx.libinfo and versions
def test_versions():
    assert mx.__version__ == "1.9.1" == mx.libinfo.__version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert mx.__mxlab_version__ == project["version"] == mx.libinfo.MXLAB_VERSION


def test_find_include_path_points_at_lib_api_h(monkeypatch, tmp_path, caplog):
    monkeypatch.delenv("MXNET_INCLUDE_PATH", raising=False)
    path = mx.libinfo.find_include_path()
    assert path.endswith(os.sep) and os.path.isfile(os.path.join(path, "lib_api.h"))
    monkeypatch.setenv("MXNET_INCLUDE_PATH", str(tmp_path))
    assert mx.libinfo.find_include_path() == str(tmp_path)
    monkeypatch.setenv("MXNET_INCLUDE_PATH", str(tmp_path / "missing"))
    with caplog.at_level(logging.WARNING):
        assert mx.libinfo.find_include_path() == path
    assert "doesn't exist" in caplog.text


def test_find_lib_path_says_mxlab_has_no_core_library(monkeypatch, tmp_path):
    monkeypatch.delenv("MXNET_LIBRARY_PATH", raising=False)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    with pytest.raises(mx.libinfo.LibraryNotFoundError, match="Cannot find the libmxnet library: MXLab is Python"):
        mx.libinfo.find_lib_path()
    with pytest.raises(RuntimeError, match=str(tmp_path / "libfoo")):
        mx.libinfo.find_lib_path("libfoo")
    found = tmp_path / "libfoo.so"
    found.write_bytes(b"")
    assert mx.libinfo.find_lib_path("libfoo") == [str(found)]
    monkeypatch.setenv("MXNET_LIBRARY_PATH", str(found))
    assert mx.libinfo.find_lib_path() == [str(found)]


# ---------------------------------------------------------------------- mx.base helpers
def test_base_type_tuples_and_string_helpers():
    assert isinstance("x", mx.base.string_types) and not isinstance(b"x", mx.base.string_types)
    for value in (1, 2.5, np.float32(1), np.int8(3), np.bool_(True)):
        assert isinstance(value, mx.base.numeric_types), value
    for value in (1, np.int8(3), np.int32(3), np.int64(3), np.uint16(2)):
        assert isinstance(value, mx.base.integer_types), value
    assert not isinstance(2.0, mx.base.integer_types)
    assert mx.base.py_str(b"caf\xc3\xa9") == "café" and mx.base.py_str("text") == "text"
    assert mx.base._as_list(3) == [3]
    items, pair = [1, 2], (1, 2)
    assert mx.base._as_list(items) is items and mx.base._as_list(pair) is pair


def test_data_dir_reads_the_environment_and_creates_nothing(monkeypatch, tmp_path):
    monkeypatch.delenv("MXLAB_DATA_DIR", raising=False)
    monkeypatch.delenv("MXNET_HOME", raising=False)
    assert mx.base.data_dir() == mx.base.data_dir_default() == os.path.join(os.path.expanduser("~"), ".mxnet")
    monkeypatch.setenv("MXNET_HOME", str(tmp_path / "mxnet_home"))
    assert mx.base.data_dir() == str(tmp_path / "mxnet_home")
    monkeypatch.setenv("MXLAB_DATA_DIR", str(tmp_path / "mxlab_data"))  # the MXLab name wins
    assert mx.base.data_dir() == str(tmp_path / "mxlab_data")
    assert not (tmp_path / "mxlab_data").exists()


def test_find_conf_path_finds_a_conf_file_or_says_there_are_no_tvm_operators(monkeypatch, tmp_path):
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    with pytest.raises(mx.libinfo.LibraryNotFoundError, match="Cannot find tvmop.conf: .*TVM") as caught:
        mx.libinfo.find_conf_path()
    assert str(tmp_path / "tvmop.conf") in str(caught.value)
    conf = tmp_path / "tvmop.conf"
    conf.write_text("{}")
    assert mx.libinfo.find_conf_path() == [str(conf)]


def test_classproperty_reads_and_sets_on_the_class():
    class Counter(metaclass=mx.base.ClassPropertyMetaClass):
        _value = 1

        @mx.base.classproperty
        def value(cls):
            return cls._value

        @value.setter
        def value(cls, new):
            cls._value = new

    class ReadOnly:
        @mx.base.classproperty
        def name(cls):
            return cls.__name__

    assert Counter.value == 1 and Counter().value == 1
    Counter.value = 5
    assert Counter._value == 5 and Counter.value == 5
    assert ReadOnly.name == "ReadOnly"
    with pytest.raises(AttributeError, match="no setter"):
        ReadOnly().name = "x"


def test_with_metaclass_gives_subclasses_the_metaclass():
    class Meta(type):
        pass

    class Base:
        pass

    class Child(mx.base.with_metaclass(Meta, Base)):
        pass

    assert type(Child) is Meta and issubclass(Child, Base)


def test_not_implemented_for_symbol_is_an_mxnet_error():
    error = mx.base.NotImplementedForSymbol("__bool__", "bool")
    assert isinstance(error, mx.base.MXNetError) and isinstance(error, NotImplementedError)
    assert mx.base.NotImplementedForSymbol is mx.sym.NotImplementedForSymbol
    with pytest.raises(mx.base.NotImplementedForSymbol, match="namely operator 'bool'"):
        bool(mx.sym.var("x"))


def test_build_param_doc_writes_a_numpy_parameters_section():
    doc = mx.base.build_param_doc(["data", "axis", "data"], ["NDArray", "int", "NDArray"], ["Input.", "", "Again."])
    assert doc == "Parameters\n----------\ndata : NDArray\n    Input.\naxis : int\n"
    assert doc.count("data :") == 1
    assert mx.base.build_param_doc(["a", "a"], ["int", "int"], ["", ""], remove_dup=False).count("a : int") == 2


def test_add_fileline_to_docstring_names_the_source_line(tmp_path, monkeypatch):
    (tmp_path / "fileline_demo.py").write_text(
        'def f():\n    """Doc of f."""\n\n\nclass C:\n    """Doc of C."""\n\n'
        '    def m(self):\n        """Doc of m."""\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    mx.base.add_fileline_to_docstring("fileline_demo")  # imports the module by name
    fileline_demo = sys.modules["fileline_demo"]

    assert fileline_demo.f.__doc__.endswith("fileline_demo.py:1")
    assert fileline_demo.C.m.__doc__.endswith("fileline_demo.py:8")
    mx.base.add_fileline_to_docstring(fileline_demo)  # a second call adds nothing
    assert fileline_demo.f.__doc__.count("From:") == 1

"""``mx.runtime``: which of MXNet's build features MXLab has, answered honestly at run time.

MXNet reports the compile-time options of ``libmxnet`` (CUDA, cuDNN, MKL-DNN, the BLAS it
linked...). MXLab has no compiled core, so each feature is answered by what actually does
that job here: CUDA is on when CuPy sees a GPU (through :mod:`framework.backend`), the BLAS
flags name the library NumPy's BLAS calls land in (as threadpoolctl finds it), the CPU
vector extensions are those NumPy dispatches to on this CPU. Accelerator libraries MXLab
does not use (cuDNN, NCCL, TensorRT, MKL-DNN, TVM) are off. Every feature carries the
reason for its answer.
"""

from __future__ import annotations

import faulthandler
import importlib.util
from collections import OrderedDict

import numpy
from threadpoolctl import threadpool_info

from . import backend
from .base import MXLabError

# MXNet 1.9.1's feature names, in its order.
FEATURE_NAMES = (
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3", "CPU_SSE4_1",
    "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C", "JEMALLOC", "BLAS_OPEN",
    "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN", "OPENCV", "CAFFE", "PROFILER",
    "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP",
)  # fmt: skip

# MXNet's CPU feature -> the name NumPy's CPU dispatcher uses for it.
_NUMPY_CPU_NAMES = {
    "CPU_SSE": "SSE",
    "CPU_SSE2": "SSE2",
    "CPU_SSE3": "SSE3",
    "CPU_SSE4_1": "SSE41",
    "CPU_SSE4_2": "SSE42",
    "CPU_AVX": "AVX",
    "CPU_AVX2": "AVX2",
    "SSE": "SSE",
    "F16C": "F16C",
}

# threadpoolctl's name for a BLAS -> MXNet's feature for it.
_BLAS_FEATURES = {"openblas": "BLAS_OPEN", "mkl": "BLAS_MKL"}

_ABSENT = {
    "CUDNN": "MXLab's GPU operators are CuPy array code, not cuDNN calls",
    "NCCL": "MXLab does not use NCCL for multi-GPU communication",
    "CUDA_RTC": "mx.rtc (runtime-compiled CUDA kernels) is not part of MXLab",
    "TENSORRT": "MXLab has no TensorRT backend",
    "CPU_SSE4A": "NumPy does not dispatch to AMD's SSE4a",
    "OPENMP": "operators are NumPy calls; parallelism comes from the engine's worker threads",
    "JEMALLOC": "MXLab's storage pool allocates through NumPy/CuPy",
    "BLAS_ATLAS": "NumPy does not use ATLAS here",
    "BLAS_APPLE": "NumPy does not use Apple's Accelerate here",
    "MKLDNN": "MXLab has no oneDNN (MKL-DNN) operators",
    "OPENCV": "images are decoded with Pillow, not OpenCV",
    "CAFFE": "MXLab has no Caffe plugin",
    "CXX14": "MXLab has no compiled C++ core",
    "DEBUG": "MXLab has no debug build",
    "TVM_OP": "MXLab has no TVM operators",
}


class FeatureError(MXLabError, RuntimeError):
    """A feature name that MXNet does not define was asked for."""


class Feature:
    """One build feature: ``name``, ``enabled``, and ``reason`` (why MXLab answers so)."""

    __slots__ = ("_enabled", "_name", "reason")

    def __init__(self, name: str, enabled: bool, reason: str) -> None:
        self._name = name
        self._enabled = bool(enabled)
        self.reason = reason

    @property
    def name(self) -> str:
        """The feature's name, as MXNet spells it."""
        return self._name

    @property
    def enabled(self) -> bool:
        """True when MXLab has this capability on this machine."""
        return self._enabled

    def __repr__(self) -> str:
        return f"{'✔' if self._enabled else '✖'} {self._name}"


def _numpy_cpu_features() -> dict[str, bool]:
    """The CPU extensions NumPy detected and dispatches to (empty if this NumPy hides them)."""
    for module_name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        features = getattr(module, "__cpu_features__", None)
        if isinstance(features, dict):
            return features
    return {}


def _blas_libraries() -> set[str]:
    """The BLAS implementations loaded in this process (threadpoolctl's ``internal_api`` names)."""
    numpy.dot(numpy.ones((2, 2)), numpy.ones((2, 2)))  # make sure NumPy's BLAS is loaded
    return {info.get("internal_api", "") for info in threadpool_info() if info.get("user_api") == "blas"}


def _detect() -> list[Feature]:
    features: dict[str, Feature] = {}
    gpus = backend.num_gpus()
    features["CUDA"] = Feature("CUDA", gpus > 0, f"CuPy sees {gpus} GPU(s)")
    cpu = _numpy_cpu_features()
    for name, numpy_name in _NUMPY_CPU_NAMES.items():
        on = bool(cpu.get(numpy_name, False))
        features[name] = Feature(name, on, f"NumPy {'dispatches' if on else 'does not dispatch'} to {numpy_name}")
    blas = _blas_libraries()
    for api, name in _BLAS_FEATURES.items():
        on = api in blas
        found = ", ".join(sorted(blas)) or "none found"
        features[name] = Feature(name, on, f"NumPy's BLAS in this process: {found}")
    features["LAPACK"] = Feature("LAPACK", True, "numpy.linalg (LAPACK through NumPy's BLAS library)")
    features["PROFILER"] = Feature("PROFILER", True, "mx.profiler records the engine's events")
    has_ray = importlib.util.find_spec("ray") is not None
    features["DIST_KVSTORE"] = Feature(
        "DIST_KVSTORE", has_ray, "dist_* KVStores run on Ray" + ("" if has_ray else ", which is not installed")
    )
    features["INT64_TENSOR_SIZE"] = Feature("INT64_TENSOR_SIZE", True, "NumPy indexes arrays with 64-bit sizes")
    handler = faulthandler.is_enabled()
    features["SIGNAL_HANDLER"] = Feature(
        "SIGNAL_HANDLER", handler, f"Python's faulthandler is {'enabled' if handler else 'not enabled'}"
    )
    for name, reason in _ABSENT.items():
        features[name] = Feature(name, False, reason)
    return [features[name] for name in FEATURE_NAMES]


def feature_list() -> list[Feature]:
    """Every MXNet feature, in MXNet's order, with MXLab's answer."""
    return list(Features().values())


class Features(OrderedDict):
    """Feature name -> :class:`Feature`; one instance per process (detection runs once)."""

    instance: Features | None = None

    def __new__(cls) -> Features:
        if cls.instance is None:
            instance = super().__new__(cls)
            OrderedDict.__init__(instance, [(feature.name, feature) for feature in _detect()])
            cls.instance = instance
        return cls.instance

    def __init__(self) -> None:  # the contents were filled once by __new__
        pass

    def __repr__(self) -> str:
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether ``feature_name`` (any case) is enabled; FeatureError for a name MXNet does not define."""
        name = feature_name.upper()
        if name not in self:
            raise FeatureError(f"Feature '{name}' is unknown, known features are: {list(self.keys())}")
        return self[name].enabled


__all__ = ["Feature", "FeatureError", "Features", "feature_list"]

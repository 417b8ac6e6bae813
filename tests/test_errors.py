"""MXNet's error classes: ``MXNetError`` is the base, each layer's error mixes in its built-in kind."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import framework as mx
from framework import errors
from framework.executor.graph import GraphError
from framework.operator.gradient_pass import GradientError
from framework.operator.infer import InferenceError
from framework.symbol.symbol import NotImplementedForSymbol

# The built-in kinds MXNet's mxnet.error registers (plus the ones Python code naturally expects).
BUILTIN_KINDS = (
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    NotImplementedError,
    AttributeError,
    FloatingPointError,
    TimeoutError,
    FileNotFoundError,
)


def _every_framework_error_class() -> list[type]:
    """Every MXNetError subclass defined anywhere in framework/ (imports every module to find them)."""
    for info in pkgutil.walk_packages(mx.__path__, "framework."):
        if info.name.startswith(("framework.tools.", "framework.kvstore.launch", "framework.kvstore.server")):
            continue
        importlib.import_module(info.name)
    found, pending = [], [errors.MXNetError]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("framework.") and sub not in found:
                found.append(sub)
                pending.append(sub)
    return found


def test_mxnet_error_has_mxnets_names_and_is_a_runtime_error():
    assert mx.MXNetError is mx.base.MXNetError is mx.error.MXNetError
    assert mx.MXLabError is mx.MXNetError  # the old name is the same class
    assert issubclass(mx.MXNetError, RuntimeError)
    assert issubclass(mx.error.InternalError, mx.MXNetError)


def test_every_layer_error_is_an_mxnet_error():
    classes = _every_framework_error_class()
    assert len(classes) > 30  # the walk really found the layers' errors
    names = {cls.__name__ for cls in classes}
    assert {"OperatorParamError", "InferenceError", "ContextError", "SymbolError", "ExecutorError"} <= names


# Errors that are about the run, not the argument: plain MXNetError (a RuntimeError), as in MXNet.
# A class that names RuntimeError among its own bases says so on purpose (FeatureError...).
RUNTIME_ONLY = {"InternalError", "EngineError"}


def _is_runtime_on_purpose(cls: type) -> bool:
    return cls.__name__ in RUNTIME_ONLY or RuntimeError in cls.__bases__


def test_every_layer_error_mixes_in_a_builtin_kind():
    missing = [
        cls.__qualname__
        for cls in _every_framework_error_class()
        if not _is_runtime_on_purpose(cls) and not issubclass(cls, BUILTIN_KINDS)
    ]
    assert missing == [], f"errors without a built-in kind: {missing}"


def test_an_invalid_operator_parameter_is_caught_by_both_styles():
    for kind in (mx.base.MXNetError, ValueError):
        with pytest.raises(kind, match="num_filter"):
            mx.nd.Convolution(mx.nd.ones((1, 1, 3, 3)), kernel=(2, 2), num_filter="x")


def test_specific_kinds_match_what_python_code_expects():
    assert issubclass(InferenceError, ValueError)
    assert issubclass(GraphError, KeyError)
    assert issubclass(GradientError, NotImplementedError)
    assert issubclass(NotImplementedForSymbol, NotImplementedError)
    assert issubclass(errors.SparseStorageError, NotImplementedError)
    with pytest.raises(mx.MXNetError):
        mx.cpu("seven")


def test_an_error_inside_an_engine_operation_surfaces_on_wait_once():
    x = mx.nd.ones((2,))

    def explode(run_ctx):
        raise ZeroDivisionError("kernel divided by zero")

    x._chunk.engine.push_sync(explode, x.context, [], [x._chunk.var], name="explode")
    with pytest.raises(ZeroDivisionError, match="divided by zero"):
        x.wait_to_read()
    x.wait_to_read()  # reported once: the variable is clean again
    mx.nd.waitall()  # and not reported a second time globally


@pytest.mark.parametrize("stype", [None, "default"])
def test_check_stype_accepts_dense(stype):
    errors.check_stype(stype, "zeros")


@pytest.mark.parametrize("stype", ["csr", "row_sparse", "bogus"])
def test_check_stype_names_sparse_storage_as_absent(stype):
    with pytest.raises(errors.SparseStorageError, match=f"zeros: .*{stype}.*MXLab") as info:
        errors.check_stype(stype, "zeros")
    assert isinstance(info.value, mx.MXNetError) and isinstance(info.value, NotImplementedError)


def test_kvstore_row_sparse_pull_names_sparse_storage_as_absent():
    store = mx.kv.create("local")
    store.init("w", mx.nd.ones((2, 2)))
    with pytest.raises(errors.SparseStorageError, match="row_sparse_pull: stype='row_sparse' is sparse storage"):
        store.row_sparse_pull("w", out=mx.nd.zeros((2, 2)), row_ids=mx.nd.array([0]))


def test_a_missing_file_is_an_mxnet_error_and_a_file_not_found_error(tmp_path):
    missing = tmp_path / "nope.params"
    loaders = [
        ("mx.nd.load", lambda: mx.nd.load(str(missing))),
        ("mx.sym.load", lambda: mx.sym.load(str(tmp_path / "nope.json"))),
        ("mx.nd.load", lambda: mx.gluon.nn.Dense(2).load_parameters(str(missing))),  # Gluon reads through it
        ("mx.sym.load", lambda: mx.gluon.SymbolBlock.imports(str(tmp_path / "nope.json"), ["data"])),
    ]
    for api, load in loaders:
        with pytest.raises(mx.base.MXNetError, match=f"{api}: cannot open .*nope.* no such file") as raised:
            load()
        assert isinstance(raised.value, FileNotFoundError)

"""mx.library.load: C++ operators built against framework/include/lib_api.h, used like built-ins.

The module builds examples/custom_op/gemm_lib.cc (and a few small libraries written here
for the error paths) with g++ into a temporary directory, exactly as a user would:
``g++ -shared -fPIC -std=c++11 -I framework/include -o libgemm.so gemm_lib.cc``.
"""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest
from needs import needs_tool

import framework as mx
from framework import library
from framework.library import LibraryError
from framework.operator import registry
from framework.operator.infer import InferenceError
from framework.operator.params import OperatorParamError

pytestmark = pytest.mark.slow  # the module first compiles its libraries with g++ (and nvcc): over 10 s

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "framework" / "include"
GEMM_SRC = ROOT / "examples" / "custom_op" / "gemm_lib.cc"

# Operators exercising the error paths and mutateInputs / inferSType.
MISC_SRC = r"""
#include <stdexcept>
#include "lib_api.h"
typedef std::unordered_map<std::string, std::string> Attrs;

MXReturnValue parse1(const Attrs& attrs, int* num_in, int* num_out) { *num_in = 1; *num_out = 1; return MX_SUCCESS; }
MXReturnValue parse2(const Attrs& attrs, int* num_in, int* num_out) { *num_in = 2; *num_out = 1; return MX_SUCCESS; }
MXReturnValue same_type(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  out->at(0) = in->at(0); return MX_SUCCESS;
}
MXReturnValue same_shape(const Attrs& attrs, std::vector<std::vector<unsigned int>>* in,
                         std::vector<std::vector<unsigned int>>* out) {
  out->at(0) = in->at(0); return MX_SUCCESS;
}
MXReturnValue fails(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                    const OpResource& res) {
  MX_ERROR_MSG << "deliberate failure with " << in->at(0).size() << " elements";
  return MX_FAIL;
}
MXReturnValue throws(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                     const OpResource& res) {
  throw std::runtime_error("thrown from C++");
}
MXReturnValue sparse(const Attrs& attrs, std::vector<int>* in, std::vector<int>* out) {
  out->at(0) = kRowSparseStorage; return MX_SUCCESS;
}
// accum: output = input 0; input 1 (a mutable state) += input 0
MXReturnValue accum(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                    const OpResource& res) {
  float* x = in->at(0).data<float>(); float* s = in->at(1).data<float>(); float* y = out->at(0).data<float>();
  for (int64_t i = 0; i < in->at(0).size(); i++) { y[i] = x[i]; s[i] += x[i]; }
  return MX_SUCCESS;
}
MXReturnValue accum_mutate(const Attrs& attrs, std::vector<int>* idx) { idx->push_back(1); return MX_SUCCESS; }
// scale: y = x * factor (attribute), add request handled by MXLab
MXReturnValue scale(const Attrs& attrs, std::vector<MXTensor>* in, std::vector<MXTensor>* out,
                    const OpResource& res) {
  float f = std::stof(attrs.at("factor"));
  for (int64_t i = 0; i < in->at(0).size(); i++) out->at(0).data<float>()[i] = in->at(0).data<float>()[i] * f;
  return MX_SUCCESS;
}
MXReturnValue scale_parse(const Attrs& attrs, int* num_in, int* num_out) {
  if (attrs.count("factor") == 0) { MX_ERROR_MSG << "scale needs a 'factor' attribute"; return MX_FAIL; }
  *num_in = 1; *num_out = 1; return MX_SUCCESS;
}

REGISTER_OP(lib_fails).setParseAttrs(parse1).setInferType(same_type).setInferShape(same_shape)
    .setForward(fails, "cpu");
REGISTER_OP(lib_throws).setParseAttrs(parse1).setInferType(same_type).setInferShape(same_shape)
    .setForward(throws, "cpu");
REGISTER_OP(lib_sparse).setParseAttrs(parse1).setInferType(same_type).setInferShape(same_shape)
    .setInferSType(sparse).setForward(fails, "cpu");
REGISTER_OP(lib_accum).setParseAttrs(parse2).setInferType(same_type).setInferShape(same_shape)
    .setMutateInputs(accum_mutate).setForward(accum, "cpu");
REGISTER_OP(lib_scale).setParseAttrs(scale_parse).setInferType(same_type).setInferShape(same_shape)
    .setForward(scale, "cpu").setBackward(scale, "cpu");
REGISTER_OP(lib_gpu_only).setParseAttrs(parse1).setInferType(same_type).setInferShape(same_shape)
    .setForward(fails, "gpu");

MXReturnValue initialize(int version) { return MX_SUCCESS; }
"""

MISSING_SRC = r"""
#include "lib_api.h"
MXReturnValue parse(const std::unordered_map<std::string, std::string>& a, int* i, int* o) { return MX_SUCCESS; }
REGISTER_OP(lib_incomplete).setParseAttrs(parse);
MXReturnValue initialize(int version) { return MX_SUCCESS; }
"""

BAD_INIT_SRC = r"""
#include "lib_api.h"
MXReturnValue initialize(int version) {
  MX_ERROR_MSG << "needs MXLab version 42, got " << version;
  return MX_FAIL;
}
"""

# Hand-written, as if built against another version of the header.
OLD_VERSION_SRC = 'extern "C" int _opVersion() { return 99; }\n'
PLAIN_SRC = 'extern "C" int add(int a, int b) { return a + b; }\n'


def _compiler() -> str:
    return needs_tool("g++", "the custom-operator libraries are built with it")


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Build every library in parallel; returns name -> .so path."""
    gxx = _compiler()
    out = tmp_path_factory.mktemp("custom_op_libs")
    sources = {"gemm": GEMM_SRC, "gemm_again": GEMM_SRC}
    for name, text in (
        ("misc", MISC_SRC),
        ("missing", MISSING_SRC),
        ("bad_init", BAD_INIT_SRC),
        ("old_version", OLD_VERSION_SRC),
        ("plain", PLAIN_SRC),
    ):
        sources[name] = out / f"{name}.cc"
        sources[name].write_text(text)
    procs = {}
    for name, src in sources.items():
        cmd = [gxx, "-shared", "-fPIC", "-std=c++11", "-I", str(INCLUDE), "-o", str(out / f"lib{name}.so"), str(src)]
        procs[name] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for name, proc in procs.items():
        output, _ = proc.communicate()
        assert proc.returncode == 0, f"building {name} failed:\n{output}"
    return {name: out / f"lib{name}.so" for name in sources}


@pytest.fixture(scope="module")
def gemm(libs: dict[str, Path]) -> library.Library:
    return library.load(str(libs["gemm"]), verbose=False)


@pytest.fixture(scope="module")
def misc(libs: dict[str, Path]) -> library.Library:
    return library.load(str(libs["misc"]), verbose=False)


A = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
B = np.array([[7], [8], [9]], dtype=np.float32)


# ------------------------------------------------------------------ loading
def test_load_logs_operators_like_the_seed(libs: dict[str, Path], capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    lib = library.load(str(libs["gemm"]), verbose=True)
    err = capsys.readouterr().err
    assert lib.operators == ["my_gemm", "state_gemm"]
    assert lib in library.loaded_libraries()
    if "Found 2 operators in library" in err:  # first load in this process
        assert "Op[0] my_gemm" in err and "Op[1] state_gemm" in err and "Found 0 partitioners" in err
    else:
        assert "already loaded" in err
    assert library.load(str(libs["gemm"]), verbose=False) is lib  # loading twice is harmless


# ------------------------------------------------------------------ regular operator
def test_forward_imperative(gemm: library.Library) -> None:
    out = mx.nd.my_gemm(mx.nd.array(A), mx.nd.array(B))
    np.testing.assert_allclose(out.asnumpy(), [[50.0], [122.0]])
    np.testing.assert_allclose(out.asnumpy(), A @ B)


def test_backward_autograd(gemm: library.Library) -> None:
    a, b = mx.nd.array(A), mx.nd.array(B)
    a.attach_grad()
    b.attach_grad()
    head = np.array([[1.0], [2.0]], dtype=np.float32)
    with mx.autograd.record():
        c = mx.nd.my_gemm(a, b)
    c.backward(mx.nd.array(head))
    np.testing.assert_allclose(a.grad.asnumpy(), head @ B.T)
    np.testing.assert_allclose(b.grad.asnumpy(), A.T @ head)


def test_non_contiguous_input_is_made_contiguous(gemm: library.Library) -> None:
    at = mx.nd.array(A.T.copy()).T  # a transposed view
    np.testing.assert_allclose(mx.nd.my_gemm(at, mx.nd.array(B)).asnumpy(), A @ B)


def test_symbol_and_executor_with_add_request(gemm: library.Library) -> None:
    s = mx.sym.my_gemm(mx.sym.var("a"), mx.sym.var("b"), name="gemm")
    assert s.list_arguments() == ["a", "b"]
    assert s.infer_shape(a=(2, 3), b=(3, 1))[1] == [(2, 1)]
    assert s.infer_type(a="float32", b="float32")[1] == [np.float32]
    grads = {"a": mx.nd.ones((2, 3)), "b": mx.nd.zeros((3, 1))}
    ex = s.bind(mx.cpu(), {"a": mx.nd.array(A), "b": mx.nd.array(B)}, args_grad=grads, grad_req="add")
    ex.forward(is_train=True)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), A @ B)
    head = np.ones((2, 1), np.float32)
    ex.backward(mx.nd.array(head))
    ex.backward(mx.nd.array(head))
    # grad_req="add": MXLab adds the library's result to what was there (1 for a)
    np.testing.assert_allclose(grads["a"].asnumpy(), 1 + 2 * (head @ B.T))
    np.testing.assert_allclose(grads["b"].asnumpy(), 2 * (A.T @ head))


def test_symbol_json_round_trip(gemm: library.Library) -> None:
    s = mx.sym.state_gemm(mx.sym.var("a"), mx.sym.var("b"), test_kw=3, name="sg")
    loaded = mx.sym.load_json(s.tojson())
    assert '"test_kw": "3"' in s.tojson()
    ex = loaded.bind(mx.cpu(), {"a": mx.nd.array(A), "b": mx.nd.array(B)})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), A @ B)


# ------------------------------------------------------------------ stateful operator
def test_stateful_one_instance_per_executor_node(gemm: library.Library) -> None:
    op = gemm.ops["state_gemm"]
    calls = gemm.handle.state_gemm_forward_calls
    before_states, before_calls = op.num_states_created, calls()
    a, b = mx.sym.var("a"), mx.sym.var("b")
    s = mx.sym.state_gemm(a, b, test_kw=1, name="first") + mx.sym.state_gemm(a, b, name="second")
    grads = {"a": mx.nd.zeros((2, 3)), "b": mx.nd.zeros((3, 1))}
    ex = s.bind(mx.cpu(), {"a": mx.nd.array(A), "b": mx.nd.array(B)}, args_grad=grads)
    for _ in range(3):
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones((2, 1)))
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), 2 * (A @ B))
    np.testing.assert_allclose(grads["a"].asnumpy(), 2 * (np.ones((2, 1)) @ B.T))
    assert op.num_states_created - before_states == 2  # one per node, kept across 3 runs
    assert calls() - before_calls == 6  # 3 runs x 2 nodes


def test_stateful_imperative_call_site_keeps_its_instance(gemm: library.Library) -> None:
    op = gemm.ops["state_gemm"]
    before = op.num_states_created
    a, b = mx.nd.array(A), mx.nd.array(B)
    a.attach_grad()
    for _ in range(3):
        with mx.autograd.record():
            out = mx.nd.state_gemm(a, b, test_kw=77)
        out.backward()
    np.testing.assert_allclose(out.asnumpy(), A @ B)
    np.testing.assert_allclose(a.grad.asnumpy(), np.ones((2, 1)) @ B.T)
    assert op.num_states_created - before == 1


# ------------------------------------------------------------------ errors from the library
def test_failing_parse_attrs_names_library_operator_and_step(gemm: library.Library) -> None:
    with pytest.raises(OperatorParamError, match=r"libgemm\.so: operator 'my_gemm': parseAttrs failed: .*'foo'"):
        mx.nd.my_gemm(mx.nd.array(A), mx.nd.array(B), foo=1)
    with pytest.raises(OperatorParamError, match=r"state_gemm.*parseAttrs failed: state_gemm accepts only"):
        mx.sym.state_gemm(mx.sym.var("a"), mx.sym.var("b"), bar="x")


def test_failing_infer_shape_and_type(gemm: library.Library) -> None:
    with pytest.raises(InferenceError, match=r"libgemm\.so: operator 'my_gemm'.*inferShape .*failed: expected"):
        mx.nd.my_gemm(mx.nd.array(A), mx.nd.array(A))
    s = mx.sym.my_gemm(mx.sym.var("x"), mx.sym.var("y"), name="g")
    with pytest.raises(InferenceError, match=r"node 'g'.*inferShape"):
        s.infer_shape(x=(2, 3), y=(4, 5))
    with pytest.raises(InferenceError, match=r"inferType .*failed: input 0 must be float32"):
        mx.nd.my_gemm(mx.nd.array(A, dtype="float64"), mx.nd.array(B, dtype="float64"))


def test_failing_and_throwing_forward(misc: library.Library) -> None:
    x = mx.nd.ones((2, 2))
    with pytest.raises(
        LibraryError, match=r"libmisc\.so: operator 'lib_fails'.*forward \(cpu\) failed: deliberate failure with 4"
    ):
        mx.nd.lib_fails(x).asnumpy()
    with pytest.raises(LibraryError, match=r"operator 'lib_throws'.*forward \(cpu\) failed: thrown from C\+\+"):
        mx.nd.lib_throws(x).asnumpy()
    assert mx.nd.my_gemm(mx.nd.array(A), mx.nd.array(B)).shape == (2, 1)  # still alive


def test_sparse_storage_type_is_refused(misc: library.Library) -> None:
    with pytest.raises(InferenceError, match=r"lib_sparse.*inferSType chose storage type 'row_sparse' for output 0"):
        mx.nd.lib_sparse(mx.nd.ones((2,)))


def test_device_without_forward(misc: library.Library) -> None:
    with pytest.raises(Exception, match=r"lib_gpu_only: no compute function for cpu \(registered for gpu\)"):
        mx.nd.lib_gpu_only(mx.nd.ones((2,))).asnumpy()


def test_mutate_inputs_and_attributes(misc: library.Library) -> None:
    x, state = mx.nd.array([1.0, 2.0]), mx.nd.zeros((2,))
    for _ in range(3):
        y = mx.nd.lib_accum(x, state)
    np.testing.assert_allclose(y.asnumpy(), [1.0, 2.0])
    np.testing.assert_allclose(state.asnumpy(), [3.0, 6.0])  # the engine saw the writes
    assert mx.nd.lib_scale(x, factor=2.5).asnumpy().tolist() == [2.5, 5.0]
    with pytest.raises(OperatorParamError, match="scale needs a 'factor' attribute"):
        mx.nd.lib_scale(x)


def test_load_errors(libs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(LibraryError, match="does not exist"):
        library.load(str(tmp_path / "nope.so"))
    text = tmp_path / "notes.so"
    text.write_text("not a library")
    with pytest.raises(LibraryError, match="is not a loadable shared library"):
        library.load(str(text))
    with pytest.raises(LibraryError, match="is not an MXLab operator library"):
        library.load(str(libs["plain"]))
    with pytest.raises(
        LibraryError, match=r"built against extension API version 99, but this MXLab speaks versions 1 .*and 2"
    ):
        library.load(str(libs["old_version"]))
    with pytest.raises(LibraryError, match=r"libbad_init\.so: initialize\(1\) failed: needs MXLab version 42, got 1"):
        library.load(str(libs["bad_init"]))
    with pytest.raises(
        LibraryError,
        match=r"operator 'lib_incomplete' is missing required function\(s\): inferType, inferShape, forward",
    ):
        library.load(str(libs["missing"]))
    assert not registry.exists("lib_incomplete")  # nothing registered from a rejected library


def test_second_library_with_same_operator_names_is_refused(gemm: library.Library, libs: dict[str, Path]) -> None:
    with pytest.raises(LibraryError, match=r"operator 'my_gemm' is already registered \(by library libgemm\.so\)"):
        library.load(str(libs["gemm_again"]), verbose=False)


def test_test_hook_symbols_are_reachable_with_ctypes(gemm: library.Library) -> None:
    assert isinstance(gemm.handle, ctypes.CDLL)
    assert gemm.handle.state_gemm_instances() >= 1


# ------------------------------------------------------------------ CUDA example
@pytest.fixture(scope="module")
def relu_lib(tmp_path_factory: pytest.TempPathFactory) -> library.Library:
    nvcc = needs_tool("nvcc", "relu_lib.cu is only compiled where CUDA is available", required_in_ci=False)
    out = tmp_path_factory.mktemp("relu_lib") / "librelu_lib.so"
    src = ROOT / "examples" / "custom_op" / "relu_lib.cu"
    cmd = [nvcc, "-shared", "-std=c++11", "-Xcompiler", "-fPIC", "-I", str(INCLUDE), "-o", str(out), str(src)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return library.load(str(out), verbose=False)


def test_relu_lib_compiles_with_nvcc_and_runs_on_cpu(relu_lib: library.Library) -> None:
    x = mx.nd.array([[-1.0, 2.0], [3.0, -4.0]])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.my_relu(x)
    y.backward(mx.nd.full((2, 2), 3.0))
    np.testing.assert_allclose(y.asnumpy(), [[0, 2], [3, 0]])
    np.testing.assert_allclose(x.grad.asnumpy(), [[0, 3], [3, 0]])


@pytest.mark.gpu
def test_relu_lib_on_gpu(relu_lib: library.Library) -> None:
    if mx.backend.num_gpus() == 0:
        pytest.skip("no GPU")
    data = np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32)
    x = mx.nd.array(data, ctx=mx.gpu(0))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.my_relu(x)
    y.backward()
    assert y.context == mx.gpu(0)
    np.testing.assert_allclose(y.asnumpy(), np.maximum(data, 0))
    np.testing.assert_allclose(x.grad.asnumpy(), (data > 0).astype(np.float32))

"""MXNet 1.9.1's public names as data (tests/data/mxnet_1_9_1/api/public_names.json) and the comparison tool.

The data is checked for shape here; the modules MXLab mirrors completely are checked name by
name and signature by signature against it (data-driven, so adding a name to MXNet's list
adds a check).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from api_coverage import (
    class_report,
    compare_arity,
    compare_signatures,
    load_operator_names,
    load_reference,
    module_report,
    resolve,
    signature_params,
)

import framework as mx

KINDS = {"module", "class", "function", "value"}
MEMBER_KINDS = {"method", "property", "staticmethod", "classmethod", "attribute"}
PARAM_KINDS = {"POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY", "VAR_KEYWORD"}


@pytest.fixture(scope="module")
def reference():
    return load_reference()


def _check_signature(signature, where):
    if signature is None:
        return
    assert isinstance(signature["text"], str) and signature["text"].startswith("("), where
    for param in signature["params"]:
        assert len(param) in (2, 3), where
        assert param[0].isidentifier(), where
        assert param[1] in PARAM_KINDS, where


def test_public_names_json_is_well_formed(reference):
    assert reference["mxnet_version"] == "1.9.1"
    assert "list_public_names.py" in reference["command"]
    modules = reference["modules"]
    for path in ("", "ndarray", "symbol", "metric", "util", "runtime", "libinfo", "gluon.nn"):
        assert path in modules, path
    for alias, target in reference["aliases"].items():
        assert target in modules and alias in modules[""]["names"], alias
    for path, module in modules.items():
        assert module["module"].startswith("mxnet"), path
        names = list(module["names"])
        assert names == sorted(names), f"{path} names are not sorted"
        for name, entry in module["names"].items():
            assert not name.startswith("_"), (path, name)
            assert entry["kind"] in KINDS, (path, name)
            _check_signature(entry.get("signature"), (path, name))
    for key, cls in reference["classes"].items():
        assert key == f"{cls['module']}.{cls['qualname']}"
        assert resolve_path_exists(reference, cls["path"]), key
        _check_signature(cls["signature"], key)
        for name, member in cls["members"].items():
            assert member["kind"] in MEMBER_KINDS, (key, name)
            _check_signature(member.get("signature"), (key, name))


def resolve_path_exists(reference, path):
    module, _, name = path.rpartition(".")
    return name in reference["modules"][module]["names"]


def test_the_recorded_classes_include_the_core_ones(reference):
    paths = {cls["path"] for cls in reference["classes"].values()}
    for path in ("ndarray.NDArray", "symbol.Symbol", "executor.Executor", "module.Module", "kvstore.KVStore"):
        assert path in paths
    ndarray = next(c for c in reference["classes"].values() if c["path"] == "ndarray.NDArray")
    astype = ndarray["members"]["astype"]["signature"]["params"]
    assert astype == [
        ["self", "POSITIONAL_OR_KEYWORD"],
        ["dtype", "POSITIONAL_OR_KEYWORD"],
        ["copy", "POSITIONAL_OR_KEYWORD", "True"],
    ]
    assert ndarray["members"]["shape"]["kind"] == "property"


def test_generated_operator_functions_name_their_operator(reference):
    operators = set(load_operator_names())
    assert {"Convolution", "_contrib_ROIAlign", "_linalg_gemm2", "FullyConnected"} <= operators
    nd = reference["modules"]["ndarray"]["names"]
    assert nd["Convolution"]["operator"] == "Convolution"
    assert "operator" not in nd["zeros"]  # a hand-written Python function
    assert reference["modules"]["ndarray.contrib"]["names"]["ROIAlign"]["operator"] == "_contrib_ROIAlign"
    assert reference["modules"]["symbol.linalg"]["names"]["gemm2"]["operator"] == "_linalg_gemm2"
    for path, module in reference["modules"].items():
        for name, entry in module["names"].items():
            if "operator" in entry:
                assert entry["operator"] in operators, (path, name)


def test_operator_names_json_is_sorted_and_unique():
    names = load_operator_names()
    assert names == sorted(set(names))
    assert len(names) > 1000


# ---------------------------------------------------------------------- the comparison itself
def test_compare_signatures_finds_each_kind_of_difference():
    theirs = [["self", "POSITIONAL_OR_KEYWORD"], ["a", "POSITIONAL_OR_KEYWORD"], ["b", "POSITIONAL_OR_KEYWORD", "1"]]
    assert compare_signatures(theirs, theirs) == []
    assert compare_signatures(theirs, theirs[:2]) == ["missing parameter b"]
    changed = [*theirs[:2], ["b", "POSITIONAL_OR_KEYWORD", "2"]]
    assert compare_signatures(theirs, changed) == ["default of b: 2 (MXNet: 1)"]
    swapped = [theirs[0], theirs[2], theirs[1]]
    assert any("positional order" in p for p in compare_signatures(theirs, swapped))
    extra = [*theirs, ["c", "KEYWORD_ONLY"]]
    assert compare_signatures(theirs, extra) == ["extra required parameter c"]
    optional_extra = [*theirs, ["c", "KEYWORD_ONLY", "None"]]
    assert compare_signatures(theirs, optional_extra) == []
    required = [*theirs[:2], ["b", "POSITIONAL_OR_KEYWORD"]]
    assert compare_signatures(theirs, required) == ["b has no default (MXNet: 1)"]
    # Defaults that are not literals (MXNet's _Null, objects) only need to exist.
    assert compare_signatures([["x", "KEYWORD_ONLY", "_Null"]], [["x", "KEYWORD_ONLY", "None"]]) == []


def test_module_report_names_what_is_missing(reference):
    fake = type(mx)("fake_mx")
    report = module_report(reference, fake, "metric")
    assert report.module_missing
    assert "Accuracy" in report.missing and "numeric_types" in report.missing_imported
    assert resolve(mx, "no.such.path") is None
    key = next(k for k, c in reference["classes"].items() if c["path"] == "metric.Accuracy")
    assert class_report(reference, fake, key).class_missing


# ---------------------------------------------------------------------- modules MXLab mirrors completely
# Module paths whose every name MXNet defines there must exist in MXLab with MXNet's
# signature, unless docs/differences.md lists it (with a reason) under "names MXLab does not have".
MIRRORED = (
    "util",
    "runtime",
    "libinfo",
    "metric",
    "profiler",
    "random",
    "context",
    "attribute",
    "name",
    "engine",
    "contrib",
    "contrib.autograd",
    "contrib.io",
    "monitor",
    "rnn",
    "module",
)
DIFFERENCES = Path(__file__).resolve().parents[1] / "docs" / "differences.md"


def documented_absences() -> set[str]:
    """The ``mx.…`` names in docs/differences.md's section on MXNet names MXLab does not have."""
    text = DIFFERENCES.read_text(encoding="utf-8")
    section = text.split("## MXNet 1.9.1 names MXLab does not have", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(mx\.[A-Za-z_][\w.]*)`", section))


def test_differences_page_lists_absent_names():
    absent = documented_absences()
    assert "mx.libinfo.find_conf_path" in absent
    for name in absent:
        assert resolve(mx, name[len("mx.") :]) is None, f"{name} is listed as absent but exists"


@pytest.mark.parametrize("path", MIRRORED)
def test_mirrored_module_has_mxnets_names_and_signatures(reference, path):
    absent = documented_absences()
    report = module_report(reference, mx, path)
    assert not report.module_missing
    undocumented = [name for name in report.missing if f"mx.{path}.{name}" not in absent]
    assert undocumented == [], f"mx.{path} lacks {undocumented}"
    assert report.signatures == {}
    for key, cls in reference["classes"].items():
        if cls["path"].rpartition(".")[0] != path:
            continue
        found = class_report(reference, mx, key)
        assert not found.class_missing, cls["path"]
        undocumented = [name for name in found.missing if f"mx.{cls['path']}.{name}" not in absent]
        assert undocumented == [], f"mx.{cls['path']} lacks {undocumented}"
        assert found.signatures == {}, cls["path"]


# The core classes: every public member of MXNet 1.9.1's class exists in MXLab with a compatible
# signature, unless docs/differences.md lists it as absent with a reason. Constructors are left
# out: MXNet's take a C handle, MXLab's the Python state (docs/differences.md says so); users
# never call them, they get these objects from mx.nd/mx.sym functions, bind and Module(...).
CORE_CLASSES = ("ndarray.NDArray", "symbol.Symbol", "executor.Executor", "module.Module")


@pytest.mark.parametrize("path", CORE_CLASSES)
def test_core_class_has_mxnets_members_and_signatures(reference, path):
    absent = documented_absences()
    key = next(k for k, c in reference["classes"].items() if c["path"] == path)
    members = reference["classes"][key]["members"]
    assert len(members) > 10  # the data really lists the class
    found = class_report(reference, mx, key)
    assert not found.class_missing, path
    undocumented = [name for name in found.missing if f"mx.{path}.{name}" not in absent]
    assert undocumented == [], f"mx.{path} lacks {undocumented}"
    differing = {name: problems for name, problems in found.signatures.items() if name != "__init__"}
    assert differing == {}, f"mx.{path} signs differently: {differing}"


def test_core_class_check_notices_a_missing_member(reference):
    key = next(k for k, c in reference["classes"].items() if c["path"] == "ndarray.NDArray")
    fake = type(mx)("fake_mx")
    fake.ndarray = type(mx)("fake_nd")
    fake.ndarray.NDArray = type("NDArray", (), {"asnumpy": lambda self: None})
    found = class_report(reference, fake, key)
    assert "tostype" in found.missing and "asnumpy" not in found.missing


@pytest.mark.parametrize(
    "name", ["py_str", "string_types", "numeric_types", "integer_types", "data_dir", "data_dir_default"]
)
def test_base_helpers_exist_with_mxnets_signatures(reference, name):
    entry = reference["modules"]["base"]["names"][name]
    assert hasattr(mx.base, name)
    if entry["kind"] == "function":
        assert compare_signatures(entry["signature"]["params"], signature_params(getattr(mx.base, name))) == []


def test_top_level_np_shape_names_and_modules_exist(reference):
    top = reference["modules"][""]["names"]
    for name in (
        "util",
        "runtime",
        "libinfo",
        "is_np_shape",
        "set_np_shape",
        "np_shape",
        "use_np_shape",
        "is_np_array",
    ):
        assert name in top and hasattr(mx, name), name
        if top[name]["kind"] == "function":
            assert compare_signatures(top[name]["signature"]["params"], signature_params(getattr(mx, name))) == []


def test_special_methods_compare_by_arity_only():
    theirs = [["self", "POSITIONAL_OR_KEYWORD"], ["ptype", "POSITIONAL_OR_KEYWORD"], ["value", "POSITIONAL_OR_KEYWORD"]]
    renamed = [["self", "POSITIONAL_OR_KEYWORD"], ["a", "POSITIONAL_OR_KEYWORD"], ["b", "POSITIONAL_OR_KEYWORD"]]
    assert compare_arity(theirs, renamed) == []
    assert compare_arity(theirs, [["self", "POSITIONAL_OR_KEYWORD"], ["args", "VAR_POSITIONAL"]]) == []
    assert compare_arity(theirs, renamed[:2]) == ["takes 2 positional parameters (MXNet: 3)"]


# The hand-written mx.nd / mx.sym functions of MXNet 1.9.1 that MXLab has: MXNet's signatures.
ND_FUNCTIONS = (
    "array empty zeros ones full arange linspace eye histogram moveaxis concatenate split_v2 onehot_encode "
    "from_numpy from_dlpack to_dlpack_for_read to_dlpack_for_write power logical_and logical_or logical_xor"
).split()
SYM_FUNCTIONS = "zeros ones full arange linspace eye histogram split_v2 pow power Group".split()


@pytest.mark.parametrize(
    ("path", "name"), [("ndarray", n) for n in ND_FUNCTIONS] + [("symbol", n) for n in SYM_FUNCTIONS]
)
def test_hand_written_functions_have_mxnets_signatures(reference, path, name):
    entry = reference["modules"][path]["names"][name]
    ours = getattr(resolve(mx, path), name)
    assert compare_signatures(entry["signature"]["params"], signature_params(ours)) == []


# Modules whose every MXNet 1.9.1 name must exist in MXLab (or be listed as absent), though some
# signatures differ on purpose (explicit keywords where MXNet's generated functions take *args).
NAMES_ONLY = ("image", "io")


@pytest.mark.parametrize("path", NAMES_ONLY)
def test_module_has_every_mxnet_name_or_lists_it(reference, path):
    absent = documented_absences()
    report = module_report(reference, mx, path)
    assert not report.module_missing
    undocumented = [name for name in report.missing if f"mx.{path}.{name}" not in absent]
    assert undocumented == [], f"mx.{path} lacks {undocumented}"
    for key, cls in reference["classes"].items():
        if cls["path"].rpartition(".")[0] == path:
            found = class_report(reference, mx, key)
            assert not found.class_missing, cls["path"]
            undocumented = [name for name in found.missing if f"mx.{cls['path']}.{name}" not in absent]
            assert undocumented == [], f"mx.{cls['path']} lacks {undocumented}"

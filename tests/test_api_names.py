"""MXNet 1.9.1's public names as data (tests/data/mxnet_1_9_1/api/public_names.json) and the comparison tool.

The data is checked for shape here; then every module and class in it is checked name by name
and signature by signature against MXLab (data-driven, so adding a name to MXNet's list adds a
check), with docs/differences.md's list of absent names as the only exemptions (rules below).
"""

from __future__ import annotations

import fnmatch

import pytest
from api_coverage import (
    SECTION,
    absence_entries,
    class_report,
    collect_gaps,
    compare_arity,
    compare_signatures,
    documented_absences,
    is_documented,
    load_operator_names,
    load_reference,
    module_report,
    resolve,
    signature_params,
)

import framework as mx
from framework.absent import ABSENT

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


# ---------------------------------------------------------------------- every module and class
# Every public name of every MXNet 1.9.1 module and class in the data must exist in MXLab with
# MXNet's signature, unless docs/differences.md lists it, with a reason, in its section "MXNet
# 1.9.1 names MXLab does not have". That section is the one source of truth: api_coverage.absence_entries
# parses it.
#
# Rules:
# - A listed name (``mx.a.b``) or pattern (``mx.*.__del__``: fnmatch's ``*``) excuses the name's
#   absence and a differing signature alike; the name is written at its canonical path
#   (``mx.ndarray``, not ``mx.nd``).
# - A listed exact name that MXLab now has with MXNet's signature fails as stale, and so does a
#   pattern that matches no gap: the page must not claim an absence that is not there.
# - Names MXNet's module merely imported from outside its own package tree (``mx.metric.numeric_types``
#   comes from ``mxnet.base``; :func:`api_coverage.is_incidental`) are not required: they are an
#   accident of MXNet's imports, not API it documents, and MXLab keeps each name in its own home.
# - A missing module or class is one gap (its members are not listed again). Generated operator
#   functions are compared by operator name (operator_names.json), not here.
@pytest.fixture(scope="module")
def gaps(reference):
    return collect_gaps(reference, mx)


def test_every_absence_has_a_reason():
    entries = documented_absences()
    assert "mx.base.c_str" in entries and "mx.np" in entries
    for name, reason in entries.items():
        assert len(reason.split()) >= 4, f"{name}: reason too short: {reason!r}"


def test_absence_entries_parse_lists_patterns_and_refuse_a_missing_reason():
    text = (
        f"x\n{SECTION}\n\nIntro.\n\n- `mx.a.b`, `mx.*.__del__`: no C handle\n  to free.\n- `mx.c`: gone.\n"
        "\n## Next\n- `mx.d`: no\n"
    )
    assert absence_entries(text) == {
        "mx.a.b": "no C handle to free.",
        "mx.*.__del__": "no C handle to free.",
        "mx.c": "gone.",
    }
    assert is_documented("mx.profiler.Task.__del__", absence_entries(text))
    with pytest.raises(AssertionError, match="without a reason"):
        absence_entries(f"{SECTION}\n- `mx.a.b` has no reason\n")
    with pytest.raises(AssertionError, match="no section"):
        absence_entries("# nothing here\n")


def test_no_listed_absence_is_stale(gaps):
    """A name the page lists must really be missing or sign differently; a pattern must match a gap."""
    stale = [name for name in documented_absences() if not any(fnmatch.fnmatchcase(gap, name) for gap in gaps)]
    assert stale == [], f"docs/differences.md lists names MXLab has with MXNet's signature: {stale}"


def test_gap_collection_notices_missing_names_members_and_signatures(reference):
    fake = type(mx)("fake_mx")
    fake.autograd = type(mx)("fake_autograd")
    fake.autograd.set_recording = lambda flag: flag
    found = collect_gaps(reference, fake, ["autograd", "metric"])
    assert found["mx.autograd.Function"] == "missing"
    assert found["mx.autograd.set_recording"].startswith("signature: missing parameter is_recording")
    assert found["mx.metric"] == "module missing"
    assert not any(name.startswith("mx.metric.") for name in found)  # one gap for the whole module
    assert "mx.autograd.string_types" not in found  # imported from mxnet.base: not required


def module_of_gap(reference, name: str) -> str:
    """The MXNet module path a gap belongs to: its parent module, or the module of its parent class."""
    parent = name.rpartition(".")[0].removeprefix("mx").removeprefix(".")
    if parent in reference["modules"]:
        return parent
    classes = {cls["path"] for cls in reference["classes"].values()}
    if parent in classes:
        return parent.rpartition(".")[0]
    raise AssertionError(f"{name}: no module or class of MXNet's list owns it")


@pytest.fixture(scope="module")
def gaps_by_module(reference, gaps):
    grouped: dict[str, dict[str, str]] = {}
    for name, problem in gaps.items():
        grouped.setdefault(module_of_gap(reference, name), {})[name] = problem
    return grouped


@pytest.mark.parametrize("path", sorted(load_reference()["modules"]))
def test_module_has_mxnets_names_and_signatures(gaps_by_module, path):
    """Every name of MXNet's ``mx.<path>`` and of its classes, unless docs/differences.md lists it."""
    entries = documented_absences()
    own = gaps_by_module.get(path, {})
    undocumented = {name: problem for name, problem in own.items() if not is_documented(name, entries)}
    assert undocumented == {}, f"mx.{path}: MXNet 1.9.1 names missing or signed differently: {undocumented}"


def test_a_gap_is_filed_under_its_module(reference):
    assert module_of_gap(reference, "mx.np") == ""
    assert module_of_gap(reference, "mx.ndarray.NDArray.__del__") == "ndarray"
    assert module_of_gap(reference, "mx.AttrScope.current") == ""
    assert module_of_gap(reference, "mx.gluon.contrib.rnn") == "gluon.contrib"
    with pytest.raises(AssertionError, match="no module or class"):
        module_of_gap(reference, "mx.nowhere.thing")


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


def test_absent_modules_say_why_when_reached_as_attributes():
    """framework/absent.py gives the reason at run time; the page must list each of its names."""
    entries = documented_absences()
    assert [name for name in ABSENT if not is_documented(name, entries)] == []
    with pytest.raises(AttributeError, match=r"mx\.nd\.sparse is not available in MXLab: sparse storage"):
        mx.nd.sparse  # noqa: B018
    with pytest.raises(AttributeError, match=r"mx\.sym\.np is not available in MXLab: MXNet's NumPy"):
        mx.sym.np  # noqa: B018
    with pytest.raises(AttributeError, match="module 'mx.nd' has no attribute 'no_such_name'"):
        mx.nd.no_such_name  # noqa: B018

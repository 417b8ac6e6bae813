"""Compare MXLab's public API with MXNet 1.9.1's, as recorded in tests/data/mxnet_1_9_1/api/public_names.json.

Run from the repository root::

    PYTHONPATH=$PWD python tests/api_coverage.py            # every module and class
    PYTHONPATH=$PWD python tests/api_coverage.py metric util  # only these module paths

For every module MXNet 1.9.1 has (by attribute path from ``mx``: ``ndarray.contrib`` is
``mx.nd.contrib``) it lists the public names MXLab (``import framework as mx``) lacks, and
for names both have, the signatures that differ in parameter names, order or defaults.
Generated operator functions (``mx.nd.Convolution``...) are left out: the operator library
is compared by operator name (operator_names.json). Names a module merely imported from
elsewhere in MXNet (``mx.metric.numeric_types`` comes from ``mxnet.base``) are listed apart.
Then the same per class: constructor, methods and properties.

tests/test_api_names.py uses :func:`collect_gaps` (every missing name and differing signature,
by ``mx.`` path) and fails on each one docs/differences.md does not list with a reason
(:func:`absence_entries` reads that list; other tests use it too).
"""

from __future__ import annotations

import ast
import fnmatch
import inspect
import json
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import framework as mx

DATA = Path(__file__).resolve().parent / "data" / "mxnet_1_9_1" / "api"
PUBLIC_NAMES = DATA / "public_names.json"
OPERATOR_NAMES = DATA / "operator_names.json"
DIFFERENCES = Path(__file__).resolve().parents[1] / "docs" / "differences.md"

# How a parameter list is written in the JSON: [name, kind] or [name, kind, repr(default)].
Param = list[str]


def load_reference() -> dict[str, Any]:
    """MXNet 1.9.1's public names, classes and signatures."""
    with open(PUBLIC_NAMES, encoding="utf-8") as handle:
        return json.load(handle)


def load_operator_names() -> list[str]:
    """Every operator name MXNet 1.9.1 registers (aliases included)."""
    with open(OPERATOR_NAMES, encoding="utf-8") as handle:
        return json.load(handle)["operators"]


def resolve(root: Any, path: str) -> Any:
    """``root.a.b`` for path ``"a.b"`` (``""`` is ``root``), or None where an attribute is missing."""
    obj = root
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def is_incidental(module_name: str, entry: dict[str, Any]) -> bool:
    """True when MXNet's module only imported the name from outside its own package tree.

    A star import re-exports what its source module defines (``mx.random`` re-exports
    ``mx.nd.random``'s samplers: API), but also whatever that module imported in passing
    (``mx.rnn`` gets ``DataBatch`` through ``rnn_cell``: incidental).
    """
    defined_in = entry.get("defined_in", "")
    homes = [module_name, entry.get("star_import", module_name)]
    return not any(defined_in == home or defined_in.startswith(home + ".") for home in homes)


# ---------------------------------------------------------------------- signatures
def signature_params(obj: Any) -> list[Param] | None:
    """MXLab's signature in the JSON's form, or None when Python cannot tell it."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = []
    for param in sig.parameters.values():
        entry = [param.name, param.kind.name]
        if param.default is not inspect.Parameter.empty:
            entry.append(re.sub(r" at 0x[0-9a-fA-F]+", "", repr(param.default)))  # as the JSON writes them
        params.append(entry)
    return params


#: The home directory of the machine that recorded MXNet's signatures: MXNet expands ``~`` in
#: default paths (``root='~/.mxnet/models'``) when it is imported, so the data holds it expanded.
RECORDING_HOME = "/root/"


def _same_default(mxnet_repr: str, mxlab_repr: str) -> bool:
    """Equal defaults; reprs that are not literals (objects, MXNet's ``_Null``) only need to exist.

    A path MXNet recorded under the recording machine's home equals MXLab's ``~/`` spelling of it.
    """
    try:
        theirs, ours = ast.literal_eval(mxnet_repr), ast.literal_eval(mxlab_repr)
    except (ValueError, SyntaxError):
        return True
    if isinstance(theirs, str) and isinstance(ours, str) and theirs.startswith(RECORDING_HOME):
        theirs = "~/" + theirs[len(RECORDING_HOME) :]
    return theirs == ours


def compare_signatures(mxnet: list[Param], mxlab: list[Param]) -> list[str]:
    """What differs between two parameter lists: names, positional order, defaults, extra required ones."""
    problems = []
    theirs = {p[0]: p for p in mxnet}
    ours = {p[0]: p for p in mxlab}
    var_keyword = any(p[1] == "VAR_KEYWORD" for p in mxlab)
    positional = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
    their_positional = [p[0] for p in mxnet if p[1] in positional]
    our_positional = [p[0] for p in mxlab if p[1] in positional]
    for name, param in theirs.items():
        if param[1] in ("VAR_POSITIONAL", "VAR_KEYWORD"):
            if not any(p[1] == param[1] for p in mxlab):
                problems.append(f"missing {'*' if param[1] == 'VAR_POSITIONAL' else '**'}{name}")
            continue
        mine = ours.get(name)
        if mine is None:
            if not (var_keyword and param[1] == "KEYWORD_ONLY"):
                problems.append(f"missing parameter {name}")
            continue
        if len(param) == 3 and len(mine) == 2:
            problems.append(f"{name} has no default (MXNet: {param[2]})")
        elif len(param) == 2 and len(mine) == 3:
            problems.append(f"{name} has a default {mine[2]} (MXNet: required)")
        elif len(param) == 3 and not _same_default(param[2], mine[2]):
            problems.append(f"default of {name}: {mine[2]} (MXNet: {param[2]})")
    shared = [n for n in their_positional if n in our_positional]
    if [n for n in our_positional if n in shared] != shared:
        problems.append(f"positional order ({', '.join(our_positional)}) (MXNet: {', '.join(their_positional)})")
    for name, param in ours.items():
        if name not in theirs and len(param) == 2 and param[1] in (*positional, "KEYWORD_ONLY"):
            problems.append(f"extra required parameter {name}")
    return problems


def compare_arity(mxnet: list[Param], mxlab: list[Param]) -> list[str]:
    """For special methods, which Python calls positionally: only the number of parameters matters."""

    def arity(params: list[Param]) -> tuple[int, bool]:
        positional = [p for p in params if p[1] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
        return len(positional), any(p[1] == "VAR_POSITIONAL" for p in params)

    (theirs, their_star), (ours, our_star) = arity(mxnet), arity(mxlab)
    if theirs == ours or our_star or (their_star and ours >= theirs):
        return []
    return [f"takes {ours} positional parameters (MXNet: {theirs})"]


# ---------------------------------------------------------------------- reports
@dataclass
class ModuleReport:
    path: str
    module_missing: bool = False
    missing: list[str] = field(default_factory=list)
    missing_imported: list[str] = field(default_factory=list)
    signatures: dict[str, list[str]] = field(default_factory=dict)
    operators_skipped: int = 0


@dataclass
class ClassReport:
    key: str
    path: str
    class_missing: bool = False
    missing: list[str] = field(default_factory=list)
    signatures: dict[str, list[str]] = field(default_factory=dict)


def module_report(reference: dict[str, Any], package: types.ModuleType, path: str) -> ModuleReport:
    """Names of MXNet's module ``mx.<path>`` that ``package`` (MXLab or a stand-in) lacks; differing signatures."""
    module = reference["modules"][path]
    report = ModuleReport(path)
    ours = resolve(package, path)
    if not isinstance(ours, types.ModuleType):
        report.module_missing = True
    for name, entry in module["names"].items():
        if "operator" in entry:
            report.operators_skipped += 1
            continue
        obj = getattr(ours, name, None) if ours is not None else None
        if obj is None and (ours is None or not hasattr(ours, name)):
            bucket = report.missing_imported if is_incidental(module["module"], entry) else report.missing
            bucket.append(name)
            continue
        signature = entry.get("signature")
        if signature and entry["kind"] == "function":
            mine = signature_params(obj)
            if mine is not None:
                problems = compare_signatures(signature["params"], mine)
                if problems:
                    report.signatures[name] = problems
    return report


def _member_params(cls: type, name: str, kind: str) -> list[Param] | None:
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, staticmethod | classmethod):
        return signature_params(getattr(cls, name))
    return signature_params(raw) if callable(raw) else None


def class_report(reference: dict[str, Any], package: types.ModuleType, key: str) -> ClassReport:
    """Members of MXNet's class ``key`` that MXLab's class at the same path lacks or signs differently."""
    cls = reference["classes"][key]
    report = ClassReport(key, cls["path"])
    ours = resolve(package, cls["path"])
    if not isinstance(ours, type):
        report.class_missing = True
        return report
    if cls.get("signature"):
        mine = signature_params(ours)
        if mine is not None:
            problems = compare_signatures(cls["signature"]["params"], mine)
            if problems:
                report.signatures["__init__"] = problems
    for name, entry in cls["members"].items():
        if not hasattr(ours, name):
            report.missing.append(name)
            continue
        if entry.get("signature") and entry["kind"] in ("method", "staticmethod", "classmethod"):
            mine = _member_params(ours, name, entry["kind"])
            if mine is not None:
                special = name.startswith("__") and name.endswith("__")
                problems = (compare_arity if special else compare_signatures)(entry["signature"]["params"], mine)
                if problems:
                    report.signatures[name] = problems
    return report


# ---------------------------------------------------------------------- every gap, by qualified name
def qualified(path: str, name: str) -> str:
    """``mx.<path>.<name>`` as docs/differences.md writes it (``mx.<name>`` for the top level)."""
    return ".".join(filter(None, ("mx", path, name)))


def collect_gaps(
    reference: dict[str, Any], package: types.ModuleType, paths: list[str] | None = None
) -> dict[str, str]:
    """Every MXNet name ``package`` lacks or signs differently, as ``{"mx.a.b": "what differs"}``.

    Walks each module path (all when ``paths`` is None) and each class recorded under it. A
    missing module or class is one gap (its members are not listed again); names MXNet only
    imported from elsewhere are not gaps (:func:`is_incidental`); generated operator functions
    are compared by operator name instead.
    """
    gaps: dict[str, str] = {}
    wanted = list(reference["modules"]) if paths is None else paths
    missing_modules = set()
    for path in wanted:
        report = module_report(reference, package, path)
        if report.module_missing:
            missing_modules.add(path)
            parent, _, leaf = path.rpartition(".")
            gaps.setdefault(qualified(parent, leaf), "module missing")
            continue
        for name in report.missing:
            gaps[qualified(path, name)] = "missing"
        for name, problems in report.signatures.items():
            gaps[qualified(path, name)] = "signature: " + "; ".join(problems)
    for key, cls in reference["classes"].items():
        module_path = cls["path"].rpartition(".")[0]
        if module_path not in wanted or module_path in missing_modules:
            continue
        found = class_report(reference, package, key)
        if found.class_missing:
            continue  # the module report names the class itself
        for name in found.missing:
            gaps[qualified(cls["path"], name)] = "missing"
        for name, problems in found.signatures.items():
            gaps[qualified(cls["path"], name)] = "signature: " + "; ".join(problems)
    return gaps


# ---------------------------------------------------------------------- the documented absences
# docs/differences.md lists, in one section, the MXNet names MXLab does not have, each with its reason;
# tests/test_api_names.py exempts exactly those gaps, and other tests read the same list.
SECTION = "## MXNet 1.9.1 names MXLab does not have"
# A bullet: backticked names separated by commas, then a colon and the reason.
ENTRY = re.compile(r"^- (?P<names>`mx\.[^`]+`(?:,\s+`mx\.[^`]+`)*):\s+(?P<reason>\S.*)", re.S)


def absence_entries(text: str | None = None) -> dict[str, str]:
    """The section's entries as ``{name or pattern: reason}``; each bullet is ``- `mx.a`, `mx.b`: reason``."""
    text = DIFFERENCES.read_text(encoding="utf-8") if text is None else text
    if SECTION not in text:
        raise AssertionError(f"docs/differences.md has no section {SECTION!r}")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    entries: dict[str, str] = {}
    for bullet in re.split(r"\n(?=- )", section):
        if not bullet.startswith("- `mx."):
            continue
        match = ENTRY.match(bullet)
        if match is None:
            raise AssertionError(f"docs/differences.md: an absence without a reason: {bullet[:80]!r}")
        reason = " ".join(match["reason"].split())
        for name in re.findall(r"`(mx\.[^`]+)`", match["names"]):
            entries[name] = reason
    return entries


def documented_absences() -> dict[str, str]:
    """docs/differences.md's absent MXNet names (and patterns) with their reasons."""
    return absence_entries()


def is_documented(name: str, entries: dict[str, str]) -> bool:
    """Whether ``name`` is one of ``entries`` or matches one of its patterns (fnmatch's ``*``)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in entries)


# ---------------------------------------------------------------------- text output
def format_module(report: ModuleReport) -> list[str]:
    head = f"mx.{report.path}" if report.path else "mx"
    if report.module_missing:
        head += " (module missing in MXLab)"
    counts = f"{len(report.missing)} missing, {len(report.missing_imported)} imported-from-elsewhere missing, "
    counts += f"{len(report.signatures)} signatures differ"
    lines = [f"{head}: {counts}"]
    if report.missing:
        lines.append("  missing: " + ", ".join(report.missing))
    if report.missing_imported:
        lines.append("  missing (MXNet imported them from another module): " + ", ".join(report.missing_imported))
    for name, problems in report.signatures.items():
        lines.append(f"  {name}: " + "; ".join(problems))
    return lines


def format_class(report: ClassReport) -> list[str]:
    """A present class's missing members and differing signatures (a missing class is a missing name)."""
    name = report.path.rpartition(".")[2]
    lines = [f"  class {name}: {len(report.missing)} members missing, {len(report.signatures)} signatures differ"]
    if report.missing:
        lines.append("    missing: " + ", ".join(report.missing))
    for member, problems in report.signatures.items():
        lines.append(f"    {member}: " + "; ".join(problems))
    return lines


def main(argv: list[str]) -> int:
    """Print the comparison for the module paths in ``argv`` (all when empty); 2 for an unknown path."""
    reference = load_reference()
    wanted = argv or list(reference["modules"])
    unknown = [p for p in wanted if p not in reference["modules"]]
    if unknown:
        print(f"unknown module paths: {', '.join(unknown)}; known: {', '.join(reference['modules'])}")
        return 2
    modules = [module_report(reference, mx, path) for path in wanted]
    classes = [
        class_report(reference, mx, key)
        for key, cls in reference["classes"].items()
        if cls["path"].rpartition(".")[0] in wanted
    ]
    missing = sum(len(r.missing) for r in modules)
    imported = sum(len(r.missing_imported) for r in modules)
    signatures = sum(len(r.signatures) for r in modules)
    absent_modules = [r.path for r in modules if r.module_missing]
    absent_classes = sum(r.class_missing for r in classes)
    members = sum(len(r.missing) for r in classes)
    member_signatures = sum(len(r.signatures) for r in classes)
    print(f"MXNet {reference['mxnet_version']} vs MXLab: {len(modules)} modules, {len(classes)} classes")
    print(
        f"modules missing: {len(absent_modules)}; names missing: {missing} "
        f"(+{imported} MXNet imported from elsewhere); function signatures differing: {signatures}"
    )
    print(
        f"classes missing: {absent_classes}; members missing in present classes: {members}; "
        f"member signatures differing: {member_signatures}"
    )
    print(
        f"(generated operator functions left to the operator comparison: {sum(r.operators_skipped for r in modules)})"
    )
    for report in modules:
        differing = [
            c
            for c in classes
            if c.path.rpartition(".")[0] == report.path and not c.class_missing and (c.missing or c.signatures)
        ]
        if report.module_missing or report.missing or report.missing_imported or report.signatures or differing:
            print()
            print("\n".join(format_module(report)))
            for class_report_ in differing:
                print("\n".join(format_class(class_report_)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

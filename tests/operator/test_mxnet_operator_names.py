"""MXNet 1.9.1's operator names against MXLab's registry (issue 17's coverage test).

tests/data/mxnet_1_9_1/api/operator_names.json holds every name MXNet 1.9.1 registers
(``MXListAllOpNames``, written by the ``list_public_names.py`` next to it). Each name must be
registered in MXLab or left out on purpose in the tables of docs/differences.md ("MXNet 1.9.1
operators MXLab does not register"), which this test parses: those tables are the one list of
what is out of scope and why. The test also fails when the tables have gone stale: a listed name
that is registered after all, or an entry that no longer matches anything.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import framework  # noqa: F401 - registers the built-in operators
from framework.operator import registry

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_NAMES = ROOT / "tests" / "data" / "mxnet_1_9_1" / "api" / "operator_names.json"
DIFFERENCES = ROOT / "docs" / "differences.md"
SECTION = "## MXNet 1.9.1 operators MXLab does not register"
PLACEHOLDER = "<op>"


@dataclass
class OutOfScope:
    """One row of the first table: patterns, the registered names they spare (``!name``), why."""

    patterns: list[str]
    registered: list[str]
    reason: str

    def covers(self, name: str) -> bool:
        return name not in self.registered and any(fnmatch.fnmatchcase(name, p) for p in self.patterns)


@dataclass
class BackwardRow:
    """One row of the second table: a backward name (or ``_backward_<op>``) and its forward operator(s)."""

    backward: str
    forwards: list[str]

    def forward_candidates(self, name: str) -> list[str] | None:
        """The forward names ``name`` may belong to, or None when the row does not describe it."""
        if PLACEHOLDER not in self.backward:
            return list(self.forwards) if name == self.backward else None
        prefix = self.backward.split(PLACEHOLDER)[0]
        if not name.startswith(prefix) or len(name) == len(prefix):
            return None
        rest = name[len(prefix) :]
        return [forward.replace(PLACEHOLDER, rest) for forward in self.forwards]


@dataclass
class Tables:
    out_of_scope: list[OutOfScope] = field(default_factory=list)
    backward: list[BackwardRow] = field(default_factory=list)


def _code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def parse_tables(markdown: str) -> Tables:
    """The two tables under SECTION: rows of ``| entries | text |``, the header and rule skipped."""
    start = markdown.index(SECTION)
    end = markdown.find("\n## ", start + len(SECTION))
    body = markdown[start : end if end >= 0 else len(markdown)]
    tables: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    for line in body.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if current is None:
            current = []
            tables.append(current)
            continue  # the header row
        if set(cells[0]) <= set("-: "):
            continue  # the rule under the header
        current.append(cells)
    if len(tables) != 2:
        raise ValueError(f"expected two tables under {SECTION!r}, found {len(tables)}")
    result = Tables()
    for cells in tables[0]:
        entries = _code_spans(cells[0])
        result.out_of_scope.append(
            OutOfScope(
                patterns=[e for e in entries if not e.startswith("!")],
                registered=[e[1:] for e in entries if e.startswith("!")],
                reason=cells[1],
            )
        )
    for cells in tables[1]:
        (backward,) = _code_spans(cells[0])
        result.backward.append(BackwardRow(backward, _code_spans(cells[1])))
    return result


@dataclass
class Report:
    """What the comparison found; empty lists mean the registry and the tables agree with MXNet."""

    missing: list[str] = field(default_factory=list)  # neither registered nor listed
    orphan_backward: list[str] = field(default_factory=list)  # "_backward_X (forward X is neither)"
    stale: list[str] = field(default_factory=list)  # listed, yet registered
    unused: list[str] = field(default_factory=list)  # entries that match no MXNet name left out


def compare(mxnet_names: list[str], registered: set[str], tables: Tables) -> Report:
    """Classify every MXNet name: registered, out of scope, a backward of something covered, or missing."""
    report = Report()
    known = set(mxnet_names)

    def out_of_scope(name: str) -> OutOfScope | None:
        return next((row for row in tables.out_of_scope if row.covers(name)), None)

    def forward_of(name: str) -> list[str] | None:
        # a row naming the backward exactly wins over the ``_backward_<op>`` rule
        for row in sorted(tables.backward, key=lambda r: PLACEHOLDER in r.backward):
            candidates = row.forward_candidates(name)
            if candidates is not None:
                return candidates
        return None

    used: set[str] = set()
    for name in mxnet_names:
        if name in registered:
            continue
        row = out_of_scope(name)
        if row is not None:
            used.update(p for p in row.patterns if fnmatch.fnmatchcase(name, p))
            continue
        forwards = forward_of(name)
        if forwards is None:
            report.missing.append(name)
            continue
        present = [f for f in forwards if f in known]
        if not any(f in registered or out_of_scope(f) is not None for f in present):
            report.orphan_backward.append(
                f"{name} (its forward {' / '.join(forwards)} is neither registered nor out of scope)"
            )
    for row in tables.out_of_scope:
        for pattern in row.patterns:
            hits = sorted(n for n in known if fnmatch.fnmatchcase(n, pattern) and n in registered)
            hits = [n for n in hits if n not in row.registered]
            if hits:
                report.stale.append(f"{pattern}: {', '.join(hits)} registered")
            if pattern not in used:
                report.unused.append(pattern)
        for name in row.registered:
            if name not in registered:
                report.stale.append(f"!{name}: listed as registered, but it is not")
    for row in tables.backward:
        if PLACEHOLDER in row.backward:
            continue
        if row.backward in registered:
            report.stale.append(f"{row.backward}: registered")
        if row.backward not in known:
            report.unused.append(row.backward)
        report.unused.extend(f"{row.backward} -> {f}" for f in row.forwards if f not in known)
    return report


def _mxnet_names() -> list[str]:
    with open(OPERATOR_NAMES, encoding="utf-8") as handle:
        return json.load(handle)["operators"]


@pytest.fixture(scope="module")
def tables() -> Tables:
    return parse_tables(DIFFERENCES.read_text(encoding="utf-8"))


def test_the_name_list_says_how_it_was_made():
    with open(OPERATOR_NAMES, encoding="utf-8") as handle:
        data = json.load(handle)
    assert data["mxnet_version"] == "1.9.1"
    assert data["source"] == "MXListAllOpNames"
    script = data["command"].split()[1]
    assert (ROOT / script).is_file(), data["command"]
    assert "operator_names.json" in (ROOT / script).read_text(encoding="utf-8")


def test_every_mxnet_operator_is_registered_or_out_of_scope(tables):
    report = compare(_mxnet_names(), set(registry.list_operators()), tables)
    assert not report.missing, f"MXNet 1.9.1 operators neither registered nor out of scope: {report.missing}"
    assert not report.orphan_backward, f"backward operators of operators MXLab lacks: {report.orphan_backward}"


def test_the_out_of_scope_tables_are_not_stale(tables):
    report = compare(_mxnet_names(), set(registry.list_operators()), tables)
    assert not report.stale, f"out-of-scope entries that are registered: {report.stale}"
    assert not report.unused, f"out-of-scope entries that match no unregistered MXNet operator: {report.unused}"


def test_every_out_of_scope_row_gives_a_reason(tables):
    assert tables.out_of_scope and tables.backward
    for row in tables.out_of_scope:
        assert row.patterns, row
        assert len(row.reason) > 20, row


# ------------------------------------------------------------------ the comparison on made-up data
SAMPLE = f"""
{SECTION}

| Operators | Why |
| --- | --- |
| `_np_*`, `!_np_cumsum` | numpy front end |
| `_Native` | legacy |

| Backward operators | Forward operator |
| --- | --- |
| `_backward_<op>` | `<op>`, `_contrib_<op>` |
| `_backward_lin` | `LinearRegressionOutput` |

## Next section

| `not` | `parsed` |
"""


def test_parse_reads_both_tables_and_stops_at_the_next_section():
    parsed = parse_tables(SAMPLE)
    assert [row.patterns for row in parsed.out_of_scope] == [["_np_*"], ["_Native"]]
    assert parsed.out_of_scope[0].registered == ["_np_cumsum"]
    assert parsed.out_of_scope[0].reason == "numpy front end"
    assert parsed.backward[0].forward_candidates("_backward_sum") == ["sum", "_contrib_sum"]
    assert parsed.backward[1].forward_candidates("_backward_lin") == ["LinearRegressionOutput"]
    assert parsed.backward[1].forward_candidates("_backward_other") is None


def test_compare_agrees_when_everything_is_accounted_for():
    names = ["sum", "_backward_sum", "_np_add", "_np_cumsum", "_Native", "_backward_lin", "LinearRegressionOutput"]
    report = compare(names, {"sum", "_np_cumsum", "LinearRegressionOutput"}, parse_tables(SAMPLE))
    assert report == Report()


def test_compare_names_a_missing_operator_and_an_orphan_backward():
    names = ["sum", "Foo", "_backward_Foo", "_np_add", "_np_cumsum", "_Native", "_backward_lin"]
    names.append("LinearRegressionOutput")
    report = compare(names, {"sum", "_np_cumsum", "LinearRegressionOutput"}, parse_tables(SAMPLE))
    assert report.missing == ["Foo"]
    assert len(report.orphan_backward) == 1 and report.orphan_backward[0].startswith("_backward_Foo")


def test_compare_names_stale_entries():
    names = ["_np_add", "_np_cumsum", "_Native", "_backward_lin", "LinearRegressionOutput"]
    # _Native and _np_add registered: their rows are stale; _np_cumsum said registered but is not
    report = compare(names, {"_Native", "_np_add", "LinearRegressionOutput"}, parse_tables(SAMPLE))
    assert "_Native: _Native registered" in report.stale
    assert "_np_*: _np_add registered" in report.stale
    assert any(s.startswith("!_np_cumsum") for s in report.stale)
    assert "_Native" in report.unused and "_np_*" in report.unused


def test_compare_flags_a_listed_backward_that_mxnet_does_not_have():
    names = ["_np_add", "_np_cumsum", "_Native", "LinearRegressionOutput"]
    report = compare(names, {"_np_cumsum", "LinearRegressionOutput"}, parse_tables(SAMPLE))
    assert report.unused == ["_backward_lin"]

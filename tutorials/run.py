"""Run a tutorial's Python blocks in order and check their printed output.

Usage (from the repository root)::

    python tutorials/run.py tutorials/02-dependency-engine.md          # run and check
    python tutorials/run.py --show tutorials/02-dependency-engine.md   # also print every block's output

A tutorial is a Markdown file (jupytext's "md" format). Every ```python block is a cell;
the cells run top to bottom in one namespace, in this fresh interpreter, exactly as a
notebook kernel would run them. ```bash and ```text blocks never run.

**Expected output.** A ```text block directly preceded by the line ``<!-- expected-output -->``
is what the Python block before it must print. Matching is tolerant where printed values
legitimately vary:

* a line holding only ``...`` matches any number of lines (zero included);
* ``...`` inside a line matches any text on that line;
* runs of spaces compare equal to a single space; leading/trailing blank lines are ignored;
* numbers are compared as numbers, to a relative tolerance of 1e-4 (absolute 1e-8):
  ``6.`` matches ``6.0``; ``<!-- expected-output rtol=0.05 -->`` loosens one block.

**Requirements.** A line ``<!-- requires: gpu -->`` or ``<!-- requires: g++ -->`` anywhere
in the file names what the tutorial needs; when it is missing the runner says so and exits
with status 3 (the test suite turns that into a skip).

Exit status: 0 all blocks ran and matched, 1 a block raised or printed something else,
2 bad usage or a malformed tutorial, 3 a requirement is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import re
import shutil
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's framework, run as a script

import framework as mx

ROOT = Path(__file__).resolve().parents[1]
EXPECTED_MARKER = re.compile(r"^<!--\s*expected-output(?P<options>[^>]*?)\s*-->\s*$")
REQUIRES_MARKER = re.compile(r"^<!--\s*requires:\s*(?P<what>[\w+ ,-]+?)\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\s*$")
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf"
DEFAULT_RTOL, DEFAULT_ATOL = 1e-4, 1e-8


class TutorialFormatError(Exception):
    """The Markdown file breaks the conventions above (an unclosed fence, a bad marker)."""


@dataclass
class Cell:
    """One ```python block, with the output it must print (None: not checked)."""

    source: str
    line: int  # 1-based line of the opening fence, for error messages
    expected: str | None = None
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL


@dataclass
class Tutorial:
    path: Path
    cells: list[Cell] = field(default_factory=list)
    requires: list[str] = field(default_factory=list)


def _parse_options(text: str, line: int) -> dict[str, float]:
    options = {}
    for item in text.split():
        key, _, value = item.partition("=")
        if key not in ("rtol", "atol") or not value:
            raise TutorialFormatError(f"line {line}: unknown expected-output option {item!r} (use rtol=, atol=)")
        options[key] = float(value)
    return options


def parse(path: Path) -> Tutorial:
    """Split a tutorial into cells, attaching each expected-output block to the cell before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    tutorial = Tutorial(path)
    pending_marker: tuple[int, dict[str, float]] | None = None
    i = 0
    while i < len(lines):
        text = lines[i]
        if match := REQUIRES_MARKER.match(text):
            tutorial.requires += [w.strip() for w in match["what"].replace(",", " ").split()]
        if match := EXPECTED_MARKER.match(text):
            pending_marker = (i + 1, _parse_options(match["options"], i + 1))
            i += 1
            continue
        fence = FENCE.match(text)
        if fence is None:
            if text.strip() and pending_marker is not None:
                raise TutorialFormatError(f"line {pending_marker[0]}: expected-output marker not followed by ```text")
            i += 1
            continue
        start = i
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
        if end is None:
            raise TutorialFormatError(f"line {start + 1}: unclosed ``` fence")
        body = "\n".join(lines[start + 1 : end])
        lang = fence["lang"]
        if pending_marker is not None:
            if lang != "text":
                raise TutorialFormatError(f"line {pending_marker[0]}: expected-output marker must precede ```text")
            if not tutorial.cells or tutorial.cells[-1].expected is not None:
                raise TutorialFormatError(f"line {start + 1}: expected output with no python block before it")
            cell = tutorial.cells[-1]
            cell.expected = body
            cell.rtol = pending_marker[1].get("rtol", DEFAULT_RTOL)
            cell.atol = pending_marker[1].get("atol", DEFAULT_ATOL)
            pending_marker = None
        elif lang == "python":
            tutorial.cells.append(Cell(body + "\n", start + 1))
        i = end + 1
    if pending_marker is not None:
        raise TutorialFormatError(f"line {pending_marker[0]}: expected-output marker at the end of the file")
    return tutorial


# ---------------------------------------------------------------------- output matching
def _line_pattern(expected: str) -> re.Pattern[str]:
    """A regex for one expected line: literal text, number groups, ``...`` wildcards, flexible spaces."""
    parts = []
    for k, piece in enumerate(expected.split("...")):
        if k:
            parts.append(".*?")
        for token in re.split(f"({NUMBER})|(\\s+)", piece):
            if not token:
                continue
            if re.fullmatch(NUMBER, token):
                parts.append(f"({NUMBER})")
            elif token.isspace():
                parts.append(r"\s+")
            else:
                parts.append(re.escape(token))
    return re.compile("".join(parts))


def _numbers_close(expected: str, actual: str, rtol: float, atol: float) -> bool:
    exp, act = float(expected), float(actual)
    if math.isnan(exp) or math.isnan(act):
        return math.isnan(exp) and math.isnan(act)
    return math.isclose(exp, act, rel_tol=rtol, abs_tol=atol)


def line_matches(expected: str, actual: str, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> bool:
    """True when ``actual`` is ``expected`` up to wildcards, spacing and numeric tolerance."""
    expected, actual = expected.strip(), actual.strip()
    match = _line_pattern(expected).fullmatch(actual)
    if match is None:
        return False
    wanted = re.findall(NUMBER, expected.replace("...", "\0"))
    return all(_numbers_close(w, g, rtol, atol) for w, g in zip(wanted, match.groups(), strict=True))


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def output_matches(expected: str, actual: str, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> bool:
    """Match whole outputs line by line; an ``...`` line swallows any number of lines."""
    want, got = _trim(expected.splitlines()), _trim(actual.splitlines())

    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(want):
            result = j == len(got)
        elif want[i].strip() == "...":
            result = match(i + 1, j) or (j < len(got) and match(i, j + 1))
        else:
            result = j < len(got) and line_matches(want[i], got[j], rtol, atol) and match(i + 1, j + 1)
        memo[(i, j)] = result
        return result

    return match(0, 0)


# ---------------------------------------------------------------------- requirements and running
def missing_requirements(requires: list[str]) -> list[str]:
    """The requirements this machine lacks, each with the reason."""
    missing = []
    for need in requires:
        if need == "g++":
            if shutil.which("g++") is None:
                missing.append("g++ (a C++ compiler) is not installed")
        elif need == "gpu":
            if mx.num_gpus() == 0:
                missing.append("a CUDA GPU with CuPy (none found: framework.num_gpus() == 0)")
        else:
            raise TutorialFormatError(f"unknown requirement {need!r} (known: gpu, g++)")
    return missing


class CellFailure(Exception):
    """A cell raised, or printed something other than its expected output."""


def run(tutorial: Tutorial, show: bool = False) -> None:
    """Execute every cell in one namespace; raise CellFailure at the first problem."""
    sys.path.insert(0, str(ROOT))
    namespace: dict = {"__name__": "__main__"}
    name = tutorial.path.name
    for number, cell in enumerate(tutorial.cells, 1):
        captured = io.StringIO()
        where = f"{name}, block {number} (line {cell.line})"
        try:
            code = compile(cell.source, f"{name}:block{number}", "exec")
            with contextlib.redirect_stdout(captured):
                exec(code, namespace)
        except Exception as err:
            sys.stdout.write(captured.getvalue())
            raise CellFailure(f"{where} raised:\n{traceback.format_exc()}") from err
        output = captured.getvalue()
        if show:
            print(f"--- {where}")
            print(output, end="" if output.endswith("\n") or not output else "\n")
        if cell.expected is not None and not output_matches(cell.expected, output, cell.rtol, cell.atol):
            raise CellFailure(
                f"{where} printed something other than its expected output.\n"
                f"--- expected (rtol={cell.rtol}, atol={cell.atol})\n{cell.expected}\n--- printed\n{output}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tutorial", type=Path, help="a tutorials/NN-*.md file")
    parser.add_argument("--show", action="store_true", help="print every block's output")
    args = parser.parse_args(argv)
    try:
        tutorial = parse(args.tutorial)
        missing = missing_requirements(tutorial.requires)
    except (OSError, TutorialFormatError) as err:
        print(f"error: {args.tutorial}: {err}", file=sys.stderr)
        return 2
    if missing:
        print(f"skipped {args.tutorial.name}: needs " + "; ".join(missing))
        return 3
    try:
        run(tutorial, show=args.show)
    except CellFailure as err:
        print(f"FAILED: {err}", file=sys.stderr)
        return 1
    checked = sum(cell.expected is not None for cell in tutorial.cells)
    print(f"ok {args.tutorial.name}: {len(tutorial.cells)} blocks ran, {checked} outputs checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())

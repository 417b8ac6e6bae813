"""Generate each learner stub from its reference solution, so the two cannot drift apart.

A solution marks every gap::

    def quadratic_forward(attrs, op_ctx, inputs, req, outputs):
        \"\"\"...contract...\"\"\"
        # BEGIN SOLUTION compute a*x^2 + b*x + c and write it through assign
        p, x = attrs.parsed, inputs[0]
        assign(outputs[0], req[0], x * (p.a * x + p.b) + p.c)
        # END SOLUTION

and the stub gets, at the same indentation::

        # TODO(exercise): compute a*x^2 + b*x + c and write it through assign
        raise NotImplementedError("exercise gap in quadratic_forward")

``python -m exercises.stubgen`` reports stale stubs (the tests check the same);
``--write`` regenerates them, overwriting any edits (for exercise authors, not learners).
``strip_markers`` gives the solution as ``mxlab solution`` prints it.
"""

from __future__ import annotations

import re
import sys

from . import CATALOGUE, Exercise

_BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION (?P<task>.+?)\s*$")
_END = re.compile(r"^\s*# END SOLUTION\s*$")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)|^\s*class\s+(\w+)")
STUB_HEADER = (
    "# The exercise stub: fill in every `# TODO(exercise)` gap (generated from the reference solution).\n"
    "# ruff: noqa: F401, RUF100  (the imports are the ones your code will need)\n"
)


class StubError(ValueError):
    """A solution's markers are malformed (unclosed, nested, or empty)."""


def make_stub(solution: str, origin: str = "solution") -> str:
    """The stub text of ``solution``: each marked block becomes a TODO and a raising gap."""
    lines = solution.splitlines(keepends=True)
    out: list[str] = []
    enclosing = "module"
    i = 0
    while i < len(lines):
        line = lines[i]
        definition = _DEF.match(line)
        if definition:
            enclosing = definition.group(1) or definition.group(2)
        begin = _BEGIN.match(line)
        if begin is None:
            if _END.match(line):
                raise StubError(f"{origin}:{i + 1}: END SOLUTION without BEGIN SOLUTION")
            out.append(line)
            i += 1
            continue
        indent, task = begin.group("indent"), begin.group("task")
        j = i + 1
        while j < len(lines) and not _END.match(lines[j]):
            if _BEGIN.match(lines[j]):
                raise StubError(f"{origin}:{j + 1}: BEGIN SOLUTION inside another solution block")
            j += 1
        if j == len(lines):
            raise StubError(f"{origin}:{i + 1}: BEGIN SOLUTION is never closed")
        out.append(f"{indent}# TODO(exercise): {task}\n")
        out.append(f'{indent}raise NotImplementedError("exercise gap in {enclosing}")\n')
        i = j + 1
    return STUB_HEADER + "".join(out)


def strip_markers(solution: str) -> str:
    """The solution without its BEGIN/END SOLUTION marker lines."""
    return "".join(line for line in solution.splitlines(keepends=True) if not (_BEGIN.match(line) or _END.match(line)))


def stub_is_current(exercise: Exercise) -> bool:
    solution = exercise.solution_path.read_text(encoding="utf-8")
    return exercise.stub_path.read_text(encoding="utf-8") == make_stub(solution, str(exercise.solution_path))


def main(argv: list[str]) -> int:
    """``--check`` (default) lists stale stubs; ``--write`` regenerates them (authors only:
    it overwrites whatever a learner wrote in the stubs)."""
    write = "--write" in argv
    stale = []
    for exercise in CATALOGUE:
        solution = exercise.solution_path.read_text(encoding="utf-8")
        stub = make_stub(solution, str(exercise.solution_path))
        if exercise.stub_path.exists() and exercise.stub_path.read_text(encoding="utf-8") == stub:
            continue
        stale.append(exercise.name)
        if write:
            exercise.stub_path.write_text(stub, encoding="utf-8")
            print(f"wrote exercises/{exercise.name}/{exercise.name}.py")
    if stale and not write:
        print(
            f"stale stubs: {', '.join(stale)} (python -m exercises.stubgen --write regenerates them, "
            "overwriting any edits)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

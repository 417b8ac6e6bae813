"""MXLab exercises: rebuild a piece of MXNet, then let ``mxlab check <exercise>`` review it.

Each exercise lives in ``exercises/<name>/``: ``README.md`` (the task and the contract),
``<name>.py`` (the stub you edit: every gap is a ``# TODO(exercise)`` raising
``NotImplementedError("exercise gap: ...")``), ``hints.md`` (progressive hints) and
``checks.py`` (what the checker verifies). Reference solutions are kept apart, in
``exercises/_solutions/``, and shown only by ``mxlab solution <name>``.

The stubs are generated from the solutions (``python -m exercises.stubgen --write``), so the two
cannot drift apart: every ``# BEGIN SOLUTION`` ... ``# END SOLUTION`` block of a solution
becomes a gap in the stub.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SOLUTIONS_DIR = PACKAGE_DIR / "_solutions"


@dataclass(frozen=True)
class Exercise:
    """One exercise of the catalogue."""

    name: str
    title: str
    summary: str

    @property
    def directory(self) -> Path:
        return PACKAGE_DIR / self.name

    @property
    def stub_path(self) -> Path:
        return self.directory / f"{self.name}.py"

    @property
    def solution_path(self) -> Path:
        return SOLUTIONS_DIR / f"{self.name}.py"

    @property
    def hints_path(self) -> Path:
        return self.directory / "hints.md"

    @property
    def readme_path(self) -> Path:
        return self.directory / "README.md"

    @property
    def checks_module(self) -> str:
        return f"exercises.{self.name}.checks"


CATALOGUE: tuple[Exercise, ...] = (
    Exercise("quadratic", "quadratic: your first operator", "f(x) = a*x^2 + b*x + c through the registry"),
    Exercise("smooth_l1", "smooth_l1 through SimpleOp", "Fast R-CNN's smooth L1 loss as a unary SimpleOp"),
    Exercise("softmax_ce", "softmax with cross-entropy backward", "softmax forward, (p - onehot) / n backward"),
    Exercise("leaky_relu", "leaky ReLU and PReLU", "the leaky unit and the gradient of PReLU's learned slope gamma"),
    Exercise("conv2d", "2-D convolution with im2col", "forward as one matrix product, backward with col2im"),
    Exercise("max_pool", "max pooling", "windowed maxima forward, gradient routed to the winner backward"),
    Exercise("engine_var", "the engine's per-variable queue", "reads together, writes alone, in push order"),
    Exercise("memory_planner", "the memory planner's sharing step", "a free list that reuses dead blocks by size"),
    Exercise("glu", "a gated linear unit as a HybridBlock", "(xW + b) * sigmoid(xV + c), imperative and hybridized"),
)

EXERCISES: dict[str, Exercise] = {exercise.name: exercise for exercise in CATALOGUE}


class UnknownExercise(KeyError):
    """A command named an exercise that does not exist."""

    def __str__(self) -> str:
        return str(self.args[0])


def get(name: str) -> Exercise:
    """The exercise called ``name``; an unknown name raises with the list of names."""
    found = EXERCISES.get(name)
    if found is None:
        close = difflib.get_close_matches(name.replace("-", "_").lower(), list(EXERCISES), n=1)
        suggestion = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownExercise(f"unknown exercise {name!r}{suggestion}; the exercises are: {', '.join(EXERCISES)}")
    return found

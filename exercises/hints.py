"""Progressive hints: ``mxlab hint <exercise>`` shows hint 1, then 2, ... (level kept in hints.json).

An exercise's ``hints.md`` holds numbered sections, ``## Hint 1``, ``## Hint 2``, ...;
each says a little more than the one before, the last one nearly the answer.
"""

from __future__ import annotations

import re

from . import Exercise, state

HINTS_FILE = "hints.json"
_HEADING = re.compile(r"^## Hint (\d+)\s*$", re.MULTILINE)


def load_hints(exercise: Exercise) -> list[str]:
    """The hints of ``exercise`` in order (raises if hints.md is missing or misnumbered)."""
    text = exercise.hints_path.read_text(encoding="utf-8")
    parts = _HEADING.split(text)
    numbers = [int(n) for n in parts[1::2]]
    if numbers != list(range(1, len(numbers) + 1)) or not numbers:
        raise ValueError(f"{exercise.hints_path}: hints must be numbered ## Hint 1, ## Hint 2, ...; found {numbers}")
    return [body.strip() for body in parts[2::2]]


def current_level(exercise: Exercise) -> int:
    """How many hints the learner has seen (0: none)."""
    level = state.load(HINTS_FILE).get(exercise.name, 0)
    return level if isinstance(level, int) and level >= 0 else 0


def next_hint(exercise: Exercise, level: int | None = None) -> tuple[int, int, str]:
    """(level shown, number of hints, text): the next hint, or hint ``level``; remembers the level."""
    hints = load_hints(exercise)
    if level is None:
        level = min(current_level(exercise) + 1, len(hints))
    elif not 1 <= level <= len(hints):
        raise ValueError(f"{exercise.name} has hints 1 to {len(hints)}; there is no hint {level}")
    levels = state.load(HINTS_FILE)
    levels[exercise.name] = level
    state.save(HINTS_FILE, levels)
    return level, len(hints), hints[level - 1]


def reset(exercise: Exercise) -> None:
    """Start the hints of ``exercise`` again from hint 1."""
    levels = state.load(HINTS_FILE)
    levels.pop(exercise.name, None)
    state.save(HINTS_FILE, levels)

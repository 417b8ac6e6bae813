"""The checker framework: a check is a name and a function that raises :class:`CheckFailure`.

A failure carries what a patient reviewer would say: the input that broke the attempt,
what was expected, what came back, and a hint pointing at the idea that was missed.
``compare`` turns two arrays into that message (first mismatching index, expected versus
got, how many elements differ), so exercise checks stay short.

Any *other* exception raised while a check runs came from the learner's code (a gap still
raising ``NotImplementedError``, a typo, a wrong shape): :func:`run_check` turns it into a
failure that names the exception and the last line of the attempt that raised it, never
a traceback through the checker.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: What the running check is doing right now (set by opcheck before calling the learner's code),
#: so an exception escaping that code can say which call raised it.
current_call: ContextVar[str] = ContextVar("current_call", default="")


def note_call(text: str) -> None:
    current_call.set(text)


class CheckFailure(Exception):
    """One check found a mistake: the input, what was expected, what came back, a hint."""

    def __init__(self, input_description: str, expected: str, got: str, hint: str = "", diff: str = "") -> None:
        super().__init__(f"{input_description}: expected {expected}; got {got}")
        self.input_description = input_description
        self.expected = expected
        self.got = got
        self.hint = hint
        self.diff = diff


@dataclass
class Check:
    """A named check of one exercise; ``fn(attempt)`` raises CheckFailure when it finds a mistake."""

    name: str
    description: str
    fn: Callable[[Any], None]


@dataclass
class CheckResult:
    """What one check found, as the runner sends it from the subprocess (JSON)."""

    name: str
    passed: bool
    input: str = ""
    expected: str = ""
    got: str = ""
    hint: str = ""
    diff: str = ""
    details: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


class Passed(Exception):
    """Raised by a check that passed and has something to show (a timeline), not a failure."""

    def __init__(self, details: str) -> None:
        super().__init__(details)
        self.details = details


def _deepest_attempt_frame(error: BaseException, attempt_file: str | None) -> traceback.FrameSummary | None:
    if attempt_file is None:
        return None
    target = str(Path(attempt_file).resolve())
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        if str(Path(frame.filename).resolve()) == target:
            found = frame
    return found


def attempt_frame(error: BaseException, attempt_file: str | None) -> str:
    """``file:line in function: code`` of the deepest frame inside the attempt file, if any."""
    frame = _deepest_attempt_frame(error, attempt_file)
    if frame is None:
        return ""
    return f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()}"


def gap_task(error: BaseException, attempt_file: str | None) -> str:
    """The ``# TODO(exercise): ...`` text just above the raising line of a gap, if there is one."""
    frame = _deepest_attempt_frame(error, attempt_file)
    if frame is None or not frame.lineno or attempt_file is None:
        return ""
    try:
        lines = Path(attempt_file).read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    above = lines[frame.lineno - 2].strip() if frame.lineno >= 2 else ""
    return above.split("TODO(exercise):", 1)[1].strip() if "TODO(exercise):" in above else ""


def describe_exception(error: BaseException) -> str:
    """``TypeError: message`` plus the notes the engine attaches, on one line each."""
    text = f"{type(error).__name__}: {error}".strip()
    notes = getattr(error, "__notes__", None) or []
    return "\n".join([text, *[str(n) for n in notes]])


def run_check(check: Check, attempt: Any, attempt_file: str | None, context: str = "") -> CheckResult:
    """Run one check; every outcome (pass, failure, exception in the attempt) becomes a result."""
    current_call.set("")
    try:
        check.fn(attempt)
    except Passed as done:
        return CheckResult(check.name, True, details=done.details)
    except CheckFailure as failure:
        return CheckResult(
            check.name,
            False,
            input=failure.input_description,
            expected=failure.expected,
            got=failure.got,
            hint=failure.hint,
            diff=failure.diff,
        )
    except Exception as error:  # the learner's code raised: report it in their terms
        what = context or check.description
        if current_call.get():
            what = f"{what}; while running {current_call.get()}"
        return exception_result(check.name, error, attempt_file, what)
    return CheckResult(check.name, True)


def exception_result(name: str, error: BaseException, attempt_file: str | None, what: str) -> CheckResult:
    """The failure for an exception that escaped the learner's code."""
    where = attempt_frame(error, attempt_file)
    gap_error = _gap_error(error)
    if gap_error is not None:
        gap = str(gap_error)
        task = gap_task(gap_error, attempt_file)
        frame = _deepest_attempt_frame(gap_error, attempt_file)
        where = f"{Path(frame.filename).name} line {frame.lineno}, in {frame.name}" if frame else ""
        return CheckResult(
            name,
            False,
            input=what,
            expected="the gap to be filled in" + (f": {task}" if task else ""),
            got=f"NotImplementedError: {gap}",
            hint="this part of the stub is still a gap: replace the `raise NotImplementedError(...)` under "
            "the `# TODO(exercise)` comment with your code" + (f" ({where})" if where else ""),
        )
    hint = f"the exception was raised at {where}" if where else "the exception was raised outside your file"
    return CheckResult(name, False, input=what, expected="no exception", got=describe_exception(error), hint=hint)


def _gap_error(error: BaseException | None) -> BaseException | None:
    """An untouched stub's ``NotImplementedError("exercise gap ...")``, possibly wrapped in another error."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, NotImplementedError) and str(error).startswith("exercise gap"):
            return error
        error = error.__cause__ or error.__context__
    return None


# ----------------------------------------------------------------------------- value comparison
def fmt_shape(shape: Any) -> str:
    return str(tuple(int(d) for d in shape))


def fmt_value(value: Any) -> str:
    """A short rendering of a scalar or a small array."""
    array = np.asarray(value)
    if array.ndim == 0:
        return f"{array.item():.6g}" if np.issubdtype(array.dtype, np.floating) else repr(array.item())
    with np.printoptions(precision=4, suppress=True, threshold=12, edgeitems=2):
        return np.array2string(array, separator=", ").replace("\n", " ")


def mismatch(expected: np.ndarray, got: np.ndarray, rtol: float, atol: float) -> str | None:
    """None when close; otherwise the first mismatching index, both values and the count."""
    expected64 = np.asarray(expected, dtype=np.float64)
    got64 = np.asarray(got, dtype=np.float64)
    bad = ~np.isclose(got64, expected64, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return (
        f"first mismatch at index {index}: expected {fmt_value(expected64[index])}, got {fmt_value(got64[index])} "
        f"({int(bad.sum())} of {bad.size} elements differ)"
    )


def tolerance(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) by dtype: float32 loosely, float64 tightly."""
    return (1e-4, 1e-5) if np.dtype(dtype) == np.float32 else (1e-7, 1e-9)


def compare(
    got: Any,
    expected: np.ndarray,
    input_description: str,
    what: str,
    hint: str,
    rtol: float | None = None,
    atol: float | None = None,
    expected_text: str | None = None,
) -> None:
    """Raise CheckFailure unless ``got`` has ``expected``'s shape and (close) values.

    ``what`` names the array in the messages (``out``, ``the gradient of x``).
    """
    expected = np.asarray(expected)
    if got is None:
        raise CheckFailure(input_description, f"{what} of shape {fmt_shape(expected.shape)}", "None", hint)
    got = np.asarray(got)
    if got.shape != expected.shape:
        raise CheckFailure(
            input_description,
            f"{what} of shape {fmt_shape(expected.shape)}",
            f"{what} of shape {fmt_shape(got.shape)}",
            hint,
        )
    default_rtol, default_atol = tolerance(expected.dtype if expected.dtype.kind == "f" else np.float64)
    diff = mismatch(expected, got, default_rtol if rtol is None else rtol, default_atol if atol is None else atol)
    if diff is not None:
        raise CheckFailure(
            input_description,
            expected_text or f"{what} = {fmt_value(expected)}",
            f"{what} = {fmt_value(got)}",
            hint,
            diff,
        )

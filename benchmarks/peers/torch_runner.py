"""How MXLab's benchmarks measure PyTorch: a peer script run by PyTorch's interpreter, one round per process.

PyTorch does not live in MXLab's venv (it is large, and the tests never need it): ``make bench``
makes ``.peers/torchvenv`` (scripts/setup.sh ``--bench``) and passes its interpreter to the
benchmarks that declare a torch peer as ``--torch-python PATH``. A benchmark then calls
:meth:`TorchRounds.round` between its own rounds, so both systems see the same machine load;
each call runs one peer script (``benchmarks/peers/torch_*.py``) to completion and returns the
JSON lines it printed.

PyTorch is optional: when the interpreter is missing, has no ``torch`` or the script fails,
the benchmark prints one line saying why on stderr, puts the reason in its records as
``peer_skipped.torch`` and goes on measuring MXLab. Nothing here imports torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

PEERS_DIR = os.path.dirname(os.path.abspath(__file__))
#: What to do about a missing PyTorch, for the messages below.
INSTALL_HINT = "make bench installs it into .peers/torchvenv (scripts/setup.sh --bench)"


class TorchPeerUnavailable(RuntimeError):
    """The PyTorch peer could not be measured; the message says why."""


def run_script(python: str, script: str, args: list[str], timeout: float = 1800) -> list[dict[str, Any]]:
    """Run ``benchmarks/peers/<script>.py`` under ``python`` and return the JSON objects it printed."""
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise TorchPeerUnavailable(f"--torch-python: {python!r} is not an executable file; {INSTALL_HINT}")
    command = [python, os.path.join(PEERS_DIR, f"{script}.py"), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as err:
        raise TorchPeerUnavailable(f"the PyTorch peer {script} did not finish in {timeout:.0f} s") from err
    if done.returncode != 0:
        if "No module named 'torch'" in done.stderr:
            raise TorchPeerUnavailable(f"{python} cannot import torch; {INSTALL_HINT}")
        tail = done.stderr.strip().splitlines()[-1:] or ["no error output"]
        raise TorchPeerUnavailable(f"the PyTorch peer {script} failed (exit {done.returncode}): {tail[0]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]


class TorchRounds:
    """Rounds of one peer script, taken between the benchmark's own; after a failure, no more tries.

    ``python`` None means no PyTorch interpreter was given: every round returns None and
    :attr:`skipped` stays None (nothing to report). Otherwise the first failure is printed
    once and kept in :attr:`skipped`.
    """

    def __init__(self, python: str | None, script: str, args: list[str]) -> None:
        self.python, self.script, self.args = python, script, args
        self.skipped: str | None = None

    def round(self) -> list[dict[str, Any]] | None:
        """One run of the peer script: its records, or None when PyTorch is not (or no longer) measured."""
        if self.python is None or self.skipped is not None:
            return None
        try:
            return run_script(self.python, self.script, self.args)
        except TorchPeerUnavailable as err:
            self.skipped = str(err)
            print(f"skipping the PyTorch peer: {err}", file=sys.stderr, flush=True)
            return None

    def note(self) -> dict[str, Any]:
        """What a record says about a skipped peer: ``{"peer_skipped": {"torch": why}}``, or nothing."""
        return {"peer_skipped": {"torch": self.skipped}} if self.skipped else {}


def blas_threads() -> int:
    """The threads NumPy's BLAS uses in this process: what ``torch.set_num_threads`` should match.

    MXLab's own count (NumPy's BLAS, not SciPy's: a limit set before SciPy was imported leaves
    SciPy's OpenBLAS at one thread per core, and counting it gave PyTorch two threads in the
    runs meant to give every system one).
    """
    from framework.executor.split_backward import blas_threads as numpys  # noqa: PLC0415 - the MXLab side only

    return numpys()


def train_args(
    model: str,
    batch: int,
    samples: int,
    warm: int,
    timed: int,
    threads: int,
    lr: float,
    momentum: float,
    wd: float = 0.0,
    init: str = "fan_in",
    modes: tuple[str, ...] = ("eager",),
) -> list[str]:
    """The command line of ``torch_train.py`` (the one place that spells it, so tests can check it parses)."""
    return [
        "--model", model, "--batch", str(batch), "--samples", str(samples), "--warm", str(warm),
        "--timed", str(timed), "--threads", str(threads), "--lr", str(lr), "--momentum", str(momentum),
        "--wd", str(wd), "--init", init, "--modes", ",".join(modes),
    ]  # fmt: skip


def dispatch_args(n: int, threads: int) -> list[str]:
    """The command line of ``torch_dispatch.py`` for one round of ``n`` operations per case."""
    return ["--n", str(n), "--reps", "1", "--threads", str(threads)]

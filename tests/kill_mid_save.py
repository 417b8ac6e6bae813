"""Kill a process mid-save, many times, and report what each kill left on disk.

Run as a script (``python tests/kill_mid_save.py KIND DIR TRIALS SEED``); it prints one JSON
line per trial. KIND is ``nd_save`` (``mx.nd.save`` of a multi-MB dict) or ``checkpoint``
(``mx.model.save_checkpoint``: symbol JSON + params). The script imports MXLab once, writes
version A, then per trial forks a child that saves versions B and A alternately without end
and SIGKILLs it: every other trial as soon as a save's temporary file appears (so some kills
land mid-write on any machine), the others after a random delay (up to a few save durations). Forking from this
single-threaded process (NaiveEngine, so no worker threads) is what makes hundreds of trials
affordable. The test (tests/test_atomic_file.py) asserts every trial found A or B intact.
"""

from __future__ import annotations

import glob
import json
import os
import random
import signal
import sys
import time

os.environ["MXLAB_ENGINE_TYPE"] = "NaiveEngine"  # no worker threads: safe to fork

import numpy as np

import framework as mx
from framework import model
from framework.atomic_file import TEMP_PREFIX


def _params(seed: int) -> dict[str, mx.nd.NDArray]:
    rng = np.random.default_rng(seed)
    return {f"arg:w{i}": mx.nd.array(rng.standard_normal((256, 1024)).astype(np.float32)) for i in range(4)}


def _symbol(hidden: int) -> mx.sym.Symbol:
    return mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=hidden, name="fc")


class NdSave:
    """``mx.nd.save`` of a 4 MiB dict; versions differ in every value."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, "weights.params")
        self.versions = {"A": _params(1), "B": _params(2)}
        self.expected = {k: {n: a.asnumpy() for n, a in v.items()} for k, v in self.versions.items()}

    def save(self, version: str) -> None:
        mx.nd.save(self.path, self.versions[version])

    def identify(self) -> str:
        """Which complete version the file holds, or what is wrong with it."""
        loaded = {n: a.asnumpy() for n, a in mx.nd.load(self.path).items()}
        for name, expected in self.expected.items():
            if loaded.keys() == expected.keys() and all(np.array_equal(loaded[n], expected[n]) for n in expected):
                return name
        return "broken: loads but matches neither version"


class Checkpoint:
    """``save_checkpoint`` (epoch 1 each time): symbol JSON and params both change between versions."""

    def __init__(self, directory: str) -> None:
        self.prefix = os.path.join(directory, "net")
        self.nd = NdSave(directory)
        self.symbols = {"A": _symbol(16), "B": _symbol(32)}

    def save(self, version: str) -> None:
        args = {name.removeprefix("arg:"): value for name, value in self.nd.versions[version].items()}
        model.save_checkpoint(self.prefix, 1, self.symbols[version], args, {})

    def identify(self) -> str:
        symbol, arg, _ = model.load_checkpoint(self.prefix, 1)
        sym_version = next((k for k, s in self.symbols.items() if s.tojson() == symbol.tojson()), None)
        if sym_version is None:
            return "broken: symbol JSON matches neither version"
        loaded = {f"arg:{n}": a.asnumpy() for n, a in arg.items()}
        for name, expected in self.nd.expected.items():
            if all(np.array_equal(loaded[n], expected[n]) for n in expected) and loaded.keys() == expected.keys():
                return f"{sym_version}{name}"  # each file is atomic on its own: any pair is fine
        return "broken: params match neither version"


def _save_forever(target: NdSave | Checkpoint) -> None:
    while True:
        target.save("B")
        target.save("A")


def _wait_for_a_temporary_file(directory: str, timeout_s: float = 10.0) -> None:
    """Return as soon as a save's temporary file exists (polling), so the kill lands mid-write
    whatever the machine's speed; give up after ``timeout_s`` (the kill then lands anywhere)."""
    pattern = os.path.join(directory, TEMP_PREFIX + "*")
    deadline = time.perf_counter() + timeout_s
    while not glob.glob(pattern) and time.perf_counter() < deadline:
        time.sleep(0.0002)


def main(kind: str, directory: str, trials: int, seed: int) -> None:
    target = {"nd_save": NdSave, "checkpoint": Checkpoint}[kind](directory)
    target.save("A")
    start = time.perf_counter()
    target.save("A")
    one_save = time.perf_counter() - start
    rng = random.Random(seed)
    for trial in range(trials):
        pid = os.fork()
        if pid == 0:  # the child: save until killed
            try:
                _save_forever(target)
            finally:
                os._exit(1)
        if trial % 2 == 0:
            _wait_for_a_temporary_file(directory)  # a kill that surely lands while a write is under way
        else:
            time.sleep(rng.uniform(0, 3 * one_save))  # a kill anywhere: between saves or inside one
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        leftovers = glob.glob(os.path.join(directory, TEMP_PREFIX + "*"))
        try:
            found = target.identify()
        except Exception as err:
            found = f"broken: {type(err).__name__}: {err}"
        for leftover in leftovers:
            os.unlink(leftover)
        print(json.dumps({"trial": trial, "found": found, "killed_mid_write": bool(leftovers)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))

"""MXLAB_BLAS_THREADS: the process-wide engine caps the BLAS's own threads when it starts.

Each case runs in a fresh interpreter: the limit is process-wide, and the engine starts once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json
import numpy, scipy.linalg  # load the BLAS libraries before looking at them
from threadpoolctl import threadpool_info
before = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
import framework as mx
mx.nd.ones((2, 2)).asnumpy()  # the first operation starts the process-wide engine
after = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
print(json.dumps({"before": before, "after": after}))
"""


def _probe(value: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MXLAB_BLAS_THREADS", "OPENBLAS_NUM_THREADS")}
    env["PYTHONPATH"] = str(ROOT)
    env["OPENBLAS_NUM_THREADS"] = "2"  # as found: two, whatever this machine's core count
    if value is not None:
        env["MXLAB_BLAS_THREADS"] = value
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)


def test_the_engine_limits_blas_threads_when_asked():
    done = _probe("1")
    assert done.returncode == 0, done.stderr
    threads = json.loads(done.stdout)
    assert threads["before"], "threadpoolctl sees no BLAS under NumPy"
    assert threads["before"] == [2] * len(threads["before"])
    assert threads["after"] == [1] * len(threads["after"])


def test_zero_leaves_the_blas_as_found():
    done = _probe(None)
    assert done.returncode == 0, done.stderr
    threads = json.loads(done.stdout)
    assert threads["after"] == threads["before"]


def test_a_malformed_value_is_refused_naming_the_variable():
    done = _probe("-1")
    assert done.returncode != 0
    assert "MXLAB_BLAS_THREADS" in done.stderr

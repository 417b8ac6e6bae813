"""benchmarks/operators_conv.py --layers: one record per LeNet layer and pass (a few seconds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_layers_mode_times_forward_and_backward_of_every_layer_apart():
    script = os.path.join(ROOT, "benchmarks", "operators_conv.py")
    done = subprocess.run(
        [sys.executable, script, "--layers", "--reps", "2", "--clock", "cpu"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    cases = [r["case"] for r in records]
    assert cases == [
        f"{layer}.{part}" for layer in ("conv1", "pool1", "conv2", "pool2") for part in ("forward", "backward")
    ]
    for record in records:
        assert record["engine"] == "mxlab_kernels" and record["unit"] == "ms" and record["clock"] == "cpu"
        assert len(record["samples"]) == 2 and 0 < record["min"] <= record["median"] <= record["max"]

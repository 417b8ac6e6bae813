"""boolean_mask, SyncBatchNorm, BatchNormWithReLU, make_loss and RROIAlign agree with MXNet 1.9.1.

tests/data/mxnet_1_9_1/ops/ops_misc17.py ran each case with the real MXNet (in training or
inference mode) and stored the inputs, outputs and input gradients; here MXLab replays every
case through the same front-end function. When ``MXNET_PYTHON`` names an interpreter with
MXNet 1.9.1, the script is also run live.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from op_helpers import load_reference_cases, replay_reference_case

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "ops"
MXNET_PYTHON = os.environ.get("MXNET_PYTHON")
STEM = "ops_misc17"
CASES = load_reference_cases(DATA, STEM)
GRAD_ATOL = 1e-4  # these cases' input gradients are compared more loosely than the outputs (atol 1e-5)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_agrees_with_committed_mxnet_data(case):
    replay_reference_case(case, grad_atol=GRAD_ATOL)


def test_the_data_covers_every_operator_of_the_script():
    functions = {c["function"] for c in CASES}
    assert functions == {
        "nd.contrib.boolean_mask",
        "nd.contrib.SyncBatchNorm",
        "nd.contrib.BatchNormWithReLU",
        "nd.make_loss",
        "nd.contrib.RROIAlign",
    }


@pytest.mark.skipif(not MXNET_PYTHON, reason="set MXNET_PYTHON to an interpreter with mxnet 1.9.1 to run")
def test_agrees_with_live_mxnet(tmp_path):
    script = DATA / f"{STEM}.py"
    subprocess.run([MXNET_PYTHON, str(script), str(tmp_path)], check=True, capture_output=True, timeout=300)
    for case in load_reference_cases(tmp_path, STEM):
        replay_reference_case(case, grad_atol=GRAD_ATOL)

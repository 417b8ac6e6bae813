"""benchmarks/operators_conv.py --layers: one record per LeNet layer and pass (a few seconds)."""

from __future__ import annotations

from benchmark_runs import run_benchmark


def test_layers_mode_times_forward_and_backward_of_every_layer_apart():
    records, _ = run_benchmark("operators_conv.py", "--layers", "--reps", "2", "--clock", "cpu")
    cases = [r["case"] for r in records]
    assert cases == [
        f"{layer}.{part}" for layer in ("conv1", "pool1", "conv2", "pool2") for part in ("forward", "backward")
    ]
    for record in records:
        assert record["engine"] == "mxlab_kernels" and record["unit"] == "ms" and record["clock"] == "cpu"
        assert len(record["samples"]) == 2 and 0 < record["min"] <= record["median"] <= record["max"]

"""benchmarks/io.py: the serial-fraction records (the GIL meter); the figures themselves are not judged."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from needs import needs_tool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_serial_fraction_records_split_cpu_time_into_gil_held_and_released():
    needs_tool("cc", "builds the benchmark's GIL meter")
    script = os.path.join(ROOT, "benchmarks", "io.py")
    command = [sys.executable, script, "--images", "16", "--rounds", "1", "--serial-fraction"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    records = {r["case"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert records["speedup_2v1"]["ratios"]["target"] == 1.8
    for threads in (1, 2):
        record = records[f"serial_fraction_threads{threads}"]
        assert record["unit"] == "fraction" and 0 < record["median"] < 1
        assert 0 < record["gil_held_us_per_image"] < record["cpu_us_per_image"]
        assert record["gil_releases_per_image"] >= 2  # at least the decoder and the normalisation
        assert record["ratios"]["amdahl_2_thread_limit"] == pytest.approx(2 / (1 + record["median"]), abs=1e-3)


def test_the_meter_child_needs_the_preloaded_library():
    """Run without LD_PRELOAD, the child cannot find the meter's functions: a clear failure, not a figure."""
    script = os.path.join(ROOT, "benchmarks", "io.py")
    command = [sys.executable, script, "--meter-child", os.path.join(ROOT, "no.rec"), "1", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode != 0 and "LD_PRELOAD=gil_meter.so" in done.stderr


def test_phase_records_break_the_pipeline_down_by_step():
    needs_tool("cc", "builds the benchmark's GIL meter")
    script = os.path.join(ROOT, "benchmarks", "io.py")
    command = [sys.executable, script, "--images", "16", "--rounds", "1", "--phases"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines()]
    for threads in (1, 2):
        steps = {r["phase"]: r for r in records if r["case"] == f"phase_threads{threads}"}
        workers, decode = steps["worker threads: total"], steps["worker: decode"]
        assert 0 < workers["gil_held_us_per_image"] < workers["cpu_us_per_image"]
        # every record read is unpacked and decoded once (16 images fill a batch of 32: 2 calls per image)
        assert decode["calls_per_image"] == steps["worker: unpack the header"]["calls_per_image"] == 2
        assert steps["loader: read a record"]["calls_per_image"] == 2
        assert decode["gil_releases_per_image"] >= 2  # libjpeg runs without the GIL
        assert steps["worker: a piece"]["cpu_us_per_image"] <= workers["cpu_us_per_image"]  # nested in the total
        assert steps["main thread: total"]["cpu_us_per_image"] > 0


def test_the_phases_child_needs_the_preloaded_library():
    script = os.path.join(ROOT, "benchmarks", "io.py")
    command = [sys.executable, script, "--phases-child", os.path.join(ROOT, "no.rec"), "1", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode != 0 and "LD_PRELOAD=gil_meter.so" in done.stderr

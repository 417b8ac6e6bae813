#!/usr/bin/env python3
"""Image pipeline benchmark: ImageRecordIter with 2 decoding threads against 1, and against Pillow in a loop.

Usage::

    python benchmarks/io.py            # 256 JPEG images 400x300 -> resize 256 -> 224x224 crops, 7 rounds
    python benchmarks/io.py --quick    # 64 images, 3 rounds (a few seconds)
    python benchmarks/io.py --mxnet-python mxvenv/bin/python   # and MXNet 1.9.1's ImageRecordIter
    python benchmarks/io.py --rounds 3 --serial-fraction --phases   # and where the GIL-held time goes (cc)

The workload is an ImageNet-style training pipeline over a ``.rec`` file written by
``framework.recordio``: decode JPEG, resize the shorter edge to 256, random 224x224 crop,
random mirror, mean/std normalisation, batches of 32 shipped as NDArrays. Three cases,
interleaved round by round so that machine noise hits all of them alike:

- ``threads1`` / ``threads2``: one epoch of ``ImageRecordIter(preprocess_threads=1 | 2)``,
  timed from construction to the last batch's data being readable;
- ``pillow_loop``: the same images read in a plain Python loop (unpack, ``Image.open``,
  Pillow resize, crop, mirror, normalise, ``np.stack``) on the calling thread.

``--serial-fraction`` adds what bounds the 2-thread speed-up: per image, the CPU time spent
holding the GIL against all CPU time (``serial_fraction_threads1``/``threads2``). It builds
``benchmarks/gil_meter.c`` with ``cc`` and runs the epochs in a child process that preloads it
(the meter adds up CPU time between NumPy's and Pillow's GIL releases and re-acquisitions);
CPU clocks, so the figure holds while other processes load the machine. By Amdahl's law a
serial fraction ``s`` allows a 2-thread speed-up of at most ``2 / (1 + s)``.

``--phases`` breaks that down by step (reading a record, unpacking, decoding, the horizontal
and vertical passes of the resize, the normalisation, each thread's total: ``phase_threads1`` /
``phase_threads2`` records, CPU and GIL-held us per image, GIL releases and calls per image).
In the same kind of child, each step of :data:`PHASES` is wrapped to read the calling thread's
CPU clock and the meter's per-thread sum of released time around it. Steps nest (a piece
holds its decodes), and each wrapper adds about a microsecond of its own to the steps around it.

With ``--mxnet-python`` (an interpreter with mxnet 1.9.1) MXNet's own ``ImageRecordIter``
reads the same ``.rec`` file with the same parameters and thread counts
(``benchmarks/peers/mxnet_image_iter.py``, a fresh process per epoch, in the same rounds), and
the ``threads1``/``threads2`` records carry its figure as ``peers.mxnet`` (issue 19's target:
MXLab at least MXNet's images/s with the same thread count).

Every line is one JSON record (``workload``, ``engine``, ``case``, ``unit``, ``median``, ``min``,
``max``, ``samples``, ``ratios``); figures are images per second. The headline is the
``speedup_2v1`` record: the median over rounds of time(1 thread) / time(2 threads), target
1.8 on a 2-core machine (issue 19).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import functools
import importlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
from PIL import Image

from framework import recordio
from framework.io import ImageRecordIter

TARGET_SPEEDUP = 1.8  # issue 19: 2 decoding threads at least 1.8x one
MEAN = np.array([123.68, 116.28, 103.53], np.float32)
STD = np.array([58.395, 57.12, 57.375], np.float32)
PIPELINE = dict(
    data_shape=(3, 224, 224),
    batch_size=32,
    resize=256,
    rand_crop=True,
    rand_mirror=True,
    mean_r=float(MEAN[0]),
    mean_g=float(MEAN[1]),
    mean_b=float(MEAN[2]),
    std_r=float(STD[0]),
    std_g=float(STD[1]),
    std_b=float(STD[2]),
    verbose=False,
)


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def summarize(samples: list[float]) -> dict[str, Any]:
    return {
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "samples": [round(s, 3) for s in samples],
    }


def busy_cpu_seconds() -> float | None:
    """CPU seconds spent by the whole machine (Linux /proc/stat), to tell others' load from ours."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def other_load(start: tuple[float | None, float], end: tuple[float | None, float], wall: float) -> float | None:
    """Average number of cores used by other processes between two (machine, own) CPU readings."""
    if start[0] is None or end[0] is None or wall <= 0:
        return None
    return round(max(0.0, (end[0] - start[0]) - (end[1] - start[1])) / wall, 2)


def cpu_readings() -> tuple[float | None, float]:
    own = os.times()
    return busy_cpu_seconds(), own.user + own.system


def write_images(path: str, count: int) -> None:
    """``count`` JPEG images of 400x300 with smooth structure and noise, as a .rec file."""
    rng = np.random.RandomState(0)
    yy, xx = np.mgrid[0:300, 0:400].astype(np.float32)
    with recordio.MXRecordIO(path, "w") as rec:
        for i in range(count):
            base = np.stack([yy * (0.5 + i % 3), xx * 0.7, (yy + xx) * 0.4 + 20 * i], axis=2)
            img = (base % 256 + rng.randint(0, 40, size=base.shape)).clip(0, 255).astype(np.uint8)
            rec.write(recordio.pack_img(recordio.IRHeader(0, float(i % 10), i, 0), img, quality=90))


def run_iterator(path: str, threads: int) -> tuple[float, int]:
    """Seconds for one epoch from construction to the last batch, and the image count."""
    start = time.perf_counter()
    it = ImageRecordIter(path_imgrec=path, preprocess_threads=threads, **PIPELINE)
    images = 0
    for batch in it:
        batch.data[0].wait_to_read()
        images += batch.data[0].shape[0] - batch.pad
    elapsed = time.perf_counter() - start
    it.close()
    return elapsed, images


def run_pillow_loop(path: str) -> tuple[float, int]:
    """The same work written plainly: one image after another on this thread."""
    rng = np.random.RandomState(0)
    start = time.perf_counter()
    images, batch = 0, []
    mult = np.float32(1.0) / STD
    with recordio.MXRecordIO(path, "r") as rec:
        while (record := rec.read()) is not None:
            _, payload = recordio.unpack(record)
            img = Image.open(io.BytesIO(payload)).convert("RGB")
            w, h = img.size
            img = img.resize((256 * w // h, 256) if w > h else (256, 256 * h // w), Image.Resampling.BILINEAR)
            pixels = np.asarray(img)
            y = rng.randint(0, pixels.shape[0] - 224 + 1)
            x = rng.randint(0, pixels.shape[1] - 224 + 1)
            crop = pixels[y : y + 224, x : x + 224]
            if rng.rand() < 0.5:
                crop = crop[:, ::-1]
            batch.append(((crop.astype(np.float32) - MEAN) * mult).transpose(2, 0, 1))
            images += 1
            if len(batch) == 32:
                np.stack(batch)
                batch = []
    if batch:
        np.stack(batch)
    return time.perf_counter() - start, images


def run_mxnet(python: str, path: str, threads: int) -> tuple[float, int]:
    """One epoch of MXNet 1.9.1's ImageRecordIter on ``path`` (peers/mxnet_image_iter.py)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "mxnet_image_iter.py")
    command = [python, script, path, "--threads", str(threads), "--pipeline", json.dumps(PIPELINE)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the MXNet peer failed: {done.stderr[-2000:]}")
    result = json.loads(done.stdout.splitlines()[-1])
    return result["seconds"], result["images"]


def build_gil_meter(folder: str) -> str:
    """Compile benchmarks/gil_meter.c into ``folder``; the path of the shared library."""
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gil_meter.c")
    library = os.path.join(folder, "gil_meter.so")
    command = ["cc", "-O2", "-shared", "-fPIC", "-o", library, source, "-ldl"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"--serial-fraction needs a C compiler (cc): {done.stderr[-2000:]}")
    return library


def measure_serial(path: str, threads: int, epochs: int) -> None:
    """In the child that preloads the meter: CPU and GIL-held CPU per image over ``epochs`` epochs."""
    meter = ctypes.CDLL(None)
    try:
        meter.gil_meter_released_ns.restype = meter.gil_meter_releases.restype = ctypes.c_longlong
    except AttributeError:
        raise SystemExit(
            "--meter-child runs with LD_PRELOAD=gil_meter.so (no gil_meter_released_ns here): "
            "use --serial-fraction, which builds the meter and starts the child"
        ) from None
    run_iterator(path, threads)  # warm up
    cpu, released, releases = time.process_time(), meter.gil_meter_released_ns(), meter.gil_meter_releases()
    images = sum(run_iterator(path, threads)[1] for _ in range(epochs))
    cpu = time.process_time() - cpu
    held = cpu - (meter.gil_meter_released_ns() - released) / 1e9
    releases = meter.gil_meter_releases() - releases
    print(json.dumps({"cpu_us": cpu / images * 1e6, "gil_held_us": held / images * 1e6, "serial": held / cpu,
                      "releases": releases / images}))  # fmt: skip


def run_serial(library: str, path: str, threads: int, epochs: int, child: str = "--meter-child") -> Any:
    env = dict(os.environ, LD_PRELOAD=library)
    command = [sys.executable, os.path.abspath(__file__), child, path, str(threads), str(epochs)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the GIL meter run failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


# the steps --phases measures: (name, module, attribute path); thread totals wrap each thread's main function
PHASES = [
    ("main thread: total", None, None),  # around the epochs, on the calling thread
    ("main: build the iterator", "framework.io.image_record_iter", "ImageRecordIter.__init__"),
    ("main: wait for and hand out a batch", "framework.io.image_record_iter", "ImageRecordIter.iter_next"),
    ("loader thread: total", "framework.io.image_record_iter", "_Loader.run"),
    ("loader: a batch (records, draws, arrays, submission)", "framework.io.image_record_iter", "_Loader.start_batch"),
    ("loader: read a record", "framework.recordio", "read_record_at"),
    ("worker threads: total", "framework.io.piece_workers", "_run_pieces"),
    ("worker: a piece", "framework.io.record_augmenter", "RecordAugmenter.process"),
    ("worker: unpack the header", "framework.recordio", "unpack"),
    ("worker: decode", "framework.io.record_augmenter", "decode_record_pixels"),
    ("worker: crop, mirror and horizontal pass", "framework.io.record_augmenter", "RecordAugmenter._resize_window"),
    ("worker: vertical pass of the piece", "framework.io.pixels", "BilinearResizer.finish"),
    ("worker: normalise into the batch", "framework.io.record_augmenter", "RecordAugmenter._normalise"),
]


def measure_phases(path: str, threads: int, epochs: int) -> None:
    """In the child that preloads the meter: CPU, GIL-held CPU, releases and calls per image of each step."""
    meter = ctypes.PyDLL(None)  # PyDLL: reading the meter must not release the GIL itself
    try:
        meter.gil_meter_thread_released_ns.restype = meter.gil_meter_thread_releases.restype = ctypes.c_longlong
    except AttributeError:
        raise SystemExit("--phases-child runs with LD_PRELOAD=gil_meter.so: use --phases") from None

    def reading() -> tuple[int, int, int]:
        return time.thread_time_ns(), meter.gil_meter_thread_released_ns(), meter.gil_meter_thread_releases()

    totals: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])  # cpu, released, releases, calls
    lock = threading.Lock()

    def account(name: str, start: tuple[int, int, int]) -> None:
        end = reading()
        with lock:
            total = totals[name]
            for k in range(3):
                total[k] += end[k] - start[k]
            total[3] += 1

    def wrapped(name: str, function: Any) -> Any:
        @functools.wraps(function)
        def step(*args: Any, **kwargs: Any) -> Any:
            start = reading()
            try:
                return function(*args, **kwargs)
            finally:
                account(name, start)

        return step

    for name, module_name, attribute in PHASES:
        if module_name is None:
            continue
        owner: Any = importlib.import_module(module_name)
        *outer, last = attribute.split(".")
        for part in outer:
            owner = getattr(owner, part)
        setattr(owner, last, wrapped(name, getattr(owner, last)))
    run_iterator(path, threads)  # warm up
    totals.clear()
    start = reading()
    images = sum(run_iterator(path, threads)[1] for _ in range(epochs))
    account(PHASES[0][0], start)
    per_image = {
        name: {
            "cpu_us": cpu / images / 1e3,
            "gil_held_us": (cpu - released) / images / 1e3,
            "releases": releases / images,
            "calls": calls / images,
        }
        for name, (cpu, released, releases, calls) in totals.items()
    }
    print(json.dumps(per_image))


def phase_records(path: str, folder: str) -> None:
    """Emit the per-step breakdown with 1 and 2 threads (one child each, 2 epochs)."""
    library = build_gil_meter(folder)
    for threads in (1, 2):
        steps = run_serial(library, path, threads, 2, child="--phases-child")
        for name, _, _ in PHASES:
            if name not in steps:
                continue
            figures = steps[name]
            emit(
                {
                    "workload": "image_pipeline",
                    "engine": "ImageRecordIter",
                    "case": f"phase_threads{threads}",
                    "phase": name,
                    "unit": "us/image",
                    "cpu_us_per_image": round(figures["cpu_us"], 1),
                    "gil_held_us_per_image": round(figures["gil_held_us"], 1),
                    "gil_releases_per_image": round(figures["releases"], 2),
                    "calls_per_image": round(figures["calls"], 3),
                }
            )


def serial_records(path: str, folder: str, rounds: int) -> None:
    """Emit the serial fraction of the pipeline with 1 and 2 threads (median over ``rounds`` children)."""
    library = build_gil_meter(folder)
    for threads in (1, 2):
        runs = [run_serial(library, path, threads, epochs=2) for _ in range(rounds)]
        serial = [r["serial"] for r in runs]
        emit(
            {
                "workload": "image_pipeline",
                "engine": "ImageRecordIter",
                "case": f"serial_fraction_threads{threads}",
                "unit": "fraction",
                **summarize(serial),
                "ratios": {"amdahl_2_thread_limit": round(2 / (1 + statistics.median(serial)), 3)},
                "gil_held_us_per_image": round(statistics.median(r["gil_held_us"] for r in runs), 1),
                "cpu_us_per_image": round(statistics.median(r["cpu_us"] for r in runs), 1),
                "gil_releases_per_image": round(statistics.median(r["releases"] for r in runs), 1),
            }
        )


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--meter-child":
        measure_serial(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    if len(sys.argv) == 5 and sys.argv[1] == "--phases-child":
        measure_phases(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="64 images, 3 rounds")
    parser.add_argument("--images", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--mxnet-python", help="an interpreter with mxnet 1.9.1, to measure it in the same run")
    parser.add_argument("--serial-fraction", action="store_true", help="GIL-held CPU per image (needs cc)")
    parser.add_argument("--phases", action="store_true", help="GIL-held CPU per image by step (needs cc)")
    args = parser.parse_args()
    count = args.images or (64 if args.quick else 256)
    rounds = args.rounds or (3 if args.quick else 7)
    cases = {
        "threads1": lambda p: run_iterator(p, 1),
        "threads2": lambda p: run_iterator(p, 2),
        "pillow_loop": run_pillow_loop,
    }
    if args.mxnet_python:
        python = args.mxnet_python
        cases["mxnet_threads1"] = lambda p: run_mxnet(python, p, 1)
        cases["mxnet_threads2"] = lambda p: run_mxnet(python, p, 2)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bench.rec")
        write_images(path, count)
        run_iterator(path, 2)  # warm up: imports, page cache, allocator pools
        seconds: dict[str, list[float]] = {name: [] for name in cases}
        order = list(cases)
        before, start = cpu_readings(), time.perf_counter()
        for r in range(rounds):
            for name in order[r % len(order) :] + order[: r % len(order)]:
                elapsed, images = cases[name](path)
                assert images == count, (name, images, count)
                seconds[name].append(elapsed)
        others = other_load(before, cpu_readings(), time.perf_counter() - start)
        if args.serial_fraction:
            serial_records(path, folder, rounds)
        if args.phases:
            phase_records(path, folder)
    rates = {name: [count / s for s in samples] for name, samples in seconds.items()}
    medians = {name: statistics.median(r) for name, r in rates.items()}
    for name, engine in (("threads1", "ImageRecordIter"), ("threads2", "ImageRecordIter"), ("pillow_loop", "Pillow")):
        peer = f"mxnet_{name}"
        emit(
            {
                **({"peers": {"mxnet": medians[peer]}} if peer in medians else {}),
                "workload": "image_pipeline",
                "engine": engine,
                "case": name,
                "unit": "images/s",
                **summarize(rates[name]),
                "ratios": {
                    f"vs_{other}": round(medians[name] / medians[other], 3) for other in medians if other != name
                },
                "images": count,
                "rounds": rounds,
                "cpus": os.cpu_count(),
            }
        )
    if args.mxnet_python:  # MXNet's own 2-over-1 speed-up, for comparison
        mx_paired = [t1 / t2 for t1, t2 in zip(seconds["mxnet_threads1"], seconds["mxnet_threads2"], strict=True)]
        emit(
            {
                "workload": "image_pipeline",
                "engine": "mxnet ImageRecordIter",
                "case": "mxnet_speedup_2v1",
                "unit": "x",
                **summarize(mx_paired),
                "ratios": {},
            }
        )
    paired = [t1 / t2 for t1, t2 in zip(seconds["threads1"], seconds["threads2"], strict=True)]
    emit(
        {
            "workload": "image_pipeline",
            "engine": "ImageRecordIter",
            "case": "speedup_2v1",
            "unit": "x",
            **summarize(paired),
            "ratios": {
                "target": TARGET_SPEEDUP,
                "threads2_vs_pillow_loop": round(medians["threads2"] / medians["pillow_loop"], 3),
            },
            "meets_target": statistics.median(paired) >= TARGET_SPEEDUP,
            "other_processes_cores": others,  # load from other processes during the run (noise)
        }
    )


if __name__ == "__main__":
    main()

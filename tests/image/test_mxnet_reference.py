"""MXLab's ``mx.image`` against MXNet 1.9.1's, on the data committed in tests/data/mxnet_1_9_1/image/.

The script there (run with MXNet) made ten PNGs, packed them into ``images.rec`` and saved
the ImageIter batches of several augmenter pipelines. Its functions take the library as an
argument, so here the same pipelines run with MXLab, on the same files. PNG decodes
identically; nearest and shrinking bilinear resizes reproduce OpenCV exactly; bicubic,
area, Lanczos and enlarging bilinear resizes round from double precision where OpenCV
rounds from fixed point, so they are compared within one grey level.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import framework as mx

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "image"
SCRIPT = DATA / "make_image_reference.py"


def load_script():
    spec = importlib.util.spec_from_file_location("make_image_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script():
    return load_script()


@pytest.fixture(scope="module")
def reference():
    with np.load(DATA / "reference.npz") as data:
        return dict(data)


@pytest.fixture(scope="module")
def mxlab_arrays(script):
    arrays: dict = {}
    script.run_pipelines(mx, str(DATA), arrays)
    script.run_functions(mx, str(DATA), arrays)
    script.run_record_iter(mx, str(DATA), arrays)
    return arrays


def test_the_committed_inputs_are_what_the_script_writes(script, tmp_path, monkeypatch):
    # the inputs are written by plain NumPy + zlib, so MXLab's recordio writes the same bytes
    script.write_inputs(mx, str(tmp_path))
    for name in ["images.rec", "images.lst", *(f"images/img_{k}.png" for k in range(len(script.SIZES)))]:
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name


# tolerance in grey levels (after normalisation: in units of std): 0 = bit-exact
PIPELINE_TOLERANCE = {
    "bilinear_center": 1e-5,
    "create_default": 1.01 / 57.0,  # bicubic resize: within one level of OpenCV's rounding (in units of std)
    "force_nearest": 0.0,
    "discard": 0.0,
    "roll_over": 0.0,
    "seeded_random": 1.31,  # enlarging bilinear: one level at the borders, times the brightness factor
    "imglist_multilabel": 0.0,
}


@pytest.mark.parametrize("name", sorted(PIPELINE_TOLERANCE))
def test_image_iter_batches_match_mxnet(name, reference, mxlab_arrays):
    for part in ("label", "pad"):
        np.testing.assert_array_equal(mxlab_arrays[f"{name}/{part}"], reference[f"{name}/{part}"], err_msg=part)
    ours, theirs = mxlab_arrays[f"{name}/data"], reference[f"{name}/data"]
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=PIPELINE_TOLERANCE[name])


def test_decoding_matches_opencv_for_png(reference, mxlab_arrays):
    np.testing.assert_array_equal(mxlab_arrays["decoded/img_3"], reference["decoded/img_3"])
    # grayscale conversion: Pillow's and OpenCV's luma weights round differently by at most one level
    gray_ours, gray_theirs = mxlab_arrays["gray"].astype(int), reference["gray"].astype(int)
    assert gray_ours.shape == gray_theirs.shape
    assert np.abs(gray_ours - gray_theirs).max() <= 1


@pytest.mark.parametrize(
    ("key", "tolerance"),
    [
        ("imresize/shrink/0", 0),
        ("imresize/grow/0", 0),
        ("imresize/shrink/1", 0),
        ("imresize/grow/1", 1),
        ("imresize/shrink/2", 1),
        ("imresize/grow/2", 1),
        ("imresize/shrink/3", 1),
        ("imresize/grow/3", 1),
        ("imresize/shrink/4", 1),
        ("imresize/grow/4", 1),
        ("resize_short/20", 0),
        ("fixed_crop", 0),
    ],
)
def test_resizing_matches_opencv(key, tolerance, reference, mxlab_arrays):
    ours, theirs = mxlab_arrays[key].astype(int), reference[key].astype(int)
    assert ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() <= tolerance


@pytest.mark.parametrize("key", ["imrotate/30", "imrotate/zoom_in", "imrotate/zoom_out", "imrotate/batch"])
def test_rotation_matches_mxnet(key, reference, mxlab_arrays):
    np.testing.assert_allclose(mxlab_arrays[key], reference[key], rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize(("name", "levels"), [("pad", 0), ("rotate90", 0), ("rotate30", 8), ("crop_size", 0)])
def test_image_record_iter_augmentations_match_mxnet(name, levels, reference, mxlab_arrays):
    # a warp by a non-right angle is computed in float; OpenCV quantises the sampling positions to
    # 1/32 pixel, which moves a sharp edge by a few levels
    ours, theirs = mxlab_arrays[f"record_iter/{name}"], reference[f"record_iter/{name}"]
    assert ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() <= levels
    assert np.abs(ours - theirs).mean() < 0.5


@pytest.mark.skipif(not os.environ.get("MXNET_PYTHON"), reason="set MXNET_PYTHON to an interpreter with MXNet 1.9.1")
def test_the_script_reproduces_the_committed_data(tmp_path):
    subprocess.run([os.environ["MXNET_PYTHON"], str(SCRIPT), str(tmp_path)], check=True, timeout=600)
    with np.load(tmp_path / "reference.npz") as fresh, np.load(DATA / "reference.npz") as committed:
        assert sorted(fresh.files) == sorted(committed.files)
        for key in committed.files:
            np.testing.assert_array_equal(fresh[key], committed[key], err_msg=key)

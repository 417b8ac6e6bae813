"""MXLab's detection pipeline against MXNet 1.9.1's, on the data committed in tests/data/mxnet_1_9_1/image_det/.

The script there (run with MXNet) packed eight PNGs with 1-3 boxes each into ``det.rec`` and saved
ImageDetIter batches and ImageDetRecordIter batches; its functions take the library as an
argument, so here the same pipelines run with MXLab. The seeded random pipelines draw their
crop and pad proposals from Python's ``random`` in MXNet's order, so even their labels agree
exactly; pixels differ only where an enlarging bilinear resize rounds differently (one level).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import framework as mx

DATA = Path(__file__).resolve().parents[1] / "data" / "mxnet_1_9_1" / "image_det"
SCRIPT = DATA / "make_det_reference.py"


def load_script():
    spec = importlib.util.spec_from_file_location("make_det_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script():
    return load_script()


@pytest.fixture(scope="module")
def reference():
    with np.load(DATA / "det_reference.npz") as data:
        return dict(data)


@pytest.fixture(scope="module")
def mxlab_arrays(script):
    arrays: dict = {}
    script.run_pipelines(mx, str(DATA), arrays)
    script.run_functions(mx, str(DATA), arrays)
    return arrays


@pytest.fixture(scope="module")
def record_arrays(script):
    arrays: dict = {}
    script.run_record_iter(mx, str(DATA), arrays)
    return arrays


def test_the_committed_inputs_are_what_the_script_writes(script, tmp_path):
    script.write_inputs(mx, str(tmp_path))
    for name in ("det.rec", "det.idx", "det.lst"):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name


# tolerance on the pixels (after normalisation: in units of std); labels and pads must be equal
PIPELINE_TOLERANCE = {
    "force": 0.0,
    "flip": 0.0,
    "create_default": 1.01 / 57.0,  # an enlarging bilinear resize: one level of OpenCV's rounding
    "discard": 0.0,
    "roll_over": 0.0,
    "imglist": 0.0,
    "seeded_crop": 1.0,
    "seeded_pad_mirror": 1.0,
}


@pytest.mark.parametrize("name", sorted(PIPELINE_TOLERANCE))
def test_image_det_iter_batches_match_mxnet(name, reference, mxlab_arrays):
    for part in ("label_shape", "label", "pad"):
        np.testing.assert_array_equal(mxlab_arrays[f"{name}/{part}"], reference[f"{name}/{part}"], err_msg=part)
    ours, theirs = mxlab_arrays[f"{name}/data"], reference[f"{name}/data"]
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=PIPELINE_TOLERANCE[name])


@pytest.mark.parametrize("key", ["border/0", "border/1", "border/2", "border/3", "border/4", "border/value"])
def test_copy_make_border_matches_opencv(key, reference, mxlab_arrays):
    np.testing.assert_array_equal(mxlab_arrays[key], reference[key])


@pytest.mark.parametrize(
    ("name", "levels"),
    [("plain", 0), ("pad_width", 0), ("mirror", 0), ("fit", 1), ("shrink", 1), ("round_batch_off", 0)],
)
def test_image_det_record_iter_matches_mxnet(name, levels, reference, record_arrays):
    pads = reference[f"record/{name}/pad"]
    np.testing.assert_array_equal(record_arrays[f"record/{name}/pad"], pads)
    for part, tolerance in (("label", 0), ("data", levels)):
        ours, theirs = record_arrays[f"record/{name}/{part}"], reference[f"record/{name}/{part}"]
        assert ours.shape == theirs.shape
        for batch, pad in enumerate(pads):  # padded slots hold whatever MXNet's buffer held before
            real = len(ours[batch]) - pad
            np.testing.assert_allclose(
                ours[batch][:real], theirs[batch][:real], rtol=1e-6, atol=tolerance, err_msg=f"{part} of batch {batch}"
            )


@pytest.mark.parametrize(
    "name", ["ImageRecordUInt8Iter", "ImageRecordInt8Iter", "ImageRecordIter_v1", "ImageRecordUInt8Iter_v1"]
)
def test_image_record_iter_variants_match_mxnet(name, script, reference):
    arrays: dict = {}
    script.run_record_variants(mx, arrays, (name,))
    for part in ("data", "label"):
        ours, theirs = arrays[f"variant/{name}/{part}"], reference[f"variant/{name}/{part}"]
        assert ours.dtype == theirs.dtype, part
        np.testing.assert_array_equal(ours, theirs, err_msg=part)


def test_image_record_iter_mean_img_and_imglist_match_mxnet(script, reference, tmp_path):
    arrays: dict = {}
    script.run_record_params(mx, str(tmp_path), arrays)
    keys = ["params/mean_img/mean", "params/mean_img/data", "params/imglist/label"]
    keys += ["params/det_mean_img/mean", "params/det_mean_img/data", "params/det_imglist/label"]
    for key in keys:
        np.testing.assert_allclose(arrays[key], reference[key], rtol=1e-6, atol=1e-4, err_msg=key)


@pytest.mark.skipif(not os.environ.get("MXNET_PYTHON"), reason="set MXNET_PYTHON to an interpreter with MXNet 1.9.1")
def test_the_script_reproduces_the_committed_data(tmp_path):
    subprocess.run([os.environ["MXNET_PYTHON"], str(SCRIPT), str(tmp_path)], check=True, timeout=600)
    with np.load(tmp_path / "det_reference.npz") as fresh, np.load(DATA / "det_reference.npz") as committed:
        assert sorted(fresh.files) == sorted(committed.files)
        for key in committed.files:
            np.testing.assert_array_equal(fresh[key], committed[key], err_msg=key)
    assert (tmp_path / "iterator_params.json").read_text() == (DATA / "iterator_params.json").read_text()

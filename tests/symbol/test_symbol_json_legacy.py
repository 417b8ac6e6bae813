"""Symbol JSON in older MXNet layouts upgrades on load exactly as MXNet 1.9.1's loader upgrades it.

tests/data/mxnet_1_9_1/legacy_symbols/ holds hand-written files in the 0.8, 0.9.3 and 1.0
layouts and expected.json, what MXNet 1.9.1 made of them (make_legacy_symbols.py there): the
upgraded graph (``tojson``), names, attributes, shapes, and outputs, gradients and updated
moving statistics on fixed inputs. ``run`` of that script is executed here unchanged on MXLab.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from needs import needs_env_path

import framework as mx
import framework.symbol as sym

DATA = Path(__file__).resolve().parent.parent / "data" / "mxnet_1_9_1" / "legacy_symbols"
EXPECTED = json.loads((DATA / "expected.json").read_text())
_spec = importlib.util.spec_from_file_location("make_legacy_symbols", DATA / "make_legacy_symbols.py")
reference_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference_script)
NAMES = list(reference_script.SHAPES)
_runs: dict[str, dict] = {}


def mxlab_run(name: str) -> dict:
    if name not in _runs:
        _runs[name] = json.loads(json.dumps(reference_script.run(mx, name)))  # tuples -> lists, as stored
    return _runs[name]


def as_array(values: list) -> np.ndarray:
    return np.array([float(v) for v in values])


def test_every_file_is_in_an_old_layout():
    docs = {name: json.loads((DATA / f"{name}-symbol.json").read_text()) for name in NAMES}
    assert "attrs" not in docs["v0_8_convnet"] and all("attrs" not in n for n in docs["v0_8_convnet"]["nodes"])
    assert docs["v0_9_3_bn"]["attrs"]["mxnet_version"] == ["int", 903]
    assert docs["v1_0_mlp"]["attrs"]["mxnet_version"] == ["int", 10000]


@pytest.mark.parametrize("name", NAMES)
def test_names_attributes_and_shapes_match_mxnet(name):
    want, got = EXPECTED[name], mxlab_run(name)
    for key in ("arguments", "auxiliary_states", "outputs", "attr_dict", "shapes"):
        assert got[key] == want[key], key


@pytest.mark.parametrize("name", NAMES)
def test_upgraded_graph_is_the_one_mxnet_writes(name):
    want, got = dict(EXPECTED[name]["tojson"]), dict(mxlab_run(name)["tojson"])
    if any(node["op"] == "Pooling" for node in want["nodes"]):
        # MXNet's oneDNN build gives max Pooling a hidden second output (its workspace), which
        # shifts node_row_ptr; MXLab's Pooling has one output, as MXNet's plain build.
        want.pop("node_row_ptr"), got.pop("node_row_ptr")
    assert got == want


@pytest.mark.parametrize("name", NAMES)
def test_bound_outputs_gradients_and_statistics_match_mxnet(name):
    want, got = EXPECTED[name], mxlab_run(name)
    for phase in ("inference", "training"):
        assert len(got[phase]) == len(want[phase])
        for mine, theirs in zip(got[phase], want[phase], strict=True):
            np.testing.assert_allclose(as_array(mine), as_array(theirs), rtol=1e-4, atol=1e-5, err_msg=phase)
    for group in ("gradients", "aux_after_training"):
        assert sorted(got[group]) == sorted(want[group])
        for key in want[group]:
            np.testing.assert_allclose(
                as_array(got[group][key]), as_array(want[group][key]), rtol=1e-4, atol=1e-5, err_msg=f"{group} {key}"
            )


def test_specific_upgrades():
    convnet = EXPECTED["v0_8_convnet"]
    # input-prefixed hidden keys move onto that input; plain ones are renamed __key__
    assert convnet["attr_dict"]["fc1_weight"]["__lr_mult__"] == "2"
    assert convnet["attr_dict"]["fc1"]["__ctx_group__"] == "stage2"
    assert convnet["auxiliary_states"] == ["bn1_moving_mean", "bn1_moving_var"]  # created by the upgrade
    bn = EXPECTED["v0_9_3_bn"]
    assert bn["attr_dict"]["bn_moving_var"]["__init__"] == '["one", {}]'  # added from 0.9.4 on
    pick = next(node for node in bn["tojson"]["nodes"] if node["name"] == "pick")
    assert "axis" not in pick.get("attrs", {})  # axis=-1 meant "no axis" before 0.9.5
    assert bn["shapes"][1] == [[3, 6], [1]]
    mlp = EXPECTED["v1_0_mlp"]
    assert mlp["attr_dict"]["fc1_weight"] == {
        "__lr_mult__": "2.0",
        "__wd_mult__": "0.5",
        "lr_mult": "2.0",
        "wd_mult": "0.5",
    }


def test_upgraded_files_round_trip_unchanged():
    for name in NAMES:
        text = sym.load(str(DATA / f"{name}-symbol.json")).tojson()
        assert sym.load_json(text).tojson() == text


MXNET_LOADS_OURS = """
import json, sys
import mxnet as mx
result = {}
for name, text in json.load(sys.stdin).items():
    s = mx.sym.load_json(text)
    result[name] = [json.loads(s.tojson()), s.list_arguments(), s.list_auxiliary_states(), s.attr_dict()]
print(json.dumps(result))
"""


def test_real_mxnet_loads_the_upgraded_json_we_write():
    mxnet_python = needs_env_path("MXNET_PYTHON", "it names an interpreter with mxnet 1.9.1 installed")
    cases = {name: sym.load(str(DATA / f"{name}-symbol.json")).tojson() for name in NAMES}
    done = subprocess.run(
        [mxnet_python, "-c", MXNET_LOADS_OURS], input=json.dumps(cases), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for name in NAMES:
        graph, args, aux, attrs = result[name]
        want = EXPECTED[name]
        assert (args, aux, attrs) == (want["arguments"], want["auxiliary_states"], want["attr_dict"]), name
        assert graph["nodes"] == want["tojson"]["nodes"], name

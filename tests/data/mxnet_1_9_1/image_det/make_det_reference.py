"""Write the detection reference data (``mx.image.ImageDetIter``, ``mx.io.ImageDetRecordIter``) with MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/image_det/make_det_reference.py [OUT_DIR]

It writes into OUT_DIR (default: this folder):

- ``det.rec`` / ``det.idx`` and ``det.lst``: eight of the small PNGs of ../image (same pattern
  code), each with 1-3 boxes in MXNet's detection label layout ``[2, 5, obj0, obj1, ...]``
  (``obj = [class, xmin, ymin, xmax, ymax]``); the ``.lst`` refers to ``../image/images/``;
- ``det_reference.npz``: ImageDetIter batches (data, label, pad) for deterministic pipelines and
  for seeded random ones (the crop/pad proposals come from Python's ``random``), ``copyMakeBorder``
  outputs, and ImageDetRecordIter batches with deterministic settings;
- ``iterator_params.json``: the parameter names MXNet's record iterators document.

tests/image/test_det_mxnet_reference.py runs the same functions with MXLab (``import framework as mx``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from types import ModuleType

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGE_DIR = os.path.join(os.path.dirname(HERE), "image")
COUNT = 8


def image_script() -> ModuleType:
    """The classification script next door: its image pattern and PNG encoder."""
    spec = importlib.util.spec_from_file_location(
        "make_image_reference", os.path.join(IMAGE_DIR, "make_image_reference.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def boxes(k: int) -> list[list[float]]:
    """1-3 objects for image ``k``: fractions on a 1/8 grid, so every library computes them exactly."""
    objects = []
    for j in range(1 + k % 3):
        x0, y0 = ((k + 2 * j) % 4) / 8, ((k + 3 * j) % 4) / 8
        objects.append([float((k + j) % 4), x0, y0, x0 + (3 + j) / 8, y0 + (4 - j % 2) / 8])
    return objects


def det_label(k: int) -> list[float]:
    return [2.0, 5.0, *(v for obj in boxes(k) for v in obj)]


def write_inputs(mx: ModuleType, out: str) -> None:
    script = image_script()
    record = mx.recordio.MXIndexedRecordIO(os.path.join(out, "det.idx"), os.path.join(out, "det.rec"), "w")
    lines = []
    for k in range(COUNT):
        height, width = script.SIZES[k]
        png = script.encode_png(script.make_image(k, height, width))
        label = det_label(k)
        record.write_idx(k, mx.recordio.pack(mx.recordio.IRHeader(0, np.array(label, np.float32), k, 0), png))
        fields = "\t".join(f"{v:g}" for v in label)
        lines.append(f"{k}\t{fields}\timages/img_{k}.png\n")
    record.close()
    with open(os.path.join(out, "det.lst"), "w") as f:
        f.writelines(lines)


MEAN = np.array([123.68, 116.28, 103.53])
STD = np.array([58.395, 57.12, 57.375])


def pipelines(mx: ModuleType) -> dict:
    """name -> (ImageDetIter keyword arguments, seed or None, epochs)."""
    img = mx.image
    force = img.DetBorrowAug(img.ForceResizeAug((16, 16), interp=1))
    cast = img.DetBorrowAug(img.CastAug())
    return {
        "force": (dict(aug_list=[force, cast]), None, 1),
        "flip": (dict(aug_list=[img.DetHorizontalFlipAug(1.0), force, cast]), None, 1),
        "create_default": (dict(resize=20, mean=True, std=True, inter_method=1), None, 1),
        "discard": (dict(aug_list=[force, cast], last_batch_handle="discard", batch_size=3), None, 2),
        "roll_over": (dict(aug_list=[force, cast], last_batch_handle="roll_over", batch_size=3), None, 2),
        "imglist": (
            dict(path_imgrec=None, path_imgidx=None, path_imglist="det.lst", aug_list=[force, cast]),
            None,
            1,
        ),
        "seeded_crop": (
            dict(
                aug_list=[
                    img.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5], area_range=(0.3, 1.0)),
                    force,
                    cast,
                ],
                shuffle=True,
            ),
            5,
            2,
        ),
        "seeded_pad_mirror": (
            dict(rand_pad=0.7, rand_mirror=True, inter_method=1, area_range=(0.05, 2.0), pad_val=(10, 20, 30)),
            11,
            2,
        ),
    }


def run_pipelines(mx: ModuleType, out: str, arrays: dict) -> None:
    script = image_script()
    for name, (kwargs, seed, epochs) in pipelines(mx).items():
        args = script.pipeline_args(out, "det", (3, 16, 16), kwargs, image_root=IMAGE_DIR)
        script.seed_random(seed)
        it = mx.image.ImageDetIter(**args)
        arrays[f"{name}/label_shape"] = np.array(it.provide_label[0][1])
        script.store_batches(script.run_epochs(it, epochs), name, arrays)


def run_functions(mx: ModuleType, out: str, arrays: dict) -> None:
    with open(os.path.join(IMAGE_DIR, "images", "img_3.png"), "rb") as f:
        src = mx.image.imdecode(f.read())
    for border in range(5):
        arrays[f"border/{border}"] = mx.image.copyMakeBorder(src, 2, 3, 4, 1, type=border, values=(7, 8, 9)).asnumpy()
    arrays["border/value"] = mx.image.copyMakeBorder(src, 1, 0, 0, 2, value=200).asnumpy()


RECORD_CASES = {
    "plain": dict(data_shape=(3, 16, 16)),
    "pad_width": dict(data_shape=(3, 16, 16), label_pad_width=20, label_pad_value=-2, mean_r=120, std_r=50),
    "mirror": dict(data_shape=(3, 12, 20), rand_mirror_prob=1.0, mean_g=10, scale=0.5),
    "fit": dict(data_shape=(3, 40, 40), resize_mode="fit"),
    "shrink": dict(data_shape=(3, 24, 24), resize_mode="shrink", resize=26),
    "round_batch_off": dict(data_shape=(3, 16, 16), batch_size=3, round_batch=False, label_pad_width=18),
}


def run_record_iter(mx: ModuleType, out: str, arrays: dict) -> None:
    """ImageDetRecordIter with its deterministic settings (force resize, mirror always, normalisation)."""
    script = image_script()
    for name, case in RECORD_CASES.items():
        kwargs = {"batch_size": 4, **case}
        it = mx.io.ImageDetRecordIter(path_imgrec=os.path.join(out, "det.rec"), preprocess_threads=1, **kwargs)
        script.store_batches(list(it), f"record/{name}", arrays)


VARIANT_CASES = {
    "ImageRecordUInt8Iter": dict(mean_r=100, std_g=2),
    "ImageRecordInt8Iter": dict(mean_r=100, mean_b=20, std_g=0.5),
    "ImageRecordIter_v1": dict(mean_r=100),
    "ImageRecordUInt8Iter_v1": dict(),
}


def run_record_variants(mx: ModuleType, arrays: dict, names: tuple[str, ...] = tuple(VARIANT_CASES)) -> None:
    """ImageRecordIter's fixed-dtype and _v1 variants on the classification images (../image/images.rec)."""
    for name in names:
        kwargs = dict(batch_size=4, data_shape=(3, 16, 16), resize=16, preprocess_threads=1, verbose=False)
        it = getattr(mx.io, name)(path_imgrec=os.path.join(IMAGE_DIR, "images.rec"), **kwargs, **VARIANT_CASES[name])
        batch = next(iter(it))
        arrays[f"variant/{name}/data"] = batch.data[0].asnumpy()
        arrays[f"variant/{name}/label"] = batch.label[0].asnumpy()


def run_record_params(mx: ModuleType, out: str, arrays: dict) -> None:
    """ImageRecordIter's mean_img (computed and saved when absent, then used) and path_imglist labels."""
    common = dict(path_imgrec=os.path.join(IMAGE_DIR, "images.rec"), batch_size=4, data_shape=(3, 16, 16),
                  resize=16, preprocess_threads=1, verbose=False)  # fmt: skip
    mean_path = os.path.join(out, "mean_tmp.bin")
    if os.path.exists(mean_path):
        os.remove(mean_path)
    it = mx.io.ImageRecordIter(mean_img=mean_path, scale=0.5, std_g=2.0, mean_r=50, **common)
    arrays["params/mean_img/mean"] = mx.nd.load(mean_path)["mean_img"].asnumpy()
    arrays["params/mean_img/data"] = next(iter(it)).data[0].asnumpy()
    os.remove(mean_path)
    lst = os.path.join(IMAGE_DIR, "images.lst")
    it = mx.io.ImageRecordIter(path_imglist=lst, label_width=2, **common)
    arrays["params/imglist/label"] = np.concatenate([b.label[0].asnumpy() for b in it])
    # the detection iterator: a mean image (used only without mean_r/g/b), and relabelling by a .lst
    det = dict(path_imgrec=os.path.join(out if os.path.exists(os.path.join(out, "det.rec")) else HERE, "det.rec"),
               batch_size=4, data_shape=(3, 16, 16), preprocess_threads=1, verbose=False)  # fmt: skip
    it = mx.io.ImageDetRecordIter(mean_img=mean_path, scale=0.5, std_g=2.0, **det)
    arrays["params/det_mean_img/mean"] = mx.nd.load(mean_path)["mean_img"].asnumpy()
    arrays["params/det_mean_img/data"] = next(iter(it)).data[0].asnumpy()
    os.remove(mean_path)
    relabel = os.path.join(out, "relabel_tmp.lst")
    with open(relabel, "w") as f:
        for k in range(COUNT):
            objects = "\t".join(f"{v:g}" for v in [k % 4, 0.125, 0.25, 0.5, 0.75] * (1 + k % 2))
            f.write(f"{k}\t2\t5\t{objects}\tunused.png\n")
    it = mx.io.ImageDetRecordIter(path_imglist=relabel, **det)
    arrays["params/det_imglist/label"] = np.concatenate([b.label[0].asnumpy() for b in it])
    os.remove(relabel)


ITERATORS = ("ImageRecordIter", "ImageRecordIter_v1", "ImageDetRecordIter", "ImageRecordUInt8Iter")


def iterator_parameters(mx: ModuleType) -> dict[str, list[str]]:
    """The parameter names each C++ record iterator's docstring lists (MXNet generates it from the C++ params)."""
    names = {}
    for iterator in ITERATORS:
        doc = getattr(mx.io, iterator).__doc__
        names[iterator] = re.findall(r"^(\w+) : ", doc, re.MULTILINE)
    return names


def main(mx: ModuleType) -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    write_inputs(mx, out)
    arrays: dict = {}
    run_pipelines(mx, out, arrays)
    run_functions(mx, out, arrays)
    run_record_iter(mx, out, arrays)
    run_record_variants(mx, arrays)
    run_record_params(mx, out, arrays)
    np.savez_compressed(os.path.join(out, "det_reference.npz"), **arrays)
    with open(os.path.join(out, "iterator_params.json"), "w") as f:
        json.dump(iterator_parameters(mx), f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    import mxnet

    main(mxnet)

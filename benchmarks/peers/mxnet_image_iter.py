#!/usr/bin/env python3
"""Peer workload: one epoch of MXNet 1.9.1's ``ImageRecordIter`` over a ``.rec`` file.

Run with an interpreter that has ``mxnet`` (see shared/anchors/README.md for the venv)::

    mxvenv/bin/python benchmarks/peers/mxnet_image_iter.py PATH.rec --threads 2 --pipeline '{...}'

``benchmarks/io.py --mxnet-python`` calls it once per round and thread count, alternating
with MXLab's own rounds, with the pipeline parameters MXLab's iterator gets (JSON). The
epoch is timed as io.py times MXLab's: from construction to the last batch's data being
readable. Prints one JSON line: ``{"seconds": ..., "images": ...}``.
"""

from __future__ import annotations

import argparse
import json
import time

import mxnet as mx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--pipeline", required=True, help="the iterator's keyword arguments, as JSON")
    args = parser.parse_args()
    params = json.loads(args.pipeline)
    params["data_shape"] = tuple(params["data_shape"])
    start = time.perf_counter()
    it = mx.io.ImageRecordIter(path_imgrec=args.path, preprocess_threads=args.threads, **params)
    images = 0
    for batch in it:
        batch.data[0].wait_to_read()
        images += batch.data[0].shape[0] - batch.pad
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "images": images}), flush=True)


if __name__ == "__main__":
    main()

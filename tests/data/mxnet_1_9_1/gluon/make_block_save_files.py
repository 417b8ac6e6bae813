"""Write ``Block.save`` references (``-model.json`` + ``-model.params``) with real MXNet 1.9.1.

Run with an interpreter that has ``mxnet==1.9.1``::

    /work/main/.peers/mxvenv/bin/python tests/data/mxnet_1_9_1/gluon/make_block_save_files.py

Two networks, each saved after one call on the fixed input of ``make_gluon_files.py``:

* ``hybrid``: ``build_net`` of ``make_gluon_files.py``, hybridized, so the top block's entry
  holds the traced graph;
* ``plain``: :func:`build_plain` (a ``Sequential`` of Dense layers of unknown input size),
  not hybridized: each Dense traced itself to infer its shapes, so the children's entries
  hold graphs and the top block's none.

``saved-reference.nd`` holds each network's output (``hybrid``, ``plain``). ``plain`` is built
after four throwaway networks, so its saved names (``sequential4_dense0``) differ from those of
a fresh process and the test sees ``load`` rename blocks and parameters.
tests/gluon/test_block_save.py loads the files with MXLab; it never imports MXNet.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("make_gluon_files", os.path.join(HERE, "make_gluon_files.py"))
assert _spec is not None and _spec.loader is not None
gluon_files = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gluon_files)


def build_plain(mx: Any) -> Any:
    """A plain (not hybridizable) container of layers whose input sizes are inferred."""
    nn = mx.gluon.nn
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Flatten(), nn.Dense(5, activation="relu"), nn.Dense(3))
    return net


def main() -> None:
    import mxnet as mx  # noqa: PLC0415 - the tests import this module with MXLab; MXNet only when run

    for _ in range(4):  # names that a fresh process would not give
        gluon_files.build_net(mx)
        build_plain(mx)
    x = mx.nd.array(gluon_files.fixed_input()[0])
    reference = {}
    with mx.name.NameManager():
        hybrid = gluon_files.build_net(mx)
    gluon_files.set_fixed_parameters(mx, hybrid)
    hybrid.hybridize()
    reference["hybrid"] = hybrid(x)
    hybrid.save(os.path.join(HERE, "saved-hybrid"))
    plain = build_plain(mx)
    plain.initialize(mx.init.Normal(0.5))
    reference["plain"] = plain(x)
    plain.save(os.path.join(HERE, "saved-plain"))
    mx.nd.save(os.path.join(HERE, "saved-reference.nd"), reference)


if __name__ == "__main__":
    main()

"""Write the gluon.rnn references with MXNet 1.9.1: run ``python make_rnn_files.py`` here under MXNet.

For each layer in ``LAYERS`` it saves the parameters (``<name>.params``, MXNet's structural
names) and the output on ``x.npy`` (``<name>_out.npy``); tests/gluon/test_rnn_layers.py loads
them into MXLab's layers of the same configuration and compares.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: name -> (class name, keyword arguments); the same configurations are built by the test.
LAYERS = {
    "gru_bidirectional_2layers": ("GRU", {"hidden_size": 5, "num_layers": 2, "bidirectional": True}),
    "lstm_projection": ("LSTM", {"hidden_size": 5, "projection_size": 3}),
    "rnn_tanh_ntc": ("RNN", {"hidden_size": 4, "activation": "tanh", "layout": "NTC"}),
}


def main() -> None:
    import mxnet as mx  # noqa: PLC0415 (only this script, run under MXNet, needs it)

    here = Path(__file__).resolve().parent
    x = np.random.default_rng(0).standard_normal((4, 3, 7)).astype(np.float32)
    np.save(here / "x.npy", x)
    for name, (cls, kwargs) in LAYERS.items():
        layer = getattr(mx.gluon.rnn, cls)(**kwargs)
        layer.initialize(mx.init.Normal(0.5))
        out = layer(mx.nd.array(x))
        layer.save_parameters(str(here / f"{name}.params"))
        np.save(here / f"{name}_out.npy", out.asnumpy())


if __name__ == "__main__":
    main()

"""mx.init.FusedRNN: the fused RNN's packed vector initialised one gate matrix at a time, as MXNet 1.9.1 does."""

from __future__ import annotations

import math

import numpy as np
import pytest

import framework as mx
from framework.initializer import InitializerError
from framework.operator.rnn.layout import RNNShape, packed_slices, unpack


def test_lstm_weights_from_init_and_forget_biases_as_in_mxnet():
    """MXNet 1.9.1 gives this vector: every weight 0.5, biases 0 but the forget gate's (both i2h and h2h)."""
    init = mx.init.FusedRNN(mx.init.Constant(0.5), num_hidden=3, num_layers=1, mode="lstm", forget_bias=2.0)
    arr = mx.nd.zeros(4 * 3 * (2 + 3 + 2))
    init._init_weight(mx.init.InitDesc("lstm_parameters"), arr)
    pieces = unpack(RNNShape("lstm", 1, 3, 2), arr.asnumpy())[(0, 0)]
    assert (pieces["i2h_weight"] == 0.5).all() and (pieces["h2h_weight"] == 0.5).all()
    for bias in (pieces["i2h_bias"], pieces["h2h_bias"]):
        assert bias.tolist() == [0.0] * 3 + [2.0] * 3 + [0.0] * 6


def test_without_init_the_global_initializer_fills_the_weights():
    init = mx.init.FusedRNN(None, 3, 1, "gru")
    arr = mx.nd.zeros(3 * 3 * (2 + 3 + 2))
    init._init_weight(mx.init.InitDesc("gru_parameters", global_init=mx.init.One()), arr)
    values = arr.asnumpy()
    assert (values[: 3 * 3 * 5] == 1).all() and (values[3 * 3 * 5 :] == 0).all()  # MXNet: the same vector
    with pytest.raises(InitializerError, match="global initializer"):
        init._init_weight(mx.init.InitDesc("gru_parameters"), arr)


def test_xavier_sees_one_gate_matrix_at_a_time():
    spec = RNNShape("lstm", 2, 8, 5, bidirectional=True)
    size = packed_slices(spec)[-1].stop
    mx.random.seed(0)
    init = mx.init.FusedRNN(mx.init.Xavier(magnitude=3), 8, 2, "lstm", bidirectional=True)
    arr = mx.nd.zeros(size)
    init(mx.init.InitDesc("rnn_parameters", attrs={"__init__": init.dumps()}), arr)
    weights = unpack(spec, arr.asnumpy())[(1, 1)]["i2h_weight"]  # (4 * 8, 16): four (8, 16) gate matrices
    bound = math.sqrt(3 / ((8 + 16) / 2))
    assert np.abs(weights).max() <= bound and np.abs(weights).max() > 0.8 * bound


def test_dumps_round_trips_and_bad_arguments_are_named():
    init = mx.init.FusedRNN('["uniform", {"scale": 0.1}]', 4, 2, "rnn_tanh", bidirectional=True)
    again = mx.init.create(init.dumps())
    assert isinstance(again, mx.init.FusedRNN) and again == init
    with pytest.raises(InitializerError, match="mode"):
        mx.init.FusedRNN(None, 4, 1, "lstmp")
    with pytest.raises(InitializerError, match="fits no input size"):
        mx.init.FusedRNN(mx.init.One(), 4, 1, "lstm")._init_weight(mx.init.InitDesc("p"), mx.nd.zeros(10))

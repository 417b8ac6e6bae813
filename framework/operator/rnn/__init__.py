"""Recurrent networks as operators: MXNet's fused ``RNN`` and ``_rnn_param_concat``.

One ``RNN`` node runs a whole stack of recurrent layers (vanilla, LSTM or GRU, one or both
directions) over a sequence, with every weight and bias in one packed vector. The family
splits five ways:

* ``layout``: where each weight and bias sits in the packed vector (MXNet's order);
* ``cells``: one layer-direction's recurrence, forward through time and back (BPTT);
* ``reserve``: what the forward pass keeps for the backward pass, as one hidden output;
* ``fused``: the ``RNN`` operator itself (layers, directions, dropout, inference);
* ``param_concat``: ``_rnn_param_concat``, the ``Concat`` Gluon uses to pack the vector.
"""

from __future__ import annotations

from . import cells, fused, layout, param_concat, reserve

__all__ = ["cells", "fused", "layout", "param_concat", "reserve"]

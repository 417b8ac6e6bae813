"""Exercise ``glu``: a gated linear unit as a Gluon ``HybridBlock``.

A gated linear unit (Dauphin et al. 2017) is two Dense layers over the same input, one of
them squashed into a gate between 0 and 1 that scales the other, element by element::

    y = (x W^T + b) * sigmoid(x V^T + c)

with ``x`` of shape (batch, in_units), ``W`` and ``V`` of shape (units, in_units), ``b``
and ``c`` of shape (units,).

Contract:

* ``GLU(units, in_units=0, **kwargs)`` declares four parameters, in this order:
  ``weight`` and ``gate_weight`` of shape ``(units, in_units)``, ``bias`` and
  ``gate_bias`` of shape ``(units,)``, through ``self.params.get``. ``in_units=0`` means
  "unknown until the first call" (deferred initialization): pass
  ``allow_deferred_init=True``. Biases start at zero (``init="zeros"``).
* ``hybrid_forward(F, x, weight, bias, gate_weight, gate_bias)`` computes y using only
  ``F.<operator>`` calls, so that the same code runs imperatively (``F`` is ``mx.nd``) and
  is traced into a graph by ``hybridize()`` (``F`` is ``mx.sym``): no NumPy, no
  ``.asnumpy()``, no Python ``if`` on values.
"""

from __future__ import annotations

from typing import Any

from framework.gluon import HybridBlock


class GLU(HybridBlock):
    """y = (x W^T + b) * sigmoid(x V^T + c), both halves ``units`` wide."""

    def __init__(self, units: int, in_units: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = units
        with self.name_scope():
            # BEGIN SOLUTION declare weight, bias, gate_weight, gate_bias with self.params.get
            self.weight = self.params.get("weight", shape=(units, in_units), allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), init="zeros", allow_deferred_init=True)
            self.gate_weight = self.params.get("gate_weight", shape=(units, in_units), allow_deferred_init=True)
            self.gate_bias = self.params.get("gate_bias", shape=(units,), init="zeros", allow_deferred_init=True)
            # END SOLUTION

    def hybrid_forward(self, F: Any, x: Any, weight: Any, bias: Any, gate_weight: Any, gate_bias: Any) -> Any:
        """The linear half times the sigmoid gate, with F operators only."""
        # BEGIN SOLUTION compute (x W^T + b) * sigmoid(x V^T + c) with F.FullyConnected and F.sigmoid
        linear = F.FullyConnected(x, weight, bias, num_hidden=self.units)
        gate = F.sigmoid(F.FullyConnected(x, gate_weight, gate_bias, num_hidden=self.units))
        return linear * gate
        # END SOLUTION

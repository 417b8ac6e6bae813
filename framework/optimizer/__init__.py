"""``mx.optimizer``: how a gradient becomes a weight update (MXNet 1.x's optimizer API).

An :class:`Optimizer` holds the *rules* of a step: the learning rate (fixed, or from an
``lr_scheduler``), weight decay ``wd``, ``rescale_grad`` (usually ``1 / batch_size``) and
``clip_gradient``, with per-parameter multipliers (``set_lr_mult`` / ``set_wd_mult``). It
knows nothing about which weights exist. Each weight is identified by an *index* (an int,
or a name), and the optimizer is asked two things about it:

* ``create_state(index, weight)``: the extra arrays this rule keeps per weight (SGD's
  momentum, Adam's mean and variance), created once;
* ``update(index, weight, grad, state)``: apply one step, in place.

An update never computes on the Python side: it calls one registered operator
(``sgd_mom_update``, ``adam_update``, ... in framework/operator/tensor/optimizer_ops.py)
with ``out=weight``. That is a single engine push that reads the gradient and writes the
weight and the state, so it is ordered after the backward pass that produced the gradient
and before the next forward pass, without any waiting here.

An :class:`Updater` (``get_updater(optimizer)``) pairs an optimizer with the states of all
weights. It is the callable ``updater(index, grad, weight)`` that a KVStore or a Module calls
for every weight after every batch; its ``get_states`` / ``set_states`` save and restore the
states (MXNet's ``save_optimizer_states`` / ``load_optimizer_states``) as pickled bytes.

Counting updates: ``num_update`` is the largest number of updates applied to any one weight
(``begin_num_update`` to start from). The scheduler sees it; Adam's bias correction uses the
count of the weight being updated.

The package, one module per idea: ``base`` (the :class:`Optimizer` rules, registry and
checks), ``sgd`` (SGD and its relatives that step along the gradient or its sign: SGD, NAG,
Signum, LARS, SGLD, DCASGD), ``adaptive`` (per-element step sizes from running statistics:
Adam, AdaGrad, RMSProp, AdaDelta, Adamax, Nadam, FTML, Ftrl, LAMB), ``contrib``
(``mx.optimizer.contrib.GroupAdaGrad``), ``large_batch`` (LBSGD: warmed-up steps over accumulated
gradients), ``legacy`` (MXNet's leftover names ``ccSGD`` and ``Test``) and ``updater`` (states per weight, saving them).
"""

from __future__ import annotations

import sys

from . import contrib
from .adaptive import FTML, LAMB, AdaDelta, AdaGrad, Adam, Adamax, Ftrl, Nadam, RMSProp
from .base import Optimizer, OptimizerError, create, register
from .large_batch import LBSGD
from .legacy import Test, ccSGD
from .sgd import DCASGD, LARS, NAG, SGD, SGLD, Signum
from .updater import Updater, get_updater

#: MXNet defines every optimizer in one module, mxnet/optimizer/optimizer.py, which scripts
#: import from; here they are spread over the modules above, so that path is the package.
optimizer = sys.modules[__name__]

__all__ = [
    "DCASGD",
    "FTML",
    "LBSGD",
    "LAMB",
    "LARS",
    "NAG",
    "SGD",
    "SGLD",
    "AdaDelta",
    "AdaGrad",
    "Adam",
    "Adamax",
    "Ftrl",
    "Nadam",
    "Optimizer",
    "OptimizerError",
    "RMSProp",
    "Signum",
    "Test",
    "ccSGD",
    "Updater",
    "contrib",
    "create",
    "get_updater",
    "register",
]

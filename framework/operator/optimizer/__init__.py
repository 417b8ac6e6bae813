"""Optimizer update operators beyond ``tensor/optimizer_ops.py``'s SGD/Adam/RMSProp family.

An update is one engine operation: it reads the gradient, writes the new weight and rewrites
the optimizer's state arrays in place (``set_mutate_inputs``), so it queues behind the backward
pass and in front of the next forward pass with no explicit synchronisation. ``single``
updates one weight per call (SignSGD, Signum, FTML, Ftrl, LAMB, AdamW, GroupAdaGrad);
``multi`` updates many weights per call (``multi_*``, ``preloaded_multi_*``) and computes
LARS learning rates. None of them has a gradient.
"""

from __future__ import annotations

from . import multi, single

__all__ = ["multi", "single"]

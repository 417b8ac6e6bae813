"""One training step of a symbol in MXNet: the run ops_detection.py and ops_spatial.py share.

Both peer scripts bind a symbol to their case's arguments, run forward in training mode and
backward with seeded random head gradients, and store the outputs and input gradients. Plain
MXNet and NumPy (it runs under the MXNet 1.9.1 interpreter); a script finds it because Python
puts the script's own folder first on ``sys.path``.
"""

from __future__ import annotations

import numpy as np


def training_step(mx, sym, case_args: dict, grads_of: list, heads_rng: np.random.Generator) -> dict:
    """Outputs, head gradients (uniform in [-1, 1)) and the gradients of the arguments ``grads_of``."""
    args = {n: mx.nd.array(a) for n, a in case_args.items()}
    grads = {n: mx.nd.zeros(a.shape) for n, a in case_args.items()}
    req = {n: ("write" if n in grads_of else "null") for n in case_args}
    ex = sym.bind(mx.cpu(), args, args_grad=grads, grad_req=req)
    outputs = [o.asnumpy() for o in ex.forward(is_train=True)]
    heads = [heads_rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outputs]
    ex.backward([mx.nd.array(h) for h in heads])
    return {"heads": heads, "outputs": outputs, "grads": {n: grads[n].asnumpy() for n in grads_of}}

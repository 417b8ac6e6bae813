"""``smooth_l1``: the SimpleOp example of seed 000, written through ``register_simple_op``.

Smooth L1 loss (Fast R-CNN's box-regression loss) is quadratic near zero and linear
beyond a turning point set by ``sigma`` (the ``scalar`` parameter)::

    f(x) = 0.5 * (sigma * x)^2      if |x| < 1 / sigma^2
         = |x| - 0.5 / sigma^2      otherwise

    f'(x) = sigma^2 * x             if |x| < 1 / sigma^2
          = sign(x)                 otherwise

Both pieces meet with equal value and slope at ``|x| = 1/sigma^2``. The full loss of the
seed, ``outside_weight * f(inside_weight * (data - label))``, is built from ``f`` with
ordinary element-wise operators; autograd supplies the chain rule, so ``f`` alone is a
plain unary operator.

SimpleOp choices, as the seed makes them: the gradient reads the *input* (kind
``OUT_GRAD_INPUTS``, MXNet's ``UnaryGradFunctionT2``), so the forward function offers no
in-place option (the input must survive for backward); the output gradient is not needed
after backward, so the gradient may be written over it (``kInplaceOutIn``). ``sigma``
arrives as ``env.scalar`` (``set_enable_scalar``), required as in MXNet 1.x:
``mx.nd.smooth_l1(x, scalar=1.0)``.
"""

from __future__ import annotations

import math
from typing import Any

from ..kernel import OpContext, Req, assign
from ..simple_op import EnvArguments, GradKind, kInplaceOutIn, kNoInplace, register_simple_op


def _threshold(sigma: float) -> tuple[float, float]:
    """(sigma^2, 1/sigma^2); sigma = 0 makes the quadratic piece (0 everywhere) cover all x."""
    sigma2 = float(sigma) * float(sigma)
    return sigma2, (math.inf if sigma2 == 0 else 1.0 / sigma2)


def smooth_l1_forward(src: Any, env: EnvArguments, ret: Any, req: Req, op_ctx: OpContext) -> None:
    """ret = f(src) element-wise; both pieces are computed and one is selected per element."""
    xp = op_ctx.xp
    sigma2, bound = _threshold(env.scalar)
    magnitude = xp.abs(src)
    linear = magnitude - 0.5 * bound if math.isfinite(bound) else magnitude
    assign(ret, req, xp.where(magnitude < bound, (0.5 * sigma2) * src * src, linear))


def smooth_l1_backward(
    out_grad: Any, in_data0: Any, env: EnvArguments, in_grad: Any, req: Req, op_ctx: OpContext
) -> None:
    """in_grad = out_grad * f'(x); may overwrite out_grad (kInplaceOutIn), so compute first."""
    xp = op_ctx.xp
    sigma2, bound = _threshold(env.scalar)
    slope = xp.where(xp.abs(in_data0) < bound, sigma2 * in_data0, xp.sign(in_data0))
    assign(in_grad, req, out_grad * slope)


(
    register_simple_op("smooth_l1")
    .set_function(smooth_l1_forward, kNoInplace)
    .set_gradient(smooth_l1_backward, GradKind.OUT_GRAD_INPUTS, kInplaceOutIn)
    .set_enable_scalar(True, float)
    .describe(
        """Calculate Smooth L1 Loss(lhs, scalar) element-wise.

    f(x) = (sigma x)^2 / 2        if |x| < 1/sigma^2
           |x| - 0.5/sigma^2      otherwise

where x is an element of the tensor *data* and sigma is the scalar.

Example::

    smooth_l1([1, 2, 3, 4], scalar=1) = [0.5, 1.5, 2.5, 3.5]
"""
    )
)

"""Exercise ``smooth_l1``: MXNet's architecture notes' smooth L1 loss as a unary SimpleOp.

Registered as ``exercise_smooth_l1`` through ``register_simple_op`` (the framework's own is
``smooth_l1``). With ``sigma`` the scalar parameter (``env.scalar``)::

    f(x)  = 0.5 * (sigma * x)^2     if |x| < 1 / sigma^2
          = |x| - 0.5 / sigma^2     otherwise

    f'(x) = sigma^2 * x             if |x| < 1 / sigma^2
          = sign(x)                 otherwise

Both pieces meet with equal value and slope at ``|x| = 1/sigma^2``. ``sigma = 0`` makes
the threshold infinite: the quadratic piece (0 everywhere) covers every x, and f and f'
are 0 (MXNet computes ``1.0f / 0`` = inf in float arithmetic; Python raises
ZeroDivisionError instead, so treat it on purpose).

Contract (framework/operator/simple_op.py):

* ``smooth_l1_forward(src, env, ret, req, op_ctx)``: write ``f(src)`` into ``ret`` through
  ``assign(ret, req, value)``; ``op_ctx.xp`` is the array module (numpy here).
* ``smooth_l1_backward(out_grad, in_data0, env, in_grad, req, op_ctx)`` (a gradient of kind
  ``OUT_GRAD_INPUTS``, MXNet's ``UnaryGradFunctionT2``: it reads the forward input): write
  ``out_grad * f'(in_data0)`` into ``in_grad`` through ``assign``. ``in_grad`` may share
  memory with ``out_grad`` (``kInplaceOutIn``): compute the value before assigning.
"""

from __future__ import annotations

import math
from typing import Any

from framework.operator import OpContext, Req, assign
from framework.operator.simple_op import EnvArguments, GradKind, kInplaceOutIn, kNoInplace, register_simple_op


def smooth_l1_forward(src: Any, env: EnvArguments, ret: Any, req: Req, op_ctx: OpContext) -> None:
    """ret = f(src) element-wise, sigma = env.scalar, through assign."""
    # BEGIN SOLUTION compute f(src) piece by piece (mind sigma = 0) and assign it to ret
    xp = op_ctx.xp
    sigma2 = float(env.scalar) ** 2
    bound = math.inf if sigma2 == 0 else 1.0 / sigma2
    magnitude = xp.abs(src)
    linear = magnitude - 0.5 * bound if math.isfinite(bound) else magnitude
    assign(ret, req, xp.where(magnitude < bound, 0.5 * sigma2 * src * src, linear))
    # END SOLUTION


def smooth_l1_backward(
    out_grad: Any, in_data0: Any, env: EnvArguments, in_grad: Any, req: Req, op_ctx: OpContext
) -> None:
    """in_grad = out_grad * f'(in_data0), through assign (in_grad may be out_grad's memory)."""
    # BEGIN SOLUTION compute out_grad * f'(x) and assign it to in_grad
    xp = op_ctx.xp
    sigma2 = float(env.scalar) ** 2
    bound = math.inf if sigma2 == 0 else 1.0 / sigma2
    slope = xp.where(xp.abs(in_data0) < bound, sigma2 * in_data0, xp.sign(in_data0))
    assign(in_grad, req, out_grad * slope)
    # END SOLUTION


# Registration (given): MXNet's architecture notes' MXNET_REGISTER_SIMPLE_OP(smooth_l1, XPU).
(
    register_simple_op("exercise_smooth_l1", override=True)
    .set_function(smooth_l1_forward, kNoInplace)
    .set_gradient(smooth_l1_backward, GradKind.OUT_GRAD_INPUTS, kInplaceOutIn)
    .set_enable_scalar(True, float)
    .describe("Smooth L1 loss f(x) element-wise, sigma = scalar (the smooth_l1 exercise).")
)

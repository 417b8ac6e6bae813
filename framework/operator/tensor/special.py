"""Special functions, element-wise: ``erf``, ``erfinv``, ``gamma``, ``gammaln``.

They are element-wise unary operators like ``exp`` (same skeleton, same ``UnaryOp`` record),
but NumPy has no ufunc for them: the values come from ``scipy.special`` on CPU and
``cupyx.scipy.special`` on GPU, chosen by :func:`framework.backend.special_functions`.
Every derivative needs the forward *input* (MXNet's ``ElemwiseGradUseIn``):

* ``erf'(x) = 2/sqrt(pi) * exp(-x^2)``;
* ``erfinv'(x) = sqrt(pi)/2 * exp(erfinv(x)^2)``;
* ``gamma'(x) = gamma(x) * digamma(x)``;
* ``gammaln'(x) = digamma(x)``.
"""

from __future__ import annotations

import math
from typing import Any

from ...backend import special_functions
from .elemwise_unary import UnaryOp, register_unary_op

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0


def _special(name: str) -> Any:
    """``f(xp, x)`` computing ``special.<name>(x)`` with the special module of ``xp``."""

    def forward(xp: Any, x: Any) -> Any:
        return getattr(special_functions(xp), name)(x)

    forward.__name__ = name
    return forward


def _erf_grad(xp: Any, g: Any, x: Any) -> Any:
    return g * (_TWO_OVER_SQRT_PI * xp.exp(-x * x))


def _erfinv_grad(xp: Any, g: Any, x: Any) -> Any:
    y = special_functions(xp).erfinv(x)
    return g * (_SQRT_PI_OVER_TWO * xp.exp(y * y))


def _gamma_grad(xp: Any, g: Any, x: Any) -> Any:
    sp = special_functions(xp)
    return g * sp.gamma(x) * sp.digamma(x)


def _gammaln_grad(xp: Any, g: Any, x: Any) -> Any:
    return g * special_functions(xp).digamma(x)


SPECIAL_OPS: tuple[UnaryOp, ...] = (
    UnaryOp("erf", _special("erf"), "Gauss error function, element-wise.", _erf_grad),
    UnaryOp("erfinv", _special("erfinv"), "Inverse of the error function, element-wise.", _erfinv_grad),
    UnaryOp("gamma", _special("gamma"), "Gamma function, element-wise.", _gamma_grad),
    UnaryOp("gammaln", _special("gammaln"), "Logarithm of the absolute value of the gamma function.", _gammaln_grad),
)

for _op in SPECIAL_OPS:
    register_unary_op(_op)

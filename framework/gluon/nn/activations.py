"""Activation layers: ``Activation`` and the LeakyReLU family (PReLU, ELU, SELU, GELU), Swish."""

from __future__ import annotations

from typing import Any

from ... import initializer
from ..block import HybridBlock


class Activation(HybridBlock):
    """``relu``, ``sigmoid``, ``tanh``, ``softrelu`` or ``softsign`` (the ``Activation`` operator)."""

    def __init__(self, activation: str, **kwargs: Any) -> None:
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self) -> str:
        return self._act_type

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._act_type})"


class LeakyReLU(HybridBlock):
    """``x`` for ``x > 0``, else ``alpha * x``."""

    def __init__(self, alpha: float, **kwargs: Any) -> None:
        if alpha < 0:
            raise ValueError("Slope coefficient for LeakyReLU must be no less than 0.")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._alpha})"


class PReLU(HybridBlock):
    """LeakyReLU with a learned slope per channel (``alpha``, shape ``(in_channels,)``)."""

    def __init__(self, alpha_initializer: Any = None, in_channels: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if alpha_initializer is None:
            alpha_initializer = initializer.Constant(0.25)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F: Any, x: Any, alpha: Any) -> Any:
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class ELU(HybridBlock):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    """Scaled ELU with the self-normalizing constants."""

    def __init__(self, **kwargs: Any) -> None:  # MXNet 1.9.1's signature: prefix/params by keyword
        super().__init__(**kwargs)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type="selu", name="fwd")


class GELU(HybridBlock):
    """Gaussian error linear unit, ``x * Phi(x)``."""

    def __init__(self, **kwargs: Any) -> None:  # MXNet 1.9.1's signature: prefix/params by keyword
        super().__init__(**kwargs)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type="gelu", name="fwd")


class Swish(HybridBlock):
    """``x * sigmoid(beta * x)``."""

    def __init__(self, beta: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return x * F.sigmoid(self._beta * x, name="fwd")

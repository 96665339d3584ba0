"""Activation layers: each a HybridBlock over ``Activation``, ``LeakyReLU`` or ``sigmoid``.

>>> import symjit as mx
>>> mx.gluon.nn.LeakyReLU(0.5)(mx.nd.array([-1.0, 2.0])).asnumpy().tolist()
[-0.5, 2.0]
"""
from __future__ import annotations

from typing import Any

from ... import initializer
from ..block import HybridBlock

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "Swish", "GELU"]


class Activation(HybridBlock):
    """``Activation(act_type=activation)``: ``'relu'``, ``'sigmoid'``, ``'tanh'``, ``'softrelu'``,
    ``'softsign'``."""

    def __init__(self, activation: str, **kwargs: Any):
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self) -> str:
        return self._act_type

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._act_type})"


class LeakyReLU(HybridBlock):
    """``x`` for ``x >= 0``, ``alpha * x`` below."""

    def __init__(self, alpha: float, **kwargs: Any):
        if alpha < 0:
            raise ValueError(f"LeakyReLU: slope coefficient alpha={alpha} must be no less than 0")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._alpha})"


class PReLU(HybridBlock):
    """LeakyReLU with a learned slope per channel (parameter ``alpha``, shape ``(in_channels,)``)."""

    def __init__(self, alpha_initializer: Any = None, in_channels: int = 1, **kwargs: Any):
        super().__init__(**kwargs)
        if alpha_initializer is None:
            alpha_initializer = initializer.Constant(0.25)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F: Any, x: Any, alpha: Any) -> Any:  # noqa: N803
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class ELU(HybridBlock):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` below."""

    def __init__(self, alpha: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    """The scaled ELU of self-normalizing networks."""

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        return F.LeakyReLU(x, act_type="selu", name="fwd")


class GELU(HybridBlock):
    """The Gaussian error linear unit (``x * Phi(x)``)."""

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        return F.LeakyReLU(x, act_type="gelu", name="fwd")


class Swish(HybridBlock):
    """``x * sigmoid(beta * x)``."""

    def __init__(self, beta: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        return x * F.sigmoid(self._beta * x, name="fwd")

"""Pixel-shuffle (sub-pixel) upsampling layers: ``PixelShuffle1D``, ``PixelShuffle2D``,
``PixelShuffle3D``.

An input ``(N, C * f1 * ... * fk, X1, ..., Xk)`` becomes ``(N, C, X1 * f1, ..., Xk * fk)``:
channel ``c * F + j`` (``F = f1 * ... * fk``, ``j`` the row-major index of ``(j1, ..., jk)``)
provides the pixel at offset ``(j1, ..., jk)`` of each ``f1 x ... x fk`` block. Each layer is one
reshape of the channels into ``(C, f1, ..., fk)``, a transpose interleaving every factor after
its spatial axis, and a reshape merging each pair: it runs imperatively or hybridized.

>>> import symjit as mx
>>> PixelShuffle2D((2, 3))(mx.nd.zeros((1, 12, 3, 5))).shape
(1, 2, 6, 15)
"""
from __future__ import annotations

from typing import Any

from ...block import HybridBlock

__all__ = ["PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


def _factors(factor: Any, dims: int, who: str) -> tuple[int, ...]:
    if isinstance(factor, (tuple, list)):
        values = tuple(factor)
    else:
        values = (factor,) * dims
    if len(values) != dims or not all(isinstance(f, int) and not isinstance(f, bool) and f > 0
                                       for f in values):
        raise ValueError(f"{who}: factor must be a positive int or a tuple of {dims} positive ints, "
                         f"got {factor!r}")
    return values


class _PixelShuffle(HybridBlock):
    """The shuffle over ``len(factors)`` spatial axes."""

    _DIMS = 1

    def __init__(self, factor: Any):
        super().__init__()
        self._factors = _factors(factor, self._DIMS, type(self).__name__)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803
        k, fs = self._DIMS, self._factors
        total = 1
        for f in fs:
            total *= f
        # (N, C*F, X1..Xk) -> (N, C, F, X1..Xk) -> (N, C, f1, .., fk, X1..Xk)
        x = F.reshape(x, (0, -4, -1, total) + (0,) * k)
        rest = total
        for i, f in enumerate(fs[:-1]):
            rest //= f
            x = F.reshape(x, (0,) * (2 + i) + (-4, f, rest) + (0,) * k)
        # (N, C, X1, f1, X2, f2, ..) then merge each (Xi, fi)
        axes = [0, 1]
        for i in range(k):
            axes += [2 + k + i, 2 + i]
        x = F.transpose(x, axes=tuple(axes))
        return F.reshape(x, (0, 0) + (-3,) * k)

    def __repr__(self) -> str:
        shown = self._factors[0] if self._DIMS == 1 else self._factors
        return f"{type(self).__name__}({shown})"


class PixelShuffle1D(_PixelShuffle):
    """Upsampling of the ``W`` axis by ``factor`` (an int or a 1-tuple): ``(N, f*C, W)`` to
    ``(N, C, W*f)``.

    >>> import symjit as mx
    >>> PixelShuffle1D(2)(mx.nd.arange(4).reshape((1, 2, 2))).asnumpy().tolist()
    [[[0.0, 2.0, 1.0, 3.0]]]
    """

    _DIMS = 1


class PixelShuffle2D(_PixelShuffle):
    """Upsampling of the ``H`` and ``W`` axes by ``factor`` (an int or a pair ``(f1, f2)``):
    ``(N, f1*f2*C, H, W)`` to ``(N, C, H*f1, W*f2)``.

    >>> import symjit as mx
    >>> PixelShuffle2D(2)(mx.nd.arange(4).reshape((1, 4, 1, 1))).asnumpy().tolist()
    [[[[0.0, 1.0], [2.0, 3.0]]]]
    """

    _DIMS = 2


class PixelShuffle3D(_PixelShuffle):
    """Upsampling of the ``D``, ``H`` and ``W`` axes by ``factor`` (an int or a triple
    ``(f1, f2, f3)``): ``(N, f1*f2*f3*C, D, H, W)`` to ``(N, C, D*f1, H*f2, W*f3)``.

    >>> import symjit as mx
    >>> PixelShuffle3D((2, 3, 4))(mx.nd.zeros((1, 48, 3, 5, 7))).shape
    (1, 2, 6, 15, 28)
    """

    _DIMS = 3

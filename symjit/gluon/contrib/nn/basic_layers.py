"""Containers whose children all see the same input, their outputs concatenated along ``axis``,
and ``Identity``, the block that returns its input (a branch of such a container that adds
nothing).

>>> import symjit as mx
>>> from symjit.gluon.contrib.nn import Concurrent, Identity
>>> pair = Concurrent(axis=0)
>>> pair.add(Identity(), Identity())
>>> pair(mx.nd.array([1.0, 2.0])).asnumpy().tolist()
[1.0, 2.0, 1.0, 2.0]
"""
from __future__ import annotations

from typing import Any

from .... import ndarray
from ...block import HybridBlock
from ...nn import HybridSequential, Sequential
from ...parameter import ParameterDict

__all__ = ["Concurrent", "HybridConcurrent", "Identity"]


class Concurrent(Sequential):
    """Calls every child on the same input and concatenates their outputs along ``axis``
    (default the last), imperatively.

    >>> import symjit as mx
    >>> from symjit.gluon.contrib.nn import Identity
    >>> c = Concurrent(axis=1); c.add(Identity(), Identity())
    >>> c(mx.nd.ones((2, 3))).shape
    (2, 6)
    """

    def __init__(self, axis: int = -1, prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x: Any) -> Any:
        return ndarray.concat(*[child(x) for child in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """:class:`Concurrent` for HybridBlock children: the concatenation is traced with them once
    hybridized.

    >>> import symjit as mx
    >>> from symjit.gluon.contrib.nn import Identity
    >>> c = HybridConcurrent(axis=0); c.add(Identity(), Identity()); c.hybridize()
    >>> c(mx.nd.ones((2, 3))).shape
    (4, 3)
    """

    def __init__(self, axis: int = -1, prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return F.concat(*[child(x) for child in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Returns its input unchanged.

    >>> import symjit as mx
    >>> Identity()(mx.nd.array([3.0])).asnumpy().tolist()
    [3.0]
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F: Any, x: Any) -> Any:  # noqa: N803 - MXNet's name
        return x

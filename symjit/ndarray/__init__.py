"""``mx.nd`` / ``mx.ndarray``: MXNet 1.x's imperative NDArray API, computed with numpy.

>>> import symjit as mx
>>> a = mx.nd.ones((2, 3))
>>> b = a * 2 + mx.nd.arange(3)
>>> b.asnumpy().tolist()
[[2.0, 3.0, 4.0], [2.0, 3.0, 4.0]]
>>> b.sum(axis=1).asnumpy().tolist()
[9.0, 9.0]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import ops as _ops
from . import shape_ops as _shape_ops
from .creation import (
    arange,
    array,
    empty,
    eye,
    from_numpy,
    full,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from .io import load, load_frombuffer, save, save_tobuffer
from .ndarray import NDArray, NDArrayIndexError
from .ops import *  # noqa: F403 - the operator functions are the public API
from .optim_ops import sgd_mom_update, sgd_update
from .shape_ops import *  # noqa: F403

_FLUENT = (
    "sum", "mean", "max", "min", "prod", "norm", "argmax", "argmin", "clip", "exp", "log", "sqrt",
    "square", "abs", "sign", "floor", "ceil", "round", "trunc", "sin", "cos", "tanh", "sigmoid", "relu",
    "reciprocal", "rsqrt", "log2", "log10", "log1p", "expm1", "transpose", "swapaxes", "flatten",
    "expand_dims", "one_hot", "broadcast_to", "split",
)


def _fluent(fn: Callable) -> Callable:
    def method(self: NDArray, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = f"Same as ``mx.nd.{fn.__name__}(self, ...)``."
    return method


for _name in _FLUENT:
    _fn = getattr(_ops, _name, None) or getattr(_shape_ops, _name)
    setattr(NDArray, _name, _fluent(_fn))


def _zeros_like(self: NDArray, **kwargs: Any) -> NDArray:
    """Same as ``mx.nd.zeros_like(self)``."""
    return zeros_like(self, **kwargs)


def _ones_like(self: NDArray, **kwargs: Any) -> NDArray:
    """Same as ``mx.nd.ones_like(self)``."""
    return ones_like(self, **kwargs)


NDArray.zeros_like = _zeros_like
NDArray.ones_like = _ones_like

from .. import random  # noqa: E402 - needs NDArray and creation above

random_uniform = random.uniform
random_normal = random.normal
random_randint = random.randint

__all__ = (["NDArray", "NDArrayIndexError", "empty", "zeros", "ones", "full", "array", "arange",
            "eye", "linspace", "from_numpy", "zeros_like", "ones_like", "save", "load", "load_frombuffer",
            "save_tobuffer", "random",
            "random_uniform", "random_normal", "random_randint"]
           + list(_ops.__all__) + list(_shape_ops.__all__) + ["sgd_update", "sgd_mom_update"])

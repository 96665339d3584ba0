"""MXNet's fluent methods: ``x.sum(axis=1)``, ``x.reshape((2, -1))``, ``x.softmax()`` ... on
Symbols and NDArrays, each the registered operator applied to the array itself (the
``mx.sym``/``mx.nd`` function of that name with ``self`` as its first input), as MXNet 1.x
defines them. Methods a class defines itself (``NDArray.reshape``, ``NDArray.astype``) stay.

>>> import symjit as mx
>>> mx.nd.array([[1, 2], [3, 4]]).sum(axis=1).asnumpy().tolist()
[3.0, 7.0]
>>> x = mx.sym.var('x')
>>> x.exp().sum().list_arguments()
['x']
"""
from __future__ import annotations

from typing import Any

__all__ = ["FLUENT", "install"]

# method -> the namespace function it applies (MXNet 1.9.1's list, both classes)
FLUENT: dict[str, str] = {name: name for name in (
    "reshape reshape_like zeros_like ones_like broadcast_axes repeat pad swapaxes split split_v2 slice "
    "slice_axis slice_like take one_hot pick sort topk argsort argmax argmax_channel argmin clip abs sign "
    "shape_array size_array broadcast_to broadcast_like tile transpose flip depth_to_space space_to_depth "
    "sum nansum prod nanprod mean max min norm round rint fix floor ceil trunc sin cos tan arcsin arccos "
    "arctan degrees radians sinh cosh tanh arcsinh arccosh arctanh exp expm1 log log10 log2 log1p sqrt "
    "rsqrt cbrt rcbrt square reciprocal relu sigmoid softmax log_softmax softmin flatten expand_dims "
    "squeeze diag").split()}
FLUENT["astype"] = "cast"


def _method(namespace: Any, function: str, method: str):
    def fluent(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(namespace, function)(self, *args, **kwargs)
    fluent.__name__ = fluent.__qualname__ = method
    fluent.__doc__ = f"Fluent form of ``{function}(self, ...)``."
    return fluent


def install(cls: type, namespace: Any, replace: tuple[str, ...] = ()) -> list[str]:
    """Give ``cls`` every fluent method it lacks (and those named in ``replace``), over
    ``namespace`` (``mx.sym`` or ``mx.nd``); return the names added."""
    added = []
    for method, function in FLUENT.items():
        if (method not in cls.__dict__ or method in replace) and hasattr(namespace, function):
            setattr(cls, method, _method(namespace, function, method))
            added.append(method)
    return added

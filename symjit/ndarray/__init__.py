"""``mx.nd`` / ``mx.ndarray``: MXNet 1.x's imperative NDArray API; its operator functions run the
registered operators' compiled kernels (:mod:`symjit.imperative`).

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
from . import sparse  # noqa: E402, I001 - after the dense creation functions it wraps
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
from .dlpack import from_dlpack, to_dlpack_for_read, to_dlpack_for_write
from .io import array_from_raw_bytes as _array_from_raw_bytes
from .io import load, load_frombuffer, save, save_tobuffer
from .ndarray import _TOSTYPE, NDArray, NDArrayIndexError
from .ndarray import register_raw_reader as _register_raw_reader
from .ops import *  # noqa: F403 - the operator functions are the public API
from .shape_ops import *  # noqa: F403
from .sparse import BaseSparseNDArray, CSRNDArray, RowSparseNDArray, cast_storage
from .sparse import dense_zeros as zeros  # noqa: F811 - stype= as MXNet's
from .sparse import nd_array as array  # noqa: F811 - scipy and sparse sources keep their storage type
from .sparse import nd_zeros_like as zeros_like  # noqa: F811

_register_raw_reader(_array_from_raw_bytes)   # NDArray.__setstate__ of a pickled MXNet NDArray
_TOSTYPE[:] = [cast_storage]

# the fluent methods of shape_ops' functions; the others are the registry's (symjit.fluent)
_FLUENT = ("transpose", "swapaxes", "flatten", "expand_dims", "one_hot", "broadcast_to", "split")


def _fluent(fn: Callable) -> Callable:
    def method(self: NDArray, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = f"Same as ``mx.nd.{fn.__name__}(self, ...)``."
    return method


for _name in _FLUENT:
    _fn = getattr(_shape_ops, _name)
    setattr(NDArray, _name, _fluent(_fn))


def _shape_method(op: str, fn: Callable) -> Callable:
    """MXNet's NDArray method ``op`` with ``inplace``: False returns a new array (``fn``), True a
    view of ``self`` with the shape the operator's own shape rule gives (writes show through)."""
    from ..base import ShapeError
    from ..ops.registry import RuleError, get_op

    def method(self: NDArray, *args: Any, inplace: bool = False, **kwargs: Any) -> NDArray:
        if not inplace:
            return fn(self, *args, **kwargs)
        opdef = get_op(op)
        names = [p.name for p in opdef.params]
        if len(args) > len(names):
            raise TypeError(f"NDArray.{fn.__name__}: {len(args)} positional arguments, at most {len(names)}")
        params = opdef.parse_params({**dict(zip(names, args)), **kwargs})
        try:
            _, outs, _ = opdef.shape(params, [tuple(self.shape)], [])
        except RuleError as exc:
            raise ShapeError(f"NDArray.{fn.__name__}(inplace=True) of shape {self.shape}: {exc}") from None
        return self.reshape(outs[0])
    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = (f"Same as ``mx.nd.{fn.__name__}(self, ...)``; ``inplace=True`` returns a view of "
                      "``self`` (no copy) with the new shape.")
    return method


NDArray.flatten = _shape_method("Flatten", _shape_ops.flatten)
NDArray.expand_dims = _shape_method("expand_dims", _shape_ops.expand_dims)


def _squeeze(self: NDArray, *args: Any, **kwargs: Any) -> NDArray:
    import sys  # mx.nd.squeeze is the registry's function, installed after this module loads
    return sys.modules[__name__].squeeze(self, *args, **kwargs)


_squeeze.__name__ = "squeeze"
NDArray.squeeze = _shape_method("squeeze", _squeeze)


def _zeros_like(self: NDArray, **kwargs: Any) -> NDArray:
    """Same as ``mx.nd.zeros_like(self)``."""
    return zeros_like(self, **kwargs)


def _ones_like(self: NDArray, **kwargs: Any) -> NDArray:
    """Same as ``mx.nd.ones_like(self)``."""
    return ones_like(self, **kwargs)


NDArray.zeros_like = _zeros_like
NDArray.ones_like = _ones_like
NDArray.to_dlpack_for_read = _fluent(to_dlpack_for_read)
NDArray.to_dlpack_for_write = _fluent(to_dlpack_for_write)

from .. import random  # noqa: E402 - needs NDArray and creation above

_SAMPLERS = random.op_functions()   # random_uniform, uniform, random_gamma, ...: each sampler record's
globals().update(_SAMPLERS)         # names, with MXNet's ctx and out (mx.random's draws)

__all__ = (["NDArray", "NDArrayIndexError", "empty", "zeros", "ones", "full", "array", "arange",
            "eye", "linspace", "from_numpy", "zeros_like", "ones_like", "save", "load", "load_frombuffer",
            "save_tobuffer", "random", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write",
            "sparse", "CSRNDArray", "RowSparseNDArray", "BaseSparseNDArray", "cast_storage"]
           + sorted(_SAMPLERS) + list(_ops.__all__) + list(_shape_ops.__all__))


def imdecode(str_img: Any, clip_rect: tuple = (0, 0, 0, 0), out: NDArray | None = None, index: int = 0,
             channels: int = 3, mean: NDArray | None = None) -> NDArray:
    """MXNet's (deprecated) ``mx.nd.imdecode``: decode a JPEG/PNG buffer into an (H, W, C) RGB uint8
    NDArray (C = ``channels``, 3 or 1), cropped to ``clip_rect`` = (x0, y0, x1, y1) when it is not
    all zeros, minus ``mean`` (an (H, W, C) NDArray; the result is then float32). ``index`` is
    accepted and ignored, as in MXNet's single-image form.

    >>> import numpy as np, symjit as mx
    >>> from symjit.recordio import encode_image
    >>> buf = encode_image(np.full((4, 6, 3), 9, np.uint8), img_fmt='.png')
    >>> mx.nd.imdecode(buf, clip_rect=(1, 0, 4, 2)).shape
    (2, 3, 3)
    """
    from ..base import ParamError
    from ..image.ops import imdecode as _decode
    if channels not in (1, 3):
        raise ParamError(f"imdecode: channels must be 1 or 3, got {channels}")
    img = _decode(str_img, flag=1 if channels == 3 else 0)
    x0, y0, x1, y1 = (int(v) for v in clip_rect)
    if (x0, y0, x1, y1) != (0, 0, 0, 0):
        h, w = img.shape[:2]
        if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
            raise ParamError(f"imdecode: clip_rect {tuple(clip_rect)} is not inside the {w}x{h} image")
        img = img[y0:y1, x0:x1]
    if mean is not None:
        if tuple(mean.shape) != tuple(img.shape):
            raise ParamError(f"imdecode: mean has shape {tuple(mean.shape)}, the image {tuple(img.shape)}")
        img = img.astype("float32") - mean
    if out is not None:
        out[:] = img
        return out
    return img


__all__ += ["imdecode"]

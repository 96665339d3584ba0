"""The functions of ``mx.nd._internal`` that are not registered operators: slice assignment
(``_slice_assign``/``_crop_assign`` and their ``_scalar`` forms, which MXNet's ``NDArray.__setitem__``
is built on) and ``_sample_unique_zipfian`` (sampled-softmax candidates without repeats). The
registered operators whose names start with an underscore join them there
(:func:`symjit.imperative.install_nd_functions`).

>>> import symjit as mx
>>> x = mx.nd.zeros((2, 3))
>>> _ = mx.nd._internal._slice_assign_scalar(x, scalar=7, begin=(0, 1), end=(2, 3), out=x)
>>> x.asnumpy().tolist()
[[0.0, 7.0, 7.0], [0.0, 7.0, 7.0]]
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import MXNetError, ParamError, ShapeError, shape_str
from .creation import array
from .ndarray import NDArray

__all__ = ["_slice_assign", "_slice_assign_scalar", "_crop_assign", "_crop_assign_scalar",
           "_sample_unique_zipfian"]


def _region(shape: tuple, begin: Any, end: Any, step: Any, where: str) -> tuple:
    begin, end = tuple(begin), tuple(end)
    step = tuple(step or ())
    if len(begin) != len(end) or len(begin) > len(shape) or len(step) > len(begin):
        raise ParamError(f"{where}: begin={begin}, end={end}, step={step} do not fit an array of shape "
                         f"{shape_str(shape)}")
    step = step + (None,) * (len(begin) - len(step))
    for s in step:
        if s == 0:
            raise ParamError(f"{where}: step may not be 0 (step={step})")
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _target(lhs: NDArray, out: NDArray | None, where: str) -> NDArray:
    if not isinstance(lhs, NDArray):
        raise MXNetError(f"{where}: lhs must be an NDArray, got {type(lhs).__name__}")
    if out is None:
        return lhs.copy()
    if tuple(out.shape) != tuple(lhs.shape):
        raise ShapeError(f"{where}: out has shape {shape_str(out.shape)}, lhs {shape_str(lhs.shape)}")
    if out is not lhs:
        out[:] = lhs
    return out


def _slice_assign(lhs: NDArray, rhs: NDArray, begin: Any, end: Any, step: Any = (),
                  out: NDArray | None = None, name: str | None = None) -> NDArray:
    """``lhs`` with the region ``begin:end:step`` replaced by ``rhs`` (whose shape must be the
    region's); in place when ``out`` is ``lhs``."""
    res = _target(lhs, out, "_slice_assign")
    key = _region(res.shape, begin, end, step, "_slice_assign")
    want = np.empty(res.shape, dtype=np.bool_)[key].shape
    if tuple(rhs.shape) != want:
        raise ShapeError(f"_slice_assign: rhs has shape {shape_str(rhs.shape)} but the region "
                         f"begin={tuple(begin)}, end={tuple(end)} of {shape_str(res.shape)} is "
                         f"{shape_str(want)}")
    res[key] = rhs
    return res


def _slice_assign_scalar(data: NDArray, scalar: float = 0.0, begin: Any = (), end: Any = (), step: Any = (),
                         out: NDArray | None = None, name: str | None = None) -> NDArray:
    """``data`` with the region ``begin:end:step`` set to ``scalar``; in place when ``out`` is ``data``."""
    res = _target(data, out, "_slice_assign_scalar")
    res[_region(res.shape, begin, end, step, "_slice_assign_scalar")] = float(scalar)
    return res


_crop_assign = _slice_assign
_crop_assign_scalar = _slice_assign_scalar


def _sample_unique_zipfian(range_max: int, shape: Any = None, out: Any = None,
                           name: str | None = None) -> tuple[NDArray, NDArray]:
    """For each row of ``shape = (batch, num_sampled)``, ``num_sampled`` distinct classes in
    ``[0, range_max)`` drawn from the log-uniform distribution ``P(c) = log((c+2)/(c+1)) /
    log(range_max+1)`` until that many distinct ones came up; returns the classes (int64, that
    shape) and the number of draws each row took (int64, ``(batch,)``)."""
    from .. import random as _random
    if shape is None or len(tuple(shape)) != 2:
        raise ParamError(f"_sample_unique_zipfian: shape must be (batch_size, num_sampled), got {shape!r}")
    batch, num = (int(d) for d in shape)
    range_max = int(range_max)
    if range_max <= 0 or num > range_max or num < 0:
        raise ParamError(f"_sample_unique_zipfian: need 0 <= num_sampled ({num}) <= range_max ({range_max})")
    rng = np.random.default_rng(_random.next_seed())
    log_range = math.log(range_max + 1)
    classes = np.empty((batch, num), dtype=np.int64)
    trials = np.zeros((batch,), dtype=np.int64)
    for row in range(batch):
        seen: dict[int, None] = {}
        while len(seen) < num:
            u = rng.uniform(0.0, log_range, size=max(num, 64))
            draws = (np.exp(u) - 1.0).astype(np.int64) % range_max
            for k, c in enumerate(draws.tolist()):
                seen.setdefault(c, None)
                if len(seen) == num:
                    trials[row] += k + 1
                    break
            else:
                trials[row] += len(draws)
        classes[row] = list(seen)
    return array(classes, dtype=np.int64), array(trials, dtype=np.int64)

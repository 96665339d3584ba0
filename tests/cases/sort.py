"""Cases for sort, argsort and topk (symjit/ops/sort.py) against numpy's stable sorts; the value
gradients by finite differences (inputs without ties)."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(23)


def distinct(*shape):
    return R.permutation(int(np.prod(shape))).reshape(shape) * 0.1 - 1.0


def _order(x, axis, ascend):
    """Stable order along ``axis``: ascending, or descending with ties in input order."""
    if ascend:
        return np.argsort(x, axis=axis, kind="stable")
    return np.argsort(-x, axis=axis, kind="stable")


def _take(x, order, axis):
    return np.take_along_axis(x, order, axis=axis)


def _topk(x, axis, k, ascend):
    order = _order(x, axis, ascend)
    return np.take(order, range(k), axis=axis)


_ties = np.array([[2.0, 1.0, 2.0, 0.0, 1.0], [5.0, 5.0, 5.0, 1.0, 1.0]])

# long rows (at least 8 entries per kept one): topk keeps its few by insertion in one pass
_long_ties = R.integers(0, 5, size=(4, 48)).astype(np.float64)
_long_sorted = np.stack([np.arange(40.0), np.arange(40.0)[::-1], np.full(40, 3.0)])

CASES = [
    Case("sort", lambda v: mx.sym.sort(v["x"]), {"x": distinct(3, 5)}, lambda x: np.sort(x, axis=-1)),
    Case("sort", lambda v: mx.sym.sort(v["x"], axis=0, is_ascend=False), {"x": distinct(4, 2, 3)},
         lambda x: -np.sort(-x, axis=0), id="axis0_desc"),
    Case("sort", lambda v: mx.sym.sort(v["x"], axis=None), {"x": distinct(2, 3)}, lambda x: np.sort(x,
                                                                                                    axis=None),
         id="flat"),
    Case("argsort", lambda v: mx.sym.argsort(v["x"]), {"x": _ties},
         lambda x: _order(x, -1, True).astype(np.float32), grad="none", id="ties"),
    Case("argsort", lambda v: mx.sym.argsort(v["x"], axis=1, is_ascend=False, dtype="int32"), {"x": _ties},
         lambda x: _order(x, 1, False).astype(np.int32), grad="none", id="desc_ties"),
    Case("topk", lambda v: mx.sym.topk(v["x"], k=2, ret_typ="value"), {"x": distinct(3, 6)},
         lambda x: _take(x, _topk(x, -1, 2, False), -1), id="value"),
    Case("topk", lambda v: mx.sym.topk(v["x"], axis=0, k=2, ret_typ="both", is_ascend=True),
         {"x": distinct(5, 3)},
         lambda x: [_take(x, _topk(x, 0, 2, True), 0), _topk(x, 0, 2, True).astype(np.float32)], id="both"),
    Case("topk", lambda v: mx.sym.topk(v["x"], k=3), {"x": _ties},
         lambda x: _topk(x, -1, 3, False).astype(np.float32), grad="none", id="indices_ties"),
    Case("topk", lambda v: mx.sym.topk(v["x"], k=2, ret_typ="mask"), {"x": distinct(2, 4)},
         lambda x: (np.argsort(np.argsort(-x, axis=-1), axis=-1) < 2).astype(np.float64), grad="none",
         id="mask"),
    Case("topk", lambda v: mx.sym.topk(v["x"], k=0, ret_typ="value", axis=None), {"x": distinct(2, 3)},
         lambda x: -np.sort(-x, axis=None), id="all_flat"),
    Case("topk", lambda v: mx.sym.topk(v["x"], k=5), {"x": _long_ties},
         lambda x: _topk(x, -1, 5, False).astype(np.float32), grad="none", id="long_ties"),
    Case("topk", lambda v: mx.sym.topk(v["x"], k=4, is_ascend=True, ret_typ="both"), {"x": _long_ties},
         lambda x: [_take(x, _topk(x, -1, 4, True), -1), _topk(x, -1, 4, True).astype(np.float32)],
         grad="none", id="long_ties_asc"),
    Case("topk", lambda v: mx.sym.topk(v["x"], k=3, ret_typ="value", axis=0), {"x": distinct(30, 2, 3)},
         lambda x: _take(x, _topk(x, 0, 3, False), 0), id="long_value"),
    Case("topk", lambda v: mx.sym.topk(v["x"], k=5, ret_typ="mask"), {"x": _long_sorted},
         lambda x: (np.argsort(_order(x, -1, False), axis=-1) < 5).astype(np.float64), grad="none",
         id="long_sorted_mask"),
    Case("topk", lambda v: mx.sym.topk(v["x"], k=5, is_ascend=True), {"x": _long_sorted},
         lambda x: _topk(x, -1, 5, True).astype(np.float32), grad="none", id="long_sorted_asc"),
]

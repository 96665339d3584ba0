"""Cases for the shape-manipulation family (symjit/ops/shape.py): numpy references written here."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(11)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


def _unary(op, dims, ref, case_id, **params):
    return Case(op, lambda v: getattr(mx.sym, op)(v["x"], **params), {"x": rnd(*dims)}, ref, id=case_id)


# --- reshape-like ----------------------------------------------------------------------------------

RESHAPE_LIKE = [
    _unary("Flatten", (2, 3, 4), lambda x: x.reshape(2, 12), "3d"),
    _unary("Flatten", (5,), lambda x: x.reshape(5, 1), "1d"),
    _unary("Reshape", (2, 3, 4), lambda x: x.reshape(2, 12), "keep-infer", shape=(0, -1)),
    _unary("Reshape", (2, 3, 4), lambda x: x.reshape(1, 2, 3, 4), "split", shape=(-4, 1, 2, -2)),
    _unary("Reshape", (3, 2, 4), lambda x: x.reshape(6, 4), "reverse", shape=(-1, 0), reverse=True),
    _unary("Reshape", (1, 2, 12), lambda x: x.reshape(1, 2, 3, 4), "reverse-split",
           shape=(-2, -1, 4, -4), reverse=True),
    _unary("Reshape", (2, 6), lambda x: x.reshape(2, 3, 2), "legacy", target_shape=(0, 2),
           keep_highest=True),
    _unary("expand_dims", (2, 3), lambda x: x[:, None, :], "mid", axis=1),
    _unary("expand_dims", (2, 3), lambda x: x[:, :, None], "last", axis=-1),
    _unary("squeeze", (2, 1, 3, 1), lambda x: x.reshape(2, 3), "all"),
    _unary("squeeze", (2, 1, 3, 1), lambda x: x.reshape(2, 3, 1), "axis", axis=(1,)),
    _unary("squeeze", (1, 1), lambda x: x.reshape(1), "to-1"),
]

# --- permutations, flips, tile, repeat -------------------------------------------------------------

PERMUTE = [
    _unary("transpose", (2, 3, 4), lambda x: x.transpose(2, 1, 0), "default"),
    _unary("transpose", (2, 3, 4), lambda x: x.transpose(1, 0, 2), "axes", axes=(1, 0, 2)),
    _unary("transpose", (2, 3, 4), lambda x: x.transpose(0, 2, 1), "neg", axes=(0, -1, 1)),
    _unary("SwapAxis", (2, 3, 4), lambda x: x.swapaxes(0, 2), "02", dim1=0, dim2=2),
    _unary("reverse", (3, 4), lambda x: x[::-1], "axis0", axis=0),
    _unary("reverse", (2, 3, 4), lambda x: x[::-1, :, ::-1], "axes", axis=(0, 2)),
    _unary("tile", (2, 3), lambda x: np.tile(x, (2, 3)), "same-rank", reps=(2, 3)),
    _unary("tile", (2, 3), lambda x: np.tile(x, (2, 1, 2)), "more-reps", reps=(2, 1, 2)),
    _unary("tile", (2, 3), lambda x: np.tile(x, (2,)), "fewer-reps", reps=(2,)),
    _unary("repeat", (2, 3), lambda x: np.repeat(x, 2), "flat", repeats=2),
    _unary("repeat", (2, 3), lambda x: np.repeat(x, 3, axis=1), "axis1", repeats=3, axis=1),
]

# --- joining and splitting -------------------------------------------------------------------------


def _split_ref(n, axis, squeeze):
    def ref(x):
        parts = np.split(x, n, axis=axis)
        return [np.squeeze(p, axis=axis).reshape(p.shape[:axis] + p.shape[axis + 1:] or (1,))
                if squeeze else p for p in parts]
    return ref


JOIN = [
    Case("Concat", lambda v: mx.sym.Concat(v["a"], v["b"], dim=1), {"a": rnd(2, 1), "b": rnd(2, 3)},
         lambda a, b: np.concatenate([a, b], axis=1), id="unequal"),
    Case("Concat", lambda v: mx.sym.Concat(v["a"], v["b"], dim=0), {"a": rnd(2, 3), "b": rnd(2, 3)},
         lambda a, b: np.concatenate([a, b], axis=0), id="equal"),
    Case("Concat", lambda v: mx.sym.Concat(v["a"], v["b"], v["c"], dim=-1),
         {"a": rnd(2, 2, 1), "b": rnd(2, 2, 2), "c": rnd(2, 2, 3)},
         lambda a, b, c: np.concatenate([a, b, c], axis=-1), id="three"),
    Case("stack", lambda v: mx.sym.stack(v["a"], v["b"], v["c"], axis=1),
         {"a": rnd(2, 3), "b": rnd(2, 3), "c": rnd(2, 3)},
         lambda a, b, c: np.stack([a, b, c], axis=1), id="axis1"),
    Case("stack", lambda v: mx.sym.stack(v["a"], v["b"], axis=-1), {"a": rnd(4), "b": rnd(4)},
         lambda a, b: np.stack([a, b], axis=-1), id="last"),
    Case("SliceChannel", lambda v: mx.sym.SliceChannel(v["x"], num_outputs=3), {"x": rnd(2, 6, 2)},
         _split_ref(3, 1, False), id="axis1"),
    Case("SliceChannel", lambda v: mx.sym.SliceChannel(v["x"], num_outputs=2, axis=0, squeeze_axis=True),
         {"x": rnd(2, 3)}, _split_ref(2, 0, True), id="squeeze"),
    Case("SliceChannel", lambda v: mx.sym.SliceChannel(v["x"], num_outputs=3, axis=0, squeeze_axis=True),
         {"x": rnd(3)}, _split_ref(3, 0, True), id="squeeze-1d"),
    Case("SliceChannel", lambda v: mx.sym.SliceChannel(v["x"], num_outputs=3, axis=-1)[1],
         {"x": rnd(2, 6)}, lambda x: x[:, 2:4], id="one-output-used"),
]

# --- slicing ---------------------------------------------------------------------------------------


def _sl(*parts):
    return tuple(slice(*p) for p in parts)


SLICING = [
    _unary("slice_axis", (3, 5), lambda x: x[:, 1:3], "mid", axis=1, begin=1, end=3),
    _unary("slice_axis", (3, 5), lambda x: x[:, -2:], "neg-none", axis=-1, begin=-2, end=None),
    _unary("slice_axis", (4, 2, 3), lambda x: x[1:4], "axis0", axis=0, begin=1, end=4),
    _unary("slice", (3, 4), lambda x: x[0:2, 1:3], "basic", begin=(0, 1), end=(2, 3)),
    _unary("slice", (3, 4, 2), lambda x: x[1:, :3], "none", begin=(1, None), end=(None, 3)),
    _unary("slice", (3, 4), lambda x: x[_sl((None, None, -1), (3, 0, -2))], "neg-step",
           begin=(None, 3), end=(None, 0), step=(-1, -2)),
    _unary("slice", (4, 4), lambda x: x[-3:-1, -2:], "negative", begin=(-3, -2), end=(-1, None)),
]

# --- gathers ---------------------------------------------------------------------------------------


def _trunc(idx):
    return np.trunc(idx).astype(np.int64)


def _take_ref(axis, mode):
    def ref(a, indices):
        return np.take(a, _trunc(indices), axis=axis, mode=mode)
    return ref


def _pick_ref(axis, mode):
    def ref(data, index):
        d2 = np.moveaxis(data, axis, -1).reshape(-1, data.shape[axis])
        j = _trunc(index).reshape(-1)
        j = np.clip(j, 0, d2.shape[1] - 1) if mode == "clip" else np.mod(j, d2.shape[1])
        return d2[np.arange(d2.shape[0]), j].reshape(index.shape)
    return ref


def _one_hot_ref(depth, on=1.0, off=0.0, dtype=np.float32):
    def ref(indices):
        j = _trunc(indices)
        out = np.full(indices.shape + (depth,), off, dtype=dtype)
        for pos in np.ndindex(indices.shape):
            if 0 <= j[pos] < depth and indices[pos] > -1:
                out[pos + (j[pos],)] = on
        return out
    return ref


def _take(axis=0, mode="clip"):
    return lambda v: mx.sym.take(v["a"], v["indices"], axis=axis, mode=mode)


def _pick(axis=-1, keepdims=False, mode="clip"):
    return lambda v: mx.sym.pick(v["data"], v["index"], axis=axis, keepdims=keepdims, mode=mode)


GATHER = [
    Case("take", _take(), {"a": rnd(4, 3), "indices": np.array([0.0, 3.0, 7.0, -2.0, 1.7, 3.0])},
         _take_ref(0, "clip"), no_grad=("indices",), id="clip-repeats"),
    Case("take", _take(1, "wrap"), {"a": rnd(2, 3, 2), "indices": np.array([[0.0, 4.0], [-1.0, -5.0]])},
         _take_ref(1, "wrap"), no_grad=("indices",), id="wrap-2d"),
    Case("take", _take(-1, "raise"), {"a": rnd(3, 4), "indices": np.array([3.0, 0.0, 2.0])},
         _take_ref(-1, "raise"), no_grad=("indices",), id="raise-valid"),
    Case("pick", _pick(), {"data": rnd(4, 3), "index": np.array([0.0, 2.0, 5.0, -1.0])},
         _pick_ref(-1, "clip"), no_grad=("index",), id="clip"),
    Case("pick", _pick(0, True), {"data": rnd(3, 4), "index": np.array([[0.0, 1.0, 2.0, 1.0]])},
         _pick_ref(0, "clip"), no_grad=("index",), id="keepdims"),
    Case("pick", _pick(1, False, "wrap"),
         {"data": rnd(2, 3, 2), "index": np.array([[4.0, -1.0], [0.0, 2.0]])},
         _pick_ref(1, "wrap"), no_grad=("index",), id="wrap-3d"),
    Case("pick", _pick(0), {"data": rnd(5), "index": np.array([3.0])},
         _pick_ref(0, "clip"), no_grad=("index",), id="1d"),
    Case("pick", _pick(1), {"data": rnd(2, 3, 2), "index": np.array([[[0.0, 2.0]], [[1.0, 5.0]]])},
         lambda data, index: _pick_ref(1, "clip")(data, index).squeeze(1), no_grad=("index",),
         id="index-axis-kept"),
    Case("one_hot", lambda v: mx.sym.one_hot(v["indices"], depth=4),
         {"indices": np.array([0.0, 3.0, 4.0, -1.0, 2.0, -0.5])}, _one_hot_ref(4), grad="none", id="default"),
    Case("one_hot", lambda v: mx.sym.one_hot(v["indices"], depth=3, on_value=5.0, off_value=-1.0,
                                             dtype="float64"),
         {"indices": np.array([[0.0, 2.0], [1.0, 1.0]])}, _one_hot_ref(3, 5.0, -1.0, np.float64),
         grad="none", id="values-2d"),
    Case("one_hot", lambda v: mx.sym.one_hot(v["indices"], depth=3, dtype="int32"),
         {"indices": np.array([2.0, 0.0, 9.0])}, _one_hot_ref(3, dtype=np.int32), grad="none", id="int32"),
]

CASES = [*RESHAPE_LIKE, *PERMUTE, *JOIN, *SLICING, *GATHER]

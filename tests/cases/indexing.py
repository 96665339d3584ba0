"""Cases for the index-map ops (symjit/ops/indexing.py): numpy references written here from MXNet's
documented behaviour; gradients by finite differences (integer-valued inputs get none)."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(13)


def rnd(*shape):
    return R.uniform(-1.0, 1.0, shape)


LENS = np.array([2.0, 4.0, 1.0])   # per-batch lengths for (T=4, B=3, ...) data


def _mask(data, lens, value=0.0, axis=0):
    out = data.copy()
    for b, n in enumerate(lens.astype(int)):
        if axis == 0:
            out[n:, b] = value
        else:
            out[b, n:] = value
    return out


def _reverse(data, lens):
    out = data.copy()
    for b, n in enumerate(lens.astype(int)):
        out[:n, b] = data[:n, b][::-1]
    return out


def _last(data, lens, axis=0):
    idx = lens.astype(int) - 1
    return np.stack([data[i, b] if axis == 0 else data[b, i] for b, i in enumerate(idx)])


def _pad(mode, width, value=0.0):
    pairs = [(width[2 * d], width[2 * d + 1]) for d in range(len(width) // 2)]

    def ref(x):
        if mode == "constant":
            return np.pad(x, pairs, mode="constant", constant_values=value)
        return np.pad(x, pairs, mode=mode)
    return ref


def _gather_nd(data, indices):
    ind = indices.astype(int)
    ind = np.where(ind < 0,
                   ind + np.array(data.shape[:ind.shape[0]]).reshape((-1,) + (1,) * (ind.ndim - 1)), ind)
    return data[tuple(ind)]


def _scatter_nd(data, indices, shape):
    out = np.zeros(shape)
    ind = indices.astype(int)
    flat = ind.reshape(ind.shape[0], -1)
    d = data.reshape((flat.shape[1],) + tuple(shape[ind.shape[0]:]))
    for y in range(flat.shape[1]):
        out[tuple(flat[:, y])] = d[y]
    return out


def _im2col(x, k, s, p, d):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for cc in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                for a in range(oh):
                    for b in range(ow):
                        out[:, (cc * k[0] + i) * k[1] + j, a * ow + b] = xp[:, cc, a * s[0] + i * d[0],
                                                                            b * s[1] + j * d[1]]
    return out


def _col2im(cols, size, k, s, p, d):
    """The adjoint of _im2col: scatter-add each column entry back onto the padded image."""
    n, ck, _ = cols.shape
    c = ck // (k[0] * k[1])
    h, w = size
    img = np.zeros((n, c, h + 2 * p[0], w + 2 * p[1]))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    for cc in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                for a in range(oh):
                    for b in range(ow):
                        row = (cc * k[0] + i) * k[1] + j
                        img[:, cc, a * s[0] + i * d[0], b * s[1] + j * d[1]] += cols[:, row, a * ow + b]
    return img[:, :, p[0]:p[0] + h, p[1]:p[1] + w]


def _fill(lhs, mhs, rhs):
    out = lhs.copy()
    out[np.arange(len(rhs)), rhs.astype(int)] = mhs
    return out


_gi = np.array([[0, 2, -1, 1], [1, 3, 0, 1]], dtype=np.float64)   # a repeated position: gradients add
_si = np.array([[0, 2, 1], [1, 3, 0]], dtype=np.float64)

CASES = [
    Case("SequenceMask", lambda v: mx.sym.SequenceMask(v["data"], v["len"], use_sequence_length=True,
                                                       value=-2.0),
         {"data": rnd(4, 3, 2), "len": LENS}, lambda data, len: _mask(data, len, -2.0), no_grad=("len",)),
    Case("SequenceMask", lambda v: mx.sym.SequenceMask(v["data"], v["len"], use_sequence_length=True, axis=1),
         {"data": rnd(3, 4), "len": LENS}, lambda data, len: _mask(data, len, 0.0, 1), no_grad=("len",),
         id="axis1"),
    Case("SequenceMask", lambda v: mx.sym.SequenceMask(v["data"]), {"data": rnd(4, 3)},
         lambda data: data.copy(),
         id="no_lengths"),
    Case("SequenceReverse", lambda v: mx.sym.SequenceReverse(v["data"], v["len"], use_sequence_length=True),
         {"data": rnd(4, 3, 2), "len": LENS}, lambda data, len: _reverse(data, len), no_grad=("len",)),
    Case("SequenceReverse", lambda v: mx.sym.SequenceReverse(v["data"]), {"data": rnd(4, 3)},
         lambda data: data[::-1].copy(), id="no_lengths"),
    Case("SequenceLast", lambda v: mx.sym.SequenceLast(v["data"], v["len"], use_sequence_length=True),
         {"data": rnd(4, 3, 2), "len": LENS}, lambda data, len: _last(data, len), no_grad=("len",)),
    Case("SequenceLast", lambda v: mx.sym.SequenceLast(v["data"], v["len"], use_sequence_length=True, axis=1),
         {"data": rnd(3, 4), "len": LENS}, lambda data, len: _last(data, len,
                                                                   1), no_grad=("len",), id="axis1"),
    Case("SequenceLast", lambda v: mx.sym.SequenceLast(v["data"]), {"data": rnd(4, 3)},
         lambda data: data[-1].copy(),
         id="no_lengths"),
    Case("Pad", lambda v: mx.sym.Pad(v["x"], mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                                     constant_value=0.5),
         {"x": rnd(1, 2, 3, 2)}, _pad("constant", (0, 0, 0, 0, 1, 2, 2, 1), 0.5)),
    Case("Pad", lambda v: mx.sym.Pad(v["x"], mode="edge", pad_width=(0, 0, 0, 0, 2, 1, 1, 3)),
         {"x": rnd(1, 2, 3, 2)}, _pad("edge", (0, 0, 0, 0, 2, 1, 1, 3)), id="edge"),
    Case("Pad", lambda v: mx.sym.pad(v["x"], mode="reflect", pad_width=(0, 0, 0, 0, 2, 1, 1, 1)),
         {"x": rnd(1, 2, 3, 3)}, _pad("reflect", (0, 0, 0, 0, 2, 1, 1, 1)), id="reflect"),
    Case("diag", lambda v: mx.sym.diag(v["x"], k=1), {"x": rnd(3)}, lambda x: np.diag(x, 1), id="make"),
    Case("diag", lambda v: mx.sym.diag(v["x"], k=-1), {"x": rnd(3, 4)}, lambda x: np.diagonal(x, -1).copy(),
         id="extract"),
    Case("diag", lambda v: mx.sym.diag(v["x"], k=1, axis1=1, axis2=2), {"x": rnd(2, 3, 4)},
         lambda x: np.diagonal(x, 1, 1, 2).copy(), id="nd"),
    Case("gather_nd", lambda v: mx.sym.gather_nd(v["data"], v["indices"]), {"data": rnd(3, 4, 2),
                                                                            "indices": _gi},
         _gather_nd, no_grad=("indices",)),
    Case("scatter_nd", lambda v: mx.sym.scatter_nd(v["data"], v["indices"], shape=(3, 4, 2)),
         {"data": rnd(3, 2), "indices": _si}, lambda data, indices: _scatter_nd(data, indices, (3, 4, 2)),
         no_grad=("indices",)),
    Case("cumsum", lambda v: mx.sym.cumsum(v["a"], axis=1), {"a": rnd(2, 4, 3)}, lambda a: np.cumsum(a,
                                                                                                     axis=1)),
    Case("cumsum", lambda v: mx.sym.cumsum(v["a"]), {"a": rnd(2, 3)}, lambda a: np.cumsum(a), id="flat"),
    Case("shape_array", lambda v: mx.sym.shape_array(v["x"]), {"x": rnd(2, 3, 4)},
         lambda x: np.array(x.shape, dtype=np.int64), grad="none"),
    Case("size_array", lambda v: mx.sym.size_array(v["x"]), {"x": rnd(2, 3, 4)},
         lambda x: np.array([x.size], dtype=np.int64), grad="none"),
    Case("MakeLoss", lambda v: mx.sym.make_loss(mx.sym.square(v["x"])), {"x": rnd(2, 3)}, lambda x: x * x,
         grad=lambda inputs, outs, head: {"x": 2 * inputs["x"]}, id="make_loss"),
    Case("_ravel_multi_index", lambda v: mx.sym.ravel_multi_index(v["x"], shape=(7, 6)),
         {"x": np.array([[3.0, 6.0, 6.0], [4.0, 5.0, 1.0]])},
         lambda x: np.ravel_multi_index(x.astype(int), (7, 6)).astype(np.float64), grad="none"),
    Case("_unravel_index", lambda v: mx.sym.unravel_index(v["x"], shape=(7, 6)),
         {"x": np.array([22.0, 41.0, 37.0])},
         lambda x: np.array(np.unravel_index(x.astype(int), (7, 6)), dtype=np.float64), grad="none"),
    Case("_unravel_index", lambda v: mx.sym.unravel_index(v["x"], shape=(-1, 3, 4)),
         {"x": np.array([22.0, 59.0, 37.0, 5.0])},
         lambda x: np.array(np.unravel_index(x.astype(int), (5, 3, 4)), dtype=np.float64), grad="none",
         id="leading_minus_one"),
    Case("fill_element_0index", lambda v: mx.sym.fill_element_0index(v["lhs"], v["mhs"], v["rhs"]),
         {"lhs": rnd(3, 4), "mhs": rnd(3), "rhs": np.array([1.0, 3.0, 0.0])},
         lambda lhs, mhs, rhs: _fill(lhs, mhs, rhs), no_grad=("rhs",)),
    Case("im2col", lambda v: mx.sym.im2col(v["x"], kernel=(2, 3), stride=(2, 1), pad=(1, 1), dilate=(1, 2)),
         {"x": rnd(2, 2, 4, 5)}, lambda x: _im2col(x, (2, 3), (2, 1), (1, 1), (1, 2))),
    Case("col2im", lambda v: mx.sym.col2im(v["cols"], output_size=(4, 5), kernel=(2, 3), stride=(2, 1),
                                           pad=(1, 1),
                                           dilate=(1, 2)),
         {"cols": rnd(2, 12, 9)}, lambda cols: _col2im(cols, (4, 5), (2, 3), (2, 1), (1, 1), (1, 2))),
    Case("_histogram", lambda v: mx.sym.histogram(v["x"], bins=4, range=(0, 1)),
         {"x": np.array([0.1, 0.5, 0.5, 0.9, 1.0, 2.0, -1.0, 0.25])},
         lambda x: [np.histogram(x, 4, (0, 1))[0].astype(np.int64), np.linspace(0, 1, 5)], grad="none"),
    Case("_histogram", lambda v: mx.sym.histogram(v["x"], v["bins"]),
         {"x": rnd(3, 4), "bins": np.array([-1.0, -0.2, 0.0, 0.7, 1.0])},
         lambda x, bins: [np.histogram(x, bins)[0].astype(np.int64), bins.copy()], grad="none", id="edges"),
]

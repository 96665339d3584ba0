"""Cases for the contrib box operators (symjit/ops/box.py): numpy references written here from
MXNet's documented behaviour, checked against MXNet 1.9.1's CPU outputs (box_nms also its
gradient) on random inputs. bipartite_matching's topk follows the documentation (MXNet 1.9.1's CPU
build returns one pair more)."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(83)


def to_corner(b, fmt):
    if fmt == "corner":
        return np.asarray(b, dtype=np.float64)
    x, y, w, h = b
    return np.array([x - w / 2, y - h / 2, x + w / 2, y + h / 2])


def iou(a, b):
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / u if u > 0 else 0.0


def box_iou(lhs, rhs, format="corner"):
    L = lhs.reshape(-1, 4)
    Rr = rhs.reshape(-1, 4)
    out = np.array([[iou(to_corner(a, format), to_corner(b, format)) for b in Rr] for a in L])
    return out.reshape(lhs.shape[:-1] + rhs.shape[:-1])


def box_nms(
    data,
    overlap_thresh=0.5,
    valid_thresh=0,
    topk=-1,
    coord_start=2,
    score_index=1,
    id_index=-1,
    background_id=-1,
    force_suppress=False,
    in_format="corner",
    out_format="corner",
):
    shape = data.shape
    d = data.reshape(-1, shape[-2], shape[-1])
    out = -np.ones_like(d, dtype=np.float64)
    rec = -np.ones(d.shape[:2])
    for b in range(d.shape[0]):
        valid = [
            i
            for i in range(d.shape[1])
            if d[b, i, score_index] > valid_thresh
            and not (id_index >= 0 and d[b, i, id_index] == background_id)
        ]
        order = sorted(valid, key=lambda i: -d[b, i, score_index])
        if topk > 0:
            order = order[:topk]
        keep = []
        sup = set()
        for qi, i in enumerate(order):
            if i in sup:
                continue
            keep.append(i)
            bi = to_corner(d[b, i, coord_start : coord_start + 4], in_format)
            for j in order[qi + 1 :]:
                if j in sup:
                    continue
                if id_index >= 0 and not force_suppress and d[b, i, id_index] != d[b, j, id_index]:
                    continue
                if iou(bi, to_corner(d[b, j, coord_start : coord_start + 4], in_format)) > overlap_thresh:
                    sup.add(j)
        for q, i in enumerate(keep):
            row = d[b, i].astype(np.float64).copy()
            c = to_corner(row[coord_start : coord_start + 4], in_format)
            if out_format == "center":
                c = np.array([(c[0] + c[2]) / 2, (c[1] + c[3]) / 2, c[2] - c[0], c[3] - c[1]])
            row[coord_start : coord_start + 4] = c
            out[b, q] = row
            rec[b, q] = i
    return out.reshape(shape), rec


def box_encode(samples, matches, anchors, refs, means, stds):
    B, N = samples.shape
    out = np.zeros((B, N, 4))
    mask = np.zeros((B, N, 4))
    for b in range(B):
        for n in range(N):
            if samples[b, n] > 0.5:
                a = anchors[b, n]
                r = refs[b, int(matches[b, n])]
                aw, ah = a[2] - a[0], a[3] - a[1]
                ax, ay = a[0] + aw / 2, a[1] + ah / 2
                rw, rh = r[2] - r[0], r[3] - r[1]
                rx, ry = r[0] + rw / 2, r[1] + rh / 2
                v = [(rx - ax) / aw, (ry - ay) / ah, np.log(rw / aw), np.log(rh / ah)]
                out[b, n] = [(v[i] - means[i]) / stds[i] for i in range(4)]
                mask[b, n] = 1
    return out, mask


def box_decode(data, anchors, std0=1.0, std1=1.0, std2=1.0, std3=1.0, clip=-1.0, format="center"):
    a = anchors[0] if anchors.ndim == 3 else anchors
    if format == "corner":
        aw, ah = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
        ax, ay = a[:, 0] + aw / 2, a[:, 1] + ah / 2
    else:
        ax, ay, aw, ah = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    ox = data[..., 0] * std0 * aw + ax
    oy = data[..., 1] * std1 * ah + ay
    dw, dh = data[..., 2] * std2, data[..., 3] * std3
    if clip > 0:
        dw, dh = np.minimum(dw, clip), np.minimum(dh, clip)
    ow, oh = np.exp(dw) * aw / 2, np.exp(dh) * ah / 2
    return np.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1)


def bipartite_matching(data, threshold, is_ascend=False, topk=-1):
    B, N, M = data.shape
    x = -np.ones((B, N))
    y = -np.ones((B, M))
    for b in range(B):
        flat = data[b].ravel()
        order = np.argsort(flat if is_ascend else -flat, kind="stable")
        count = 0
        for k in order:
            if topk > 0 and count >= topk:
                break
            s = flat[k]
            if (s > threshold) if not is_ascend else (s < threshold):
                pass
            else:
                break
            i, j = divmod(int(k), M)
            if x[b, i] < 0 and y[b, j] < 0:
                x[b, i] = j
                y[b, j] = i
                count += 1
    return x, y


def _boxes(*lead):
    b = R.uniform(0, 0.6, lead + (4,))
    b[..., 2:] = b[..., :2] + R.uniform(0.1, 0.4, lead + (2,))
    return b


def _nms_data(batch=2, n=10):
    d = np.zeros((batch, n, 6))
    d[..., 0] = R.integers(0, 3, (batch, n))
    d[..., 1] = R.permutation(batch * n).reshape(batch, n) / (batch * n) + 0.01  # distinct scores
    d[..., 2:] = _boxes(batch, n)
    return d


def _minus_one_classes():
    """Boxes of classes -1, 0 and 1 (from their own generator: the other cases' data stay as they are)."""
    rng = np.random.default_rng(11)
    d = np.zeros((1, 8, 6))
    d[..., 0] = rng.integers(-1, 2, (1, 8))
    d[..., 1] = rng.permutation(8).reshape(1, 8) / 8 + 0.01
    lo = rng.uniform(0, 0.5, (1, 8, 2))
    d[..., 2:4], d[..., 4:] = lo, lo + rng.uniform(0.1, 0.5, (1, 8, 2))
    return d


def _nms_case(id, grad="none", data=None, **kw):
    return Case(
        "_contrib_box_nms",
        lambda v: mx.sym.contrib.box_nms(v["d"], **kw),
        {"d": _nms_data() if data is None else data},
        lambda d: box_nms(d, **kw)[0],
        grad=grad,
        id=id,
    )


_anchors = _boxes(2, 5)
_refs = _boxes(2, 3)

CASES = [
    Case(
        "_contrib_box_iou",
        lambda v: mx.sym.contrib.box_iou(v["a"], v["b"]),
        {"a": _boxes(2, 3), "b": _boxes(4)},
        lambda a, b: box_iou(a, b),
        grad="none",
    ),
    Case(
        "_contrib_box_iou",
        lambda v: mx.sym.contrib.box_iou(v["a"], v["b"], format="center"),
        {"a": np.abs(_boxes(3)), "b": np.abs(_boxes(2, 2))},
        lambda a, b: box_iou(a, b, "center"),
        grad="none",
        id="center",
    ),
    _nms_case("default"),
    _nms_case("classes", overlap_thresh=0.3, valid_thresh=0.2, id_index=0),
    _nms_case("topk_background_force", topk=5, id_index=0, background_id=1, force_suppress=True),
    _nms_case("center_formats", in_format="center", out_format="center", overlap_thresh=0.2),
    _nms_case("to_center", out_format="center", id_index=0, topk=4),
    Case(
        "_contrib_box_nms",
        lambda v: mx.sym.contrib.box_nms(v["d"], overlap_thresh=0.3, id_index=0),
        {"d": _nms_data(1, 6)[0][None]},
        lambda d: box_nms(d, overlap_thresh=0.3, id_index=0)[0],
        id="grad",
    ),
    # class -1 is the default background: its boxes are dropped
    _nms_case("minus_one_background", id_index=0, data=_minus_one_classes()),
    Case(
        "_contrib_box_encode",
        lambda v: mx.sym.contrib.box_encode(v["s"], v["m"], v["a"], v["r"], v["mean"], v["std"]),
        {
            "s": np.array([[1.0, 0, -1, 1, 1], [1, 1, 0, -1, 1]]),
            "m": R.integers(0, 3, (2, 5)).astype(float),
            "a": _anchors,
            "r": _refs,
            "mean": np.array([0.1, -0.1, 0.0, 0.2]),
            "std": np.array([0.1, 0.2, 0.3, 0.4]),
        },
        lambda s, m, a, r, mean, std: list(box_encode(s, m, a, r, mean, std)),
        grad="none",
    ),
    Case(
        "_contrib_box_decode",
        lambda v: mx.sym.contrib.box_decode(v["d"], v["a"]),
        {"d": R.normal(size=(2, 5, 4)) * 0.5, "a": np.abs(_anchors[:1])},
        lambda d, a: box_decode(d, a),
        grad="none",
    ),
    Case(
        "_contrib_box_decode",
        lambda v: mx.sym.contrib.box_decode(
            v["d"], v["a"], std0=0.1, std1=0.2, std2=0.3, std3=0.4, clip=0.1, format="corner"
        ),
        {"d": R.normal(size=(2, 5, 4)) * 0.5, "a": _anchors[:1]},
        lambda d, a: box_decode(d, a, 0.1, 0.2, 0.3, 0.4, 0.1, "corner"),
        grad="none",
        id="corner_clip",
    ),
    *[
        Case(
            "_contrib_bipartite_matching",
            lambda v, kw=kw: mx.sym.contrib.bipartite_matching(v["s"], **kw),
            {"s": R.uniform(0, 1, (2, 6, 4))},
            lambda s, kw=kw: list(bipartite_matching(s, **kw)),
            grad="none",
            id="_".join(f"{k}{v}" for k, v in kw.items()),
        )
        for kw in (dict(threshold=0.3), dict(threshold=0.5, topk=2), dict(threshold=0.6, is_ascend=True))
    ],
    Case(
        "_contrib_bipartite_matching",
        lambda v: mx.sym.contrib.bipartite_matching(v["s"], threshold=1e-12),
        {"s": np.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])},
        lambda s: [np.array([1.0, -1.0, 0.0]), np.array([2.0, 0.0])],
        grad="none",
        id="mxnet_doc",
    ),
]

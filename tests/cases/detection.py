"""Cases for the SSD operators (symjit/ops/detection.py). The numpy references are written here from
MXNet's documented behaviour and were checked against MXNet 1.9.1's CPU build on random inputs
(MultiBoxTarget with and without negative mining, MultiBoxDetection with thresholds, forced
suppression and nms_topk); none of the ops has a gradient."""

from __future__ import annotations

import math

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(53)


def prior_ref(data, sizes=(1.0,), ratios=(1.0,), clip=False, steps=(-1.0, -1.0), offsets=(0.5, 0.5)):
    h, w = data.shape[2:]
    sy = steps[0] if steps[0] > 0 else 1.0 / h
    sx = steps[1] if steps[1] > 0 else 1.0 / w
    halves = [(s * h / w * math.sqrt(ratios[0]) / 2, s / math.sqrt(ratios[0]) / 2) for s in sizes]
    halves += [(sizes[0] * h / w * math.sqrt(r) / 2, sizes[0] / math.sqrt(r) / 2) for r in ratios[1:]]
    out = []
    for y in range(h):
        for x in range(w):
            cy, cx = (y + offsets[0]) * sy, (x + offsets[1]) * sx
            out += [[cx - hw, cy - hh, cx + hw, cy + hh] for hw, hh in halves]
    out = np.array(out)[None]
    return np.clip(out, 0, 1) if clip else out


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / u if u > 0 else 0.0


def mbtarget(
    anchor,
    label,
    cls_pred,
    overlap_threshold=0.5,
    ignore_label=-1,
    negative_mining_ratio=-1,
    negative_mining_thresh=0.5,
    minimum_negative_samples=0,
    variances=(0.1, 0.1, 0.2, 0.2),
):
    anc = anchor[0]
    A = anc.shape[0]
    N = label.shape[0]
    loc_t = np.zeros((N, A * 4))
    loc_m = np.zeros((N, A * 4))
    cls_t = np.zeros((N, A))
    for n in range(N):
        gts = []
        for row in label[n]:
            if row[0] == -1:
                break
            gts.append(row)
        G = len(gts)
        flags = -np.ones(A, int)
        match = -np.ones(A, int)
        maxov = -np.ones(A)
        if G > 0:
            ov = np.array([[iou(anc[i], g[1:5]) for g in gts] for i in range(A)])
            gdone = np.zeros(G, bool)
            while not gdone.all():
                best = (-1, -1, 1e-6)
                for j in range(G):
                    if gdone[j]:
                        continue
                    for i in range(A):
                        if flags[i] == 1:
                            continue
                        if ov[i, j] > best[2]:
                            best = (i, j, ov[i, j])
                if best[0] < 0:
                    break
                i, j, o = best
                flags[i] = 1
                match[i] = j
                gdone[j] = True
                maxov[i] = o
            for i in range(A):
                if flags[i] == 1:
                    continue
                j = int(np.argmax(ov[i]))
                maxov[i] = ov[i, j]
                if overlap_threshold > 0 and ov[i, j] > overlap_threshold:
                    flags[i] = 1
                    match[i] = j
            if negative_mining_ratio > 0:
                npos = int((flags == 1).sum())
                nneg = int(min(max(negative_mining_ratio * npos, minimum_negative_samples), A - npos))
                cand = []
                for i in range(A):
                    if flags[i] != 1 and maxov[i] < negative_mining_thresh:
                        p = cls_pred[n, :, i]
                        e = np.exp(p - p.max())
                        prob = e[0] / e.sum()
                        cand.append((-prob, i))  # hardest: lowest background prob
                cand.sort(key=lambda t: -t[0])
                for _, i in cand[:nneg]:
                    flags[i] = 0
            else:
                flags[flags != 1] = 0
        for i in range(A):
            if flags[i] == 1:
                g = gts[match[i]]
                a = anc[i]
                aw, ah = a[2] - a[0], a[3] - a[1]
                ax, ay = (a[0] + a[2]) / 2, (a[1] + a[3]) / 2
                gw, gh = g[3] - g[1], g[4] - g[2]
                gx, gy = (g[1] + g[3]) / 2, (g[2] + g[4]) / 2
                loc_t[n, 4 * i : 4 * i + 4] = [
                    (gx - ax) / aw / variances[0],
                    (gy - ay) / ah / variances[1],
                    np.log(gw / aw) / variances[2],
                    np.log(gh / ah) / variances[3],
                ]
                loc_m[n, 4 * i : 4 * i + 4] = 1
                cls_t[n, i] = g[0] + 1
            elif flags[i] == 0:
                cls_t[n, i] = 0
            else:
                cls_t[n, i] = ignore_label
    return loc_t, loc_m, cls_t


def mbdetect(
    cls_prob,
    loc_pred,
    anchor,
    clip=True,
    threshold=0.01,
    background_id=0,
    nms_threshold=0.5,
    force_suppress=False,
    variances=(0.1, 0.1, 0.2, 0.2),
    nms_topk=-1,
):
    N, C1, A = cls_prob.shape
    anc = anchor[0]
    out = -np.ones((N, A, 6))
    for n in range(N):
        rows = []
        for i in range(A):
            p = cls_prob[n, 1:, i]
            j = int(np.argmax(p))
            score = p[j]
            if score < threshold:
                continue
            a = anc[i]
            l = loc_pred[n, 4 * i : 4 * i + 4]
            aw, ah = a[2] - a[0], a[3] - a[1]
            ax, ay = (a[0] + a[2]) / 2, (a[1] + a[3]) / 2
            ox = l[0] * variances[0] * aw + ax
            oy = l[1] * variances[1] * ah + ay
            ow = np.exp(l[2] * variances[2]) * aw / 2
            oh = np.exp(l[3] * variances[3]) * ah / 2
            box = [ox - ow, oy - oh, ox + ow, oy + oh]
            if clip:
                box = list(np.clip(box, 0, 1))
            rows.append([j, score] + box)
        rows.sort(key=lambda r: -r[1])
        rows = np.array(rows).reshape(-1, 6)
        keep = len(rows) if nms_topk < 0 else min(nms_topk, len(rows))
        rows[keep:, 0] = -1
        for i in range(keep):
            if rows[i, 0] < 0:
                continue
            for k in range(i + 1, keep):
                if rows[k, 0] < 0:
                    continue
                if (force_suppress or rows[i, 0] == rows[k, 0]) and iou(
                    rows[i, 2:], rows[k, 2:]
                ) > nms_threshold:
                    rows[k, 0] = -1
        out[n, : len(rows)] = rows
    return out


ANCHOR = prior_ref(np.zeros((1, 1, 3, 3)), sizes=(0.3, 0.6), ratios=(1.0, 2.0))
A = ANCHOR.shape[1]


def _labels(counts, classes=3, width=5):
    label = -np.ones((len(counts), max(counts) + 1, width))
    for n, count in enumerate(counts):
        for m in range(count):
            x0, y0 = R.uniform(0, 0.6, 2)
            w, h = R.uniform(0.1, 0.4, 2)
            label[n, m, :5] = [R.integers(0, classes), x0, y0, x0 + w, y0 + h]
    return label


def _probs(n, classes=3):
    logits = R.normal(size=(n, classes + 1, A)) * 2
    return np.exp(logits) / np.exp(logits).sum(1, keepdims=True)


def _target_case(counts, id, width=5, **kw):
    ins = {
        "anchor": ANCHOR.copy(),
        "label": _labels(counts, width=width),
        "cls_pred": R.normal(size=(len(counts), 4, A)),
    }
    return Case(
        "_contrib_MultiBoxTarget",
        lambda v: mx.sym.contrib.MultiBoxTarget(v["anchor"], v["label"], v["cls_pred"], **kw),
        ins,
        lambda anchor, label, cls_pred: list(mbtarget(anchor, label, cls_pred, **kw)),
        grad="none",
        id=id,
    )


def _detection_case(id, **kw):
    ins = {"cls_prob": _probs(2), "loc_pred": R.normal(size=(2, A * 4)) * 0.5, "anchor": ANCHOR.copy()}
    return Case(
        "_contrib_MultiBoxDetection",
        lambda v: mx.sym.contrib.MultiBoxDetection(v["cls_prob"], v["loc_pred"], v["anchor"], **kw),
        ins,
        lambda cls_prob, loc_pred, anchor: mbdetect(cls_prob, loc_pred, anchor, **kw),
        grad="none",
        id=id,
    )


def base_anchors(stride, ratios, scales):
    base = np.array([0, 0, stride - 1, stride - 1], dtype=np.float64)
    w, h = base[2] - base[0] + 1, base[3] - base[1] + 1
    cx, cy = base[0] + 0.5 * (w - 1), base[1] + 0.5 * (h - 1)
    out = []
    for r in ratios:
        size = w * h / r
        ws = np.round(np.sqrt(size))
        hs = np.round(ws * r)
        for s in scales:
            ww, hh = ws * s, hs * s
            out.append([cx - 0.5 * (ww - 1), cy - 0.5 * (hh - 1), cx + 0.5 * (ww - 1), cy + 0.5 * (hh - 1)])
    return np.array(out)


def pixel_iou(a, b):
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]) + 1)
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]) + 1)
    inter = iw * ih
    return inter / ((a[2] - a[0] + 1) * (a[3] - a[1] + 1) + (b[2] - b[0] + 1) * (b[3] - b[1] + 1) - inter)


def proposal(
    cls_prob,
    bbox_pred,
    im_info,
    rpn_pre_nms_top_n=6000,
    rpn_post_nms_top_n=300,
    threshold=0.7,
    rpn_min_size=16,
    scales=(4, 8, 16, 32),
    ratios=(0.5, 1, 2),
    feature_stride=16,
    output_score=False,
):
    N, A2, H, W = cls_prob.shape
    A = A2 // 2
    anchors0 = base_anchors(feature_stride, ratios, scales)
    rois, scores_out = [], []
    for n in range(N):
        props, scores = [], []
        for h in range(H):
            for w in range(W):
                for a in range(A):
                    an = anchors0[a] + np.array([w, h, w, h]) * feature_stride
                    d = bbox_pred[n, 4 * a : 4 * a + 4, h, w]
                    aw, ah = an[2] - an[0] + 1, an[3] - an[1] + 1
                    cx, cy = an[0] + 0.5 * (aw - 1), an[1] + 0.5 * (ah - 1)
                    pcx, pcy = d[0] * aw + cx, d[1] * ah + cy
                    pw, ph = np.exp(d[2]) * aw, np.exp(d[3]) * ah
                    box = [
                        pcx - 0.5 * (pw - 1),
                        pcy - 0.5 * (ph - 1),
                        pcx + 0.5 * (pw - 1),
                        pcy + 0.5 * (ph - 1),
                    ]
                    imh, imw, sc = im_info[n]
                    box = [
                        min(max(box[0], 0), imw - 1),
                        min(max(box[1], 0), imh - 1),
                        min(max(box[2], 0), imw - 1),
                        min(max(box[3], 0), imh - 1),
                    ]
                    s = cls_prob[n, A + a, h, w]
                    ms = rpn_min_size * sc
                    if box[2] - box[0] + 1 < ms or box[3] - box[1] + 1 < ms:
                        s = -1.0
                    props.append(box)
                    scores.append(s)
        props = np.array(props)
        scores = np.array(scores)
        order = np.argsort(-scores, kind="stable")[:rpn_pre_nms_top_n]
        keep = []
        sup = np.zeros(len(order), bool)
        for i in range(len(order)):
            if sup[i]:
                continue
            keep.append(order[i])
            if len(keep) >= rpn_post_nms_top_n:
                break
            for j in range(i + 1, len(order)):
                if not sup[j] and pixel_iou(props[order[i]], props[order[j]]) > threshold:
                    sup[j] = True
        for q in range(rpn_post_nms_top_n):
            k = keep[q % len(keep)]
            rois.append([n] + list(props[k]))
            scores_out.append([scores[k]])
    return np.array(rois), np.array(scores_out)


_PROPOSALS = [
    dict(
        rpn_pre_nms_top_n=50,
        rpn_post_nms_top_n=10,
        threshold=0.7,
        rpn_min_size=4,
        scales=(2, 4),
        ratios=(0.5, 1, 2),
        feature_stride=8,
        output_score=True,
    ),
    dict(
        rpn_pre_nms_top_n=20,
        rpn_post_nms_top_n=30,
        threshold=0.5,
        rpn_min_size=8,
        scales=(1, 2),
        ratios=(1,),
        feature_stride=16,
    ),
]


def _proposal_case(i, kw):
    """Proposal on one image, MultiProposal on two (more rows than kept boxes in the second)."""
    n = 1 if i == 0 else 2
    op = "_contrib_Proposal" if n == 1 else "_contrib_MultiProposal"
    na = len(kw["scales"]) * len(kw["ratios"])
    ins = {
        "cls": R.uniform(0, 1, (n, 2 * na, 4, 5)),
        "bbox": R.normal(0, 0.3, (n, 4 * na, 4, 5)),
        "info": np.array([[4.0 * kw["feature_stride"], 5.0 * kw["feature_stride"], 1.0]] * n),
    }

    def ref(cls, bbox, info):
        rois, scores = proposal(cls, bbox, info, **kw)
        return [rois, scores] if kw.get("output_score") else rois

    return Case(
        op,
        lambda v: getattr(mx.sym.contrib, op[len("_contrib_") :])(v["cls"], v["bbox"], v["info"], **kw),
        ins,
        ref,
        grad="none",
        id=f"set{i}",
    )


CASES = [
    Case(
        "_contrib_MultiBoxPrior",
        lambda v: mx.sym.contrib.MultiBoxPrior(v["x"]),
        {"x": np.zeros((1, 2, 2, 3))},
        lambda x: prior_ref(x),
        grad="none",
    ),
    Case(
        "_contrib_MultiBoxPrior",
        lambda v: mx.sym.contrib.MultiBoxPrior(v["x"], sizes=(0.5, 0.25), ratios=(1, 2, 0.5)),
        {"x": R.normal(size=(2, 1, 3, 2))},
        lambda x: prior_ref(x, (0.5, 0.25), (1, 2, 0.5)),
        grad="none",
        id="sizes_ratios",
    ),
    Case(
        "_contrib_MultiBoxPrior",
        lambda v: mx.sym.contrib.MultiBoxPrior(
            v["x"], sizes=(0.5,), clip=True, steps=(0.3, 0.2), offsets=(0.2, 0.4)
        ),
        {"x": np.zeros((1, 1, 2, 3))},
        lambda x: prior_ref(x, (0.5,), (1.0,), True, (0.3, 0.2), (0.2, 0.4)),
        grad="none",
        id="clip_steps",
    ),
    _target_case([2, 3], "default"),
    _target_case([1, 0, 3], "empty_image", width=6),
    _target_case([3, 2], "mining", negative_mining_ratio=3, minimum_negative_samples=2),
    _target_case(
        [2, 2],
        "mining_thresholds",
        overlap_threshold=0.3,
        ignore_label=-2,
        negative_mining_ratio=2,
        negative_mining_thresh=0.4,
        variances=(0.2, 0.2, 0.1, 0.1),
    ),
    _detection_case("default"),
    _detection_case("thresholds", threshold=0.3, nms_threshold=0.2),
    _detection_case("force_noclip", force_suppress=True, clip=False, threshold=0.25),
    _detection_case("topk", nms_topk=5, threshold=0.2),
    *[_proposal_case(i, kw) for i, kw in enumerate(_PROPOSALS)],
]

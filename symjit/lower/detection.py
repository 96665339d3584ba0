"""Target-neutral lowering of the SSD operators (:mod:`symjit.ops.detection`). ``MultiBoxPrior``
is a loop over the feature map's pixels writing each pixel's boxes (their half sizes are
constants of the kernel); ``MultiBoxTarget`` and ``MultiBoxDetection`` loop over the images (one
CPU iteration or CUDA thread each) through the routines of :mod:`symjit.ops.detection_kernels`,
the detections sorted by :func:`~symjit.ops.sort.argsort_row` (stable, descending score).

>>> import symjit as mx
>>> prob = mx.nd.array([[[0.1, 0.8], [0.9, 0.2]]])            # (N, classes + 1, anchors)
>>> anchor = mx.nd.array([[[0.1, 0.1, 0.3, 0.3], [0.5, 0.5, 0.9, 0.9]]])
>>> out = mx.nd.contrib.MultiBoxDetection(prob, mx.nd.zeros((1, 8)), anchor, threshold=0.5)
>>> out[0, :, :2].asnumpy().astype('float64').round(2).tolist()
[[0.0, 0.9], [-1.0, -1.0]]
"""
from __future__ import annotations

import numpy as np

from ..ops import detection_kernels as dk
from ..ops.box import batch_size
from ..ops.detection import prior_halves, proposal_anchors
from ..ops.sort import argsort_row
from .emit import literal
from .rules import ANY, rule

__all__: list[str] = []


def _view(k, arr: str, *shape: int) -> str:
    v = k.tmp("v")
    k.line(f"{v} = {arr}.reshape({', '.join(str(s) for s in shape)})")
    return v


def multibox_prior(k, node, ins, outs) -> None:
    p = node.params
    _, _, h, w = k.info[ins[0]].shape
    dt = k.info[outs[0]].dtype
    halves = prior_halves(p, h, w)
    out = _view(k, outs[0], h * w, len(halves), 4)
    step_y = p["steps"][0] if p["steps"][0] > 0 else 1.0 / h
    step_x = p["steps"][1] if p["steps"][1] > 0 else 1.0 / w
    target = k.target
    idx = target.open_loop(k, [str(h * w)])
    q = idx[0]
    cy, cx = k.tmp("cy"), k.tmp("cx")
    k.line(f"{cy} = ({q} // {w} + {literal(p['offsets'][0], dt)}) * {literal(step_y, dt)}")
    k.line(f"{cx} = ({q} % {w} + {literal(p['offsets'][1], dt)}) * {literal(step_x, dt)}")
    for b, (hw, hh) in enumerate(halves):
        for c, expr in enumerate((f"{cx} - {literal(hw, dt)}", f"{cy} - {literal(hh, dt)}",
                                  f"{cx} + {literal(hw, dt)}", f"{cy} + {literal(hh, dt)}")):
            if p["clip"]:
                expr = f"min(max({expr}, {literal(0.0, dt)}), {literal(1.0, dt)})"
            k.line(f"{out}[{q}, {b}, {c}] = {expr}")
    target.close_loop(k, idx)


def multibox_target(k, node, ins, outs) -> None:
    p = node.params
    anchor_s, label_s, pred_s = (k.info[i].shape for i in ins)
    n, a, m = label_s[0], anchor_s[1], label_s[1]
    dt = k.info[outs[0]].dtype
    anchor = _view(k, ins[0], a, 4)
    loc_t, loc_m = _view(k, outs[0], n, a, 4), _view(k, outs[1], n, a, 4)
    ov, flags, match, best = k.workspace
    target = k.target
    idx = target.open_loop(k, [str(n)])
    f = [literal(float(v), dt) for v in (p["overlap_threshold"], p["ignore_label"],
                                         p["negative_mining_ratio"], p["negative_mining_thresh"],
                                         *p["variances"])]
    k.line(f"{k.module.body(dk.match_anchors)}({anchor}, {ins[1]}, {ins[2]}, {loc_t}, {loc_m}, {outs[2]}, "
           f"{_view_inline(ov, n, a, max(m, 1))}, {flags}, {match}, {best}, {idx[0]}, {a}, {m}, {pred_s[1]}, "
           f"{f[0]}, {f[1]}, {f[2]}, {f[3]}, {int(p['minimum_negative_samples'])}, "
           f"{f[4]}, {f[5]}, {f[6]}, {f[7]})")
    target.close_loop(k, idx)


def _view_inline(arr: str, *shape: int) -> str:
    return f"{arr}.reshape({', '.join(str(s) for s in shape)})"


def multibox_detection(k, node, ins, outs) -> None:
    p = node.params
    n, c1, a = k.info[ins[0]].shape
    dt = k.info[outs[0]].dtype
    loc, anchor = _view(k, ins[1], n, a, 4), _view(k, ins[2], a, 4)
    rows, score, ind, tmp = k.workspace
    score3, ind3, tmp3 = (_view(k, s, n, a, 1) for s in (score, ind, tmp))
    target = k.target
    idx = target.open_loop(k, [str(n)])
    z, count, keep = idx[0], k.tmp("count"), k.tmp("keep")
    v = [literal(float(x), dt) for x in p["variances"]]
    k.line(f"{count} = {k.module.body(dk.decode_detections)}({ins[0]}, {loc}, {anchor}, {rows}, {score3}, "
           f"{z}, "
           f"{a}, {c1}, {literal(float(p['threshold']), dt)}, {bool(p['clip'])}, {', '.join(v)})")
    k.line(f"{k.module.body(argsort_row)}({score3}, {z}, 0, {count}, {ind3}, {tmp3}, False)")
    k.line(f"{keep} = {count}" if p["nms_topk"] < 0 else f"{keep} = min({count}, {int(p['nms_topk'])})")
    k.line(f"{k.module.body(dk.suppress)}({rows}, {ind3}, {outs[0]}, {z}, {count}, {a}, {keep}, "
           f"{literal(float(p['nms_threshold']), dt)}, {bool(p['force_suppress'])})")
    target.close_loop(k, idx)


def _target_scratch(node, ins, outs):
    n, a = outs[2].shape
    m = max(ins[1].shape[1], 1)
    dt = np.dtype(outs[0].dtype)
    return [((n * a * m,), dt), ((n, a), np.dtype(np.int64)), ((n, a), np.dtype(np.int64)), ((n, a), dt)]


def _detection_scratch(node, ins, outs):
    n, a, _ = outs[0].shape
    dt = np.dtype(outs[0].dtype)
    return [((n, a, 6), dt), ((n * a,), dt), ((n * a,), np.dtype(np.int64)), ((n * a,), np.dtype(np.int64))]


rule("_contrib_MultiBoxPrior", ANY, multibox_prior)
rule("_contrib_MultiBoxTarget", ANY, multibox_target, workspace=_target_scratch)
rule("_contrib_MultiBoxDetection", ANY, multibox_detection, workspace=_detection_scratch)


def box_nms(k, node, ins, outs) -> None:
    p = node.params
    shape = k.info[ins[0]].shape
    n, width = shape[-2], shape[-1]
    nb = batch_size(shape, 2)
    dt = k.info[outs[0]].dtype
    data, out = _view(k, ins[0], nb, n, width), _view(k, outs[0], nb, n, width)
    record = _view(k, outs[1], nb, n)
    score, rows, ind, tmp, dropped = (_view(k, s, nb, n, 1) for s in k.workspace)
    target = k.target
    idx = target.open_loop(k, [str(nb)])
    b, count, keep = idx[0], k.tmp("count"), k.tmp("keep")
    k.line(f"{count} = {k.module.body(dk.nms_candidates)}({data}, {score}, {rows}, {b}, {n}, "
           f"{p['score_index']}, {p['id_index']}, {p['background_id']}, "
           f"{literal(float(p['valid_thresh']), dt)})")
    k.line(f"{k.module.body(argsort_row)}({score}, {b}, 0, {count}, {ind}, {tmp}, False)")
    k.line(f"{keep} = {count}" if p["topk"] <= 0 else f"{keep} = min({count}, {int(p['topk'])})")
    k.line(f"{k.module.body(dk.nms_write)}({data}, {rows}, {ind}, {dropped}, {out}, {record}, {b}, {n}, "
           f"{width}, {count}, {keep}, {p['coord_start']}, {p['id_index']}, {bool(p['force_suppress'])}, "
           f"{literal(float(p['overlap_thresh']), dt)}, {p['in_format'] == 'center'}, "
           f"{p['out_format'] == 'center'})")
    target.close_loop(k, idx)


def box_nms_backward(k, node, ins, outs) -> None:
    shape = k.info[ins[0]].shape
    n, width = shape[-2], shape[-1]
    nb = batch_size(shape, 2)
    g, dx = _view(k, ins[0], nb, n, width), _view(k, outs[0], nb, n, width)
    record = _view(k, ins[1], nb, n)
    target = k.target
    idx = target.open_loop(k, [str(nb)])
    k.line(f"{k.module.body(dk.nms_backward)}({g}, {record}, {dx}, {idx[0]}, {n}, {width})")
    target.close_loop(k, idx)


def box_encode(k, node, ins, outs) -> None:
    nb, n = k.info[ins[0]].shape
    m = k.info[ins[3]].shape[1]
    target = k.target
    idx = target.open_loop(k, [str(nb)])
    k.line(f"{k.module.body(dk.encode_boxes)}({', '.join(ins)}, {outs[0]}, {outs[1]}, {idx[0]}, {n}, {m})")
    target.close_loop(k, idx)


def bipartite_matching(k, node, ins, outs) -> None:
    p = node.params
    shape = k.info[ins[0]].shape
    n, m = shape[-2], shape[-1]
    nb = batch_size(shape, 2)
    dt = k.info[outs[0]].dtype
    scores = _view(k, ins[0], nb, n * m, 1)
    x, y = _view(k, outs[0], nb, n), _view(k, outs[1], nb, m)
    ind, tmp = (_view(k, s, nb, n * m, 1) for s in k.workspace)
    target = k.target
    idx = target.open_loop(k, [str(nb)])
    b = idx[0]
    k.line(f"{k.module.body(argsort_row)}({scores}, {b}, 0, {n * m}, {ind}, {tmp}, {bool(p['is_ascend'])})")
    k.line(f"{k.module.body(dk.greedy_match)}({scores}, {ind}, {x}, {y}, {b}, {n}, {m}, "
           f"{literal(float(p['threshold']), dt)}, {bool(p['is_ascend'])}, {int(p['topk'])})")
    target.close_loop(k, idx)


def _nms_scratch(node, ins, outs):
    size = int(np.prod(ins[0].shape[:-1]))
    dt = np.dtype(outs[0].dtype)
    return [((size,), dt)] + [((size,), np.dtype(np.int64))] * 4


def _bpm_scratch(node, ins, outs):
    return [((int(np.prod(ins[0].shape)),), np.dtype(np.int64))] * 2


def box_iou(k, node, ins, outs) -> None:
    """Every (lhs box, rhs box) pair; the boxes are counted at run time, so one kernel serves every
    shape of the same ranks (and imperative calls, viewed as (N, 4) x (M, 4), every shape)."""
    center = node.params["format"] == "center"
    a, b, o = k.tmp("a"), k.tmp("b"), k.tmp("o")
    k.line(f"{a} = {ins[0]}.reshape({ins[0]}.size // 4, 4)")
    k.line(f"{b} = {ins[1]}.reshape({ins[1]}.size // 4, 4)")
    k.line(f"{o} = {outs[0]}.reshape({a}.shape[0], {b}.shape[0])")
    target = k.target
    idx = target.open_loop(k, [f"{a}.shape[0]", f"{b}.shape[0]"])
    i, j = idx
    k.line(f"{o}[{i}, {j}] = {k.module.body(dk.corner_iou)}("
           f"{', '.join(f'{a}[{i}, {c}]' for c in range(4))}, "
           f"{', '.join(f'{b}[{j}, {c}]' for c in range(4))}, {center})")
    target.close_loop(k, idx)


rule("_contrib_box_iou", ANY, box_iou)
rule("_contrib_box_nms", ANY, box_nms, workspace=_nms_scratch)
rule("_backward_contrib_box_nms", ANY, box_nms_backward)
rule("_contrib_box_encode", ANY, box_encode)
rule("_contrib_bipartite_matching", ANY, bipartite_matching, workspace=_bpm_scratch)


def proposal(k, node, ins, outs) -> None:
    p = node.params
    n, a2, h, w = k.info[ins[0]].shape
    na = a2 // 2
    total = h * w * na
    post = p["rpn_post_nms_top_n"]
    dt = k.info[outs[0]].dtype
    anchors = _view(k, k.workspace[0], n, na, 4)
    props = _view(k, k.workspace[1], n, total, 4)
    scores, ind, tmp, dropped = (_view(k, s, n, total, 1) for s in k.workspace[2:6])
    keep = _view(k, k.workspace[6], n, post, 1)
    target = k.target
    idx = target.open_loop(k, [str(n)])
    b = idx[0]
    for i, box in enumerate(proposal_anchors(p)):
        for c, v in enumerate(box):
            k.line(f"{anchors}[{b}, {i}, {c}] = {literal(float(v), dt)}")
    k.line(f"{k.module.body(dk.proposal_boxes)}({ins[0]}, {ins[1]}, {ins[2]}, {anchors}, {props}, {scores}, "
           f"{b}, {h}, {w}, {na}, {literal(float(p['feature_stride']), dt)}, "
           f"{literal(float(p['rpn_min_size']), dt)})")
    k.line(f"{k.module.body(argsort_row)}({scores}, {b}, 0, {total}, {ind}, {tmp}, False)")
    k.line(f"{k.module.body(dk.proposal_select)}({props}, {scores}, {ind}, {dropped}, {keep}, {outs[0]}, "
           f"{outs[1]}, {b}, {total}, {int(p['rpn_pre_nms_top_n'])}, {post}, "
           f"{literal(float(p['threshold']), dt)})")
    target.close_loop(k, idx)


def _proposal_scratch(node, ins, outs):
    n, a2, h, w = ins[0].shape
    na, total = a2 // 2, ins[0].shape[2] * ins[0].shape[3] * (a2 // 2)
    dt, i64 = np.dtype(outs[0].dtype), np.dtype(np.int64)
    post = node.params["rpn_post_nms_top_n"]
    return [((n * na * 4,), dt), ((n * total * 4,), dt), ((n * total,), dt), ((n * total,), i64),
            ((n * total,), i64), ((n * total,), i64), ((n * post,), i64)]


for _name in ("_contrib_Proposal", "_contrib_MultiProposal"):
    rule(_name, ANY, proposal, workspace=_proposal_scratch)

"""The SSD operators of ``mx.sym.contrib`` / ``mx.nd.contrib``: ``MultiBoxPrior`` (anchor boxes),
``MultiBoxTarget`` (training targets for them) and ``MultiBoxDetection`` (decoding and
non-maximum suppression), with MXNet 1.9.1's parameters and outputs (checked against its CPU
build on random inputs). Boxes are ``(xmin, ymin, xmax, ymax)`` in image fractions; none of the
three has a gradient (MXNet passes none back either). Lowering: :mod:`symjit.lower.detection`,
one image per loop iteration or CUDA thread with the routines of
:mod:`symjit.ops.detection_kernels`.

* ``MultiBoxPrior(data)``: for each pixel of data's (H, W) map, centred at
  ``((x + offset_x) * step_x, (y + offset_y) * step_y)`` (steps default to 1/W, 1/H), one box per
  size with the first ratio, then one per further ratio with the first size; a box of size s and
  ratio r is ``s * H / W * sqrt(r)`` wide and ``s / sqrt(r)`` high. Output (1, H*W*boxes, 4).
* ``MultiBoxTarget(anchor, label, cls_pred)``: label rows ``(class, xmin, ymin, xmax, ymax)``,
  class -1 ending an image's boxes. Outputs ``loc_target`` and ``loc_mask`` (N, anchors*4) and
  ``cls_target`` (N, anchors): class + 1 for matched anchors, 0 for negatives, ``ignore_label``
  for the rest (every anchor of an image without boxes).
* ``MultiBoxDetection(cls_prob, loc_pred, anchor)``: (N, anchors, 6) rows ``(class, score,
  box)`` sorted by score, suppressed rows with class -1, rows below ``threshold`` all -1. As in
  MXNet 1.9.1, class 0 is the background whatever ``background_id`` says; rows past ``nms_topk``
  get class -1 and keep their own score and box (MXNet 1.9.1 leaves stale rows there).

>>> import symjit as mx
>>> anchors = mx.nd.contrib.MultiBoxPrior(mx.nd.zeros((1, 3, 2, 2)), sizes=(0.5,), ratios=(1, 4))
>>> anchors.shape, anchors[0, 0].asnumpy().tolist()
((1, 8, 4), [0.0, 0.0, 0.5, 0.5])
"""
from __future__ import annotations

import math

from .registry import Kind, OpDef, Param, ParamError, RuleError, register
from .rules import need_float, need_rank, shape_str

__all__ = ["float_outputs", "prior_halves"]

_VARIANCES = Param("variances", "floats", (0.1, 0.1, 0.2, 0.2), doc="variances of the box encoding",
                   check=lambda v: len(v) == 4 and all(x > 0 for x in v), check_msg="4 positive numbers")


def _register(op: OpDef) -> OpDef:
    op.extra.setdefault("family", "detection")
    op.extra["no_grad"] = True
    return register(op)


def float_outputs(n_out: int):
    """A dtype rule: float inputs of one dtype, ``n_out`` outputs of it."""
    def dtype(p: dict, ins: list, aux: list):
        known = next((t for t in ins if t is not None), None)
        if known is not None:
            need_float(known, "data")
        return [known] * len(ins), [known] * n_out, []
    return dtype


# --- MultiBoxPrior ---------------------------------------------------------------------------
def prior_halves(p: dict, height: int, width: int) -> list[tuple[float, float]]:
    """(half width, half height) of each box a pixel gets."""
    sizes, ratios = p["sizes"], p["ratios"]
    out = [(s * height / width * math.sqrt(ratios[0]) / 2, s / math.sqrt(ratios[0]) / 2) for s in sizes]
    out += [(sizes[0] * height / width * math.sqrt(r) / 2, sizes[0] / math.sqrt(r) / 2) for r in ratios[1:]]
    return out


def _prior_check(p: dict) -> None:
    for name in ("sizes", "ratios"):
        if not p[name] or any(v <= 0 for v in p[name]):
            raise ParamError(f"_contrib_MultiBoxPrior: parameter '{name}' must be positive numbers, "
                             f"got {p[name]}")
    for name in ("steps", "offsets"):
        if len(p[name]) != 2:
            raise ParamError(f"_contrib_MultiBoxPrior: parameter '{name}' takes 2 numbers (y, x), "
                             f"got {p[name]}")


def _prior_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    need_rank(data, "data", 4, " (N, C, H, W)")
    boxes = len(p["sizes"]) + len(p["ratios"]) - 1
    return [data], [(1, data[2] * data[3] * boxes, 4)], []


_register(OpDef(
    name="_contrib_MultiBoxPrior", hint="multiboxprior",
    params=(Param("sizes", "floats", (1.0,), doc="box sizes (fractions of the image)"),
            Param("ratios", "floats", (1.0,), doc="width/height ratios"),
            Param("clip", "bool", False, doc="clip boxes to [0, 1]"),
            Param("steps", "floats", (-1.0, -1.0), doc="(y, x) distance of the centres (-1: 1/H, 1/W)"),
            Param("offsets", "floats", (0.5, 0.5), doc="(y, x) offset of the centres, in steps")),
    check=_prior_check, shape=_prior_shape, dtype=float_outputs(1), kind=Kind.OPAQUE,
    doc="Anchor boxes for each pixel of data's feature map (only its shape is read).",
))


# --- MultiBoxTarget --------------------------------------------------------------------------
def _target_shape(p: dict, ins: list, aux: list):
    anchor, label, pred = ins
    if anchor is None or label is None:
        return list(ins), [None] * 3, []
    need_rank(anchor, "anchor", 3, " (1, anchors, 4)")
    need_rank(label, "label", 3, " (N, boxes, 5+)")
    if anchor[0] != 1 or anchor[2] != 4:
        raise RuleError(f"anchor must be (1, anchors, 4), got {shape_str(anchor)}")
    if label[2] < 5:
        raise RuleError(f"label rows need (class, xmin, ymin, xmax, ymax), got {shape_str(label)}")
    n, a = label[0], anchor[1]
    if pred is not None and (len(pred) != 3 or pred[0] != n or pred[2] != a):
        raise RuleError(f"cls_pred must be (N={n}, classes + 1, anchors={a}), got {shape_str(pred)}")
    return [anchor, label, pred], [(n, a * 4), (n, a * 4), (n, a)], []


_register(OpDef(
    name="_contrib_MultiBoxTarget", hint="multiboxtarget", arguments=("anchor", "label", "cls_pred"),
    outputs=("loc_target", "loc_mask", "cls_target"),
    params=(Param("overlap_threshold", "float", 0.5, doc="IoU above which an anchor matches a box"),
            Param("ignore_label", "float", -1.0, doc="cls_target of anchors left out"),
            Param("negative_mining_ratio", "float", -1.0, doc="negatives per positive (<= 0: all)"),
            Param("negative_mining_thresh", "float", 0.5, doc="IoU below which an anchor may be a negative"),
            Param("minimum_negative_samples", "int", 0, doc="fewest negatives mined"),
            _VARIANCES),
    shape=_target_shape, dtype=float_outputs(3), kind=Kind.OPAQUE,
    doc="Training targets of the anchors: box offsets, their mask and classes.",
))


# --- MultiBoxDetection -----------------------------------------------------------------------
def _detection_shape(p: dict, ins: list, aux: list):
    prob, loc, anchor = ins
    if prob is None:
        return list(ins), [None], []
    need_rank(prob, "cls_prob", 3, " (N, classes + 1, anchors)")
    n, a = prob[0], prob[2]
    want_loc, want_anchor = (n, a * 4), (1, a, 4)
    for given, want, arg in ((loc, want_loc, "loc_pred"), (anchor, want_anchor, "anchor")):
        if given is not None and tuple(given) != want:
            raise RuleError(f"{arg} must be {shape_str(want)} for cls_prob {shape_str(prob)}, "
                            f"got {shape_str(given)}")
    return [prob, want_loc, want_anchor], [(n, a, 6)], []


_register(OpDef(
    name="_contrib_MultiBoxDetection", hint="multiboxdetection", arguments=("cls_prob", "loc_pred", "anchor"),
    params=(Param("clip", "bool", True, doc="clip boxes to [0, 1]"),
            Param("threshold", "float", 0.01, doc="lowest score kept"),
            Param("background_id", "int", 0, doc="the background class (class 0, as in MXNet 1.9.1)"),
            Param("nms_threshold", "float", 0.5, doc="IoU above which the lower-scored box is suppressed"),
            Param("force_suppress", "bool", False, doc="suppress across classes"),
            _VARIANCES,
            Param("nms_topk", "int", -1, doc="suppress among the best k only (-1: all)")),
    shape=_detection_shape, dtype=float_outputs(1), kind=Kind.OPAQUE,
    doc="Detections: decoded boxes with class and score, sorted by score, after non-maximum suppression.",
))



# --- Proposal / MultiProposal ------------------------------------------------------------------
def proposal_anchors(p: dict) -> list[tuple[float, float, float, float]]:
    """The anchors of one feature-map cell (Faster R-CNN's: a square of side feature_stride reshaped
    to each ratio with rounded sides, then scaled), ratio-major."""
    stride = float(p["feature_stride"])
    centre = 0.5 * (stride - 1.0)
    out = []
    for r in p["ratios"]:
        w = float(round(math.sqrt(stride * stride / r)))
        h = float(round(w * r))
        for s in p["scales"]:
            ww, hh = w * s, h * s
            out.append((centre - 0.5 * (ww - 1), centre - 0.5 * (hh - 1), centre + 0.5 * (ww - 1),
                        centre + 0.5 * (hh - 1)))
    return out


def _proposal_check(p: dict) -> None:
    if p["iou_loss"]:
        raise ParamError("_contrib_Proposal: iou_loss=True (IoU-loss box deltas) is not supported by symjit")
    if not p["scales"] or not p["ratios"] or any(v <= 0 for v in (*p["scales"], *p["ratios"])):
        raise ParamError(f"_contrib_Proposal: scales {p['scales']} and ratios {p['ratios']} must be positive")
    if p["rpn_post_nms_top_n"] < 1 or p["rpn_pre_nms_top_n"] < 1:
        raise ParamError("_contrib_Proposal: rpn_pre_nms_top_n and rpn_post_nms_top_n must be >= 1")


def _proposal_shape(p: dict, ins: list, aux: list):
    cls, bbox, info = ins
    if cls is None:
        return list(ins), [None, None], []
    na = len(p["scales"]) * len(p["ratios"])
    if len(cls) != 4 or cls[1] != 2 * na:
        raise RuleError(f"cls_prob must be (N, 2 x {na} anchors, H, W), got {shape_str(cls)}")
    n, _, h, w = cls
    want = [cls, (n, 4 * na, h, w), (n, 3)]
    for given, wnt, arg in ((bbox, want[1], "bbox_pred"), (info, want[2], "im_info")):
        if given is not None and tuple(given) != wnt:
            raise RuleError(f"{arg} must be {shape_str(wnt)}, got {shape_str(given)}")
    rows = n * p["rpn_post_nms_top_n"]
    return want, [(rows, 5), (rows, 1)], []


_PROPOSAL_PARAMS = (
    Param("rpn_pre_nms_top_n", "int", 6000, doc="best proposals kept before suppression"),
    Param("rpn_post_nms_top_n", "int", 300, doc="proposals kept after suppression (rows per image)"),
    Param("threshold", "float", 0.7, doc="IoU above which the lower-scored proposal is suppressed"),
    Param("rpn_min_size", "int", 16, doc="smallest proposal side (times the image scale)"),
    Param("scales", "floats", (4.0, 8.0, 16.0, 32.0), doc="anchor scales"),
    Param("ratios", "floats", (0.5, 1.0, 2.0), doc="anchor height/width ratios"),
    Param("feature_stride", "int", 16, doc="image pixels per feature-map cell"),
    Param("output_score", "bool", False, doc="also return the proposals' scores"),
    Param("iou_loss", "bool", False, doc="IoU-loss deltas (not supported)"),
)
for _name in ("_contrib_Proposal", "_contrib_MultiProposal"):
    _register(OpDef(
        name=_name, hint=_name[len("_contrib_"):].lower(), arguments=("cls_prob", "bbox_pred", "im_info"),
        outputs=("output", "score"), visible_outputs=lambda p: 2 if p["output_score"] else 1,
        params=_PROPOSAL_PARAMS, check=_proposal_check, shape=_proposal_shape, dtype=float_outputs(2),
        kind=Kind.OPAQUE,
        doc="Region proposals of a region proposal network: anchors decoded by bbox_pred, clipped, "
            "filtered by size, the best rpn_pre_nms_top_n suppressed to rpn_post_nms_top_n rows "
            "(batch index, x1, y1, x2, y2) per image.",
    ))

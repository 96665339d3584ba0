"""The bounding-box operators of ``mx.sym.contrib`` / ``mx.nd.contrib`` (what GluonCV's exported
detection networks contain), with MXNet 1.9.1's parameters; outputs checked against its CPU build.

* ``box_iou(lhs, rhs, format)``: IoU of every box of lhs (..., 4) with every box of rhs (..., 4),
  shape lhs.shape[:-1] + rhs.shape[:-1]; one loop over the (lhs boxes, rhs boxes) pairs whose
  extents are read at run time (zero gradient, as MXNet).
* ``box_nms`` (``box_non_maximum_suppression``): per batch (leading axes), rows whose score passes
  ``valid_thresh`` (and whose class is not ``background_id``), best first, the ``topk`` best
  suppressing lower ones that overlap more than ``overlap_thresh`` (of their class unless
  ``force_suppress``); kept rows first, the rest -1. The gradient goes back to each kept row's
  input position (a hidden second output records it).
* ``box_encode(samples, matches, anchors, refs, means, stds)``: normalised center offsets of the
  positive samples and their mask (no gradient).
* ``box_decode(data, anchors, std0..3, clip, format)``: boxes (corners) from offsets and (1, N, 4)
  anchors given as corners or centers (a composite; zero gradient, as MXNet).
* ``bipartite_matching(data, threshold, is_ascend, topk)``: greedy best-first matching of a
  (..., N, M) score matrix: the matched column of each row and row of each column, -1 for none.
  ``topk`` limits the pairs as documented (MXNet 1.9.1's CPU build returns one more).

Lowering of the primitives: :mod:`symjit.lower.detection`.

>>> import symjit as mx
>>> x = mx.nd.array([[0.5, 0.5, 1.0, 1.0], [0.0, 0.0, 0.5, 0.5]])
>>> iou = mx.nd.contrib.box_iou(x, mx.nd.array([[0.25, 0.25, 0.75, 0.75]]))
>>> iou.asnumpy().astype('float64').round(4).tolist()
[[0.1429], [0.1429]]
"""
from __future__ import annotations

from .detection import float_outputs
from .registry import Kind, OpDef, Param, RuleError, register
from .rules import need_rank, prod, shape_str

__all__: list[str] = []

_FORMAT = ("center", "corner")


def _register(op: OpDef, no_grad: bool = True) -> OpDef:
    op.extra.setdefault("family", "box")
    if no_grad:
        op.extra["no_grad"] = True
    return register(op)


# --- box_iou ---------------------------------------------------------------------------------
def _iou_shape(p: dict, ins: list, aux: list):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return list(ins), [None], []
    for s, arg in ((lhs, "lhs"), (rhs, "rhs")):
        if not s or s[-1] != 4:
            raise RuleError(f"{arg} must end with 4 box coordinates, got {shape_str(s)}")
    return [lhs, rhs], [tuple(lhs[:-1]) + tuple(rhs[:-1])], []


_register(OpDef(
    name="_contrib_box_iou", hint="box_iou", arguments=("lhs", "rhs"),
    params=(Param("format", "str", "corner", choices=_FORMAT, doc="corner: (xmin, ymin, xmax, ymax); "
                                                                   "center: (x, y, w, h)"),),
    shape=_iou_shape, dtype=float_outputs(1), kind=Kind.OPAQUE,
    doc="Intersection over union of every lhs box with every rhs box.",
))


# --- box_nms ---------------------------------------------------------------------------------
def _nms_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None, None], []
    need_rank(data, "data", 2, " (..., boxes, width)")
    width = data[-1]
    need = max(p["coord_start"] + 4, p["score_index"] + 1, p["id_index"] + 1)
    if width < need:
        raise RuleError(f"box rows of width {width} are too short for coord_start={p['coord_start']}, "
                        f"score_index={p['score_index']}, id_index={p['id_index']}")
    return [data], [data, tuple(data[:-1])], []


def _nms_grad(b, node, ograds):
    return [b.add("_backward_contrib_box_nms", [ograds[0], node.outputs[1]], params=node.params)[0]]


_NMS_PARAMS = (
    Param("overlap_thresh", "float", 0.5, doc="IoU above which the lower-scored box is suppressed"),
    Param("valid_thresh", "float", 0.0, doc="scores at or below it are dropped first"),
    Param("topk", "int", -1, doc="suppress among the best k only (-1: all)"),
    Param("coord_start", "int", 2, check=lambda v: v >= 0, check_msg=">= 0",
          doc="index of the 4 coordinates"),
    Param("score_index", "int", 1, check=lambda v: v >= 0, check_msg=">= 0", doc="index of the score"),
    Param("id_index", "int", -1, doc="index of the class id (-1: none)"),
    Param("background_id", "int", -1, doc="class id of the boxes dropped before nms when id_index is "
          "given (the default -1 drops boxes of class -1, as MXNet)"),
    Param("force_suppress", "bool", False, doc="suppress across classes"),
    Param("in_format", "str", "corner", choices=_FORMAT, doc="coordinate format of the input"),
    Param("out_format", "str", "corner", choices=_FORMAT, doc="coordinate format of the output"),
)
register(OpDef(
    name="_contrib_box_nms", aliases=("_contrib_box_non_maximum_suppression",), hint="box_nms",
    params=_NMS_PARAMS, outputs=("output0", "output1"), visible_outputs=1, shape=_nms_shape,
    dtype=float_outputs(2), kind=Kind.OPAQUE, grad=_nms_grad, extra={"family": "box"},
    doc="Non-maximum suppression of scored boxes per batch: kept rows best first, the rest -1.",
))
register(OpDef(
    name="_backward_contrib_box_nms", arguments=("ograd", "record"), params=_NMS_PARAMS,
    shape=lambda p, ins, aux: (list(ins), [ins[0]], []), dtype=lambda p, ins, aux: (list(ins), [ins[0]], []),
    kind=Kind.OPAQUE, extra={"backward_of": "_contrib_box_nms", "family": "box"},
    doc="box_nms's gradient: each kept row's head gradient at the input row it came from.",
))


# --- box_encode, box_decode ------------------------------------------------------------------
def _encode_shape(p: dict, ins: list, aux: list):
    samples, matches, anchors, refs, means, stds = ins
    if samples is None or refs is None:
        return list(ins), [None, None], []
    need_rank(samples, "samples", 2)
    bsz, n = samples[0], samples[1]
    want = [(bsz, n), (bsz, n), (bsz, n, 4), None, (4,), (4,)]
    if len(refs) != 3 or refs[0] != bsz or refs[2] != 4:
        raise RuleError(f"refs must be (B={bsz}, M, 4), got {shape_str(refs)}")
    want[3] = tuple(refs)
    for given, w, arg in zip(ins, want, ("samples", "matches", "anchors", "refs", "means", "stds")):
        if given is not None and tuple(given) != w:
            raise RuleError(f"{arg} must be {shape_str(w)}, got {shape_str(given)}")
    return want, [(bsz, n, 4), (bsz, n, 4)], []


_register(OpDef(
    name="_contrib_box_encode", hint="box_encode",
    arguments=("samples", "matches", "anchors", "refs", "means", "stds"), outputs=("output0", "output1"),
    shape=_encode_shape, dtype=float_outputs(2), kind=Kind.OPAQUE,
    doc="Normalised center offsets of the positive samples' anchors to their matched references, "
        "and their mask.",
))


def _decode_shape(p: dict, ins: list, aux: list):
    data, anchors = ins
    if data is None:
        return list(ins), [None], []
    if len(data) != 3 or data[2] != 4:
        raise RuleError(f"data must be (B, N, 4) offsets, got {shape_str(data)}")
    want = (1, data[1], 4)
    if anchors is not None and tuple(anchors) != want:
        raise RuleError(f"anchors must be {shape_str(want)}, got {shape_str(anchors)}")
    return [data, want], [data], []


def _decode_expand(b, ins: list[int], p: dict) -> list[int]:
    data, anchors = ins
    n = b.g.values[data].shape[1]
    d = b.add("SliceChannel", [b.add1("BlockGrad", data)], num_outputs=4, axis=-1, squeeze_axis=True)
    a = b.add("SliceChannel", [b.add1("Reshape", b.add1("BlockGrad", anchors), shape=(1, n, 4))],
              num_outputs=4, axis=-1, squeeze_axis=True)
    if p["format"] == "corner":
        aw, ah = b.add1("elemwise_sub", a[2], a[0]), b.add1("elemwise_sub", a[3], a[1])
        ax = b.add1("elemwise_add", a[0], b.add1("_mul_scalar", aw, scalar=0.5))
        ay = b.add1("elemwise_add", a[1], b.add1("_mul_scalar", ah, scalar=0.5))
    else:
        ax, ay, aw, ah = a
    stds = [p["std0"], p["std1"], p["std2"], p["std3"]]
    ox = b.add1("broadcast_add", b.add1("broadcast_mul", b.add1("_mul_scalar", d[0], scalar=stds[0]), aw), ax)
    oy = b.add1("broadcast_add", b.add1("broadcast_mul", b.add1("_mul_scalar", d[1], scalar=stds[1]), ah), ay)
    sizes = []
    for k, extent in ((2, aw), (3, ah)):
        log = b.add1("_mul_scalar", d[k], scalar=stds[k])
        if p["clip"] > 0:
            log = b.add1("_minimum_scalar", log, scalar=p["clip"])
        sizes.append(b.add1("broadcast_mul", b.add1("exp", log), b.add1("_mul_scalar", extent, scalar=0.5)))
    hw, hh = sizes
    corners = [b.add1("elemwise_sub", ox, hw), b.add1("elemwise_sub", oy, hh),
               b.add1("elemwise_add", ox, hw), b.add1("elemwise_add", oy, hh)]
    return [b.add1("stack", *corners, axis=2, num_args=4)]


_register(OpDef(
    name="_contrib_box_decode", hint="box_decode", arguments=("data", "anchors"),
    params=(*[Param(f"std{i}", "float", 1.0, doc=f"scale of offset {i}") for i in range(4)],
            Param("clip", "float", -1.0, doc="upper bound of the log width/height offsets (> 0)"),
            Param("format", "str", "center", choices=_FORMAT, doc="the anchors' format")),
    shape=_decode_shape, dtype=float_outputs(1), expand=_decode_expand,
    doc="Corner boxes decoded from (B, N, 4) center offsets and (1, N, 4) anchors.",
))


# --- bipartite_matching ----------------------------------------------------------------------
def _bpm_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None, None], []
    need_rank(data, "data", 2, " (..., N, M) scores")
    return [data], [tuple(data[:-1]), tuple(data[:-2]) + (data[-1],)], []


_register(OpDef(
    name="_contrib_bipartite_matching", hint="bipartite_matching", outputs=("output0", "output1"),
    params=(Param("is_ascend", "bool", False, doc="lower scores are better"),
            Param("threshold", "float", doc="scores beyond it are not matched"),
            Param("topk", "int", -1, doc="at most this many pairs (-1: no limit)")),
    shape=_bpm_shape, dtype=float_outputs(2), kind=Kind.OPAQUE,
    doc="Greedy best-first bipartite matching of rows to columns of a score matrix.",
))


def batch_size(shape: tuple, trailing: int) -> int:
    """The product of the leading (batch) axes before the ``trailing`` ones."""
    return max(prod(shape[:-trailing]), 1)

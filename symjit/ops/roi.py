"""Region-of-interest pooling: ``ROIPooling`` (max over quantised bins, Fast R-CNN),
``contrib.PSROIPooling`` (R-FCN's position-sensitive averages) and ``contrib.ROIAlign`` (mean of
bilinear samples, Mask R-CNN; ``position_sensitive`` reads channel ``(c * ph + i) * pw + j`` for
bin (i, j), ``aligned`` shifts by half a pixel), with MXNet 1.9.1's parameters; outputs and
gradients were checked against its CPU build. ``rois`` are (R, 5) rows ``(batch index, x1, y1,
x2, y2)`` in image coordinates (``spatial_scale`` maps them to the feature map); a negative batch
index gives zeros (ROIAlign's documented rule, which symjit applies to the others too), one past
the batch stops the program with an error.
The rois get no gradient (MXNet passes none either). Lowering: :mod:`symjit.lower.roi`.

>>> import numpy as np, symjit as mx
>>> x = mx.nd.array(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
>>> rois = mx.nd.array([[0, 0, 0, 3, 3]])
>>> mx.nd.ROIPooling(x, rois, pooled_size=(2, 2), spatial_scale=1.0).asnumpy().ravel().tolist()
[5.0, 7.0, 13.0, 15.0]
"""
from __future__ import annotations

from .registry import Kind, OpDef, Param, ParamError, RuleError, register
from .rules import need_float, shape_str

__all__: list[str] = []


def _pooled(p: dict) -> tuple[int, int]:
    size = tuple(p["pooled_size"])
    if len(size) != 2 or min(size) < 1:
        raise ParamError(f"pooled_size must be 2 positive integers (h, w), got {size}")
    return size


def _roi_shape(sensitive_channels: bool):
    def shape(p: dict, ins: list, aux: list):
        data, rois = ins
        if data is None or rois is None:
            return list(ins), [None], []
        ph, pw = _pooled(p)
        if len(data) != 4:
            raise RuleError(f"data must be (N, C, H, W), got {shape_str(data)}")
        if len(rois) != 2 or rois[1] != 5:
            raise RuleError(f"rois must be (R, 5) rows (batch index, x1, y1, x2, y2), got {shape_str(rois)}")
        c = data[1]
        if sensitive_channels and p.get("position_sensitive"):
            if c % (ph * pw):
                raise RuleError(f"position_sensitive needs channels ({c}) divisible by {ph}x{pw}")
            c //= ph * pw
        return [data, rois], [(rois[0], c, ph, pw)], []
    return shape


def _dtype(p: dict, ins: list, aux: list):
    data = ins[0] if ins[0] is not None else ins[1]
    if data is not None:
        need_float(data, "data")
    return [data, data], [data], []


def _grad(name: str):
    def grad(b, node, ograds):
        data, rois = node.inputs
        return [b.add(f"_backward_{name}", [ograds[0], data, rois], params=node.params)[0], None]
    return grad


def _register_pair(name: str, params: tuple, doc: str, sensitive: bool, shape=None) -> None:
    register(OpDef(name=name, arguments=("data", "rois"), params=params, shape=shape or _roi_shape(sensitive),
                   dtype=_dtype, kind=Kind.OPAQUE, grad=_grad(name), doc=doc,
                   hint=name.split("_")[-1].lower(), extra={"family": "roi"}))
    register(OpDef(
        name=f"_backward_{name}", arguments=("ograd", "data", "rois"), params=params,
        shape=lambda p, ins, aux: (list(ins), [ins[1]], []),
        dtype=lambda p, ins, aux: (list(ins), [ins[1]], []),
        kind=Kind.OPAQUE, extra={"backward_of": name, "family": "roi"},
        doc=f"The data gradient of {name}: per (image, channel) map, the head gradient of every bin of "
            "that image's rois sent back to what the bin read.",
    ))


_POOLED = Param("pooled_size", "shape", doc="(height, width) of each roi's output")
_SCALE = Param("spatial_scale", "float", check=lambda v: v > 0, check_msg="> 0",
               doc="feature map size / image size")

_register_pair("ROIPooling", (_POOLED, _SCALE),
               "Max pooling of each roi's feature-map window into pooled_size bins (corners rounded to "
               "the grid, bins floor/ceil, Caffe's quantisation).", sensitive=False)
_register_pair("_contrib_ROIAlign", (
    _POOLED, _SCALE,
    Param("sample_ratio", "int", -1, doc="samples per bin side (<= 0: ceil(roi size / pooled size))"),
    Param("position_sensitive", "bool", False, doc="R-FCN's position-sensitive channels"),
    Param("aligned", "bool", False, doc="shift the roi by half a pixel (pixel centres)"),
), "The mean of bilinearly interpolated samples of each roi bin (no quantisation).", sensitive=True)


# --- PSROIPooling ----------------------------------------------------------------------------
def _psroi_shape(p: dict, ins: list, aux: list):
    data, rois = ins
    if data is None or rois is None:
        return list(ins), [None], []
    ps, gs = p["pooled_size"], p["group_size"] or p["pooled_size"]
    if len(data) != 4:
        raise RuleError(f"data must be (N, C, H, W), got {shape_str(data)}")
    if len(rois) != 2 or rois[1] != 5:
        raise RuleError(f"rois must be (R, 5) rows (batch index, x1, y1, x2, y2), got {shape_str(rois)}")
    if data[1] != p["output_dim"] * gs * gs:
        raise RuleError(f"data has {data[1]} channels; output_dim {p['output_dim']} x group_size^2 "
                        f"({gs * gs}) = {p['output_dim'] * gs * gs} needed")
    return [data, rois], [(rois[0], p["output_dim"], ps, ps)], []


_register_pair("_contrib_PSROIPooling", (
    _SCALE,
    Param("output_dim", "int", check=lambda v: v > 0, check_msg="> 0", doc="output channels"),
    Param("pooled_size", "int", check=lambda v: v > 0, check_msg="> 0", doc="bins per side"),
    Param("group_size", "int", 0, doc="position groups per side (0: pooled_size)"),
), "R-FCN's position-sensitive average pooling: bin (i, j) of output channel c averages channel "
   "(c * group + gi) * group + gj of the roi's window.", sensitive=False, shape=_psroi_shape)


# --- RROIAlign: rotated rois, forward only (MXNet registers no gradient) -------------------------------
def _rroi_shape(p: dict, ins: list, aux: list):
    data, rois = ins
    if data is None or rois is None:
        return list(ins), [None], []
    ph, pw = _pooled(p)
    if len(data) != 4:
        raise RuleError(f"data must be (N, C, H, W), got {shape_str(data)}")
    if len(rois) != 2 or rois[1] != 6:
        raise RuleError(f"rois must be (R, 6) rows (batch index, x centre, y centre, width, height, angle in "
                        f"degrees), got {shape_str(rois)}")
    return [data, rois], [(rois[0], data[1], ph, pw)], []


register(OpDef(
    name="_contrib_RROIAlign", arguments=("data", "rois"),
    params=(_POOLED, _SCALE, Param("sampling_ratio", "int", -1,
                                   doc="samples per bin side (<= 0: ceil(roi size / pooled size))")),
    shape=_rroi_shape, dtype=_dtype, kind=Kind.OPAQUE, hint="rroialign",
    extra={"family": "roi", "no_grad": True},
    doc="ROIAlign over rotated rois (x centre, y centre, width, height, angle in degrees, "
        "counter-clockwise): the mean of bilinear samples of each bin of the rotated box. No gradient, "
        "as in MXNet."))


# --- DeformablePSROIPooling -----------------------------------------------------------------------------
def _dps_part(p: dict) -> int:
    return p["part_size"] if p["part_size"] > 0 else p["pooled_size"]


def _dps_args(p: dict) -> list[str]:
    return ["data", "rois"] if p["no_trans"] else ["data", "rois", "trans"]


def _dps_shape(p: dict, ins: list, aux: list):
    data, rois = ins[0], ins[1]
    if data is None or rois is None:
        return list(ins), [None], []
    gs, ps, od = p["group_size"], p["pooled_size"], p["output_dim"]
    if len(data) != 4:
        raise RuleError(f"data must be (N, C, H, W), got {shape_str(data)}")
    if len(rois) != 2 or rois[1] != 5:
        raise RuleError(f"rois must be (R, 5) rows (batch index, x1, y1, x2, y2), got {shape_str(rois)}")
    if data[1] != od * gs * gs:
        raise RuleError(f"data has {data[1]} channels; output_dim {od} x group_size^2 ({gs * gs}) = "
                        f"{od * gs * gs} needed")
    shapes = [data, rois]
    if not p["no_trans"]:
        trans, part = ins[2], _dps_part(p)
        if trans is None:
            return list(ins), [(rois[0], od, ps, ps)], []
        if len(trans) != 4 or trans[0] != rois[0] or trans[1] % 2 or trans[2:] != (part, part) or \
                od % (trans[1] // 2):
            raise RuleError(f"trans must be (R, 2 * classes, part_size, part_size) = ({rois[0]}, 2k, {part}, "
                            f"{part}) with output_dim ({od}) divisible by the classes k, got "
                            f"{shape_str(trans)}")
        shapes.append(trans)
    return shapes, [(rois[0], od, ps, ps)], []


def _dps_grad(b, node, ograds):
    outs = b.add("_backward__contrib_DeformablePSROIPooling", [ograds[0], *node.inputs], params=node.params)
    return [outs[0], None] + ([] if node.params["no_trans"] else [outs[1]])


_DPS_PARAMS = (
    _SCALE,
    Param("output_dim", "int", check=lambda v: v > 0, check_msg="> 0", doc="output channels"),
    Param("group_size", "int", check=lambda v: v > 0, check_msg="> 0", doc="position groups per side"),
    Param("pooled_size", "int", check=lambda v: v > 0, check_msg="> 0", doc="bins per side"),
    Param("part_size", "int", 0, check=lambda v: v >= 0, check_msg=">= 0",
          doc="offset parts per side (0: pooled_size)"),
    Param("sample_per_part", "int", 1, check=lambda v: v > 0, check_msg="> 0", doc="samples per bin side"),
    Param("trans_std", "float", 0.0, doc="scale of the offsets"),
    Param("no_trans", "bool", False, doc="no offsets (then no trans input)"),
)

register(OpDef(
    name="_contrib_DeformablePSROIPooling", params=_DPS_PARAMS, arguments=_dps_args, shape=_dps_shape,
    kind=Kind.OPAQUE, grad=_dps_grad, hint="deformablepsroipooling", extra={"family": "roi"},
    doc="Deformable position-sensitive roi pooling (Deformable ConvNets): R-FCN's bins, each moved by a "
        "learned offset (trans, per class and part, times trans_std and the roi's size) and averaged over "
        "sample_per_part^2 bilinear samples."))
register(OpDef(
    name="_backward__contrib_DeformablePSROIPooling", params=_DPS_PARAMS,
    arguments=lambda p: ["ograd"] + _dps_args(p),
    outputs=lambda p: ["data_grad"] + ([] if p["no_trans"] else ["trans_grad"]),
    shape=lambda p, ins, aux: (list(ins), [ins[1]] + ([] if p["no_trans"] else [ins[3]]), []),
    dtype=lambda p, ins, aux: (list(ins), [ins[1]] + ([] if p["no_trans"] else [ins[3]]), []),
    kind=Kind.OPAQUE, extra={"backward_of": "_contrib_DeformablePSROIPooling", "family": "roi"},
    doc="The data and offset gradients of DeformablePSROIPooling."))

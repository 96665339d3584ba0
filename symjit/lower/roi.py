"""Target-neutral lowering of ROIPooling, PSROIPooling and ROIAlign (:mod:`symjit.ops.roi`): the forward loops
over output elements, each computed by a routine of :mod:`symjit.ops.roi_kernels`; the gradient
loops over the (image, channel) maps of the input, each written whole by one iteration or CUDA
thread from the rois of its image (no atomics, the same sums on every target). A roi whose batch
index is past the batch stops the program with an error naming the op.

>>> import numpy as np, symjit as mx
>>> x = mx.nd.array(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
>>> y = mx.nd.contrib.ROIAlign(x, mx.nd.array([[0, 0, 0, 2, 2]]), pooled_size=(1, 1), spatial_scale=1.0)
>>> float(y.asnumpy().ravel()[0])
5.0
"""
from __future__ import annotations

import numpy as np

from ..ops import roi_kernels as rk
from .emit import literal
from .rules import ANY, rule

__all__: list[str] = []


def _check_batch(k, node, rois: str, r: str, n: int) -> None:
    k.target.emit_check(
        k, f"int({rois}[{r}, 0]) >= {n}",
        f"{node.op.name} '{node.name}': a roi's batch index is not below the batch size {n}")


def _scale(p: dict) -> str:
    """``spatial_scale`` as a float64 constant: the bins' edges (a roi's corners times the scale,
    floored or ceiled) come out the same for float32 and float64 data; a float32 scale (0.6 is
    0.6000000238) moves an edge that falls on a whole pixel to the next one."""
    return literal(float(p["spatial_scale"]), np.float64)


def _forward(k, node, ins, outs) -> None:
    p = node.params
    x, rois = ins
    n, _, h, w = k.info[x].shape
    nr, c, ph, pw = k.info[outs[0]].shape
    target = k.target
    idx = target.open_loop(k, [str(nr), str(c), str(ph), str(pw)])
    r, ch, i, j = idx
    _check_batch(k, node, rois, r, n)
    scale = _scale(p)
    if node.op.name == "_contrib_PSROIPooling":
        gs = p["group_size"] or p["pooled_size"]
        k.line(f"{k.module.body(rk.psroi_element)}({x}, {rois}, {outs[0]}, {r}, {ch}, {i}, {j}, {ph}, {gs}, "
               f"{scale}, {n}, {h}, {w})")
    elif node.op.name == "_contrib_RROIAlign":
        k.line(f"{k.module.body(rk.rroi_align_element)}({x}, {rois}, {outs[0]}, {r}, {ch}, {i}, {j}, {ph}, "
               f"{pw}, {scale}, {int(p['sampling_ratio'])}, {n}, {h}, {w})")
    elif node.op.name == "ROIPooling":
        k.line(f"{k.module.body(rk.roi_pool_element)}({x}, {rois}, {outs[0]}, {r}, {ch}, {i}, {j}, {ph}, "
               f"{pw}, {scale}, {n}, {h}, {w})")
    else:
        k.line(f"{k.module.body(rk.roi_align_element)}({x}, {rois}, {outs[0]}, {r}, {ch}, {i}, {j}, {ph}, "
               f"{pw}, {scale}, {int(p['sample_ratio'])}, {bool(p['aligned'])}, "
               f"{bool(p['position_sensitive'])}, {n}, {h}, {w})")
    target.close_loop(k, idx)


def _backward(k, node, ins, outs) -> None:
    p = node.params
    g, x, rois = ins
    n, c, h, w = k.info[x].shape
    nr, _, ph, pw = k.info[g].shape
    target = k.target
    idx = target.open_loop(k, [str(n), str(c)])
    b, ch = idx
    scale = _scale(p)
    if node.op.extra["backward_of"] == "_contrib_PSROIPooling":
        gs = p["group_size"] or p["pooled_size"]
        k.line(f"{k.module.body(rk.psroi_backward)}({rois}, {g}, {outs[0]}, {b}, {ch}, {nr}, {ph}, {gs}, "
               f"{scale}, {h}, {w})")
    elif node.op.extra["backward_of"] == "ROIPooling":
        k.line(f"{k.module.body(rk.roi_pool_backward)}({x}, {rois}, {g}, {outs[0]}, {b}, {ch}, {nr}, {ph}, "
               f"{pw}, {scale}, {h}, {w})")
    else:
        k.line(f"{k.module.body(rk.roi_align_backward)}({rois}, {g}, {outs[0]}, {b}, {ch}, {nr}, {ph}, {pw}, "
               f"{scale}, {int(p['sample_ratio'])}, {bool(p['aligned'])}, {bool(p['position_sensitive'])}, "
               f"{h}, {w})")
    target.close_loop(k, idx)


for _name in ("ROIPooling", "_contrib_ROIAlign", "_contrib_PSROIPooling"):
    rule(_name, ANY, _forward)
    rule(f"_backward_{_name}", ANY, _backward)
rule("_contrib_RROIAlign", ANY, _forward)


def _dps_consts(node, shape) -> tuple[str, str]:
    p = node.params
    part = p["part_size"] if p["part_size"] > 0 else p["pooled_size"]
    return (f"{p['pooled_size']}, {p['group_size']}, {part}, {p['sample_per_part']}",
            f"{float(p['trans_std'])!r}")


def _dps_each(node, trans_shape) -> int:
    od = node.params["output_dim"]
    return od if node.params["no_trans"] else od // (trans_shape[1] // 2)


def _dps_forward(k, node, ins, outs) -> None:
    x, rois = ins[0], ins[1]
    trans = x if node.params["no_trans"] else ins[2]
    n, _, h, w = k.info[x].shape
    geo, std = _dps_consts(node, k.info[x].shape)
    scale = literal(float(node.params["spatial_scale"]), k.info[outs[0]].dtype)
    each = _dps_each(node, k.info[trans].shape)
    target = k.target
    idx = target.open_loop(k, [str(d) for d in k.info[outs[0]].shape])
    _check_batch(k, node, rois, idx[0], n)
    k.line(f"{k.module.body(rk.dps_element)}({x}, {rois}, {trans}, {outs[0]}, {', '.join(idx)}, {geo}, "
           f"{scale}, {std}, {bool(node.params['no_trans'])}, {each}, {n}, {h}, {w})")
    target.close_loop(k, idx)


def _dps_backward(k, node, ins, outs) -> None:
    g, x, rois = ins[0], ins[1], ins[2]
    no_trans = bool(node.params["no_trans"])
    trans = x if no_trans else ins[3]
    n, c, h, w = k.info[x].shape
    geo, std = _dps_consts(node, k.info[x].shape)
    scale = literal(float(node.params["spatial_scale"]), k.info[outs[0]].dtype)
    each = _dps_each(node, k.info[trans].shape)
    nr = k.info[rois].shape[0]
    target = k.target
    idx = target.open_loop(k, [str(n), str(c)])
    k.line(f"{k.module.body(rk.dps_data_backward)}({rois}, {trans}, {g}, {outs[0]}, {idx[0]}, {idx[1]}, "
           f"{nr}, {geo}, {scale}, {std}, {no_trans}, {each}, {h}, {w})")
    target.close_loop(k, idx)
    if not no_trans:
        idx = target.open_loop(k, [str(d) for d in k.info[trans].shape])
        k.line(f"{k.module.body(rk.dps_trans_backward)}({x}, {rois}, {trans}, {g}, {outs[1]}, "
               f"{', '.join(idx)}, {geo}, {scale}, {std}, {each}, {n}, {h}, {w})")
        target.close_loop(k, idx)


rule("_contrib_DeformablePSROIPooling", ANY, _dps_forward)
rule("_backward__contrib_DeformablePSROIPooling", ANY, _dps_backward)

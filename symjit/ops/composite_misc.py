"""More composite operators (see :mod:`symjit.ops.composite` for how composites work): picks and
slices, casts and checks, and MXNet's deprecated ``_v1`` forms.

* ``argmax_channel`` (``argmax`` along the last axis), ``batch_take`` and
  ``choose_element_0index`` (``pick`` along the last axis, indices clipped).
* ``slice_like`` and ``Crop``: ``slice`` to another input's shape (or ``h_w``).
* ``khatri_rao``: the column-wise Kronecker product, as broadcast products.
* ``_split_v2`` (``split_v2``): ``slice_axis`` pieces at given indices, or equal sections.
* ``amp_cast`` / ``amp_multicast``: ``Cast`` of float inputs (to the widest of them, or the
  narrowest with ``cast_narrow``); other dtypes pass through.
* ``all_finite``, ``multi_all_finite`` (1.0 when every element is finite, as float32) and
  ``multi_sum_sq`` (each input's sum of squares, float32).
* ``BatchNorm_v1``, ``Convolution_v1``, ``Pooling_v1``: the current operators (MXNet's deprecated
  forms, with the parameters they had).

>>> import symjit as mx
>>> mx.nd.argmax_channel(mx.nd.array([[0, 2, 1], [5, 4, 3]])).asnumpy().tolist()
[1.0, 0.0]
"""
from __future__ import annotations

import numpy as np

from .composite import _composite, _reshape_like_dtype, _shape_of
from .nn import Convolution, Pooling
from .norm import BatchNorm
from .registry import Kind, OpDef, Param, RuleError, same_shape
from .rules import need_rank, norm_axis, prod, shape_str

__all__: list[str] = []

# ---------------------------------------------------------------------------------------------
# argmax_channel, batch_take, choose_element_0index

def _last_axis_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return list(ins), [None], []
    need_rank(data, "data" if len(ins) == 1 else "lhs", 2 if len(ins) > 1 else 1)
    out = data[:-1] or (1,)
    if len(ins) > 1 and ins[1] is not None and tuple(ins[1]) != out:
        raise RuleError(f"the indices must have shape {shape_str(out)} for data {shape_str(data)}, "
                        f"got {shape_str(ins[1])}")
    return [data] + [out] * (len(ins) - 1), [out], []


def _pick_last(b, ins: list[int], p: dict) -> list[int]:
    return [b.add1("pick", ins[0], ins[1], axis=-1, mode="clip")]


_composite(OpDef(
    name="argmax_channel", shape=_last_axis_shape, expand=lambda b, ins, p: [b.add1("argmax", ins[0],
                                                                                    axis=-1)],
    extra={"no_grad": True},
    doc="The index of the maximum along the last axis (as numbers of the input's dtype).",
))
for _name, _args, _doc in (
    ("batch_take", ("a", "indices"), "``out[i] = a[i, indices[i]]``"),
    ("choose_element_0index", ("lhs", "rhs"), "``out[i] = lhs[i, rhs[i]]`` (MXNet's legacy name)"),
):
    _composite(OpDef(
        name=_name, arguments=_args, shape=_last_axis_shape,
        dtype=lambda p, ins, aux: (list(ins), [ins[0]], []), expand=_pick_last,
        doc=f"{_doc}: ``pick`` along the last axis, indices clipped to the axis; the indices get no "
            "gradient.",
    ))


# ---------------------------------------------------------------------------------------------
# slice_like, Crop

def _slice_like_axes(p: dict, nd: int) -> tuple[int, ...]:
    return tuple(range(nd)) if not p["axes"] else tuple(norm_axis(a, nd) for a in p["axes"])


def _slice_like_target(p: dict, data: tuple, like: tuple) -> tuple:
    axes = _slice_like_axes(p, len(data))
    if len(like) != len(data) and not p["axes"]:
        raise RuleError(f"shape_like {shape_str(like)} and data {shape_str(data)} differ in rank; give axes")
    out = list(data)
    for a in axes:
        if a >= len(like) or like[a] > data[a]:
            raise RuleError(f"axis {a}: shape_like {shape_str(like)} is larger than data {shape_str(data)}")
        out[a] = like[a]
    return tuple(out)


def _slice_like_shape(p: dict, ins: list, aux: list):
    data, like = ins
    if data is None or like is None:
        return list(ins), [None], []
    return list(ins), [_slice_like_target(p, data, like)], []


def _slice_to(b, x: int, out: tuple) -> int:
    return b.add1("slice", x, begin=str((0,) * len(out)), end=str(tuple(out)))


_composite(OpDef(
    name="slice_like", arguments=("data", "shape_like"),
    params=(Param("axes", "shape", (), doc="the axes to slice (default: all)"),),
    shape=_slice_like_shape, dtype=_reshape_like_dtype, kind=Kind.INJECTIVE,
    expand=lambda b, ins, p: [_slice_to(b, ins[0], _slice_like_target(p, _shape_of(b, ins[0]),
                                                                     _shape_of(b, ins[1])))],
    doc="The leading part of ``data`` with shape_like's size on ``axes`` (all by default); "
        "shape_like lends only its shape.",
))


def _crop_box(p: dict, data: tuple, like: tuple | None) -> tuple[int, int, int, int]:
    h, w = (like[2], like[3]) if like is not None else tuple(p["h_w"])
    if h <= 0 or w <= 0 or h > data[2] or w > data[3]:
        raise RuleError(f"cannot crop {h}x{w} out of data {shape_str(data)}")
    y, x = ((data[2] - h) // 2, (data[3] - w) // 2) if p["center_crop"] else tuple(p["offset"])
    if y < 0 or x < 0 or y + h > data[2] or x + w > data[3]:
        raise RuleError(f"the crop {h}x{w} at offset ({y}, {x}) leaves data {shape_str(data)}")
    return y, x, h, w


def _crop_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None or (len(ins) > 1 and ins[1] is None):
        return list(ins), [None], []
    need_rank(data, "arg0", (4,))
    _, _, h, w = _crop_box(p, data, ins[1] if len(ins) > 1 else None)
    return list(ins), [(data[0], data[1], h, w)], []


def _crop_expand(b, ins: list[int], p: dict) -> list[int]:
    data = _shape_of(b, ins[0])
    y, x, h, w = _crop_box(p, data, _shape_of(b, ins[1]) if len(ins) > 1 else None)
    return [b.add1("slice", ins[0], begin=str((None, None, y, x)), end=str((None, None, y + h, x + w)))]


_composite(OpDef(
    name="Crop",
    params=(Param("num_args", "int", 1, check=lambda v: v in (1, 2), check_msg="1 or 2", doc="inputs"),
            Param("offset", "shape", (0, 0), doc="(y, x) of the crop's corner"),
            Param("h_w", "shape", (0, 0), doc="(height, width) when there is one input"),
            Param("center_crop", "bool", False, doc="centre the crop instead of using offset")),
    arguments=lambda p: [f"arg{i}" for i in range(p["num_args"])], variadic="num_args",
    shape=_crop_shape, dtype=lambda p, ins, aux: ([ins[0]] * len(ins), [ins[0]], []), kind=Kind.INJECTIVE,
    expand=_crop_expand,
    doc="Crops (N, C, H, W) data spatially to ``h_w`` or to the second input's height and width, at "
        "``offset`` or centred; the second input lends only its shape.",
))


# ---------------------------------------------------------------------------------------------
# khatri_rao

def _khatri_rao_shape(p: dict, ins: list, aux: list):
    known = [s for s in ins if s is not None]
    if len(known) < len(ins):
        return list(ins), [None], []
    for i, s in enumerate(ins):
        need_rank(s, f"arg{i}", (2,))
        if s[1] != ins[0][1]:
            raise RuleError(f"every input needs {ins[0][1]} columns, arg{i} is {shape_str(s)}")
    return list(ins), [(prod(s[0] for s in ins), ins[0][1])], []


def _khatri_rao_expand(b, ins: list[int], p: dict) -> list[int]:
    acc = ins[0]
    for other in ins[1:]:
        (m, r), (n, _) = _shape_of(b, acc), _shape_of(b, other)
        prod_ = b.add1("broadcast_mul", b.add1("Reshape", acc, shape=(m, 1, r)),
                       b.add1("Reshape", other, shape=(1, n, r)))
        acc = b.add1("Reshape", prod_, shape=(m * n, r))
    return [acc if len(ins) > 1 else b.add1("_copy", acc)]


_composite(OpDef(
    name="khatri_rao", params=(Param("num_args", "int", check=lambda v: v >= 1, check_msg=">= 1",
                                     doc="number of matrices"),),
    arguments=lambda p: [f"arg{i}" for i in range(p["num_args"])], variadic="num_args",
    shape=_khatri_rao_shape, expand=_khatri_rao_expand,
    doc="The column-wise Kronecker product of matrices with one column count: row "
        "``i0 * I1 * ... + i1 * I2 * ... + ...`` of column r is the product of their rows i0, i1, ...",
))


# ---------------------------------------------------------------------------------------------
# _split_v2

def _split_pieces(p: dict, n: int) -> list[tuple[int, int]]:
    if p["sections"] > 0:
        if n % p["sections"]:
            raise RuleError(f"an axis of {n} cannot be split into {p['sections']} equal sections")
        step = n // p["sections"]
        return [(i * step, (i + 1) * step) for i in range(p["sections"])]
    cuts = list(p["indices"]) + [n]
    pieces = list(zip(cuts[:-1], cuts[1:]))
    if any(not 0 <= lo <= hi <= n for lo, hi in pieces):
        raise RuleError(f"indices {tuple(p['indices'])} are not increasing within an axis of {n}")
    return pieces


def _split_v2_outputs(p: dict) -> list[str]:
    return [f"output{i}" for i in range(p["sections"] if p["sections"] > 0 else len(p["indices"]))]


def _split_v2_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None] * len(_split_v2_outputs(p)), []
    ax = norm_axis(p["axis"], len(data))
    outs = []
    for lo, hi in _split_pieces(p, data[ax]):
        if p["squeeze_axis"] and hi - lo != 1:
            raise RuleError("squeeze_axis needs pieces of size 1")
        outs.append(data[:ax] + (() if p["squeeze_axis"] else (hi - lo,)) + data[ax + 1:])
    return [data], outs, []


def _split_v2_expand(b, ins: list[int], p: dict) -> list[int]:
    shape = _shape_of(b, ins[0])
    ax = norm_axis(p["axis"], len(shape))
    outs = []
    for lo, hi in _split_pieces(p, shape[ax]):
        piece = b.add1("slice_axis", ins[0], axis=ax, begin=lo, end=hi)
        if p["squeeze_axis"]:
            piece = b.add1("Reshape", piece, shape=shape[:ax] + shape[ax + 1:])
        outs.append(piece)
    return outs


_composite(OpDef(
    name="_split_v2", outputs=_split_v2_outputs,
    params=(Param("indices", "shape", (), doc="where the pieces start (the first is 0)"),
            Param("axis", "int", 0, doc="the axis to split"),
            Param("squeeze_axis", "bool", False, doc="drop the axis (pieces of size 1)"),
            Param("sections", "int", 0, doc="equal pieces (instead of indices)")),
    shape=_split_v2_shape, dtype=lambda p, ins, aux: (list(ins), [ins[0]] * len(_split_v2_outputs(p)), []),
    kind=Kind.INJECTIVE, expand=_split_v2_expand,
    doc="Splits along ``axis`` into ``sections`` equal pieces or at ``indices`` (what "
        "``mx.sym.split_v2``/``mx.nd.split_v2`` call).",
))


# ---------------------------------------------------------------------------------------------
# amp_cast, amp_multicast, all_finite, multi_all_finite, multi_sum_sq

def _cast_to(b, x: int, dtype) -> int:
    have = b.g.values[x].dtype
    if have.kind != "f" or have == np.dtype(dtype):
        return b.add1("_copy", x)
    return b.add1("Cast", x, dtype=np.dtype(dtype).name)


def _amp_cast_dtype(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return [None], [None], []
    return [data], [np.dtype(p["dtype"]) if data.kind == "f" else data], []


_composite(OpDef(
    name="amp_cast", params=(Param("dtype", "dtype", doc="the float dtype to cast to"),),
    shape=lambda p, ins, aux: ([ins[0]], [ins[0]], []), dtype=_amp_cast_dtype,
    expand=lambda b, ins, p: [_cast_to(b, ins[0], p["dtype"])],
    doc="Casts float data to ``dtype`` (MXNet's AMP cast); other dtypes pass through unchanged.",
))


def _amp_target(p: dict, dtypes: list):
    floats = [t for t in dtypes if t is not None and t.kind == "f"]
    if not floats:
        return None
    pick = min if p["cast_narrow"] else max
    return pick(floats, key=lambda t: t.itemsize)


def _amp_multicast_dtype(p: dict, ins: list, aux: list):
    if any(t is None for t in ins):
        return list(ins), [None] * len(ins), []
    target = _amp_target(p, ins)
    return list(ins), [target if t.kind == "f" else t for t in ins], []


_composite(OpDef(
    name="amp_multicast", outputs=lambda p: [f"output{i}" for i in range(p["num_outputs"])],
    params=(Param("num_outputs", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="number of inputs"),
            Param("cast_narrow", "bool", False, doc="cast to the narrowest float dtype instead")),
    arguments=lambda p: [f"data{i}" for i in range(p["num_outputs"])], variadic="num_outputs",
    shape=lambda p, ins, aux: (list(ins), list(ins), []), dtype=_amp_multicast_dtype,
    expand=lambda b, ins, p: [_cast_to(b, x, _amp_target(p,
                                                         [b.g.values[i].dtype for i in ins])) for x in ins],
    doc="Casts the float inputs to the widest float dtype among them (the narrowest with "
        "``cast_narrow``); other dtypes pass through.",
))


def _finite_flag(b, x: int) -> int:
    flag = b.add1("min", b.add1("_contrib_isfinite", x))
    return b.add1("Cast", flag, dtype="float32") if b.g.values[flag].dtype != np.float32 else flag


def _all_finite_expand(b, ins: list[int], p: dict) -> list[int]:
    acc = _finite_flag(b, ins[0])
    for x in ins[1:]:
        acc = b.add1("elemwise_mul", acc, _finite_flag(b, x))
    return [acc]


def _flag_shape(p: dict, ins: list, aux: list):
    return list(ins), [(1,)], []


def _flag_dtype(p: dict, ins: list, aux: list):
    return list(ins), [np.dtype(np.float32)], []


_INIT = Param("init_output", "bool", True, doc="ignored: the flag is computed afresh")
_composite(OpDef(
    name="all_finite", params=(_INIT,), shape=_flag_shape, dtype=_flag_dtype, expand=_all_finite_expand,
    extra={"no_grad": True}, doc="1.0 (float32, shape (1,)) when every element is finite, else 0.0.",
))
_composite(OpDef(
    name="multi_all_finite",
    params=(Param("num_arrays", "int", 1, check=lambda v: v >= 1, check_msg=">= 1", doc="inputs"), _INIT),
    arguments=lambda p: [f"array{i}" for i in range(p["num_arrays"])], variadic="num_arrays",
    shape=_flag_shape, dtype=_flag_dtype, expand=_all_finite_expand, extra={"no_grad": True},
    doc="1.0 (float32, shape (1,)) when every element of every input is finite, else 0.0.",
))


def _multi_sum_sq_expand(b, ins: list[int], p: dict) -> list[int]:
    sums = []
    for x in ins:
        s = b.add1("sum", b.add1("square", x))
        sums.append(b.add1("Cast", s, dtype="float32") if b.g.values[s].dtype != np.float32 else s)
    return [b.add("Concat", sums, num_args=len(sums), dim=0)[0] if len(sums) > 1 else b.add1("_copy",
                                                                                             sums[0])]


_composite(OpDef(
    name="multi_sum_sq",
    params=(Param("num_arrays", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="inputs"),),
    arguments=lambda p: [f"array{i}" for i in range(p["num_arrays"])], variadic="num_arrays",
    shape=lambda p, ins, aux: (list(ins), [(p["num_arrays"],)], []), dtype=_flag_dtype,
    expand=_multi_sum_sq_expand, extra={"no_grad": True},
    doc="Each input's sum of squares, as a float32 array of shape (num_arrays,) (no gradient, as MXNet).",
))


# ---------------------------------------------------------------------------------------------
# the deprecated _v1 operators: the current ones with the parameters the _v1 forms had

def _v1(name: str, current: OpDef, keep: tuple[str, ...], doc: str) -> None:
    params = tuple(p for p in current.params if p.name in keep)

    def full(p: dict) -> dict:   # the current operator's params: the given ones, its defaults
        return current.parse_params(dict(p))

    def expand(b, ins: list[int], p: dict) -> list[int]:
        return b.add(current.name, ins, **p)

    def wrap(rule):
        return None if rule is None else (lambda p, ins, aux: rule(full(p), ins, aux))

    def names(slot):
        return (lambda p: slot(full(p))) if callable(slot) else slot

    _composite(OpDef(
        name=name, params=params, arguments=names(current.arguments), aux=names(current.aux),
        outputs=names(current.outputs), visible_outputs=names(current.visible_outputs),
        shape=wrap(current.shape), dtype=wrap(current.dtype), expand=expand,
        extra={k: v for k, v in current.extra.items() if k != "family"},
        doc=f"{doc} (MXNet's deprecated form: {current.name} with the parameters it had).",
    ))


_v1("BatchNorm_v1", BatchNorm, ("eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var"),
    "Batch normalisation over axis 1")
_v1("Convolution_v1", Convolution, ("kernel", "stride", "dilate", "pad", "num_filter", "num_group",
                                    "workspace",
                                    "no_bias", "cudnn_tune", "cudnn_off", "layout"), "Convolution")
_v1("Pooling_v1", Pooling, ("kernel", "pool_type", "global_pool", "pooling_convention", "stride", "pad"),
    "Pooling")


# ---------------------------------------------------------------------------------------------
# _identity_with_attr_like_rhs: lhs passed through, its shape tied to rhs's (MXNet uses it to give
# shape inference a constraint); rhs gets no gradient.

_composite(OpDef(
    name="_identity_with_attr_like_rhs", arguments=("lhs", "rhs"), shape=same_shape,
    dtype=lambda p, ins, aux: (list(ins), [ins[0]], []), expand=lambda b, ins, p: [b.add1("_copy", ins[0])],
    doc="``lhs`` unchanged; its shape (and the output's) is ``rhs``'s, which shape inference uses in "
        "both directions. ``rhs`` gets no gradient.",
))

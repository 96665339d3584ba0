"""Shape manipulation: Flatten, Reshape, expand_dims, squeeze, transpose, SwapAxis, reverse, tile,
repeat; joining and splitting (Concat, stack, SliceChannel); slicing (slice_axis, slice); gathering
(take, pick, one_hot).

Reshape, Flatten, expand_dims and squeeze only relabel a contiguous buffer: their records carry
``extra={'view': True}`` so the memory planner may alias output and input.

The gradient rules live in :mod:`.shape_grad`, the lowerings in :mod:`symjit.lower.cpu.shape`
(index rules of take, pick and one_hot are described there); the internal ``_backward_slice``,
``_backward_take`` and ``_backward_pick`` records sit next to their forward ops here.
"""
from __future__ import annotations

from ..base import ParamError, shape_str
from . import partial_shape
from .registry import Kind, OpDef, Param, RuleError, Shape, register
from .rules import norm_axes, norm_axis, norm_insert_axis, prod
from .shape_grad import GRAD

__all__ = ["reshape_shape"]

_VIEW = {"view": True}


def _unknown(ins: list):
    return list(ins), [None], []


# ---------------------------------------------------------------------------------------------
# Flatten: (N, d1, d2, ...) -> (N, d1*d2*...).


def _flatten_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    if len(data) < 1:
        raise RuleError(f"argument 'data' must have at least 1 dimension, got {shape_str(data)}")
    return [data], [(data[0], prod(data[1:]))], []


Flatten = register(OpDef(
    name="Flatten",
    shape=_flatten_shape,
    kind=Kind.INJECTIVE,
    grad=GRAD["reshape"],
    aliases=("flatten",),
    extra=dict(_VIEW),
    doc="Flattens every axis but the first: (N, d1, d2, ...) -> (N, d1*d2*...); a 1-D (N,) gives (N, 1).",
))


# ---------------------------------------------------------------------------------------------
# Reshape with MXNet's special codes.


def _code_groups(spec: Shape) -> list[tuple[int, ...]]:
    """Split a shape spec into codes, keeping each ``-4`` with its two operands."""
    groups, i = [], 0
    while i < len(spec):
        if spec[i] == -4:
            if i + 2 >= len(spec):
                raise RuleError(f"shape={spec}: -4 must be followed by two values (the split dims)")
            groups.append(tuple(spec[i:i + 3]))
            i += 3
        else:
            groups.append((spec[i],))
            i += 1
    return groups


def _split_dims(d0: int, d1: int, d2: int, spec: Shape) -> tuple[int, int]:
    if d1 == -1 and d2 == -1:
        raise RuleError(f"shape={spec}: the two dims after -4 cannot both be -1")
    if d1 < -1 or d2 < -1 or 0 in (d1, d2):
        raise RuleError(f"shape={spec}: the dims after -4 must be positive or -1, got ({d1}, {d2})")
    if d1 == -1:
        d1 = d0 // d2
    if d2 == -1:
        d2 = d0 // d1
    if d1 * d2 != d0:
        raise RuleError(f"shape={spec}: -4 cannot split dimension {d0} into ({d1}, {d2})")
    return d1, d2


def _apply_codes(groups: list[tuple[int, ...]], dshape: Shape, spec: Shape) -> list[int]:
    out: list[int] = []
    src, ndim, inferred = 0, len(dshape), -1

    def take(n: int, code: int) -> Shape:
        nonlocal src
        if src + n > ndim:
            raise RuleError(f"shape={spec}: code {code} needs {n} more input dimension(s) but the input "
                            f"{shape_str(dshape)} has none left")
        src += n
        return dshape[src - n:src]

    for g in groups:
        code = g[0]
        if code > 0:
            out.append(code)
            src += 1
        elif code == 0:
            out.extend(take(1, 0))
        elif code == -1:
            if inferred >= 0:
                raise RuleError(f"shape={spec}: at most one dimension can be -1")
            inferred = len(out)
            out.append(1)
            src += 1
        elif code == -2:
            out.extend(dshape[src:])
            src = max(src, ndim)
        elif code == -3:
            out.append(prod(take(2, -3)))
        elif code == -4:
            out.extend(_split_dims(take(1, -4)[0], g[1], g[2], spec))
        else:
            raise RuleError(f"shape={spec}: {code} is not a valid dimension or code (0, -1, -2, -3, -4)")
    if inferred >= 0:
        rest = prod(out)
        if rest == 0 or prod(dshape) % rest:
            raise RuleError(f"shape={spec}: cannot infer the -1 dimension: {prod(dshape)} elements "
                            f"do not divide by {rest}")
        out[inferred] = prod(dshape) // rest
    return out


def _legacy_target(p: dict, dshape: Shape) -> Shape:
    """The deprecated ``target_shape`` (0 = infer, at most once) with ``keep_highest``."""
    tgt = list(p["target_shape"])
    if p["keep_highest"]:
        tgt = [dshape[0], *tgt]
    if tgt.count(0) > 1 or any(d < 0 for d in tgt):
        raise RuleError(f"target_shape={p['target_shape']}: dims must be positive with at most one 0 (infer)")
    if 0 in tgt:
        rest = prod(d for d in tgt if d != 0)
        if prod(dshape) % rest:
            raise RuleError(f"target_shape={p['target_shape']}: {prod(dshape)} elements do not "
                            f"divide by {rest}")
        tgt[tgt.index(0)] = prod(dshape) // rest
    return tuple(tgt)


def reshape_shape(dshape: Shape, spec: Shape, reverse: bool = False) -> Shape:
    """The output shape of ``Reshape(shape=spec, reverse=reverse)`` on an input of ``dshape``.

    Codes: 0 copies a dim, -1 infers one, -2 copies the rest, -3 merges two dims, -4 splits one
    into the next two values; ``reverse`` applies the codes right to left.

    >>> reshape_shape((2, 3, 4), (-4, 1, 2, -2)), reshape_shape((10, 5, 4), (-1, 0), reverse=True)
    ((1, 2, 3, 4), (50, 4))
    >>> reshape_shape((1, 2, 3, 64), (-2, -1, 16, -4), reverse=True)
    (1, 2, 3, 4, 16)
    """
    if reverse:
        # as MXNet: the codes and the input are both reversed, read left to right, and the result
        # reversed back (so a -4 is followed by its two values in the reversed codes)
        rev = tuple(reversed(dshape))
        try:
            groups = _code_groups(tuple(reversed(spec)))
            out = _apply_codes(groups, rev, tuple(spec))[::-1]
        except RuleError as exc:
            raise RuleError(f"{exc} (reverse=True: the codes are applied right to left, i.e. to the "
                            f"reversed input {shape_str(rev)})") from None
    else:
        out = _apply_codes(_code_groups(tuple(spec)), tuple(dshape), tuple(spec))
    return tuple(out)


def _reshape_check(p: dict) -> None:
    if not p["shape"] and not p["target_shape"]:
        raise ParamError("Reshape: parameter 'shape' is required (a tuple such as (0, -1))")
    if p["shape"] and p["target_shape"]:
        raise ParamError("Reshape: give 'shape' or the deprecated 'target_shape', not both")


def _reshape_rule(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    if p["shape"]:
        out = reshape_shape(data, p["shape"], p["reverse"])
        what = f"shape={p['shape']}" + (" (reverse)" if p["reverse"] else "")
    else:
        out = _legacy_target(p, data)
        what = f"target_shape={p['target_shape']}"
    if prod(out) != prod(data):
        raise RuleError(f"{what} gives {shape_str(out)} ({prod(out)} elements) but the input "
                        f"{shape_str(data)} has {prod(data)} elements")
    return [data], [out], []


Reshape = register(OpDef(
    name="Reshape",
    params=(
        Param("shape", "shape", (), doc="target shape; may use the codes 0, -1, -2, -3, -4"),
        Param("reverse", "bool", False, doc="apply the special codes from right to left"),
        Param("target_shape", "shape", (), doc="(deprecated) target shape, 0 = infer"),
        Param("keep_highest", "bool", False,
              doc="(deprecated) keep the first dim, target_shape for the rest"),
    ),
    check=_reshape_check,
    shape=_reshape_rule,
    shape_partial=partial_shape.size_kept(_reshape_rule),
    kind=Kind.INJECTIVE,
    grad=GRAD["reshape"],
    aliases=("reshape",),
    extra=dict(_VIEW),
    doc="Gives the data a new shape with the same number of elements. Codes in ``shape``: 0 copies "
        "an input dim, -1 infers one dim, -2 copies all remaining dims, -3 merges two consecutive "
        "dims, -4 splits one dim into the next two values (one may be -1); ``reverse=True`` applies "
        "them right to left.",
))


# ---------------------------------------------------------------------------------------------
# expand_dims / squeeze.


def _expand_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    ax = norm_insert_axis(p["axis"], len(data))
    return [data], [(*data[:ax], 1, *data[ax:])], []


expand_dims = register(OpDef(
    name="expand_dims",
    params=(Param("axis", "int", doc="position of the new size-1 axis, in [-ndim-1, ndim]"),),
    shape=_expand_shape,
    kind=Kind.INJECTIVE,
    grad=GRAD["reshape"],
    extra=dict(_VIEW),
    doc="Inserts a size-1 axis at ``axis`` (negative values count from the end of the result).",
))


def _squeeze_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    if p["axis"] is None:
        drop = {i for i, d in enumerate(data) if d == 1}
    else:
        drop = set(norm_axes(p["axis"], len(data)))
        bad = [i for i in sorted(drop) if data[i] != 1]
        if bad:
            raise RuleError(f"cannot squeeze axis {bad[0]} of shape {shape_str(data)}: its size is "
                            f"{data[bad[0]]}, not 1")
    out = tuple(d for i, d in enumerate(data) if i not in drop)
    return [data], [out or (1,)], []


squeeze = register(OpDef(
    name="squeeze",
    params=(Param("axis", "shape", None, nullable=True, doc="size-1 axes to remove; None removes all"),),
    shape=_squeeze_shape,
    kind=Kind.INJECTIVE,
    grad=GRAD["reshape"],
    extra=dict(_VIEW),
    doc="Removes size-1 axes (all of them, or those in ``axis``); removing every axis gives shape (1,).",
))


# ---------------------------------------------------------------------------------------------
# transpose / SwapAxis / reverse: permutations and flips (shape rules invertible).


def _perm(p: dict, ndim: int) -> tuple[int, ...]:
    axes = p["axes"]
    if not axes:
        return tuple(range(ndim - 1, -1, -1))
    if len(axes) != ndim:
        raise RuleError(f"axes={axes} must list all {ndim} axes of the input")
    perm = tuple(norm_axis(a, ndim, "axes") for a in axes)
    norm_axes(perm, ndim, "axes")  # no repeats
    return perm


def _transpose_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    return [data], [tuple(data[a] for a in _perm(p, len(data)))], []


transpose = register(OpDef(
    name="transpose",
    params=(Param("axes", "shape", (), doc="the permutation; () reverses the axes"),),
    shape=_transpose_shape,
    shape_partial=partial_shape.permuted(_perm),
    kind=Kind.INJECTIVE,
    grad=GRAD["transpose"],
    doc="Permutes the axes: output axis i is input axis ``axes[i]``; ``axes=()`` reverses them.",
))


def _swap_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    a, b = norm_axis(p["dim1"], len(data), "dim1"), norm_axis(p["dim2"], len(data), "dim2")
    out = list(data)
    out[a], out[b] = out[b], out[a]
    return [data], [tuple(out)], []


SwapAxis = register(OpDef(
    name="SwapAxis",
    params=(Param("dim1", "int", 0, doc="the first axis"), Param("dim2", "int", 0, doc="the second axis")),
    shape=_swap_shape,
    kind=Kind.INJECTIVE,
    grad=GRAD["SwapAxis"],
    aliases=("swapaxes",),
    doc="Swaps two axes of the input.",
))


def _flip_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    norm_axes(p["axis"], len(data))
    return [data], [data], []


reverse = register(OpDef(
    name="reverse",
    params=(Param("axis", "shape", doc="the axes to reverse"),),
    shape=_flip_shape,
    kind=Kind.INJECTIVE,
    grad=GRAD["reverse"],
    aliases=("flip",),
    doc="Reverses the order of elements along the given axes (shape unchanged).",
))


# ---------------------------------------------------------------------------------------------
# tile / repeat.


def _tile_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    reps = tuple(p["reps"])
    n = max(len(reps), len(data))
    reps = (1,) * (n - len(reps)) + reps
    base = (1,) * (n - len(data)) + tuple(data)
    return [data], [tuple(d * r for d, r in zip(base, reps))], []


tile = register(OpDef(
    name="tile",
    params=(Param("reps", "shape", check=lambda v: all(r > 0 for r in v), check_msg="positive repetitions",
                  doc="repetitions per axis (aligned to the last axes)"),),
    shape=_tile_shape,
    kind=Kind.INJECTIVE,
    grad=GRAD["tile"],
    doc="Repeats the whole array ``reps[i]`` times along each axis; the shorter of ``reps`` and "
        "the shape is padded with leading ones.",
))


def _repeat_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    if p["axis"] is None:
        return [data], [(prod(data) * p["repeats"],)], []
    ax = norm_axis(p["axis"], len(data))
    out = list(data)
    out[ax] *= p["repeats"]
    return [data], [tuple(out)], []


repeat = register(OpDef(
    name="repeat",
    params=(
        Param("repeats", "int", check=lambda v: v > 0, check_msg="> 0", doc="repetitions of each element"),
        Param("axis", "int", None, nullable=True, doc="axis to repeat along; None flattens first"),
    ),
    shape=_repeat_shape,
    kind=Kind.INJECTIVE,
    grad=GRAD["repeat"],
    doc="Repeats each element ``repeats`` times along ``axis`` (of the flattened array if None).",
))


# ---------------------------------------------------------------------------------------------
# Concat / stack (variadic, inputs arg0, arg1, ...) and SliceChannel (outputs output0, ...).


def _arg_names(p: dict) -> list[str]:
    return [f"arg{i}" for i in range(p["num_args"])]


def _first_known(ins: list) -> tuple[int, Shape | None]:
    return next(((i, s) for i, s in enumerate(ins) if s is not None), (-1, None))


def _concat_shape(p: dict, ins: list, aux: list):
    i0, ref = _first_known(ins)
    if ref is None:
        return _unknown(ins)
    ax = norm_axis(p["dim"], len(ref), "dim")
    for i, s in enumerate(ins):
        if s is not None and (len(s) != len(ref) or any(a != b for k, (a, b) in enumerate(zip(s, ref))
                                                         if k != ax)):
            raise RuleError(f"argument 'arg{i}' has shape {shape_str(s)} but 'arg{i0}' has "
                            f"{shape_str(ref)}: all dimensions except dim={p['dim']} must match")
    if any(s is None for s in ins):
        return _unknown(ins)
    return list(ins), [(*ref[:ax], sum(s[ax] for s in ins), *ref[ax + 1:])], []


_NUM_ARGS = Param("num_args", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="number of inputs")

Concat = register(OpDef(
    name="Concat",
    params=(_NUM_ARGS, Param("dim", "int", 1, doc="the axis to join along")),
    arguments=_arg_names,
    variadic="num_args",
    shape=_concat_shape,
    shape_partial=partial_shape.concat,
    kind=Kind.INJECTIVE,
    grad=GRAD["Concat"],
    aliases=("concat",),
    doc="Joins the inputs (given positionally) along ``dim``; every other dimension must match.",
))


def _stack_shape(p: dict, ins: list, aux: list):
    i0, ref = _first_known(ins)
    if ref is None:
        return _unknown(ins)
    for i, s in enumerate(ins):
        if s is not None and s != ref:
            raise RuleError(f"argument 'arg{i}' has shape {shape_str(s)} but 'arg{i0}' has "
                            f"{shape_str(ref)}: stack needs equal shapes")
    ax = norm_insert_axis(p["axis"], len(ref))
    return [ref] * len(ins), [(*ref[:ax], p["num_args"], *ref[ax:])], []


stack = register(OpDef(
    name="stack",
    params=(Param("axis", "int", 0, doc="position of the new axis in the result"), _NUM_ARGS),
    arguments=_arg_names,
    variadic="num_args",
    shape=_stack_shape,
    kind=Kind.INJECTIVE,
    grad=GRAD["stack"],
    doc="Joins equally shaped inputs (given positionally) along a new axis ``axis``.",
))


def _split_outputs(p: dict) -> list[str]:
    return [f"output{i}" for i in range(p["num_outputs"])]


def _split_shape(p: dict, ins: list, aux: list):
    data, n = ins[0], p["num_outputs"]
    if data is None:
        return list(ins), [None] * n, []
    ax = norm_axis(p["axis"], len(data))
    if data[ax] % n:
        raise RuleError(f"axis {p['axis']} of shape {shape_str(data)} has size {data[ax]}, which "
                        f"num_outputs={n} does not divide")
    if p["squeeze_axis"]:
        if data[ax] != n:
            raise RuleError(f"squeeze_axis=True needs axis {p['axis']} of shape {shape_str(data)} to have "
                            f"size num_outputs={n}")
        piece = (*data[:ax], *data[ax + 1:]) or (1,)
    else:
        piece = (*data[:ax], data[ax] // n, *data[ax + 1:])
    return [data], [piece] * n, []


SliceChannel = register(OpDef(
    name="SliceChannel",
    params=(
        Param("num_outputs", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="number of pieces"),
        Param("axis", "int", 1, doc="the axis to split"),
        Param("squeeze_axis", "bool", False, doc="drop the split axis (its size must equal num_outputs)"),
    ),
    outputs=_split_outputs,
    shape=_split_shape,
    shape_partial=partial_shape.split,
    kind=Kind.INJECTIVE,
    grad=GRAD["SliceChannel"],
    aliases=("split",),
    doc="Splits the input into ``num_outputs`` equal pieces along ``axis``; outputs are named "
        "output0, output1, ...",
))


# ---------------------------------------------------------------------------------------------
# slice_axis / slice.


def _slice_len(size: int, b: int | None, e: int | None, s: int, where: str) -> int:
    n = len(range(*slice(b, e, s).indices(size)))
    if n == 0:
        raise RuleError(f"{where}: begin={b}, end={e}, step={s} selects nothing from a dimension "
                        f"of size {size}")
    return n


def _slice_axis_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    ax = norm_axis(p["axis"], len(data))
    d, b, e = data[ax], p["begin"], p["end"]
    if not -d <= b < d or (e is not None and not -d <= e <= d):
        raise RuleError(f"begin={b}, end={e} is out of range for axis {p['axis']} of shape {shape_str(data)}")
    n = _slice_len(d, b, e, 1, f"axis {p['axis']} of shape {shape_str(data)}")
    return [data], [(*data[:ax], n, *data[ax + 1:])], []


slice_axis = register(OpDef(
    name="slice_axis",
    params=(
        Param("axis", "int", doc="the axis to slice"),
        Param("begin", "int", doc="first index (negative counts from the end)"),
        Param("end", "int", nullable=True, doc="index after the last one; None means the end"),
    ),
    shape=_slice_axis_shape,
    shape_partial=partial_shape.axiswise(_slice_axis_shape),
    kind=Kind.INJECTIVE,
    grad=GRAD["slice_axis"],
    doc="Takes indices ``begin`` to ``end`` (exclusive) along ``axis``.",
))


def _opt_ints(value: str, name: str) -> tuple[int | None, ...]:
    """Parse a tuple whose entries are ints or None (slice's begin/end/step), literals only."""
    import ast

    try:
        v = ast.literal_eval(value.strip()) if value.strip() else ()
    except (ValueError, SyntaxError):
        raise ParamError(f"slice: parameter '{name}'={value!r} is not a tuple of ints/None") from None
    v = v if isinstance(v, (tuple, list)) else (v,)
    if not all(x is None or (isinstance(x, int) and not isinstance(x, bool)) for x in v):
        raise ParamError(f"slice: parameter '{name}'={value!r} is not a tuple of ints/None")
    return tuple(v)


def _fmt_opt(v: tuple) -> str:
    return "(" + ",".join(str(x) for x in v) + ("," if len(v) == 1 else "") + ")"


def _slice_check(p: dict) -> None:
    b, e, s = (_opt_ints(p[k], k) for k in ("begin", "end", "step"))
    if len(b) != len(e) or len(s) not in (0, len(b)):
        raise ParamError(f"slice: begin={b}, end={e}, step={s} must have the same length (step may be ())")
    if 0 in s:
        raise ParamError(f"slice: step={s} must not contain 0")
    p["begin"], p["end"], p["step"] = _fmt_opt(b), _fmt_opt(e), _fmt_opt(s)


def _slice_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return _unknown(ins)
    b, e, s = (_opt_ints(p[k], k) for k in ("begin", "end", "step"))
    if len(b) > len(data):
        raise RuleError(f"begin={b} has {len(b)} entries but the input {shape_str(data)} has "
                        f"{len(data)} axes")
    out = list(data)
    for k in range(len(b)):
        step = 1 if not s or s[k] is None else s[k]
        out[k] = _slice_len(data[k], b[k], e[k], step, f"axis {k} of shape {shape_str(data)}")
    return [data], [tuple(out)], []


slice_op = register(OpDef(
    name="slice",
    params=(
        Param("begin", "str", doc="start index per axis (tuple; None entries mean the default)"),
        Param("end", "str", doc="stop index per axis, exclusive (tuple; None entries mean the default)"),
        Param("step", "str", "()", doc="step per axis (tuple, default 1; may be negative)"),
    ),
    check=_slice_check,
    shape=_slice_shape,
    shape_partial=partial_shape.axiswise(_slice_shape),
    kind=Kind.INJECTIVE,
    grad=GRAD["slice"],
    aliases=("crop",),
    doc="Python-style slicing of the first ``len(begin)`` axes: ``data[b0:e0:s0, b1:e1:s1, ...]``; "
        "None entries take Python's defaults.",
))


def _backward_slice_shape(p: dict, ins: list, aux: list):
    _, (want,), _ = _slice_shape(p, [p["shape"]], aux)
    return [want], [p["shape"]], []


register(OpDef(
    name="_backward_slice",
    params=(*slice_op.params, Param("shape", "shape", doc="shape of the sliced input")),
    arguments=("ograd",),
    check=_slice_check,
    shape=_backward_slice_shape,
    kind=Kind.INJECTIVE,
    extra={"backward_of": "slice"},
    doc="Gradient of slice (and slice_axis): zeros of ``shape`` with the head gradient written "
        "into the sliced positions.",
))


# ---------------------------------------------------------------------------------------------
# take / pick / one_hot: gathers (the index inputs keep their own dtype).


def _take_shape(p: dict, ins: list, aux: list):
    a, idx = ins
    if a is None or idx is None:
        return _unknown(ins)
    ax = norm_axis(p["axis"], len(a))
    return [a, idx], [(*a[:ax], *idx, *a[ax + 1:])], []


def _data_dtype(p: dict, ins: list, aux: list):
    return [ins[0], ins[1]], [ins[0]], []


take = register(OpDef(
    name="take",
    params=(
        Param("axis", "int", 0, doc="the axis to take along"),
        Param("mode", "str", "clip", choices=("raise", "wrap", "clip"), doc="out-of-range indices"),
    ),
    arguments=("a", "indices"),
    shape=_take_shape,
    dtype=_data_dtype,
    kind=Kind.INJECTIVE,
    grad=GRAD["take"],
    doc="Gathers slices of ``a`` along ``axis`` at ``indices``: shape a.shape[:axis] + "
        "indices.shape + a.shape[axis+1:].",
))


def _pick_check(p: dict) -> None:
    if p["axis"] is None:
        raise ParamError("pick: parameter 'axis'=None is not supported (as in MXNet 1.x): give an axis")


def _pick_shape(p: dict, ins: list, aux: list):
    data, idx = ins
    if data is None:
        return _unknown(ins)
    ax = norm_axis(p["axis"], len(data))
    kept = (*data[:ax], 1, *data[ax + 1:])
    want = kept if p["keepdims"] else ((*data[:ax], *data[ax + 1:]) or (1,))
    if idx is not None and idx not in (want, kept):   # as in MXNet, either form of the index
        raise RuleError(f"argument 'index' has shape {shape_str(idx)} but data {shape_str(data)} with "
                        f"axis={p['axis']} needs {shape_str(want)} or {shape_str(kept)}")
    return [data, want if idx is None else idx], [want], []


pick = register(OpDef(
    name="pick",
    params=(
        Param("axis", "int", -1, nullable=True, doc="the axis to pick along"),
        Param("keepdims", "bool", False, doc="keep the picked axis as size 1"),
        Param("mode", "str", "clip", choices=("clip", "wrap"), doc="out-of-range indices"),
    ),
    arguments=("data", "index"),
    check=_pick_check,
    shape=_pick_shape,
    shape_partial=partial_shape.pick,
    dtype=_data_dtype,
    kind=Kind.INJECTIVE,
    grad=GRAD["pick"],
    doc="Picks one element per position along ``axis``: ``out[i] = data[i, index[i]]`` for 2-D data. "
        "``index`` has data's shape without ``axis``, or with ``axis`` as size 1 (either ``keepdims``).",
))


def _backward_take_shape(p: dict, ins: list, aux: list):
    idx = ins[1]
    want = None if idx is None else _take_shape(p, [p["shape"], idx], aux)[1][0]
    return [want, idx], [p["shape"]], []


register(OpDef(
    name="_backward_take",
    params=(*take.params, Param("shape", "shape", doc="shape of 'a'")),
    arguments=("ograd", "indices"),
    shape=_backward_take_shape,
    dtype=_data_dtype,
    kind=Kind.INJECTIVE,
    extra={"backward_of": "take"},
    doc="Gradient of take wrt 'a': the head gradient scatter-added into zeros of ``shape``.",
))


def _backward_pick_shape(p: dict, ins: list, aux: list):
    (_, index), (want,), _ = _pick_shape(p, [p["shape"], ins[1]], aux)
    return [want, index], [p["shape"]], []


register(OpDef(
    name="_backward_pick",
    params=(*pick.params, Param("shape", "shape", doc="shape of 'data'")),
    arguments=("ograd", "index"),
    check=_pick_check,
    shape=_backward_pick_shape,
    dtype=_data_dtype,
    kind=Kind.INJECTIVE,
    extra={"backward_of": "pick"},
    doc="Gradient of pick wrt 'data': zeros of ``shape`` with the head gradient at the picked positions.",
))


def _one_hot_shape(p: dict, ins: list, aux: list):
    idx = ins[0]
    if idx is None:
        return _unknown(ins)
    return [idx], [(*idx, p["depth"])], []


def _one_hot_dtype(p: dict, ins: list, aux: list):
    import numpy as np

    return [ins[0]], [np.dtype(p["dtype"])], []


one_hot = register(OpDef(
    name="one_hot",
    params=(
        Param("depth", "int", check=lambda v: v >= 0, check_msg=">= 0",
              doc="size of the one-hot dimension (0: a zero-size output, as MXNet)"),
        Param("on_value", "float", 1.0, doc="value at the index"),
        Param("off_value", "float", 0.0, doc="value elsewhere"),
        Param("dtype", "dtype", "float32",
              choices=("float16", "float32", "float64", "int32", "int64", "int8", "uint8"),
              doc="dtype of the result"),
    ),
    arguments=("indices",),
    shape=_one_hot_shape,
    dtype=_one_hot_dtype,
    kind=Kind.INJECTIVE,
    extra={"no_grad": True},
    doc="One-hot encoding: output shape indices.shape + (depth,), ``on_value`` where the last index "
        "equals the index, ``off_value`` elsewhere.",
))

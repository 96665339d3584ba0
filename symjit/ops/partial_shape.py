"""Partial shape rules: MXNet 1.x's classic shape inference with unknown dimensions.

Inside the engine an unknown dimension is -1 (:data:`UNKNOWN`) and a shape whose rank is not
known either is ``None``, so 0 is always a real size. ``Symbol.infer_shape``/``infer_shape_partial``
translate at their boundary (:mod:`symjit.symbol.infer`): with MXNet's classic shapes a 0 given for
an input or in a Variable's ``shape=(0, 10)`` is an unknown dimension (and ``()`` an unknown rank),
with NumPy shape semantics on (``mx.np_shape()``) -1 is, as MXNet's own engine does.

An op's ``shape_partial`` rule (an :class:`~symjit.ops.registry.OpDef` slot) takes what is known of
its inputs *and outputs* in that form and returns what it can say of each, so knowledge flows both
ways: from an input to the outputs, and from an output (known from the op that reads it) back to
the inputs. The engine merges every answer with what it knew (an unknown dimension takes the other
side's size; two different sizes are an error). Ops without such a rule have their ordinary
``shape`` rule run once all their inputs are complete.

The rules here: every elementwise op (all shapes equal), FullyConnected, Convolution, Concat,
SliceChannel, dot, batch_dot, Embedding, pick, transpose, slice, slice_axis, where, Reshape and the filled
sources (``_zeros``, ``_ones``, ``_full`` with unknown sizes in ``shape``), the ops MXNet's own
partial-inference tests exercise.

>>> merge((-1, 10), (12, -1))
(12, 10)
>>> partial_same({}, [(-1, 10), None], [(12, -1)], [])
([(12, 10), (12, 10)], [(12, 10)], [])
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from ..base import shape_str
from ..util import is_np_shape
from .registry import RuleError
from .rules import norm_axis, window_out_len, window_params

__all__ = ["UNKNOWN", "merge", "merge_all", "is_complete", "partial_same", "fc", "convolution", "concat",
           "split", "dot", "batch_dot", "embedding", "pick", "permuted", "axiswise", "where", "fixed",
           "size_kept"]

Partial = tuple[int, ...] | None
UNKNOWN = -1
"""An unknown dimension inside the engine."""


def is_complete(shape: Partial) -> bool:
    """A shape of known rank whose every dimension is known (0 is a known size).

    >>> is_complete((2, 0)), is_complete((2, -1)), is_complete(None)
    (True, False, False)
    """
    return shape is not None and all(d >= 0 for d in shape)


def merge(a: Partial, b: Partial) -> Partial:
    """What two partial shapes of one value say together; RuleError when they disagree."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise RuleError(f"shapes {shape_str(a)} and {shape_str(b)} have different ranks")
    out = []
    for x, y in zip(a, b):
        if x >= 0 and y >= 0 and x != y:
            raise RuleError(f"shapes {shape_str(a)} and {shape_str(b)} disagree")
        out.append(x if x >= 0 else y)
    return tuple(out)


def merge_all(shapes: Sequence[Partial]) -> Partial:
    """:func:`merge` over every shape."""
    out: Partial = None
    for s in shapes:
        out = merge(out, s)
    return out


def fill(expected: tuple[int, ...], known: Partial) -> tuple[int, ...]:
    """``expected`` with its unknown dimensions taken from ``known`` where the ranks agree;
    a disagreement is left for the engine to report, naming the argument."""
    if known is None or len(known) != len(expected):
        return expected
    return tuple(e if e >= 0 else k for e, k in zip(expected, known))


def partial_same(p: dict, ins: list, outs: list, aux: list):
    """Elementwise ops: every input and output has one shape."""
    try:
        shape = merge_all([*ins, *outs])
    except RuleError:     # the engine reports the argument that disagrees
        shape = next(s for s in [*ins, *outs] if s is not None)
    return [shape] * len(ins), [shape] * len(outs), list(aux)


def _known_prod(dims: Sequence[int]) -> int:
    out = 1
    for d in dims:
        if d < 0:
            return UNKNOWN
        out *= d
    return out


def fc(p: dict, ins: list, outs: list, aux: list):
    """FullyConnected: the batch dimensions shared by data and output; the weight
    ``(num_hidden, in_dim)`` once data's other dimensions are known. Nothing is inferred while
    data's rank is unknown (as MXNet, whose parameters wait for the data's shape)."""
    data, nh = ins[0], p["num_hidden"]
    if data is None:
        return list(ins), list(outs), []
    if not data:
        raise RuleError("argument 'data' must have at least 1 dimensions, got shape ()")
    if p["flatten"]:
        out = fill((data[0], nh), outs[0])
        data = (out[0], *data[1:])
        in_dim = _known_prod(data[1:])
    else:
        out = fill((*data[:-1], nh), outs[0])
        data = (*out[:-1], data[-1])
        in_dim = data[-1]
    new = [data, (nh, in_dim)] + ([] if p["no_bias"] else [(nh,)])
    return new, [out], []


def convolution(p: dict, ins: list, outs: list, aux: list):
    """Convolution (channel-first layouts): the batch from either side; the weight ``(num_filter,
    C / num_group, *kernel)`` with C from the data or back from the weight; each output length
    from its input length, and an input length back from the output's where the stride is 1."""
    k, nf, g = p["kernel"], p["num_filter"], p["num_group"]
    layout = p.get("layout")
    data = ins[0]
    if data is None or (layout and not layout.startswith("NC")):
        return list(ins), list(outs), []
    nd = len(k)
    if len(data) != nd + 2:
        raise RuleError(f"argument 'data' must have {nd + 2} dimensions (N, C, *spatial) for kernel "
                        f"{shape_str(k)}, got shape {shape_str(data)}")
    out = fill((data[0], nf, *(UNKNOWN,) * nd), outs[0])
    given = ins[1] if ins[1] is not None and len(ins[1]) == nd + 2 else None
    channels = data[1] if data[1] >= 0 else (given[1] * g if given and given[1] >= 0 else UNKNOWN)
    weight = (nf, channels // g if channels >= 0 else UNKNOWN, *k)
    if channels >= 0 and channels % g:
        raise RuleError(f"argument 'data' of shape {shape_str(data)} has {channels} channels, "
                        f"not divisible by num_group={g}")
    stride, dilate, pad = window_params(p, nd)
    spatial_in, spatial_out = list(data[2:]), list(out[2:])
    for i in range(nd):
        span = dilate[i] * (k[i] - 1) + 1
        if spatial_in[i] >= 0:
            try:
                spatial_out[i] = window_out_len(spatial_in[i], k[i], stride[i], dilate[i], pad[i])
            except RuleError as exc:
                raise RuleError(f"argument 'data' of shape {shape_str(data)}, spatial axis {2 + i}: "
                                f"{exc}") from None
        elif spatial_out[i] >= 0 and stride[i] == 1:
            spatial_in[i] = spatial_out[i] - 1 + span - 2 * pad[i]
    data = (out[0], channels, *spatial_in)
    out = (data[0], nf, *spatial_out)
    bias = [] if p["no_bias"] else [(nf,)]
    return [data, weight, *bias], [out], []


def concat(p: dict, ins: list, outs: list, aux: list):
    """Concat: every dimension but ``dim`` shared by all inputs and the output; the output's
    ``dim`` the sum of the inputs', or one input's the output's minus the others'."""
    rank = next((len(s) for s in [*ins, *outs] if s is not None), None)
    if rank is None:
        return list(ins), list(outs), []
    ax = norm_axis(p["dim"], rank, "dim")
    blank = (UNKNOWN,) * rank
    shapes = [blank if s is None else s for s in ins]
    out = blank if outs[0] is None else outs[0]
    if any(len(s) != rank for s in [*shapes, out]):
        raise RuleError(f"all inputs and the output must have {rank} dimensions, got "
                        f"{', '.join(shape_str(s) for s in [*shapes, out])}")
    drop = lambda s: s[:ax] + (UNKNOWN,) + s[ax + 1:]  # noqa: E731
    common = merge_all([drop(s) for s in [*shapes, out]])
    shapes = [common[:ax] + (s[ax],) + common[ax + 1:] for s in shapes]
    sizes = [s[ax] for s in shapes]
    total = out[ax]
    if all(d >= 0 for d in sizes):
        total = merge((total,), (sum(sizes),))[0]
    elif total >= 0 and sizes.count(UNKNOWN) == 1:
        i = sizes.index(UNKNOWN)
        rest = total - sum(d for d in sizes if d >= 0)
        if rest < 0:
            raise RuleError(f"the output's dim={p['dim']} size {total} leaves {rest} for argument 'arg{i}'")
        shapes[i] = common[:ax] + (rest,) + common[ax + 1:]
    return shapes, [common[:ax] + (total,) + common[ax + 1:]], []


def split(p: dict, ins: list, outs: list, aux: list):
    """SliceChannel: every output shaped alike, the data's ``axis`` size ``num_outputs`` times
    theirs (or ``num_outputs`` itself with ``squeeze_axis``), their other dimensions the data's."""
    n, squeeze = p["num_outputs"], p["squeeze_axis"]
    piece = merge_all(outs)
    data = ins[0]
    if data is None and piece is not None and (len(piece) > 1 or not squeeze):
        # (a squeezed (1,) may come from rank 1 or 2)
        data = (UNKNOWN,) * (len(piece) + (1 if squeeze else 0))
    if data is None:
        return list(ins), list(outs), []
    ax = norm_axis(p["axis"], len(data))
    size = data[ax]
    if squeeze and len(data) == 1:          # every piece is (1,), as the ordinary rule says
        return [merge(data, (n,))], [merge((1,), piece)] * n, []
    if squeeze:
        size = merge((size,), (n,))[0]
        rest = merge(data[:ax] + data[ax + 1:], piece)
        data = rest[:ax] + (size,) + rest[ax:]
        piece = rest
    else:
        if size >= 0 and size % n:
            raise RuleError(f"axis {p['axis']} of shape {shape_str(data)} has size {size}, which "
                            f"num_outputs={n} does not divide")
        one = merge(data[:ax] + (size // n,) + data[ax + 1:], piece)
        data = one[:ax] + (size if size >= 0 else (one[ax] * n if one[ax] >= 0 else UNKNOWN),) + one[ax + 1:]
        piece = one
    return [data], [piece] * n, []


def _unchanged(ins: list, outs: list, aux: list):
    return list(ins), list(outs), list(aux)


def _contracted(lhs: tuple, rhs: tuple, a: int, b: int) -> int:
    x, y = lhs[a], rhs[b]
    if x >= 0 and y >= 0 and x != y:
        raise RuleError(f"dot shape error: lhs {shape_str(lhs)} X rhs {shape_str(rhs)}: the contracted "
                        f"axes have sizes {x} and {y}")
    return x if x >= 0 else y


def dot(p: dict, ins: list, outs: list, aux: list):
    """dot: once both ranks are known, the output is lhs's free axes then rhs's (two vectors give
    ``(1,)``), the contracted sizes complete each other and a known output completes the free axes.

    >>> dot({'transpose_a': False, 'transpose_b': False}, [(-1, 3, 4), (4, 5)], [None], [])
    ([(-1, 3, 4), (4, 5)], [(-1, 3, 5)], [])
    """
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return _unchanged(ins, outs, aux)
    if not lhs or not rhs:
        raise RuleError(f"dot does not take 0-d inputs, got lhs {shape_str(lhs)} and rhs {shape_str(rhs)}")
    ka = 0 if p["transpose_a"] else len(lhs) - 1
    kb = len(rhs) - 1 if p["transpose_b"] else 0
    k = _contracted(lhs, rhs, ka, kb)
    if len(lhs) == 1 and len(rhs) == 1:
        return [(k,), (k,)], [(1,)], []
    free_a = [i for i in range(len(lhs)) if i != ka] if len(lhs) > 1 else []
    free_b = [i for i in range(len(rhs)) if i != kb] if len(rhs) > 1 else []
    out = fill(tuple(lhs[i] for i in free_a) + tuple(rhs[i] for i in free_b), outs[0])
    new_a, new_b = list(lhs), list(rhs)
    new_a[ka] = new_b[kb] = k
    for j, i in enumerate(free_a):
        new_a[i] = out[j]
    for j, i in enumerate(free_b):
        new_b[i] = out[len(free_a) + j]
    return [tuple(new_a), tuple(new_b)], [out], []


def batch_dot(p: dict, ins: list, outs: list, aux: list):
    """batch_dot: inferred once both ranks and both contracted sizes are known (as MXNet): the
    batch axes of both inputs complete each other, then ``(*batch, M, N)``.

    >>> batch_dot({'transpose_a': False, 'transpose_b': False}, [(-1, 3, 4), (-1, 4, 5)], [None], [])
    ([(-1, 3, 4), (-1, 4, 5)], [(-1, 3, 5)], [])
    """
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return _unchanged(ins, outs, aux)
    where = f"lhs {shape_str(lhs)} X rhs {shape_str(rhs)}"
    if len(lhs) < 3 or len(lhs) != len(rhs):
        raise RuleError(f"batch_dot needs inputs of the same rank >= 3, got {where}")
    ta, tb = p["transpose_a"], p["transpose_b"]
    m, k1 = (lhs[-1], lhs[-2]) if ta else (lhs[-2], lhs[-1])
    k2, n = (rhs[-1], rhs[-2]) if tb else (rhs[-2], rhs[-1])
    if k1 < 0 or k2 < 0:
        return _unchanged(ins, outs, aux)
    if k1 != k2:
        raise RuleError(f"batch_dot shape error: {where}: contracted dims {k1} and {k2} differ")
    try:
        batch = merge(lhs[:-2], rhs[:-2])
    except RuleError:
        raise RuleError(f"batch_dot batch dims differ: {where}") from None
    return [batch + lhs[-2:], batch + rhs[-2:]], [(*batch, m, n)], []


def embedding(p: dict, ins: list, outs: list, aux: list):
    """Embedding: once data's rank is known, the weight ``(input_dim, output_dim)`` and the output
    ``data.shape + (output_dim,)``; a known output completes data.

    >>> embedding({'input_dim': 100, 'output_dim': 10}, [(-1, 5), None], [None], [])
    ([(-1, 5), (100, 10)], [(-1, 5, 10)], [])
    """
    data = ins[0]
    if data is None:
        return _unchanged(ins, outs, aux)
    out = fill((*data, p["output_dim"]), outs[0])
    return [out[:-1], (p["input_dim"], p["output_dim"])], [out], []


def pick(p: dict, ins: list, outs: list, aux: list):
    """pick: once data's rank is known, index and output are data without ``axis`` (size 1 there
    with ``keepdims``); what is known of either completes the other and data's other axes.

    >>> pick({'axis': 1, 'keepdims': False}, [(-1, 3, 3), (-1, 3)], [None], [])
    ([(-1, 3, 3), (-1, 3)], [(-1, 3)], [])
    """
    data, index = ins
    if data is None:
        return _unchanged(ins, outs, aux)
    ax = norm_axis(p["axis"], len(data))
    keep = p["keepdims"]
    if not keep and len(data) > 1 and index is not None and len(index) == len(data):
        # the index with ``axis`` kept as size 1: the keepdims rule, the output without the axis
        out = None if outs[0] is None else outs[0][:ax] + (1,) + outs[0][ax:]
        (data, index), (out,), _ = pick({**p, "keepdims": True}, [data, index], [out], aux)
        return [data, index], [out[:ax] + out[ax + 1:]], []
    rest = data[:ax] + data[ax + 1:]
    want = fill(fill(rest[:ax] + (1,) + rest[ax:] if keep else (rest or (1,)), outs[0]), index)
    if keep or rest:
        rest = want[:ax] + want[ax + 1:] if keep else want
        data = rest[:ax] + (data[ax],) + rest[ax:]
    return [data, want], [want], []


def permuted(perm_of: Callable[[dict, int], tuple[int, ...]]) -> Callable:
    """The partial rule of a permutation of axes (transpose): output axis i is input axis
    ``perm_of(params, rank)[i]``, in both directions, the rank from either side."""
    def rule(p: dict, ins: list, outs: list, aux: list):
        data, out = ins[0], outs[0]
        rank = len(data) if data is not None else (len(out) if out is not None else None)
        if rank is None:
            return _unchanged(ins, outs, aux)
        perm = perm_of(p, rank)
        data = (UNKNOWN,) * rank if data is None else data
        out = (UNKNOWN,) * rank if out is None else out
        if len(out) != rank:
            raise RuleError(f"the input {shape_str(data)} and the output {shape_str(out)} have different "
                            "ranks")
        out = fill(tuple(data[a] for a in perm), out)
        back = list(data)
        for i, a in enumerate(perm):
            back[a] = out[i]
        return [tuple(back)], [out], []
    return rule


def size_kept(rule: Callable) -> Callable:
    """The partial rule of an op whose one output holds its one input's elements in another shape
    (Reshape), ``rule`` its ordinary shape rule: with the output complete, an input whose one
    unknown dimension is all it lacks gets the size the output's elements leave for it (as
    MXNet's Reshape infers its input back); the output then follows from ``rule``.

    >>> flat = lambda p, ins, aux: (list(ins), [(ins[0][0] * ins[0][1],)], [])
    >>> size_kept(flat)({}, [(-1, 4)], [(12,)], [])
    ([(3, 4)], [(12,)], [])
    """
    def partial(p: dict, ins: list, outs: list, aux: list):
        data, out = ins[0], outs[0]
        if data is None or not is_complete(out):
            return _unchanged(ins, outs, aux)
        missing = [i for i, d in enumerate(data) if d < 0]
        known = _known_prod([d for d in data if d >= 0])
        total = _known_prod(out)
        if len(missing) != 1 or known <= 0 or total % known:
            return _unchanged(ins, outs, aux)
        data = tuple(total // known if d < 0 else d for d in data)
        return rule(p, [data, *ins[1:]], aux)
    return partial


_PROBE = 1 << 40    # stands in for an unknown size where an ordinary rule reads axes one by one


def axiswise(rule: Callable) -> Callable:
    """The partial rule of an op whose output axis i depends on input axis i alone (slice,
    slice_axis): the ordinary ``rule`` runs with each unknown size stood in by a size larger than
    any index, and those axes of the output stay unknown."""
    def partial(p: dict, ins: list, outs: list, aux: list):
        data = ins[0]
        if data is None:
            return _unchanged(ins, outs, aux)
        probe = tuple(_PROBE if d < 0 else d for d in data)
        out = rule(p, [probe, *ins[1:]], aux)[1][0]
        return [data, *ins[1:]], [tuple(UNKNOWN if d < 0 else o for d, o in zip(data, out))], []
    return partial


def where(p: dict, ins: list, outs: list, aux: list):
    """where: nothing is inferred until the condition's shape is complete (as MXNet), or x's or y's
    if the condition says nothing (it is then shaped like them, as in the ordinary rule); then x, y
    and the output share one shape, which a condition of their rank completes.

    >>> where({}, [(-1,), (2, 2), (2, 2)], [None], [])
    ([(-1,), (2, 2), (2, 2)], [None], [])
    """
    cond, x, y = ins
    shape = partial_same(p, [x, y], outs, aux)[1][0]
    if cond is None and is_complete(shape):
        return [shape, shape, shape], [shape], []   # as the ordinary rule: a condition shaped like x
    if not is_complete(cond):
        return _unchanged(ins, outs, aux)
    if shape is not None and len(shape) == len(cond):
        shape = fill(shape, cond)
    elif shape is not None and len(cond) == 1 and shape and shape[0] < 0:
        shape = (cond[0], *shape[1:])
    return [cond, shape, shape], [shape], []


def fixed(p: dict, ins: list, outs: list, aux: list):
    """The filled sources (``_zeros``, ``_ones``, ``_full``): the output has the shape ``shape``,
    whose unknown sizes its consumers may complete: -1, and 0 with classic shapes (where ``()`` is
    an unknown shape), as MXNet reads these ops' ``shape``.

    >>> fixed({'shape': (2, -1)}, [], [(2, 3)], [])
    ([], [(2, 3)], [])
    """
    shape = tuple(p["shape"])
    if any(d < UNKNOWN for d in shape):
        raise RuleError(f"the output shape {shape_str(shape)} has a negative size")
    if not is_np_shape():
        shape = tuple(UNKNOWN if d == 0 else d for d in shape) if shape else None
    return [], [fill(shape, outs[0]) if shape is not None else outs[0]], []

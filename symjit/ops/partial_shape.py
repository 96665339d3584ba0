"""Partial shape rules: MXNet 1.x's classic shape inference with unknown dimensions.

``Symbol.infer_shape``/``infer_shape_partial`` treat a 0 in a shape as an unknown dimension (a
Variable's ``shape=(0, 10)``, or a 0 given for an input) and ``None`` as a shape whose rank is not
known either. An op's ``shape_partial`` rule (an :class:`~symjit.ops.registry.OpDef` slot) takes
what is known of its inputs *and outputs* in that form and returns what it can say of each, so
knowledge flows both ways: from an input to the outputs, and from an output (known from the op
that reads it) back to the inputs. The engine (:mod:`symjit.symbol.infer`) merges every answer
with what it knew (a 0 takes the other side's size; two different sizes are an error). Ops without
such a rule have their ordinary ``shape`` rule run once all their inputs are complete.

The rules here: every elementwise op (all shapes equal), FullyConnected, Convolution, Concat and
SliceChannel, the ops MXNet's own partial-inference tests exercise.

>>> merge((0, 10), (12, 0))
(12, 10)
>>> partial_same({}, [(0, 10), None], [(12, 0)], [])
([(12, 10), (12, 10)], [(12, 10)], [])
"""
from __future__ import annotations

from collections.abc import Sequence

from ..base import shape_str
from .registry import RuleError
from .rules import norm_axis, window_out_len, window_params

__all__ = ["merge", "merge_all", "is_complete", "partial_same", "fc", "convolution", "concat", "split"]

Partial = tuple[int, ...] | None


def is_complete(shape: Partial) -> bool:
    """A shape of known rank whose every dimension is known."""
    return shape is not None and 0 not in shape


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
        if x and y and x != y:
            raise RuleError(f"shapes {shape_str(a)} and {shape_str(b)} disagree")
        out.append(x or y)
    return tuple(out)


def merge_all(shapes: Sequence[Partial]) -> Partial:
    """:func:`merge` over every shape."""
    out: Partial = None
    for s in shapes:
        out = merge(out, s)
    return out


def fill(expected: tuple[int, ...], known: Partial) -> tuple[int, ...]:
    """``expected`` with its unknown (0) dimensions taken from ``known`` where the ranks agree;
    a disagreement is left for the engine to report, naming the argument."""
    if known is None or len(known) != len(expected):
        return expected
    return tuple(e or k for e, k in zip(expected, known))


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
        if not d:
            return 0
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
    out = fill((data[0], nf, *(0,) * nd), outs[0])
    given = ins[1] if ins[1] is not None and len(ins[1]) == nd + 2 else None
    channels = data[1] or (given[1] * g if given else 0)
    weight = (nf, channels // g, *k)
    if channels % g:
        raise RuleError(f"argument 'data' of shape {shape_str(data)} has {channels} channels, "
                        f"not divisible by num_group={g}")
    stride, dilate, pad = window_params(p, nd)
    spatial_in, spatial_out = list(data[2:]), list(out[2:])
    for i in range(nd):
        span = dilate[i] * (k[i] - 1) + 1
        if spatial_in[i]:
            try:
                spatial_out[i] = window_out_len(spatial_in[i], k[i], stride[i], dilate[i], pad[i])
            except RuleError as exc:
                raise RuleError(f"argument 'data' of shape {shape_str(data)}, spatial axis {2 + i}: "
                                f"{exc}") from None
        elif spatial_out[i] and stride[i] == 1:
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
    blank = (0,) * rank
    shapes = [blank if s is None else s for s in ins]
    out = blank if outs[0] is None else outs[0]
    if any(len(s) != rank for s in [*shapes, out]):
        raise RuleError(f"all inputs and the output must have {rank} dimensions, got "
                        f"{', '.join(shape_str(s) for s in [*shapes, out])}")
    drop = lambda s: s[:ax] + (0,) + s[ax + 1:]  # noqa: E731
    common = merge_all([drop(s) for s in [*shapes, out]])
    shapes = [common[:ax] + (s[ax],) + common[ax + 1:] for s in shapes]
    sizes = [s[ax] for s in shapes]
    total = out[ax]
    if all(sizes):
        total = merge((total,), (sum(sizes),))[0]
    elif total and sizes.count(0) == 1:
        i = sizes.index(0)
        rest = total - sum(sizes)
        if rest <= 0:
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
        data = (0,) * (len(piece) + (1 if squeeze else 0))   # (a squeezed (1,) may come from rank 1 or 2)
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
        if size and size % n:
            raise RuleError(f"axis {p['axis']} of shape {shape_str(data)} has size {size}, which "
                            f"num_outputs={n} does not divide")
        one = merge(data[:ax] + (size // n,) + data[ax + 1:], piece)
        data = one[:ax] + (size or one[ax] * n,) + one[ax + 1:]
        piece = one
    return [data], [piece] * n, []

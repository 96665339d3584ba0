"""The ``RNN`` operator: MXNet's fused recurrent layers (vanilla ReLU/tanh, LSTM, GRU; several
layers, bidirectional, LSTM projection), with MXNet's packed parameter layout.

``RNN`` is a composite (:class:`~symjit.ops.registry.OpDef` ``expand``): when the forward graph is
built, it unrolls over the time axis into registered ops (``FullyConnected`` for the gate
projections, ``SliceChannel`` for the gates, elementwise activations and products), so its
gradient is those ops' gradients and it runs on every target that runs them. The sequence length
``T`` is a shape, known when a symbol is bound, so the unrolled graph is exact; fusion puts each
step's gate arithmetic into one loop, and the steps share compiled kernels.

The flat ``parameters`` vector holds every weight, then every bias, as MXNet lays them out (and
``mx.rnn.FusedRNNCell`` packs them): for each layer, for each direction (forward, then backward),
``W_i2h`` (G*H, in) and ``W_h2h`` (G*H, H) (with ``projection_size`` P: ``W_h2h`` is (G*H, P),
followed by ``W_h2r`` (P, H)); then for each layer and direction ``b_i2h`` (G*H) and ``b_h2h``
(G*H). ``G`` is the number of gates: 4 for LSTM (input, forget, cell, output), 3 for GRU (reset,
update, new), 1 otherwise. ``in`` is the input size for layer 0 and D*H (D*P) above it.

Formulas (cuDNN's, as MXNet documents them): LSTM ``c = f*c + i*g``, ``h = o*tanh(c)`` (with
projection the recurrent state is ``r = W_h2r h``); GRU ``n = tanh(x_n + r*(h_n))``,
``h = (1-z)*n + z*h``; vanilla ``h = act(W x + b + W h + b)``.

Choices where MXNet's CPU and GPU builds differ (docs/mxnet-compat.md): ``p`` applies ``Dropout``
(training only) to the output of every layer but the last, as cuDNN does. With
``use_sequence_length`` each sequence stops at its own length, as cuDNN does (MXNet 1.9.1's CPU
build ignores the lengths): outputs past the end are 0, the returned states are those after the
last valid step, and the backward direction starts at each sequence's last valid step.
``lstm_state_clip_min/max`` clip the cell state after each step; NaN stays NaN unless
``lstm_state_clip_nan``.

>>> import numpy as np, symjit as mx
>>> T, N, C, H = 3, 2, 4, 5
>>> out = mx.sym.RNN(mx.sym.var('data'), mx.sym.var('parameters'), mx.sym.var('state'),
...                  mx.sym.var('state_cell'), state_size=H, num_layers=1, mode='lstm')
>>> out.infer_shape(data=(T, N, C))[0][1], out.infer_shape(data=(T, N, C))[1]
((220,), [(3, 2, 5)])
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .registry import OpDef, Param, ParamError, RuleError, register
from .rules import need_float, need_rank, positive, prod

__all__ = ["GATES", "GATE_SUFFIXES", "gate_pieces", "packed_input_size", "param_layout", "param_size",
           "split_gates", "RNN", "RNN_PARAM_CONCAT"]

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _dims(p: dict) -> tuple[int, int, int, int | None]:
    """(gates, directions, state size H, projection size P or None)."""
    return GATES[p["mode"]], 2 if p["bidirectional"] else 1, p["state_size"], p["projection_size"]


def param_layout(p: dict, input_size: int) -> list[tuple[str, tuple[int, ...]]]:
    """The pieces of the flat parameter vector in order: (``l{layer}_{d}_{what}``, shape), where
    ``d`` is ``l`` (forward) or ``r`` (backward) and ``what`` is ``i2h_weight``, ``h2h_weight``,
    ``h2r_weight``, ``i2h_bias`` or ``h2h_bias``.

    >>> for piece in param_layout(dict(mode='gru', bidirectional=False, state_size=2,
    ...                                projection_size=None, num_layers=1), 3):
    ...     print(*piece)
    l0_l_i2h_weight (6, 3)
    l0_l_h2h_weight (6, 2)
    l0_l_i2h_bias (6,)
    l0_l_h2h_bias (6,)
    """
    g, d, h, proj = _dims(p)
    rec = proj or h
    weights, biases = [], []
    for layer in range(p["num_layers"]):
        ins = input_size if layer == 0 else d * rec
        for direction in "lr"[:d]:
            key = f"l{layer}_{direction}"
            weights += [(f"{key}_i2h_weight", (g * h, ins)), (f"{key}_h2h_weight", (g * h, rec))]
            if proj:
                weights.append((f"{key}_h2r_weight", (proj, h)))
            biases += [(f"{key}_i2h_bias", (g * h,)), (f"{key}_h2h_bias", (g * h,))]
    return weights + biases


def param_size(p: dict, input_size: int) -> int:
    """Length of the flat parameter vector."""
    return sum(prod(shape) for _, shape in param_layout(p, input_size))


GATE_SUFFIXES = {"rnn_relu": ("",), "rnn_tanh": ("",), "lstm": ("_i", "_f", "_c", "_o"),
                 "gru": ("_r", "_z", "_o")}


def gate_pieces(mode: str, num_hidden: int, num_layers: int, bidirectional: bool, input_size: int,
                prefix: str = "") -> list[tuple[str, tuple[int, ...]]]:
    """The flat parameter vector (without projection) cut gate by gate, in its order: (name, shape)
    with MXNet's per-gate names ``<prefix><l|r><layer>_<i2h|h2h><gate>_<weight|bias>`` (gates
    ``_i _f _c _o`` for LSTM, ``_r _z _o`` for GRU, none for vanilla RNNs), the names of
    ``mx.rnn.FusedRNNCell.unpack_weights`` and of ``mx.init.FusedRNN``.

    >>> for piece in gate_pieces('gru', 2, 1, False, 3)[::4]:
    ...     print(*piece)
    l0_i2h_r_weight (2, 3)
    l0_h2h_z_weight (2, 2)
    l0_i2h_o_bias (2,)
    """
    h, gates = int(num_hidden), GATE_SUFFIXES[mode]
    directions = ("l", "r") if bidirectional else ("l",)
    weights, biases = [], []
    for layer in range(int(num_layers)):
        ins = input_size if layer == 0 else len(directions) * h
        for d in directions:
            for group, width in (("i2h", ins), ("h2h", h)):
                weights += [(f"{prefix}{d}{layer}_{group}{g}_weight", (h, width)) for g in gates]
            biases += [(f"{prefix}{d}{layer}_{group}{g}_bias", (h,))
                       for group in ("i2h", "h2h") for g in gates]
    return weights + biases


def packed_input_size(size: int, mode: str, num_hidden: int, num_layers: int, bidirectional: bool,
                      who: str = "RNN") -> int:
    """The input size of layer 0 that a flat parameter vector of ``size`` elements holds; an
    :class:`MXNetError` naming ``who`` when no input size fits.

    >>> packed_input_size(220, 'lstm', 5, 1, False)
    4
    """
    h, b, m, layers = int(num_hidden), 2 if bidirectional else 1, len(GATE_SUFFIXES[mode]), int(num_layers)
    per = b * m * h
    rest = size // per - (layers - 1) * (b * h + h + 2) - h - 2 if size % per == 0 else -1
    if rest <= 0:
        raise MXNetError(f"{who}: a parameter vector of {size} elements does not fit "
                         f"{layers} {mode} layer(s) of {h} units ({b} direction(s))")
    return rest


def split_gates(flat: np.ndarray, mode: str, num_hidden: int, num_layers: int, bidirectional: bool,
                prefix: str = "", who: str = "RNN") -> dict[str, np.ndarray]:
    """A flat parameter vector (host array) as its per-gate pieces (:func:`gate_pieces`), views in
    its order; joined back by ``np.concatenate([v.ravel() for v in pieces.values()])``.

    >>> import numpy as np
    >>> pieces = split_gates(np.arange(24.0), 'rnn_tanh', 2, 1, False)
    >>> {k: v.shape for k, v in pieces.items()}
    {'l0_i2h_weight': (2, 8), 'l0_h2h_weight': (2, 2), 'l0_i2h_bias': (2,), 'l0_h2h_bias': (2,)}
    """
    flat = flat.reshape(-1)
    size = packed_input_size(flat.size, mode, num_hidden, num_layers, bidirectional, who)
    out, off = {}, 0
    for key, shape in gate_pieces(mode, num_hidden, num_layers, bidirectional, size, prefix):
        n = prod(shape)
        out[key] = flat[off:off + n].reshape(shape)
        off += n
    return out


def _check(p: dict) -> None:
    if p["projection_size"] is not None and p["mode"] != "lstm":
        raise ParamError(f"RNN: projection_size is for mode='lstm', not {p['mode']!r}")
    lo, hi = p["lstm_state_clip_min"], p["lstm_state_clip_max"]
    if (lo is None) != (hi is None):
        raise ParamError("RNN: lstm_state_clip_min and lstm_state_clip_max are given together")
    if lo is not None and (p["mode"] != "lstm" or lo > hi):
        raise ParamError(f"RNN: lstm_state_clip_min={lo}, lstm_state_clip_max={hi} need mode='lstm' "
                         "and min <= max")


def _arguments(p: dict) -> list[str]:
    names = ["data", "parameters", "state"]
    if p["mode"] == "lstm":
        names.append("state_cell")
    if p["use_sequence_length"]:
        names.append("sequence_length")
    return names


def _outputs(p: dict) -> list[str]:
    names = ["output"]
    if p["state_outputs"]:
        names.append("state_output")
        if p["mode"] == "lstm":
            names.append("statecell_output")
    return names


def _shape(p: dict, ins: list, aux: list):
    data = ins[0]
    if data is None:
        return list(ins), [None] * len(_outputs(p)), []
    need_rank(data, "data", 3, " (T, N, C): sequence, batch, feature")
    g, d, h, proj = _dims(p)
    t, n, c = data
    rec = proj or h
    state = (p["num_layers"] * d, n, rec)
    want = [data, (param_size(p, c),), state]
    if p["mode"] == "lstm":
        want.append((p["num_layers"] * d, n, h))
    if p["use_sequence_length"]:
        want.append((n,))
    outs = [(t, n, d * rec), state, (p["num_layers"] * d, n, h)][:len(_outputs(p))]
    return want, outs, []


def _shape_partial(p: dict, ins: list, outs: list, aux: list):
    """Shapes with unknown (-1) dimensions: the batch size from any of data, the states, the
    lengths or the outputs (a ``sym.zeros((L, 0, H))`` begin state takes the data's), the
    sequence length from data or output, the parameter vector once data's features are known."""
    def dims(shape, at: tuple[int, ...]) -> list[int]:
        return [shape[i] for i in at] if shape is not None and len(shape) > max(at) else [-1] * len(at)

    if ins[0] is not None:
        need_rank(ins[0], "data", 3, " (T, N, C): sequence, batch, feature")
    _, d, h, proj = _dims(p)
    rows, rec, lstm = p["num_layers"] * d, proj or h, p["mode"] == "lstm"
    t_data, n_data, c = dims(ins[0], (0, 1, 2))
    t_out, n_out = dims(outs[0], (0, 1))
    n_states = [dims(s, (1,))[0] for s in [*ins[2:4 if lstm else 3], *outs[1:]]]
    n_len = dims(ins[-1], (0,))[0] if p["use_sequence_length"] else -1
    t = max(t_data, t_out)
    n = next((x for x in (n_data, n_out, *n_states, n_len) if x >= 0), -1)
    state = (rows, n, rec)
    new_ins = [(t, n, c), (param_size(p, c),) if c >= 0 else ins[1], state]
    if lstm:
        new_ins.append((rows, n, h))
    if p["use_sequence_length"]:
        new_ins.append((n,))
    new_outs = [(t, n, d * rec), state, (rows, n, h)][:len(outs)]
    return new_ins, new_outs, []


def _dtype(p: dict, ins: list, aux: list):
    known = ins[0] if ins[0] is not None else next((s for s in ins[1:4] if s is not None), None)
    if known is not None:
        need_float(known, "data")
    n_float = 4 if p["mode"] == "lstm" else 3
    want = [known] * min(n_float, len(ins)) + list(ins[n_float:])
    return want, [known] * len(_outputs(p)), []


# ---------------------------------------------------------------------------------------------
# the unrolled graph

def _weights(b, params_vid: int, p: dict, input_size: int) -> dict[str, int]:
    """The named pieces of the flat parameter vector, as values of their own shapes."""
    layout = param_layout(p, input_size)
    cuts, off = [], 0
    for _, shape in layout[:-1]:
        off += prod(shape)
        cuts.append(off)
    pieces = b.add("_split_v2", [params_vid], indices=(0, *cuts), axis=0) if len(layout) > 1 else [params_vid]
    return {name: (b.add1("Reshape", vid, shape=shape) if len(shape) > 1 else vid)
            for (name, shape), vid in zip(layout, pieces)}


def _split0(b, vid: int, parts: int) -> list[int]:
    """``vid`` split along axis 0 into ``parts`` pieces without that axis."""
    if parts == 1:
        return [b.add1("Reshape", vid, shape=b.g.values[vid].shape[1:])]
    return b.add("SliceChannel", [vid], num_outputs=parts, axis=0, squeeze_axis=True)


def _cell(b, p: dict, gx: int, h: int, c: int | None, w: dict, key: str) -> tuple[int, int | None]:
    """One step of one layer and direction: the new (h, c) from the input projection ``gx``."""
    g, _, size, _ = _dims(p)
    gh = b.add1("FullyConnected", h, w[f"{key}_h2h_weight"], w[f"{key}_h2h_bias"], num_hidden=g * size)
    mode = p["mode"]
    if mode in ("rnn_relu", "rnn_tanh"):
        return b.add1("relu" if mode == "rnn_relu" else "tanh", b.add1("elemwise_add", gx, gh)), None
    if mode == "gru":
        xr, xz, xn = b.add("SliceChannel", [gx], num_outputs=3, axis=1)
        hr, hz, hn = b.add("SliceChannel", [gh], num_outputs=3, axis=1)
        r = b.add1("sigmoid", b.add1("elemwise_add", xr, hr))
        z = b.add1("sigmoid", b.add1("elemwise_add", xz, hz))
        new = b.add1("tanh", b.add1("elemwise_add", xn, b.add1("elemwise_mul", r, hn)))
        # (1 - z) * n + z * h  ==  n + z * (h - n)
        return b.add1("elemwise_add", new, b.add1("elemwise_mul", z, b.add1("elemwise_sub", h, new))), None
    gi, gf, gg, go = b.add("SliceChannel", [b.add1("elemwise_add", gx, gh)], num_outputs=4, axis=1)
    c_new = b.add1("elemwise_add", b.add1("elemwise_mul", b.add1("sigmoid", gf), c),
                   b.add1("elemwise_mul", b.add1("sigmoid", gi), b.add1("tanh", gg)))
    if p["lstm_state_clip_min"] is not None:
        c_new = _clip_state(b, p, c_new)
    h_new = b.add1("elemwise_mul", b.add1("sigmoid", go), b.add1("tanh", c_new))
    if p["projection_size"]:
        h_new = b.add1("FullyConnected", h_new, w[f"{key}_h2r_weight"], num_hidden=p["projection_size"],
                       no_bias=True)
    return h_new, c_new


def _clip_state(b, p: dict, c: int) -> int:
    clipped = b.add1("clip", c, a_min=p["lstm_state_clip_min"], a_max=p["lstm_state_clip_max"])
    if p["lstm_state_clip_nan"]:
        return clipped
    # clip maps NaN to a bound; keep NaN as NaN (MXNet clips NaN only with lstm_state_clip_nan)
    return b.add1("where", b.add1("_equal", c, c), clipped, c)


def _masked(b, m: int | None, new: int, old: int) -> int:
    """``old + m * (new - old)``: the step's value where the sequence goes on, the old one past it."""
    if m is None:
        return new
    return b.add1("elemwise_add", old, b.add1("broadcast_mul", m, b.add1("elemwise_sub", new, old)))


def _direction(b, p: dict, xs: int, h: int, c: int | None, w: dict, key: str,
               masks: list[int] | None) -> tuple[int, int, int | None]:
    """Run one layer in one direction over (T, N, in) ``xs`` (already in time order for this
    direction). Returns the (T, N, H) outputs and the final h, c."""
    g, _, size, _ = _dims(p)
    t_len, n, ins = b.g.values[xs].shape
    flat = b.add1("Reshape", xs, shape=(t_len * n, ins))
    gx_all = b.add1("FullyConnected", flat, w[f"{key}_i2h_weight"], w[f"{key}_i2h_bias"], num_hidden=g * size)
    gxs = _split0(b, b.add1("Reshape", gx_all, shape=(t_len, n, g * size)), t_len)
    steps = []
    for t in range(t_len):
        h_new, c_new = _cell(b, p, gxs[t], h, c, w, key)
        m = masks[t] if masks is not None else None
        steps.append(b.add1("broadcast_mul", m, h_new) if m is not None else h_new)
        h = _masked(b, m, h_new, h)
        c = _masked(b, m, c_new, c) if c is not None else None
    out = b.add1("stack", *steps, axis=0, num_args=t_len) if t_len > 1 else \
        b.add1("expand_dims", steps[0], axis=0)
    return out, h, c


def _step_masks(b, p: dict, lengths: int, t_len: int, n: int, dtype) -> list[int]:
    """Per step, an (N, 1) mask: 1 where step t < the sequence's length."""
    ones = b.add1("_ones", shape=(t_len, n, 1), dtype=dtype.name)
    mask = b.add1("SequenceMask", ones, lengths, use_sequence_length=True, value=0.0, axis=0)
    return _split0(b, mask, t_len)


def _expand(b, ins: list[int], p: dict) -> list[int]:
    data, params_vid, state = ins[0], ins[1], ins[2]
    lstm = p["mode"] == "lstm"
    state_cell = ins[3] if lstm else None
    lengths = ins[4 if lstm else 3] if p["use_sequence_length"] else None
    t_len, n, c_in = b.g.values[data].shape
    _, d, _, _ = _dims(p)
    w = _weights(b, params_vid, p, c_in)
    hs = _split0(b, state, p["num_layers"] * d)
    cs = _split0(b, state_cell, p["num_layers"] * d) if lstm else [None] * len(hs)
    masks = _step_masks(b, p, lengths, t_len, n, b.g.values[data].dtype) if lengths is not None else None
    x, hy, cy = data, [], []
    for layer in range(p["num_layers"]):
        if layer and p["p"] > 0:
            x = b.add1("Dropout", x, p=p["p"])
        outs = []
        for k, direction in enumerate("lr"[:d]):
            i = layer * d + k
            key = f"l{layer}_{direction}"
            xs = x if direction == "l" else _reverse(b, x, lengths)
            out, h, c = _direction(b, p, xs, hs[i], cs[i], w, key, masks)
            outs.append(out if direction == "l" else _reverse(b, out, lengths))
            hy.append(h)
            cy.append(c)
        x = outs[0] if d == 1 else b.add1("Concat", *outs, dim=2, num_args=2)
    results = [x]
    if p["state_outputs"]:
        results.append(_stack0(b, hy))
        if lstm:
            results.append(_stack0(b, cy))
    return results


def _reverse(b, x: int, lengths: int | None) -> int:
    if lengths is None:
        return b.add1("SequenceReverse", x, axis=0)
    return b.add1("SequenceReverse", x, lengths, use_sequence_length=True, axis=0)


def _stack0(b, vids: list[int]) -> int:
    if len(vids) == 1:
        return b.add1("expand_dims", vids[0], axis=0)
    return b.add1("stack", *vids, axis=0, num_args=len(vids))


RNN = register(OpDef(
    name="RNN",
    params=(
        Param("state_size", "int", check=positive, check_msg="> 0", doc="size of the hidden state H"),
        Param("num_layers", "int", check=positive, check_msg="> 0", doc="number of stacked layers"),
        Param("bidirectional", "bool", False, doc="a second layer runs backward in time"),
        Param("mode", "str", choices=tuple(GATES), doc="rnn_relu, rnn_tanh, lstm or gru"),
        Param("p", "float", 0.0, check=lambda v: 0.0 <= v <= 1.0, check_msg="in [0, 1]",
              doc="dropout on each layer's output but the last (training only)"),
        Param("state_outputs", "bool", False, doc="also return the final states"),
        Param("projection_size", "int", None, nullable=True, check=positive, check_msg="> 0",
              doc="LSTM projection size P"),
        Param("lstm_state_clip_min", "float", None, nullable=True, doc="lower bound of the LSTM cell state"),
        Param("lstm_state_clip_max", "float", None, nullable=True, doc="upper bound of the LSTM cell state"),
        Param("lstm_state_clip_nan", "bool", False, doc="clip NaN cell states to the bounds"),
        Param("use_sequence_length", "bool", False, doc="take per-sequence lengths (N,) as sequence_length"),
    ),
    arguments=_arguments, outputs=_outputs, shape=_shape, shape_partial=_shape_partial, dtype=_dtype,
    check=_check,
    expand=_expand, hint="rnn", extra={"family": "rnn"},
    doc="Recurrent layers (vanilla, LSTM, GRU), several layers and directions, over (T, N, C) data "
        "with MXNet's packed parameter vector; see :mod:`symjit.ops.rnn`.",
))



# ---------------------------------------------------------------------------------------------
# _rnn_param_concat: the packed parameter vector from its pieces

def _concat_shape(p: dict, ins: list, aux: list):
    if any(s is None for s in ins):
        return list(ins), [None], []
    return list(ins), [(sum(prod(s) for s in ins),)], []


def _concat_shape_partial(p: dict, ins: list, outs: list, aux: list):
    """The unknown dimension of the pieces that have one (layer 0's input weights, one per
    direction, all alike) from the vector's length and the other pieces: how a layer's
    parameters learn their input size from the data."""
    sizes = [prod(s) if s is not None and all(d >= 0 for d in s) else -1 for s in ins]
    total = outs[0][0] if outs[0] is not None and outs[0][0] >= 0 else -1
    if all(n >= 0 for n in sizes):
        return list(ins), [(sum(sizes),)], []
    open_ = [i for i, n in enumerate(sizes) if n < 0]
    piece = ins[open_[0]]
    if total < 0 or any(ins[i] != piece for i in open_) or piece is None or sum(d < 0 for d in piece) != 1:
        return list(ins), list(outs), []
    rest, known = total - sum(n for n in sizes if n >= 0), prod(d for d in piece if d >= 0) * len(open_)
    if rest < 0 or (known and rest % known):
        raise RuleError(f"a vector of {total} elements cannot hold {len(open_)} argument(s) of shape "
                        f"{piece} ({', '.join(f'arg{i}' for i in open_)}) beside the other pieces")
    filled = tuple(d if d >= 0 else (rest // known if known else 0) for d in piece)
    return [filled if i in open_ else s for i, s in enumerate(ins)], [(total,)], []


def _concat_expand(b, ins: list[int], p: dict) -> list[int]:
    flat = [b.add1("Reshape", v, shape=(-1,)) for v in ins]
    return flat if len(flat) == 1 else [b.add1("Concat", *flat, dim=0, num_args=len(flat))]


RNN_PARAM_CONCAT = register(OpDef(
    name="_rnn_param_concat",
    params=(Param("num_args", "int", check=positive, check_msg=">= 1", doc="number of pieces"),
            Param("dim", "int", 0, check=lambda v: v == 0, check_msg="0 (the pieces are flattened)",
                  doc="the axis to join along: 0")),
    arguments=lambda p: [f"arg{i}" for i in range(p["num_args"])], variadic="num_args",
    shape=_concat_shape, shape_partial=_concat_shape_partial, expand=_concat_expand, hint="rnn",
    extra={"family": "rnn"},
    doc="The ``RNN`` operator's parameter vector: the pieces (given positionally) flattened and "
        "joined in order. MXNet's pieces are 1-D already (this is then ``Concat(dim=0)``); a piece's "
        "single unknown dimension is inferred from the vector's length.",
))

"""Cases for the RNN operator (symjit/ops/rnn.py): a numpy reference written here from MXNet's
documented formulas and packed parameter layout (checked once against MXNet 1.9.1's CPU build to
1e-7), float64 finite-difference gradients through the unrolled graph. Sequence lengths follow
cuDNN's semantics (outputs past a sequence's end are 0; its states are those at its last step)."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(31)
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _unpack(params, c, h, layers, d, g, proj):
    rec = proj or h
    w, off = {}, 0

    def take(key, shape):
        nonlocal off
        n = int(np.prod(shape))
        w[key] = params[off:off + n].reshape(shape)
        off += n

    for layer in range(layers):
        for k in range(d):
            ins = c if layer == 0 else d * rec
            take((layer, k, "wx"), (g * h, ins))
            take((layer, k, "wh"), (g * h, rec))
            if proj:
                take((layer, k, "wr"), (proj, h))
    for layer in range(layers):
        for k in range(d):
            take((layer, k, "bx"), (g * h,))
            take((layer, k, "bh"), (g * h,))
    assert off == params.size
    return w


def _step(mode, gx, gh, h, c, clip):
    if mode == "lstm":
        i, f, gg, o = np.split(gx + gh, 4, axis=1)
        c = _sig(f) * c + _sig(i) * np.tanh(gg)
        if clip is not None:
            c = np.clip(c, *clip)
        return _sig(o) * np.tanh(c), c
    if mode == "gru":
        xr, xz, xn = np.split(gx, 3, axis=1)
        hr, hz, hn = np.split(gh, 3, axis=1)
        r, z = _sig(xr + hr), _sig(xz + hz)
        n = np.tanh(xn + r * hn)
        return (1 - z) * n + z * h, None
    a = gx + gh
    return (np.tanh(a) if mode == "rnn_tanh" else np.maximum(a, 0.0)), None


def rnn_ref(mode, h, layers=1, bidir=False, proj=None, state_outputs=False, lengths=False, clip=None):
    """The numpy forward of ``RNN`` with these params, taking the op's inputs in order."""
    def ref(data, parameters, state, state_cell=None, sequence_length=None):
        t_len, n, c_in = data.shape
        d = 2 if bidir else 1
        w = _unpack(parameters, c_in, h, layers, d, GATES[mode], proj)
        lens = sequence_length.astype(int) if lengths else np.full(n, t_len)
        x, hy, cy = data, [], []
        for layer in range(layers):
            outs = []
            for k in range(d):
                hh = state[layer * d + k]
                cc = state_cell[layer * d + k] if mode == "lstm" else None
                out = np.zeros((t_len, n, (proj or h)))
                hf = hh.copy()
                cf = cc.copy() if cc is not None else None
                for b in range(n):       # each sequence on its own, over its own length
                    hb, cb = hh[b:b + 1], (cc[b:b + 1] if cc is not None else None)
                    steps = range(lens[b]) if k == 0 else range(lens[b] - 1, -1, -1)
                    for t in steps:
                        gx = x[t, b:b + 1] @ w[layer, k, "wx"].T + w[layer, k, "bx"]
                        gh = hb @ w[layer, k, "wh"].T + w[layer, k, "bh"]
                        hb, cb = _step(mode, gx, gh, hb, cb, clip)
                        if proj:
                            hb = hb @ w[layer, k, "wr"].T
                        out[t, b] = hb[0]
                    hf[b] = hb[0]
                    if cf is not None:
                        cf[b] = cb[0]
                outs.append(out)
                hy.append(hf)
                cy.append(cf)
            x = np.concatenate(outs, axis=2)
        res = [x]
        if state_outputs:
            res.append(np.stack(hy))
            if mode == "lstm":
                res.append(np.stack(cy))
        return res if len(res) > 1 else x
    return ref


def _inputs(mode, t_len, n, c, h, layers=1, bidir=False, proj=None, lengths=None):
    d = 2 if bidir else 1
    p = dict(mode=mode, bidirectional=bidir, state_size=h, projection_size=proj, num_layers=layers)
    from symjit.ops.rnn import param_size
    ins = {"data": R.uniform(-1, 1, (t_len, n, c)),
           "parameters": R.uniform(-0.6, 0.6, (param_size(p, c),)),
           "state": R.uniform(-1, 1, (layers * d, n, proj or h))}
    if mode == "lstm":
        ins["state_cell"] = R.uniform(-1, 1, (layers * d, n, h))
    if lengths is not None:
        ins["sequence_length"] = np.array(lengths, dtype=np.float64)
    return ins


def _case(mode, h=3, t_len=3, n=2, c=2, layers=1, bidir=False, proj=None, state_outputs=False,
          lengths=None, clip=None, id=""):
    ins = _inputs(mode, t_len, n, c, h, layers, bidir, proj, lengths)
    kw = dict(state_size=h, num_layers=layers, mode=mode, bidirectional=bidir, state_outputs=state_outputs)
    if proj:
        kw["projection_size"] = proj
    if lengths is not None:
        kw["use_sequence_length"] = True
    if clip is not None:
        kw.update(lstm_state_clip_min=clip[0], lstm_state_clip_max=clip[1])
    names = list(ins)
    return Case("RNN", lambda v: mx.sym.RNN(*[v[k] for k in names], **kw), ins,
                rnn_ref(mode, h, layers, bidir, proj, state_outputs, lengths is not None, clip),
                no_grad=("sequence_length",), id=id or mode)


# every mode, several layers, both directions, projection, lengths and clipping, each at least once
# (the compiled programs of these unrolled graphs are a large share of CI, so no case repeats a feature)
CASES = [
    _case("lstm", state_outputs=True),
    _case("gru", layers=2, h=2, t_len=2, id="gru_2layer"),
    _case("rnn_relu", state_outputs=True),
    _case("lstm", layers=2, bidir=True, state_outputs=True, t_len=2, id="lstm_2layer_bidir"),
    _case("rnn_tanh", bidir=True, state_outputs=True, t_len=1, id="tanh_bidir_one_step"),
    _case("lstm", proj=2, state_outputs=True, id="lstm_projection"),
    _case("lstm", bidir=True, t_len=4, n=3, lengths=[4, 2, 1], state_outputs=True, id="lstm_lengths"),
    _case("gru", t_len=3, n=2, lengths=[1, 3], state_outputs=True, id="gru_lengths"),
    _case("lstm", clip=(-0.3, 0.3), state_outputs=True, id="lstm_clip"),
]

# the packed vector from its pieces: flattened and joined (MXNet's pieces are 1-D already)
CASES.append(Case("_rnn_param_concat",
                  lambda v: mx.sym._internal._rnn_param_concat(v["w"], v["b"], num_args=2, dim=0),
                  {"w": R.uniform(-1, 1, (3, 2)), "b": R.uniform(-1, 1, (3,))},
                  lambda w, b: np.concatenate([w.ravel(), b]), id="param_concat"))

"""mx.rnn's convolutional cells (ConvRNNCell, ConvLSTMCell, ConvGRUCell) against numpy, and cells
written by the user, whose steps receive their begin states as symbols."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import ParamError

R = np.random.default_rng(11)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def leaky(x, slope=0.2):
    return np.where(x > 0, x, slope * x)


def conv_nchw(x, w, b, pad, dilate=(1, 1), stride=(1, 1)):
    """Cross-correlation of (N, C, H, W) by (F, C, kh, kw), zero padding."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * pad[0], wd + 2 * pad[1]))
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd] = x
    oh = (xp.shape[2] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, f, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dilate[0]:i * dilate[0] + stride[0] * oh:stride[0],
                       j * dilate[1]:j * dilate[1] + stride[1] * ow:stride[1]]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, i, j])
    return out + b[None, :, None, None]


def run(sym, inputs: dict, params: dict):
    """Forward of ``sym`` bound by the inputs' shapes, the parameters copied in."""
    ex = sym.simple_bind(mx.cpu(), grad_req="null", **{k: v.shape for k, v in inputs.items()})
    for name, value in {**inputs, **params}.items():
        ex.arg_dict[name][:] = value
    return [o.asnumpy() for o in ex.forward(is_train=False)]


def oracle(kind, xs, p, gates, i2h_pad, h2h_pad, h2h_dilate):
    """The cells' recurrences in numpy over the steps ``xs`` (NCHW)."""
    i2h = [conv_nchw(x, p["c_i2h_weight"], p["c_i2h_bias"], i2h_pad) for x in xs]
    hid = p["c_h2h_weight"].shape[1]
    h = np.zeros((xs[0].shape[0], hid) + i2h[0].shape[2:])
    c, outs = np.zeros_like(h), []
    for a in i2h:
        b = conv_nchw(h, p["c_h2h_weight"], p["c_h2h_bias"], h2h_pad, h2h_dilate)
        if kind == "rnn":
            h = leaky(a + b)
        elif kind == "lstm":
            g = np.split(a + b, gates, axis=1)
            c = sigmoid(g[1]) * c + sigmoid(g[0]) * leaky(g[2])
            h = sigmoid(g[3]) * leaky(c)
        else:
            ar, az, ao = np.split(a, 3, axis=1)
            br, bz, bo = np.split(b, 3, axis=1)
            r, z = sigmoid(ar + br), sigmoid(az + bz)
            h = (1 - z) * leaky(ao + r * bo) + z * h
        outs.append(h)
    return outs


@pytest.mark.parametrize("kind,cls,gates", [("rnn", "ConvRNNCell", 1), ("lstm", "ConvLSTMCell", 4),
                                            ("gru", "ConvGRUCell", 3)])
def test_conv_cells_match_numpy(kind, cls, gates):
    shape, hid, steps = (2, 3, 6, 5), 4, 3
    cell = getattr(mx.rnn, cls)(shape, hid, h2h_kernel=(3, 3), h2h_dilate=(2, 1), i2h_kernel=(3, 3),
                                i2h_pad=(1, 1), prefix="c_")
    assert cell.state_info == [{"shape": (0, hid, 6, 5), "__layout__": "NCHW"}] * (2 if kind == "lstm" else 1)
    names = [f"x{t}" for t in range(steps)]
    outs, states = cell.unroll(steps, [mx.sym.Variable(n) for n in names])
    assert len(states) == len(cell.state_info)
    group = mx.sym.Group(outs)
    assert group.list_outputs() == [f"c_t{t}_out_output" for t in range(steps)]
    xs = [R.normal(0, 1, shape) for _ in names]
    rows = hid * gates
    p = {"c_i2h_weight": R.normal(0, 0.3, (rows, 3, 3, 3)), "c_i2h_bias": R.normal(0, 0.3, rows),
         "c_h2h_weight": R.normal(0, 0.3, (rows, hid, 3, 3)), "c_h2h_bias": R.normal(0, 0.3, rows)}
    assert sorted(group.list_arguments()) == sorted(names + list(p))
    got = run(group, dict(zip(names, xs)), p)
    want = oracle(kind, xs, p, gates, (1, 1), (2, 1), (2, 1))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_conv_cell_state_shape_follows_stride():
    cell = mx.rnn.ConvGRUCell((1, 2, 9, 7), 5, i2h_kernel=(3, 3), i2h_stride=(2, 2), i2h_pad=(0, 0),
                              activation="tanh")
    assert cell.state_info == [{"shape": (0, 5, 4, 3), "__layout__": "NCHW"}]
    assert cell._prefix == "ConvGRU_"
    out, _ = cell.unroll(2, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    assert out.infer_shape(data=(3, 2, 2, 9, 7))[1] == [(3, 2, 5, 4, 3)]
    # channel-last convolutions are refused by Convolution itself, with the layout named
    with pytest.raises(ParamError, match="NHWC"):
        mx.rnn.ConvRNNCell((1, 9, 7, 2), 5, conv_layout="NHWC")


def test_conv_cell_bad_settings_are_named():
    with pytest.raises(ParamError, match="h2h_kernel"):
        mx.rnn.ConvRNNCell((1, 3, 8, 8), 4, h2h_kernel=(2, 3))
    with pytest.raises(ParamError, match="input_shape"):
        mx.rnn.ConvLSTMCell((3, 8, 8), 4)
    with pytest.raises(ParamError, match="conv_layout"):
        mx.rnn.ConvGRUCell((1, 3, 8, 8), 4, conv_layout="NCW")


class UserCell(mx.rnn.BaseRNNCell):
    """A cell of the user's own: ``h = tanh(W x + b + U (2 h) + c)``, the state used as a symbol."""

    def __init__(self, num_hidden, prefix="u_"):
        super().__init__(prefix=prefix)
        self._num_hidden = num_hidden
        self._w = [self.params.get(n) for n in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias")]

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    def __call__(self, inputs, states):
        self._counter += 1
        name = f"{self._prefix}t{self._counter}_"
        doubled = states[0] * 2
        i2h = mx.sym.FullyConnected(data=inputs, weight=self._w[0], bias=self._w[1],
                                    num_hidden=self._num_hidden, name=f"{name}i2h")
        h2h = mx.sym.FullyConnected(data=doubled, weight=self._w[2], bias=self._w[3],
                                    num_hidden=self._num_hidden, name=f"{name}h2h")
        out = mx.sym.Activation(i2h + h2h, act_type="tanh", name=f"{name}out")
        return out, [out]


class DoubledInput(mx.rnn.ModifierCell):
    """A modifier of the user's own that reads the states before its base cell does."""

    def __call__(self, inputs, states):
        assert all(isinstance(s, mx.sym.Symbol) for s in states)
        return self.base_cell(inputs * 2, states)


def test_user_cells_get_symbol_begin_states_and_match_numpy():
    cell = UserCell(4)
    begin = cell.begin_state()
    assert isinstance(begin[0], mx.sym.Symbol) and begin[0].name == "u_begin_state_0"
    names = [f"x{t}" for t in range(3)]
    outs, _ = cell.unroll(3, [mx.sym.Variable(n) for n in names])
    group = mx.sym.Group(outs)
    shapes = group.infer_shape(**{n: (5, 3) for n in names})
    assert shapes[1] == [(5, 4)] * 3
    p = {"u_i2h_weight": R.normal(0, 0.5, (4, 3)), "u_i2h_bias": R.normal(0, 0.5, 4),
         "u_h2h_weight": R.normal(0, 0.5, (4, 4)), "u_h2h_bias": R.normal(0, 0.5, 4)}
    xs = [R.normal(0, 1, (5, 3)) for _ in names]
    got = run(group, dict(zip(names, xs)), p)
    h = np.zeros((5, 4))
    for x, g in zip(xs, got):
        h = np.tanh(x @ p["u_i2h_weight"].T + p["u_i2h_bias"]
                    + (2 * h) @ p["u_h2h_weight"].T + p["u_h2h_bias"])
        np.testing.assert_allclose(g, h, rtol=1e-5, atol=1e-6)


def test_user_step_over_builtin_cells_gets_symbols():
    class MyLSTM(mx.rnn.LSTMCell):
        def __call__(self, inputs, states):
            assert all(isinstance(s, mx.sym.Symbol) for s in states)
            return super().__call__(inputs, states)

    mine = MyLSTM(3, prefix="m_")
    out, _ = mine.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    assert out.infer_shape(data=(4, 2, 5))[1] == [(4, 2, 3)]
    wrapped = DoubledInput(mx.rnn.GRUCell(3, prefix="g_"))
    out, _ = wrapped.unroll(2, [mx.sym.Variable("a"), mx.sym.Variable("b")], merge_outputs=True)
    assert out.infer_shape(a=(4, 5), b=(4, 5))[1] == [(4, 2, 3)]
    # symjit's own cells still size their zeros from the data
    assert isinstance(mx.rnn.LSTMCell(3).begin_state()[0], mx.rnn.ZeroState)

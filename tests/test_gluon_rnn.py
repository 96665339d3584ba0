"""mx.gluon.rnn and mx.gluon.contrib.rnn: cells against numpy and against the same network built
with mx.rnn's symbolic cells (outputs and gradients), the fused layers against their unfused
cells sharing the same parameters, hybridized calls against imperative ones, MXNet's parameter
names and file keys, begin states, valid lengths, dropout under autograd and the contributed
cells."""

from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit import autograd, gluon
from symjit import test_utils as tu
from symjit.gluon import rnn
from symjit.gluon.contrib import rnn as crnn

R = np.random.default_rng(3)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_step(kind, x, states, w):
    """One step of an Elman/LSTM/GRU cell in numpy, cuDNN's equations."""
    gx = x @ w["i2h_weight"].T + w["i2h_bias"]
    gh = states[0] @ w["h2h_weight"].T + w["h2h_bias"]
    if kind in ("tanh", "relu"):
        s = gx + gh
        h = np.tanh(s) if kind == "tanh" else np.maximum(s, 0)
        return h, [h]
    if kind == "lstm":
        i, f, g, o = np.split(gx + gh, 4, axis=1)
        c = sigmoid(f) * states[1] + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        return h, [h, c]
    xr, xz, xn = np.split(gx, 3, axis=1)
    hr, hz, hn = np.split(gh, 3, axis=1)
    r, z = sigmoid(xr + hr), sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    h = (1 - z) * n + z * states[0]
    return h, [h]


def make_cell(kind, hidden, **kw):
    if kind in ("tanh", "relu"):
        return rnn.RNNCell(hidden, activation=kind, **kw)
    return {"lstm": rnn.LSTMCell, "gru": rnn.GRUCell}[kind](hidden, **kw)


def set_random(params, scale=0.5):
    values = {}
    for name, p in params.items():
        values[name] = R.normal(0, scale, p.shape).astype(np.float32)
        p.set_data(mx.nd.array(values[name]))
    return values


@pytest.mark.parametrize("kind", ["tanh", "relu", "lstm", "gru"])
def test_cell_steps_match_numpy(kind):
    N, C, H, T = 2, 3, 4, 3
    cell = make_cell(kind, H, input_size=C, prefix="c_")
    cell.initialize()
    w = {k[2:]: v for k, v in set_random(cell.collect_params()).items()}
    xs = R.normal(size=(N, T, C)).astype(np.float32)
    states = [R.normal(size=(N, H)).astype(np.float32) for _ in cell.state_info()]
    outs, last = cell.unroll(T, mx.nd.array(xs), [mx.nd.array(s) for s in states], merge_outputs=True)
    ref = []
    for t in range(T):
        h, states = numpy_step(kind, xs[:, t], states, w)
        ref.append(h)
    tu.assert_almost_equal(outs.asnumpy(), np.stack(ref, axis=1), rtol=1e-5, atol=1e-5)
    for got, want in zip(last, states):
        tu.assert_almost_equal(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


def symbolic_reference(kind, H, T, layout, data, weights, head):
    """Output and gradients of the same unrolled network written with mx.rnn's cells."""
    if kind in ("tanh", "relu"):
        cell = mx.rnn.RNNCell(H, activation=kind, prefix="c_")
    else:
        cell = {"lstm": mx.rnn.LSTMCell, "gru": mx.rnn.GRUCell}[kind](H, prefix="c_")
    out, _ = cell.unroll(T, mx.sym.var("data"), layout=layout, merge_outputs=True)
    args = {"data": mx.nd.array(data), **{k: mx.nd.array(v) for k, v in weights.items()}}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = out.bind(mx.cpu(), args, args_grad=grads)
    y = exe.forward(is_train=True)[0].asnumpy()
    exe.backward(mx.nd.array(head))
    return y, {k: g.asnumpy() for k, g in grads.items()}


@pytest.mark.parametrize("kind", ["tanh", "lstm", "gru"])
def test_cell_unroll_gradients_match_mx_rnn_symbols(kind):
    N, C, H, T = 2, 3, 4, 3
    cell = make_cell(kind, H, prefix="c_")  # input size inferred at the first call
    cell.initialize()
    data = R.normal(size=(T, N, C)).astype(np.float32)
    x = mx.nd.array(data)
    cell(x[0], cell.begin_state(batch_size=N))
    weights = set_random(cell.collect_params())
    head = R.normal(size=(T, N, H)).astype(np.float32)
    x.attach_grad()
    with autograd.record():
        out, _ = cell.unroll(T, x, layout="TNC", merge_outputs=True)
    out.backward(mx.nd.array(head))
    want, grads = symbolic_reference(kind, H, T, "TNC", data, weights, head)
    tu.assert_almost_equal(out.asnumpy(), want, rtol=1e-5, atol=1e-5)
    tu.assert_almost_equal(x.grad.asnumpy(), grads["data"], rtol=1e-4, atol=1e-5)
    for name, p in cell.collect_params().items():
        tu.assert_almost_equal(p.grad().asnumpy(), grads[name], rtol=1e-4, atol=1e-5)


def run_layer(layer, x, states, head):
    """Output, new states and gradients (input, parameters) of one recorded call."""
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        out, new = layer(x, states)
    out.backward(head)
    return (out.asnumpy(), [s.asnumpy() for s in new], x.grad.asnumpy(),
            {k: p.grad().asnumpy() for k, p in layer.collect_params().items()})


def run_stack(stack, x, states, head, layout):
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        out, new = stack.unroll(x.shape[layout.find("T")], x, states, layout=layout, merge_outputs=True)
    out.backward(head)
    return (out.asnumpy(), [s.asnumpy() for s in new], x.grad.asnumpy(),
            {k: p.grad().asnumpy() for k, p in stack.collect_params().items()})


def fused_states_of(stack_states, lstm):
    """The unfused cells' states (h, c per cell) in the fused layer's (layers*dirs, N, H) form."""
    if not lstm:
        return [np.stack(stack_states)]
    return [np.stack(stack_states[0::2]), np.stack(stack_states[1::2])]


LAYERS = [("LSTM", {}, "TNC"), ("GRU", {}, "NTC"), ("RNN", {"activation": "tanh"}, "TNC"),
          ("RNN", {"activation": "relu"}, "NTC")]


@pytest.mark.parametrize("name,kw,layout", LAYERS, ids=["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_fused_layer_matches_its_unfused_cells(name, kw, layout):
    N, C, H, T = 2, 3, 4, 3
    layer = getattr(rnn, name)(H, num_layers=2, bidirectional=True, layout=layout, prefix="f_", **kw)
    stack = layer._unfuse()  # shares the layer's parameters
    layer.initialize()
    shape = (T, N, C) if layout == "TNC" else (N, T, C)
    x = mx.nd.array(R.normal(size=shape))
    layer.infer_shape(x)
    set_random(layer.collect_params())
    states = [mx.nd.array(R.normal(size=s["shape"])) for s in layer.state_info(N)]
    head = mx.nd.array(R.normal(size=(*shape[:2], 2 * H)))
    f_out, f_states, f_dx, f_grads = run_layer(layer, x, states, head)
    lstm = name == "LSTM"
    per_cell = []  # the fused states, cell by cell: layer 0 l, layer 0 r, layer 1 l, ...
    for k in range(4):
        per_cell += [s[k] for s in states]
    s_out, s_states, s_dx, s_grads = run_stack(
        stack, x, [mx.nd.array(s.asnumpy()) for s in per_cell], head, layout
    )
    tu.assert_almost_equal(f_out, s_out, rtol=1e-4, atol=1e-5)
    for a, b in zip(f_states, fused_states_of(s_states, lstm)):
        tu.assert_almost_equal(a, b, rtol=1e-4, atol=1e-5)
    tu.assert_almost_equal(f_dx, s_dx, rtol=1e-4, atol=1e-5)
    assert sorted(f_grads) == sorted(s_grads)
    for k in f_grads:
        tu.assert_almost_equal(f_grads[k], s_grads[k], rtol=1e-4, atol=1e-5)


def test_hybridized_layer_equals_imperative_and_returns_states_only_when_given():
    layer = rnn.LSTM(3, num_layers=2, layout="NTC")
    layer.initialize()
    x = mx.nd.array(R.normal(size=(2, 4, 5)))
    head = mx.nd.array(R.normal(size=(2, 4, 3)))
    states = layer.begin_state(2)
    imp = run_layer(layer, x, states, head)
    plain = layer(x)
    assert isinstance(plain, mx.nd.NDArray)
    layer.hybridize()
    hyb = run_layer(layer, x, states, head)
    tu.assert_almost_equal(imp[0], hyb[0], rtol=1e-5, atol=1e-6)
    tu.assert_almost_equal(imp[2], hyb[2], rtol=1e-5, atol=1e-6)
    for k in imp[3]:
        tu.assert_almost_equal(imp[3][k], hyb[3][k], rtol=1e-5, atol=1e-6)
    tu.assert_almost_equal(layer(x).asnumpy(), plain.asnumpy(), rtol=1e-5, atol=1e-6)


def test_hybridized_cells_unroll_like_imperative_ones():
    net = rnn.HybridSequentialRNNCell()
    net.add(rnn.LSTMCell(4, input_size=3))
    net.add(rnn.ResidualCell(rnn.GRUCell(4, input_size=4)))
    net.initialize()
    x = mx.nd.array(R.normal(size=(2, 3, 3)))

    def run():
        x.attach_grad()
        with autograd.record():
            out, _ = net.unroll(3, x, merge_outputs=True)
        out.backward()
        return out.asnumpy(), x.grad.asnumpy()

    before = run()
    net.hybridize()
    after = run()
    for a, b in zip(before, after):
        tu.assert_almost_equal(a, b, rtol=1e-5, atol=1e-6)


def test_parameter_names_and_files_are_mxnets(tmp_path):
    layer = rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=3, prefix="lstm0_")
    names = sorted(layer.collect_params())
    assert names[:5] == ["lstm0_l0_h2h_bias", "lstm0_l0_h2h_weight", "lstm0_l0_i2h_bias",
                         "lstm0_l0_i2h_weight", "lstm0_l1_h2h_bias"]
    assert layer.l1_i2h_weight.shape == (16, 8) and layer.r0_h2h_weight.shape == (16, 4)
    layer.initialize()
    path = str(tmp_path / "lstm.params")
    layer.save_parameters(path)
    keys = sorted(mx.nd.load(path))
    assert "_unfused.0.l_cell.i2h_weight" in keys and "_unfused.1.r_cell.h2h_bias" in keys and len(keys) == 16
    other = rnn.LSTM(4, num_layers=2, bidirectional=True)
    other.load_parameters(path)
    tu.assert_almost_equal(other.r1_h2h_weight.data().asnumpy(), layer.r1_h2h_weight.data().asnumpy())
    uni = rnn.GRU(2, input_size=3)
    uni.initialize()
    uni.save_parameters(path)
    assert sorted(mx.nd.load(path)) == ["_unfused.0.h2h_bias", "_unfused.0.h2h_weight", "_unfused.0.i2h_bias",
                                        "_unfused.0.i2h_weight"]
    assert repr(rnn.LSTM(10, 2, bidirectional=True)) == "LSTM(None -> 10, TNC, num_layers=2, bidirectional)"


def test_begin_states_deferred_input_size_and_bad_states():
    layer = rnn.GRU(5, num_layers=2, bidirectional=True)
    assert [s["shape"] for s in layer.state_info(7)] == [(4, 7, 5)]
    layer.initialize()
    out = layer(mx.nd.ones((4, 2, 9)))
    assert (
        out.shape == (4, 2, 10)
        and layer.l0_i2h_weight.shape == (15, 9)
        and layer.l1_i2h_weight.shape == (15, 10)
    )
    with pytest.raises(ValueError, match="Invalid recurrent state shape"):
        layer(mx.nd.ones((4, 2, 9)), mx.nd.zeros((4, 3, 5)))
    lstm = rnn.LSTM(3)
    states = lstm.begin_state(2, func=mx.sym.var)
    assert [s.name for s in states] == [f"{lstm.prefix}h0_0", f"{lstm.prefix}h0_1"]
    cell = rnn.LSTMCell(3, prefix="c_")
    assert [s.name for s in cell.begin_state(func=mx.sym.var)] == ["c_begin_state_0", "c_begin_state_1"]
    with pytest.raises(AssertionError):
        rnn.RNN(3, layout="CTN")


def test_layer_in_a_traced_graph_infers_its_input_size_and_exports(tmp_path):
    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.lstm = rnn.LSTM(3, bidirectional=True)     # input size inferred in the graph
                self.norm = gluon.nn.BatchNorm(axis=2)
                self.cell = rnn.GRUCell(2)

        def hybrid_forward(self, F, x):
            out = self.norm(self.lstm(x))  # zero begin states whose batch size inference fills
            return self.cell.unroll(4, out, layout="TNC", merge_outputs=True)[0]

    net = Net()
    net.initialize()
    net.hybridize()
    x = mx.nd.array(R.normal(size=(4, 5, 2)))
    got = net(x).asnumpy()
    assert net.lstm.l0_i2h_weight.shape == (12, 2) and net.cell.i2h_weight.shape == (6, 6)
    net.hybridize(False)
    tu.assert_almost_equal(net(x).asnumpy(), got, rtol=1e-5, atol=1e-6)
    net.hybridize()
    net(x)
    sym_file, params_file = net.export(str(tmp_path / "net"))
    back = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    tu.assert_almost_equal(back(x).asnumpy(), got, rtol=1e-5, atol=1e-6)


def test_valid_length_masks_outputs_and_keeps_the_last_valid_states():
    bi = rnn.BidirectionalCell(rnn.LSTMCell(3, input_size=2), rnn.LSTMCell(3, input_size=2))
    bi.initialize()
    x = mx.nd.array(R.normal(size=(3, 4, 2)))
    lengths = [2, 4, 1]
    outs, states = bi.unroll(4, x, valid_length=mx.nd.array(lengths), merge_outputs=True)
    for i, n in enumerate(lengths):
        one, one_states = bi.unroll(n, x[i : i + 1, :n], merge_outputs=True)
        tu.assert_almost_equal(outs[i : i + 1, :n].asnumpy(), one.asnumpy(), rtol=1e-5, atol=1e-6)
        assert not outs[i, n:].asnumpy().any()
        for s, t in zip(states, one_states):
            tu.assert_almost_equal(s[i : i + 1].asnumpy(), t.asnumpy(), rtol=1e-5, atol=1e-6)


def test_sequence_length_layer_stops_each_sequence():
    layer = rnn.GRU(3, input_size=2, use_sequence_length=True, bidirectional=True)
    layer.initialize()
    x = mx.nd.array(R.normal(size=(4, 2, 2)))
    out, (h,) = layer(x, layer.begin_state(2), mx.nd.array([2, 4]))
    one, (h1,) = layer(x[:2, :1], layer.begin_state(1), mx.nd.array([2]))
    tu.assert_almost_equal(out[:2, :1].asnumpy(), one.asnumpy(), rtol=1e-5, atol=1e-6)
    tu.assert_almost_equal(h[:, :1].asnumpy(), h1.asnumpy(), rtol=1e-5, atol=1e-6)
    assert not out[2:, 0].asnumpy().any()


def test_lstm_projection_matches_lstmp_cells():
    N, C, H, P, T = 2, 3, 5, 2, 3
    layer = rnn.LSTM(H, num_layers=2, projection_size=P, input_size=C, prefix="p_")
    stack = rnn.HybridSequentialRNNCell(prefix="p_")
    with stack.name_scope():
        stack.add(crnn.LSTMPCell(H, P, input_size=C, prefix="l0_"))
        stack.add(crnn.LSTMPCell(H, P, input_size=P, prefix="l1_"))
    layer.initialize()
    stack.initialize()
    for name, value in set_random(layer.collect_params()).items():
        stack.collect_params()[name].set_data(mx.nd.array(value))
    x = mx.nd.array(R.normal(size=(T, N, C)))
    out, (h, c) = layer(x, layer.begin_state(N))
    s_out, s_states = stack.unroll(T, x, layout="TNC", merge_outputs=True)
    tu.assert_almost_equal(out.asnumpy(), s_out.asnumpy(), rtol=1e-5, atol=1e-6)
    tu.assert_almost_equal(
        h.asnumpy(), np.stack([s_states[0].asnumpy(), s_states[2].asnumpy()]), rtol=1e-5, atol=1e-6
    )
    tu.assert_almost_equal(
        c.asnumpy(), np.stack([s_states[1].asnumpy(), s_states[3].asnumpy()]), rtol=1e-5, atol=1e-6
    )


def test_layer_dropout_trains_under_autograd_and_is_off_in_prediction():
    layer = rnn.LSTM(4, num_layers=2, dropout=0.5, input_size=3)
    twin = rnn.LSTM(4, num_layers=2, input_size=3, params=layer.collect_params())
    layer.initialize()
    x = mx.nd.ones((3, 2, 3))
    tu.assert_almost_equal(layer(x).asnumpy(), twin(x).asnumpy(), rtol=1e-6, atol=1e-7)
    x.attach_grad()
    with autograd.record():
        out = layer(x)
    out.backward()
    assert np.isfinite(x.grad.asnumpy()).all() and layer.l0_i2h_weight.grad().asnumpy().any()


def test_modifier_and_dropout_cells_in_prediction_and_training():
    base = rnn.GRUCell(3, input_size=3)
    res = rnn.ResidualCell(base)
    res.initialize()
    x = mx.nd.array(R.normal(size=(2, 4, 3)))
    out, _ = res.unroll(4, x, merge_outputs=True)
    base._modified = False
    plain, _ = base.unroll(4, x, merge_outputs=True)
    base._modified = True
    tu.assert_almost_equal(out.asnumpy(), plain.asnumpy() + x.asnumpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="modifier"):
        base.begin_state(batch_size=2)
    zone = rnn.ZoneoutCell(rnn.RNNCell(3, input_size=3), zoneout_outputs=0.5, zoneout_states=0.5)
    zone.initialize()
    z_out, _ = zone.unroll(4, x, merge_outputs=True)  # prediction: zoneout keeps every new value
    zone.base_cell._modified = False
    b_out, _ = zone.base_cell.unroll(4, x, merge_outputs=True)
    zone.base_cell._modified = True
    tu.assert_almost_equal(z_out.asnumpy(), b_out.asnumpy(), rtol=1e-6, atol=1e-7)
    with autograd.record():
        t_out, _ = zone.unroll(4, x, merge_outputs=True)
        d_out, _ = rnn.DropoutCell(0.5).unroll(4, x, merge_outputs=True)
    assert t_out.shape == (2, 4, 3)
    kept = d_out.asnumpy()
    assert set(np.round(kept / x.asnumpy(), 4).ravel()) <= {0.0, 2.0}
    with pytest.raises(NotImplementedError):
        rnn.BidirectionalCell(rnn.RNNCell(2), rnn.RNNCell(2))(x[:, 0], [])


def test_variational_dropout_shares_one_mask_over_time():
    cell = crnn.VariationalDropoutCell(rnn.RNNCell(3, input_size=3), drop_inputs=0.5, drop_outputs=0.5)
    cell.initialize(mx.init.One())
    x = mx.nd.ones((2, 5, 3))
    with autograd.record():
        out, _ = cell.unroll(5, x, merge_outputs=True)
    zeros = out.asnumpy() == 0
    assert (zeros == zeros[:, :1]).all()  # the same elements dropped at every step
    pred, _ = cell.unroll(5, x, merge_outputs=True)
    assert (pred.asnumpy() > 0).all()


def test_dynamic_unroll_matches_unroll():
    cell = rnn.LSTMCell(3, input_size=2)
    cell.initialize()
    x = mx.nd.array(R.normal(size=(4, 2, 2)))
    states = cell.begin_state(batch_size=2)
    want, want_states = cell.unroll(
        4, x, states, layout="TNC", merge_outputs=True, valid_length=mx.nd.array([3, 4])
    )
    got, got_states = crnn.rnn_cell.dynamic_unroll(
        cell, x, states, layout="TNC", valid_length=mx.nd.array([3, 4])
    )
    tu.assert_almost_equal(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(got_states, want_states):
        tu.assert_almost_equal(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)


def test_conv_rnn_cell_matches_numpy_and_conv_cells_have_their_shapes():
    cell = crnn.Conv1DRNNCell((2, 6), 3, i2h_kernel=3, h2h_kernel=3, prefix="k_")
    cell.initialize()
    w = {k[2:]: v for k, v in set_random(cell.collect_params()).items()}
    x = R.normal(size=(1, 2, 6)).astype(np.float32)
    h = R.normal(size=(1, 3, 4)).astype(np.float32)
    out, _ = cell(mx.nd.array(x), [mx.nd.array(h)])

    def conv1d(a, weight, bias, pad):
        a = np.pad(a, ((0, 0), (0, 0), (pad, pad)))
        k = weight.shape[2]
        cols = np.stack([a[:, :, i : i + a.shape[2] - k + 1] for i in range(k)], axis=3)  # N, C, W, K
        return np.einsum("ncwk,fck->nfw", cols, weight) + bias[None, :, None]

    want = np.tanh(
        conv1d(x, w["i2h_weight"], w["i2h_bias"], 0) + conv1d(h, w["h2h_weight"], w["h2h_bias"], 1)
    )
    tu.assert_almost_equal(out.asnumpy(), want, rtol=1e-5, atol=1e-5)
    lstm = crnn.Conv2DLSTMCell((0, 5, 5), 2, i2h_kernel=3, h2h_kernel=3, i2h_pad=1)
    lstm.initialize()
    outs, (hh, cc) = lstm.unroll(2, mx.nd.ones((1, 2, 4, 5, 5)), merge_outputs=True)
    assert (
        outs.shape == (1, 2, 2, 5, 5) and cc.shape == (1, 2, 5, 5) and lstm.i2h_weight.shape == (8, 4, 3, 3)
    )
    gru = crnn.Conv3DGRUCell((1, 4, 4, 4), 2, 3, 3)
    assert gru.state_info(1)[0]["shape"] == (1, 2, 2, 2, 2)
    with pytest.raises(AssertionError, match="odd"):
        crnn.Conv1DRNNCell((2, 6), 3, 3, 2)


def test_rnn_operator_takes_its_batch_size_from_the_data_for_zero_begin_states():
    state = mx.sym.zeros(shape=(4, 0, 5))             # MXNet's symbolic begin state: batch size 0
    cell = mx.sym.zeros(shape=(4, 0, 5))
    out = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("params"), state, cell, state_size=5, num_layers=2,
                     bidirectional=True, mode="lstm", state_outputs=True)
    args, outs, _ = out.infer_shape(data=(6, 3, 2))
    gates = 4 * 5      # per direction: W_i2h (20, in), W_h2h (20, 5), two biases of 20
    assert args == [(6, 3, 2), (2 * gates * (2 + 5 + 2) + 2 * gates * (10 + 5 + 2),)]
    assert outs == [(6, 3, 10), (4, 3, 5), (4, 3, 5)]
    with pytest.raises(mx.base.MXNetError):
        out.infer_shape(data=(6, 3))

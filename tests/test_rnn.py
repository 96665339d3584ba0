"""mx.rnn cells (unrolled graphs against hand-written ones and numpy), sentence bucketing, and
BucketingModule (one module per bucket sharing parameters), ending with an LSTM language model
whose perplexity falls."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit import test_utils as tu
from symjit.base import MXNetError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
R = np.random.default_rng(8)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def params_for(sym, **shapes):
    arg_shapes = sym.infer_shape(**shapes)[0]
    return {n: R.normal(0, 0.5, s) for n, s in zip(sym.list_arguments(), arg_shapes)}


def test_lstm_unroll_matches_a_hand_written_graph_and_numpy():
    H, T, N, C = 3, 3, 2, 4
    cell = mx.rnn.LSTMCell(H, prefix="l_")
    h0, c0 = mx.sym.Variable("h0"), mx.sym.Variable("c0")
    out, states = cell.unroll(T, mx.sym.Variable("data"), begin_state=[h0, c0], merge_outputs=True)
    # the same network written by hand with MXNet's names
    x = mx.sym.split(mx.sym.Variable("data"), axis=1, num_outputs=T, squeeze_axis=1)
    W = {n: mx.sym.Variable(f"l_{n}") for n in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias")}
    h, c, hs = h0, c0, []
    for t in range(T):
        g = mx.sym.FullyConnected(x[t], weight=W["i2h_weight"], bias=W["i2h_bias"], num_hidden=4 * H,
                                  name=f"l_t{t}_i2h") + \
            mx.sym.FullyConnected(h, weight=W["h2h_weight"], bias=W["h2h_bias"], num_hidden=4 * H,
                                  name=f"l_t{t}_h2h")
        i, f, cc, o = mx.sym.SliceChannel(g, num_outputs=4)
        c = mx.sym.sigmoid(f) * c + mx.sym.sigmoid(i) * mx.sym.tanh(cc)
        h = mx.sym.sigmoid(o) * mx.sym.tanh(c)
        hs.append(mx.sym.expand_dims(h, axis=1))
    hand = mx.sym.Concat(*hs, dim=1)
    assert sorted(out.list_arguments()) == sorted(hand.list_arguments())
    assert [s.name for s in states] == ["l_t2_out", "l_t2_state"]
    args = params_for(out, data=(N, T, C), h0=(N, H), c0=(N, H))
    got = tu.simple_forward(out, **args)
    tu.assert_almost_equal(got, tu.simple_forward(hand, **args), rtol=1e-6, atol=1e-6)
    hh, cs, ref = args["h0"], args["c0"], []
    for t in range(T):
        gates = (args["data"][:, t] @ args["l_i2h_weight"].T + args["l_i2h_bias"]
                 + hh @ args["l_h2h_weight"].T + args["l_h2h_bias"])
        i, f, cc, o = np.split(gates, 4, axis=1)
        cs = sigmoid(f) * cs + sigmoid(i) * np.tanh(cc)
        hh = sigmoid(o) * np.tanh(cs)
        ref.append(hh)
    tu.assert_almost_equal(got, np.stack(ref, 1), rtol=1e-5, atol=1e-5)


def test_gru_rnn_and_zero_begin_states():
    H, T, N, C = 3, 2, 2, 4
    gru = mx.rnn.GRUCell(H, prefix="g_")
    out, _ = gru.unroll(T, mx.sym.Variable("data"), merge_outputs=True)    # zero begin state
    args = params_for(out, data=(N, T, C))
    h, ref = np.zeros((N, H)), []
    for t in range(T):
        ir, iz, io = np.split(args["data"][:, t] @ args["g_i2h_weight"].T + args["g_i2h_bias"], 3, axis=1)
        hr, hz, ho = np.split(h @ args["g_h2h_weight"].T + args["g_h2h_bias"], 3, axis=1)
        r, z = sigmoid(ir + hr), sigmoid(iz + hz)
        h = (1 - z) * np.tanh(io + r * ho) + z * h
        ref.append(h)
    tu.assert_almost_equal(tu.simple_forward(out, **args), np.stack(ref, 1), rtol=1e-5, atol=1e-5)
    rnn = mx.rnn.RNNCell(H, activation="relu", prefix="r_")
    outs, states = rnn.unroll(T, [mx.sym.Variable(f"x{t}") for t in range(T)])
    assert isinstance(outs, list) and len(outs) == T and len(states) == 1
    args = params_for(outs[-1], x0=(N, C), x1=(N, C))
    h0 = np.maximum(args["x0"] @ args["r_i2h_weight"].T + args["r_i2h_bias"] + args["r_h2h_bias"], 0)
    h1 = np.maximum(args["x1"] @ args["r_i2h_weight"].T + args["r_i2h_bias"]
                    + h0 @ args["r_h2h_weight"].T + args["r_h2h_bias"], 0)
    tu.assert_almost_equal(tu.simple_forward(outs[-1], **args), h1, rtol=1e-5, atol=1e-5)


def test_stacks_modifiers_and_weights():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(4, prefix="a_"))
    stack.add(mx.rnn.DropoutCell(0.5))
    stack.add(mx.rnn.ResidualCell(mx.rnn.GRUCell(4, prefix="b_")))
    assert len(stack.state_info) == 3 and len(stack.begin_state()) == 3
    out, states = stack.unroll(3, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    assert out.infer_shape(data=(3, 2, 4))[1] == [(3, 2, 4)] and len(states) == 3
    names = {"a_i2h_weight": np.arange(16 * 5.0).reshape(16, 5), "a_i2h_bias": np.arange(16.0),
             "a_h2h_weight": np.ones((16, 4)), "a_h2h_bias": np.zeros(16)}
    nds = {k: mx.nd.array(v) for k, v in names.items()}
    cell = mx.rnn.LSTMCell(4, prefix="a_")
    unpacked = cell.unpack_weights(nds)
    assert sorted(unpacked)[:2] == ["a_h2h_c_bias", "a_h2h_c_weight"]
    np.testing.assert_array_equal(unpacked["a_i2h_f_weight"].asnumpy(), names["a_i2h_weight"][4:8])
    repacked = cell.pack_weights(unpacked)
    for k, v in names.items():
        np.testing.assert_array_equal(repacked[k].asnumpy(), v)
    bi = mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(3, prefix="l_"), mx.rnn.LSTMCell(3, prefix="r_"))
    merged, _ = bi.unroll(4, mx.sym.Variable("data"), merge_outputs=True)
    assert merged.infer_shape(data=(2, 4, 5))[1] == [(2, 4, 6)]
    with pytest.raises(MXNetError, match="cannot be stepped"):
        bi(mx.sym.Variable("x"), [])
    zone = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(3, prefix="z_"), zoneout_outputs=0.3, zoneout_states=0.3)
    zout, _ = zone.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    args = params_for(zout, data=(2, 2, 3))
    free, _ = mx.rnn.RNNCell(3, prefix="z_").unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    tu.assert_almost_equal(tu.simple_forward(zout, **args), tu.simple_forward(free, **args))   # inference


def test_encode_sentences_and_bucket_iter():
    coded, vocab = mx.rnn.encode_sentences([["a", "b", "c"], ["c", "a"]], invalid_label=0, start_label=1)
    assert coded == [[1, 2, 3], [3, 1]] and vocab["\n"] == 0
    more, _ = mx.rnn.encode_sentences([["a", "z"]], vocab=dict(vocab), invalid_label=0, start_label=4,
                                      unknown_token="<unk>")
    assert more == [[1, 4]]
    with pytest.raises(MXNetError, match="unknown token 'z'"):
        mx.rnn.encode_sentences([["z"]], vocab=dict(vocab))
    sentences = [[1, 2, 3]] * 4 + [[4, 5]] * 2 + [[6] * 9]
    mx.random.seed(0)
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[2, 3, 5], invalid_label=0)
    batches = list(it)
    assert sorted(b.bucket_key for b in batches) == [2, 3, 3]
    b3 = next(b for b in batches if b.bucket_key == 3)
    np.testing.assert_array_equal(b3.data[0].asnumpy(), [[1, 2, 3], [1, 2, 3]])
    np.testing.assert_array_equal(b3.label[0].asnumpy(), [[2, 3, 0], [2, 3, 0]])
    assert b3.provide_data[0].shape == (2, 3) and it.default_bucket_key == 5
    tn = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[3], layout="TN")
    assert next(tn).data[0].shape == (3, 2)


def test_bucketing_module_shares_parameters():
    def sym_gen(k):
        x = mx.sym.sum(mx.sym.Variable("data"), axis=1)              # (batch, k, 4) -> (batch, 4)
        fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
        return mx.sym.SoftmaxOutput(fc, name="softmax"), ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5)
    mod.bind([("data", (4, 5, 4))], [("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    before = mod.get_params()[0]["fc_weight"].asnumpy().copy()
    for k in (2, 5, 2):
        batch = mx.io.DataBatch([mx.nd.array(R.normal(size=(4, k, 4)))], [mx.nd.array([0, 1, 2, 0])],
                                bucket_key=k, provide_data=[mx.io.DataDesc("data", (4, k, 4))],
                                provide_label=[mx.io.DataDesc("softmax_label", (4,))])
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
    assert sorted(mod._buckets) == [2, 5]
    w2 = mod._buckets[2]._exec_group.param_arrays[0][0]
    w5 = mod._buckets[5]._exec_group.param_arrays[0][0]
    np.testing.assert_array_equal(w2.asnumpy(), w5.asnumpy())
    after = mod.get_params()[0]["fc_weight"].asnumpy()
    assert not np.allclose(after, before)
    assert mod._buckets[2]._updater is mod._buckets[5]._updater
    with pytest.raises(MXNetError, match="default_bucket_key is required"):
        mx.mod.BucketingModule(sym_gen)


@pytest.mark.parametrize("fused", [False, True], ids=["cells", "fused"])
def test_lstm_language_model_perplexity_falls(fused):
    from examples.train_lstm_bucketing import main
    history = main(["--epochs", "3", "--layers", "1", "--hidden", "24", "--embed", "12", "--buckets", "6,10",
                    "--max-len", "10", "--sentences", "600", "--batch-size", "16"] + ["--fused"] * fused)
    assert len(history) == 3
    assert history[-1] < 0.6 * history[0], history
    assert history[-1] < 12, history      # 31 words: a uniform guess scores 31


def _bind_run(sym, values: dict, is_train: bool = True):
    """Forward and backward (head gradient 1) with float64 values; outputs and gradients."""
    args = {n: mx.nd.array(values[n], dtype=np.float64) for n in sym.list_arguments()}
    grads = {n: mx.nd.zeros(a.shape, dtype=np.float64) for n, a in args.items() if n != "data"}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = ex.forward(is_train=is_train)
    ex.backward([mx.nd.ones(o.shape, dtype=np.float64) for o in outs])
    return [o.asnumpy() for o in outs], {n: g.asnumpy() for n, g in grads.items()}


@pytest.mark.parametrize("mode,bidir,layout", [("lstm", True, "NTC"), ("gru", False, "TNC"),
                                               ("rnn_tanh", True, "TNC"), ("rnn_relu", False, "NTC")])
def test_fused_cell_matches_its_unfused_cells(mode, bidir, layout):
    """FusedRNNCell (one RNN op) and unfuse() (separate cells) compute the same outputs, final
    states and gradients once the packed vector is converted with unpack/pack_weights."""
    T, N, C, H, L = 3, 2, 4, 3, 2
    fused = mx.rnn.FusedRNNCell(H, num_layers=L, mode=mode, bidirectional=bidir, get_next_state=True,
                                prefix=f"{mode}_")
    data = mx.sym.Variable("data")
    f_out, f_states = fused.unroll(T, data, layout=layout, merge_outputs=True)
    f_sym = mx.sym.Group([f_out, *f_states])
    unfused = fused.unfuse()
    u_out, u_states = unfused.unroll(T, data, layout=layout, merge_outputs=True)
    shape = (N, T, C) if layout == "NTC" else (T, N, C)
    values = params_for(f_sym, data=shape)
    unpacked = fused.unpack_weights({k: mx.nd.array(v, dtype=np.float64) for k, v in values.items()})
    u_values = {k: v.asnumpy() for k, v in unfused.pack_weights(unpacked).items()}
    assert set(u_values) == set(mx.sym.Group([u_out, *u_states]).list_arguments())
    fo, fg = _bind_run(f_sym, values)
    d = 2 if bidir else 1
    # the unfused states come per layer and direction; the fused ones stacked (L*D, N, H)
    n_state = 2 if mode == "lstm" else 1
    u_groups = [u_states[i::n_state] for i in range(n_state)]
    u_sym = mx.sym.Group([u_out] + [mx.sym.stack(*g, axis=0) for g in u_groups])
    uo, ug = _bind_run(u_sym, u_values)
    assert len(u_groups[0]) == L * d
    for a, b in zip(fo, uo):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    packed = fused.pack_weights({k: mx.nd.array(v, dtype=np.float64) for k, v in
                                 unfused.unpack_weights({k: mx.nd.array(g, dtype=np.float64)
                                                         for k, g in ug.items()}).items()})
    np.testing.assert_allclose(fg[f"{mode}_parameters"], packed[f"{mode}_parameters"].asnumpy(),
                               rtol=1e-9, atol=1e-12)


def test_fused_weights_names_round_trip_and_initializer():
    cell = mx.rnn.FusedRNNCell(2, num_layers=2, mode="lstm", bidirectional=True, prefix="lstm_")
    out, _ = cell.unroll(3, mx.sym.Variable("data"), merge_outputs=True)
    (n_params,) = dict(zip(out.list_arguments(), out.infer_shape(data=(4, 3, 5))[0]))["lstm_parameters"]
    flat = mx.nd.array(np.arange(n_params, dtype=np.float32))
    pieces = cell.unpack_weights({"lstm_parameters": flat})
    assert pieces["lstm_l0_i2h_i_weight"].shape == (2, 5)
    assert pieces["lstm_r1_i2h_o_weight"].shape == (2, 4)      # layer 1 reads both directions
    assert pieces["lstm_r1_h2h_f_bias"].shape == (2,)
    assert len(pieces) == 2 * 2 * 2 * 4 * 2                    # layers, dirs, i2h/h2h, gates, w/b
    np.testing.assert_array_equal(pieces["lstm_l0_i2h_i_weight"].asnumpy().ravel(), np.arange(10))
    np.testing.assert_array_equal(cell.pack_weights(pieces)["lstm_parameters"].asnumpy(), flat.asnumpy())
    with pytest.raises(MXNetError, match="does not fit"):
        cell.unpack_weights({"lstm_parameters": mx.nd.zeros((n_params + 1,))})
    with pytest.raises(MXNetError, match="cannot be stepped"):
        cell(mx.sym.Variable("x"), [])
    # the initializer: Module init through the variable's __init__ attribute
    mod = mx.mod.Module(mx.sym.MakeLoss(mx.sym.sum(out)), data_names=["data"], label_names=None)
    mod.bind([("data", (4, 3, 5))])
    mod.init_params(mx.init.Uniform(0.5))
    pieces = cell.unpack_weights({"lstm_parameters": mod.get_params()[0]["lstm_parameters"]})
    weights = []
    for name, arr in pieces.items():
        a = arr.asnumpy()
        if name.endswith("_f_bias"):
            np.testing.assert_array_equal(a, 1.0)          # forget_bias, i2h and h2h (as MXNet)
        elif name.endswith("_bias"):
            np.testing.assert_array_equal(a, 0.0)
        else:
            weights.append(a.ravel())
    weights = np.concatenate(weights)                     # Uniform(0.5) from the global initializer
    assert np.abs(weights).max() <= 0.5 and weights.std() > 0.2 and len(np.unique(weights)) == weights.size


def test_rnn_op_dropout_between_layers():
    """p drops units of the lower layers' outputs in training only (cuDNN's semantics)."""
    T, N, C, H = 4, 3, 2, 5
    sym = mx.sym.RNN(mx.sym.Variable("data"), mx.sym.Variable("parameters"), mx.sym.Variable("state"),
                     state_size=H, num_layers=2, mode="rnn_relu", p=0.5)
    ref = mx.sym.RNN(mx.sym.Variable("data"), mx.sym.Variable("parameters"), mx.sym.Variable("state"),
                     state_size=H, num_layers=2, mode="rnn_relu")
    values = params_for(sym, data=(T, N, C))
    values["parameters"] = np.abs(values["parameters"])         # relu units that are on
    values["data"] = np.abs(values["data"])
    plain, _ = _bind_run(ref, values, is_train=True)
    infer, _ = _bind_run(sym, values, is_train=False)
    train, _ = _bind_run(sym, values, is_train=True)
    np.testing.assert_allclose(infer[0], plain[0])
    assert not np.allclose(train[0], plain[0])


def test_bucketing_example_reads_a_text_file(tmp_path):
    """examples/train_lstm_bucketing.py --text: a real file, one sentence per line (blank lines
    skipped), bucketed by length; the model learns the file's repeated phrases."""
    from examples.train_lstm_bucketing import main
    phrases = ["the cat sat on the mat", "a dog ran in the park today", "we like green tea",
               "the sun is hot", "birds sing in the morning light"]
    rng = np.random.default_rng(0)
    lines = [phrases[i] for i in rng.integers(0, len(phrases), 400)]
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(lines[:200]) + "\n\n" + "\n".join(lines[200:]) + "\n")
    history = main(["--text", str(text), "--epochs", "3", "--layers", "1", "--hidden", "24", "--embed", "12",
                    "--buckets", "5,8", "--batch-size", "16", "--fused"])
    vocab = len({w for p in phrases for w in p.split()})
    assert history[-1] < 0.5 * history[0] and history[-1] < vocab / 3, (history, vocab)

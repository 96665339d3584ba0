"""Shape/dtype rules, params and scalar bodies of the neural-network ops (nn, norm, loss families).

Expected shapes are hand-computed from MXNet's documented formulas; body references are numpy.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
import scipy.special
from hypothesis import given
from hypothesis import strategies as st

import symjit as mx
from symjit.base import MXNetError, ParamError
from symjit.jitext import install
from symjit.lower import LOOP, lookup
from symjit.lower.cpu import CPU
from symjit.ops import Kind, get_op
from symjit.ops.rules import window_out_len

install()    # these tests compile the scalar bodies with numba directly: register the helpers first

V = mx.sym.Variable


def shapes(sym, **known):
    """infer_shape as a dict name -> shape (arguments and aux) plus the output list."""
    args, outs, aux = sym.infer_shape(**known)
    assert args is not None, f"inference incomplete for {known}"
    named = dict(zip(sym.list_arguments(), args))
    named.update(zip(sym.list_auxiliary_states(), aux))
    return named, outs


def types(sym, **known):
    args, outs, aux = sym.infer_type(**known)
    assert args is not None, f"type inference incomplete for {known}"
    named = dict(zip(sym.list_arguments(), args))
    named.update(zip(sym.list_auxiliary_states(), aux))
    return named, outs


# --- Convolution / Pooling ---------------------------------------------------------------------

def test_lenet_chain():
    data = V("data")
    c1 = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
    p1 = mx.sym.Pooling(c1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    c2 = mx.sym.Convolution(p1, kernel=(5, 5), num_filter=50, name="conv2")
    p2 = mx.sym.Pooling(c2, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    fc = mx.sym.FullyConnected(mx.sym.Activation(p2, act_type="tanh"), num_hidden=500, name="fc1")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(fc, num_hidden=10, name="fc2"), name="softmax")
    named, outs = shapes(net, data=(64, 1, 28, 28))
    assert named["conv1_weight"] == (20, 1, 5, 5) and named["conv1_bias"] == (20,)
    assert named["conv2_weight"] == (50, 20, 5, 5)
    assert named["fc1_weight"] == (500, 50 * 4 * 4)
    assert named["softmax_label"] == (64,)
    assert outs == [(64, 10)]
    internals = net.get_internals()
    _, iouts, _ = internals.infer_shape(data=(64, 1, 28, 28))
    by_name = dict(zip(internals.list_outputs(), iouts))
    assert by_name["conv1_output"] == (64, 20, 24, 24)
    assert by_name["pool1_output"] == (64, 20, 12, 12)
    assert by_name["conv2_output"] == (64, 50, 8, 8)
    assert by_name["pool2_output"] == (64, 50, 4, 4)


CONV_CASES = [
    # data, params, weight, output
    ((1, 3, 32, 32), dict(kernel=(3, 3), pad=(1, 1), num_filter=8), (8, 3, 3, 3), (1, 8, 32, 32)),
    ((1, 3, 32, 32), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=4),
     (4, 3, 3, 3), (1, 4, 16, 16)),
    ((1, 3, 10, 10), dict(kernel=(3, 3), dilate=(2, 2), num_filter=2), (2, 3, 3, 3), (1, 2, 6, 6)),
    ((2, 8, 7, 7), dict(kernel=(3, 3), num_filter=4, num_group=2), (4, 4, 3, 3), (2, 4, 5, 5)),
    ((2, 6, 5, 5), dict(kernel=(1, 1), num_filter=6, num_group=6), (6, 1, 1, 1), (2, 6, 5, 5)),
    ((1, 1, 7, 9), dict(kernel=(3, 2), stride=(2, 3), pad=(1, 0), num_filter=1), (1, 1, 3, 2), (1, 1, 4, 3)),
    ((2, 3, 10), dict(kernel=(3,), num_filter=5), (5, 3, 3), (2, 5, 8)),
    ((2, 3, 10), dict(kernel=(3,), stride=(2,), dilate=(2,), pad=(2,), num_filter=5), (5, 3, 3), (2, 5, 5)),
    ((1, 2, 3, 3), dict(kernel=(3, 3), num_filter=1), (1, 2, 3, 3), (1, 1, 1, 1)),
]


@pytest.mark.parametrize("data,params,weight,out", CONV_CASES)
def test_convolution_shapes(data, params, weight, out):
    sym = mx.sym.Convolution(V("data"), name="c", **params)
    named, outs = shapes(sym, data=data)
    assert named["c_weight"] == weight
    assert named["c_bias"] == (params["num_filter"],)
    assert outs == [out]


def test_convolution_no_bias_and_bias_inferred_after_data():
    sym = mx.sym.Convolution(V("data"), kernel=(3, 3), num_filter=7, no_bias=True, name="c")
    assert sym.list_arguments() == ["data", "c_weight"]
    sym = mx.sym.Convolution(V("data"), kernel=(3, 3), num_filter=7, name="c")
    args, _, _ = sym.infer_shape_partial()   # as MXNet: nothing before data's shape
    assert dict(zip(sym.list_arguments(), args))["c_bias"] == ()
    args, _, _ = sym.infer_shape_partial(data=(1, 2, 5, 5))
    assert dict(zip(sym.list_arguments(), args))["c_bias"] == (7,)


POOL_CASES = [
    # data, params, output
    ((1, 1, 5, 5), dict(kernel=(2, 2), stride=(2, 2)), (1, 1, 2, 2)),
    ((1, 1, 5, 5), dict(kernel=(2, 2), stride=(2, 2), pooling_convention="full"), (1, 1, 3, 3)),
    ((1, 1, 6, 6), dict(kernel=(3, 3), stride=(2, 2)), (1, 1, 2, 2)),
    ((1, 1, 6, 6), dict(kernel=(3, 3), stride=(2, 2), pooling_convention="full"), (1, 1, 3, 3)),
    ((1, 3, 7, 7), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg"), (1, 3, 4, 4)),
    ((1, 3, 7, 7), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pooling_convention="full"), (1, 3, 4, 4)),
    ((2, 4, 8, 8), dict(kernel=(3, 3), pool_type="sum"), (2, 4, 6, 6)),
    ((2, 16, 7, 9), dict(global_pool=True, pool_type="avg"), (2, 16, 1, 1)),
    ((2, 16, 7, 9), dict(kernel=(3, 3), global_pool=True), (2, 16, 1, 1)),
    ((2, 16, 11), dict(global_pool=True), (2, 16, 1)),
    ((2, 3, 10), dict(kernel=(2,)), (2, 3, 9)),
    ((2, 3, 10), dict(kernel=(3,), stride=(3,), pooling_convention="full"), (2, 3, 4)),
    ((2, 3, 10), dict(kernel=(2,), stride=(2,), pooling_convention="same"), (2, 3, 5)),
    ((2, 3, 11), dict(kernel=(3,), stride=(2,), pooling_convention="same"), (2, 3, 6)),
    ((1, 1, 4, 4), dict(kernel=(2, 2), pool_type="lp", p_value=2, stride=(2, 2)), (1, 1, 2, 2)),
]


@pytest.mark.parametrize("data,params,out", POOL_CASES)
def test_pooling_shapes(data, params, out):
    sym = mx.sym.Pooling(V("data"), name="p", **params)
    assert sym.list_arguments() == ["data"]
    assert shapes(sym, data=data)[1] == [out]


@given(size=st.integers(1, 40), kernel=st.integers(1, 7), stride=st.integers(1, 5),
       dilate=st.integers(1, 3), pad=st.integers(0, 3))
def test_window_out_len_counts_window_positions(size, kernel, stride, dilate, pad):
    span = dilate * (kernel - 1) + 1
    padded = size + 2 * pad
    valid = len([s for s in range(0, padded, stride) if s + span <= padded])
    if span > padded:
        with pytest.raises(MXNetError, match="bigger than the padded input"):
            window_out_len(size, kernel, stride, dilate, pad)
        return
    assert window_out_len(size, kernel, stride, dilate, pad) == valid
    # 'full': keep adding windows while the previous one has not reached the end of the input
    full = len([s for s in range(0, padded + stride, stride) if s == 0 or s - stride + span < padded])
    assert window_out_len(size, kernel, stride, dilate, pad, ceil=True) == full


# --- Embedding, Dropout, LeakyReLU, Activation ---------------------------------------------------

def test_embedding_shapes_and_types():
    sym = mx.sym.Embedding(V("data"), input_dim=100, output_dim=16, name="emb")
    assert sym.list_arguments() == ["data", "emb_weight"]
    named, outs = shapes(sym, data=(4, 7))
    assert named["emb_weight"] == (100, 16) and outs == [(4, 7, 16)]
    assert shapes(sym, data=(5,))[1] == [(5, 16)]
    named, outs = types(sym, data="int32")
    assert named == {"data": np.int32, "emb_weight": np.float32} and outs == [np.float32]
    named, outs = types(sym)  # an untyped index variable is float32
    assert named["data"] == np.float32
    half = mx.sym.Embedding(V("data"), input_dim=10, output_dim=3, dtype="float16", name="e")
    named, outs = types(half, data="float32")
    assert named["e_weight"] == np.float16 and outs == [np.float16]
    with pytest.raises(MXNetError, match=r"Embedding 'e'.*'e_weight'|Embedding 'e'.*weight"):
        half.infer_type(data="float32", e_weight="float32")
    with pytest.raises(MXNetError, match=r"Embedding 'e'.*'data'.*bool"):
        half.infer_type(data="bool")


def test_dropout_outputs_and_mask():
    sym = mx.sym.Dropout(V("data"), p=0.3, name="dp")
    assert sym.list_outputs() == ["dp_output"]
    op = get_op("Dropout")
    params = op.parse_params({"axes": (1,)})
    assert op.list_outputs(params) == ["output", "mask"]
    _, outs, _ = op.shape(params, [(2, 3, 4)], [])
    assert outs == [(2, 3, 4), (2, 1, 4)]
    assert shapes(sym, data=(2, 3))[1] == [(2, 3)]
    bad = mx.sym.Dropout(V("data"), axes=(3,), name="dp2")
    with pytest.raises(MXNetError, match=r"Dropout 'dp2'.*axes.*\(2,3\)"):
        bad.infer_shape(data=(2, 3))


def test_leaky_relu_prelu_and_rrelu():
    prelu = mx.sym.LeakyReLU(V("data"), act_type="prelu", name="pr")
    assert prelu.list_arguments() == ["data", "pr_gamma"]
    named, outs = shapes(prelu, data=(2, 5, 3, 3))
    assert named["pr_gamma"] == (5,) and outs == [(2, 5, 3, 3)]
    named, _ = shapes(prelu, data=(2, 5, 3, 3), pr_gamma=(1,))  # one shared slope (Gluon PReLU)
    assert named["pr_gamma"] == (1,)
    with pytest.raises(MXNetError, match=r"LeakyReLU 'pr'.*'gamma'.*\(4,\).*\(5,\)"):
        prelu.infer_shape(data=(2, 5, 3, 3), pr_gamma=(4,))
    rrelu = mx.sym.LeakyReLU(V("data"), act_type="rrelu", name="rr")
    assert rrelu.list_arguments() == ["data"] and rrelu.list_outputs() == ["rr_output"]
    assert get_op("LeakyReLU").list_outputs({"act_type": "rrelu"}) == ["output", "mask"]
    assert shapes(rrelu, data=(3, 4))[1] == [(3, 4)]
    leaky = mx.sym.LeakyReLU(V("data"), name="lk")
    assert leaky.list_arguments() == ["data"]
    assert shapes(leaky, data=(3, 4))[1] == [(3, 4)]


@pytest.mark.parametrize("dshape,gshape", [((3, 4), (3, 4)), ((3, 4, 2, 5), (3, 4)),
                                           ((3, 4, 2), (1, 4)), ((3, 4, 2), (3, 1))])
def test_prelu_gamma_along_batch_and_channel(dshape, gshape):
    """A gamma of shape (N, C) (or 1 along one of them) gives each (sample, channel) its slope;
    its gradient sums over the other axes."""
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, dshape)
    gamma = rng.uniform(0.1, 0.5, gshape)
    g_b = gamma.reshape(gshape + (1,) * (len(dshape) - 2))
    sym = mx.sym.LeakyReLU(V("x"), V("g"), act_type="prelu")
    assert sym.infer_shape(x=dshape, g=gshape)[1] == [dshape]
    ex = sym.simple_bind(mx.cpu(), x=dshape, g=gshape, type_dict={"x": "float64", "g": "float64"})
    ex.arg_dict["x"][:] = x
    ex.arg_dict["g"][:] = gamma
    out = ex.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, np.where(x > 0, x, g_b * x), rtol=1e-12)
    head = rng.uniform(-1, 1, dshape)
    ex.backward(mx.nd.array(head, dtype="float64"))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), np.where(x > 0, head, head * g_b),
                               rtol=1e-12)
    contrib = np.where(x > 0, 0.0, head * x)
    keep = tuple(a for a, n in enumerate(gshape) if n != 1)
    want = contrib.sum(axis=tuple(a for a in range(len(dshape)) if a not in keep), keepdims=True)
    np.testing.assert_allclose(ex.grad_dict["g"].asnumpy(), want.reshape(gshape), rtol=1e-12)


def test_prelu_gamma_that_does_not_broadcast_is_refused():
    sym = mx.sym.LeakyReLU(V("x"), V("g"), act_type="prelu", name="pr")
    with pytest.raises(MXNetError, match=r"LeakyReLU 'pr'.*'gamma'.*\(4,3\).*\(3,4\)"):
        sym.infer_shape(x=(3, 4), g=(4, 3))
    with pytest.raises(MXNetError, match=r"'gamma'.*\(2,3,4\)"):
        sym.infer_shape(x=(2, 3, 4), g=(2, 3, 4))


def test_activation_shape_and_type():
    sym = mx.sym.Activation(V("data"), act_type="relu", name="a")
    assert shapes(sym, data=(3, 4, 5))[1] == [(3, 4, 5)]
    assert types(sym, data="float64")[1] == [np.float64]


# --- BatchNorm / LayerNorm ---------------------------------------------------------------------

def test_batchnorm_names_and_shapes():
    bn = mx.sym.BatchNorm(V("data"), name="bn1")
    assert bn.list_arguments() == ["data", "bn1_gamma", "bn1_beta"]
    assert bn.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]
    assert bn.list_outputs() == ["bn1_output"]
    named, outs = shapes(bn, data=(2, 3, 4, 5))
    assert outs == [(2, 3, 4, 5)]
    for k in ("bn1_gamma", "bn1_beta", "bn1_moving_mean", "bn1_moving_var"):
        assert named[k] == (3,)
    mv = mx.sym.BatchNorm(V("data"), output_mean_var=True, axis=-1, name="bn2")
    assert mv.list_outputs() == ["bn2_output", "bn2_mean", "bn2_var"]
    named, outs = shapes(mv, data=(2, 3, 4, 5))
    assert named["bn2_moving_var"] == (5,) and outs == [(2, 3, 4, 5), (5,), (5,)]


def test_batchnorm_parameters_wait_for_data():
    """As MXNet: gamma's shape does not give beta's or the aux states'; data's does."""
    bn = mx.sym.BatchNorm(V("data"), name="bn")
    args, _, aux = bn.infer_shape_partial(bn_gamma=(7,))
    assert dict(zip(bn.list_arguments(), args))["bn_beta"] == ()
    assert aux == [(), ()]
    args, _, aux = bn.infer_shape_partial(data=(2, 7))
    assert dict(zip(bn.list_arguments(), args))["bn_beta"] == (7,) and aux == [(7,), (7,)]
    with pytest.raises(MXNetError, match=r"BatchNorm 'bn'.*'gamma'.*\(7,2\)"):
        bn.infer_shape_partial(data=(2, 7), bn_gamma=(7, 2))


def test_batchnorm_types():
    bn = mx.sym.BatchNorm(V("data"), name="bn")
    named, outs = types(bn, data="float16")
    assert named["data"] == np.float16 and outs == [np.float16]
    assert {named[k] for k in ("bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var")} == {np.float32}
    named, _ = types(bn, data="float64")
    assert named["bn_moving_var"] == np.float64
    with pytest.raises(MXNetError, match=r"BatchNorm 'bn'.*'data'.*int32"):
        bn.infer_type(data="int32")
    with pytest.raises(MXNetError, match=r"BatchNorm 'bn'.*'gamma'.*float64.*float32"):
        bn.infer_type(data="float32", bn_gamma="float64")


def test_batchnorm_bad_axis_names_node_and_shape():
    bn = mx.sym.BatchNorm(V("data"), axis=3, name="bnx")
    with pytest.raises(MXNetError, match=r"BatchNorm 'bnx'.*axis=3.*\(2,3\)"):
        bn.infer_shape(data=(2, 3))


def test_layernorm():
    ln = mx.sym.LayerNorm(V("data"), name="ln", output_mean_var=True)
    assert ln.list_arguments() == ["data", "ln_gamma", "ln_beta"]
    assert ln.list_outputs() == ["ln_output", "ln_mean", "ln_std"]
    named, outs = shapes(ln, data=(2, 5, 7))
    assert named["ln_gamma"] == (7,) and outs == [(2, 5, 7), (2, 5, 1), (2, 5, 1)]
    ln1 = mx.sym.LayerNorm(V("data"), axis=1, name="l1")
    named, outs = shapes(ln1, data=(2, 5, 7))
    assert named["l1_beta"] == (5,) and outs == [(2, 5, 7)]


# --- loss heads --------------------------------------------------------------------------------

SOFTMAX_LABELS = [
    # data, params, inferred label
    ((8, 10), {}, (8,)),
    ((2, 3, 4), {}, (2,)),
    ((2, 3, 10), dict(preserve_shape=True), (2, 3)),
    ((2, 5, 4, 4), dict(multi_output=True), (2, 4, 4)),
    ((2, 5), dict(multi_output=True), (2,)),
]


@pytest.mark.parametrize("data,params,label", SOFTMAX_LABELS)
def test_softmax_output_label_shapes(data, params, label):
    sym = mx.sym.SoftmaxOutput(V("data"), name="sm", **params)
    assert sym.list_arguments() == ["data", "sm_label"]
    named, outs = shapes(sym, data=data)
    assert named["sm_label"] == label and outs == [data]
    # a label shaped like data holds probabilities
    assert shapes(sym, data=data, sm_label=data)[0]["sm_label"] == data


def test_softmax_output_accepts_flattened_multi_output_label_and_rejects_bad():
    sym = mx.sym.SoftmaxOutput(V("data"), multi_output=True, name="sm")
    assert shapes(sym, data=(2, 5, 4, 4), sm_label=(2, 16))[0]["sm_label"] == (2, 16)
    with pytest.raises(MXNetError, match=r"SoftmaxOutput 'sm'.*'label'.*\(3,4,4\).*\(2,5,4,4\)"):
        sym.infer_shape(data=(2, 5, 4, 4), sm_label=(3, 4, 4))
    plain = mx.sym.SoftmaxOutput(V("data"), name="sm2")
    with pytest.raises(MXNetError, match=r"SoftmaxOutput 'sm2'.*'label'.*\(4,\)"):
        plain.infer_shape(data=(8, 10), sm2_label=(4,))


def test_softmax_alias_and_types():
    assert get_op("Softmax") is get_op("SoftmaxOutput")
    sym = mx.sym.Softmax(V("data"), name="s")
    assert sym.list_arguments() == ["data", "s_label"]
    assert shapes(sym, data=(4, 3))[0]["s_label"] == (4,)
    named, outs = types(sym, data="float64")
    assert named["s_label"] == np.float64 and outs == [np.float64]
    named, _ = types(sym, data="float32", s_label="int32")
    assert named["s_label"] == np.int32
    with pytest.raises(MXNetError, match=r"SoftmaxOutput 's'.*'label'.*bool"):
        sym.infer_type(data="float32", s_label="bool")


def test_softmax_and_log_softmax():
    for name in ("softmax", "log_softmax"):
        fn = getattr(mx.sym, name)
        sym = fn(V("data"), axis=1, name="s")
        assert sym.list_arguments() == ["data"]
        assert shapes(sym, data=(2, 3, 4))[1] == [(2, 3, 4)]
        typed = fn(V("data"), dtype="float64", name="t")
        assert types(typed, data="float32")[1] == [np.float64]
        withlen = fn(V("data"), axis=1, use_length=True, name="w")
        assert withlen.list_arguments() == ["data", "w_length"]
        named, _ = shapes(withlen, data=(2, 3, 4))
        assert named["w_length"] == (2, 4)
        with pytest.raises(MXNetError, match=r"'w'.*'length'.*float32"):
            withlen.infer_type(data="float32", w_length="float32")
        bad = fn(V("data"), axis=3, name="b")
        with pytest.raises(MXNetError, match=r"'b'.*axis=3"):
            bad.infer_shape(data=(2, 3))


REGRESSIONS = ["LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"]


@pytest.mark.parametrize("op", REGRESSIONS)
def test_regression_label_shapes(op):
    sym = getattr(mx.sym, op)(V("data"), name="r")
    assert sym.list_arguments() == ["data", "r_label"]
    assert shapes(sym, data=(8, 1))[0]["r_label"] == (8,)
    assert shapes(sym, data=(8, 3))[0]["r_label"] == (8, 3)
    assert shapes(sym, data=(8, 1, 3), r_label=(8, 3))[1] == [(8, 1, 3)]
    with pytest.raises(MXNetError, match=rf"{op} 'r'.*'label'.*\(7,3\).*\(8,3\)"):
        sym.infer_shape(data=(8, 3), r_label=(7, 3))
    named, outs = types(sym, data="float32", r_label="int64")
    assert named["r_label"] == np.int64 and outs == [np.float32]
    assert get_op(op).loss


def test_makeloss_blockgrad():
    ml = mx.sym.MakeLoss(V("data"), name="ml")
    assert shapes(ml, data=(3, 2))[1] == [(3, 2)]
    bg = mx.sym.BlockGrad(V("data"), name="bg")
    sg = mx.sym.stop_gradient(V("data"), name="sg")
    assert shapes(bg, data=(4,))[1] == [(4,)] and shapes(sg, data=(4,))[1] == [(4,)]
    assert get_op("stop_gradient") is get_op("BlockGrad")
    assert get_op("MakeLoss").loss and get_op("SoftmaxOutput").loss
    assert not get_op("BlockGrad").loss and not get_op("softmax").loss


def test_kinds_and_inplace():
    assert get_op("Activation").kind == Kind.ELEMWISE and get_op("BlockGrad").kind == Kind.ELEMWISE
    assert get_op("Convolution").kind == Kind.OUT_ELEMWISE_FUSABLE
    assert get_op("Embedding").kind == Kind.INJECTIVE
    # in-place is a fact of the CPU lowering rule; BlockGrad is a loop op (in-place by the loop)
    assert (0, 0) in lookup(get_op("Dropout"), CPU).inplace_pairs({})
    assert lookup(get_op("BlockGrad"), CPU) is LOOP
    lrelu = lookup(get_op("LeakyReLU"), CPU)
    assert lrelu.inplace_pairs({"act_type": "leaky"}) == ((0, 0),)
    assert lrelu.inplace_pairs({"act_type": "prelu"}) == ()


def test_json_round_trip_keeps_shapes():
    net = mx.sym.Pooling(mx.sym.Convolution(V("data"), kernel=(3, 3), stride=(2, 2), num_filter=4,
                                            num_group=2, name="c"),
                         kernel=(2, 2), stride=(2, 2), pooling_convention="full", name="p")
    back = mx.sym.load_json(net.tojson())
    assert back.infer_shape(data=(1, 6, 11, 11)) == net.infer_shape(data=(1, 6, 11, 11))
    assert shapes(back, data=(1, 6, 11, 11))[1] == [(1, 4, 3, 3)]  # conv 5x5, pool ceil(3/2)+1


# --- param validation --------------------------------------------------------------------------

PARAM_ERRORS = [
    ("Activation", dict(act_type="swish"), "act_type"),
    ("FullyConnected", dict(num_hidden=0), "num_hidden"),
    ("Convolution", dict(num_filter=4), "kernel"),
    ("Convolution", dict(kernel=(3, 3)), "num_filter"),
    ("Convolution", dict(kernel=(3, 3, 3, 3), num_filter=4), "kernel"),
    ("Convolution", dict(kernel=(3, 3, 3), dilate=(1, 1), num_filter=4), "dilate"),
    ("Pooling", dict(kernel=(2, 2, 2)), "kernel"),
    ("Convolution", dict(kernel=(0, 3), num_filter=4), "kernel"),
    ("Convolution", dict(kernel=(3, 3), stride=(1,), num_filter=4), "stride"),
    ("Convolution", dict(kernel=(3, 3), stride=(0, 1), num_filter=4), "stride"),
    ("Convolution", dict(kernel=(3, 3), pad=(-1, 0), num_filter=4), "pad"),
    ("Convolution", dict(kernel=(3, 3), num_filter=5, num_group=2), "num_filter"),
    ("Convolution", dict(kernel=(3, 3), num_filter=4, layout="NHWC"), "layout"),
    ("Convolution", dict(kernel=(3, 3), num_filter=4, layout="NCW"), "layout"),
    ("Pooling", dict(pool_type="max"), "kernel"),
    ("Pooling", dict(kernel=(2, 2), pool_type="median"), "pool_type"),
    ("Pooling", dict(kernel=(2, 2), pooling_convention="round"), "pooling_convention"),
    ("Pooling", dict(kernel=(2, 2), pool_type="lp"), "p_value"),
    ("Pooling", dict(kernel=(2, 2), pad=(1, 1, 1)), "pad"),
    ("Pooling", dict(kernel=(2,), pad=(1,), pooling_convention="same"), "pad"),
    ("Pooling", dict(kernel=(2, 2), pooling_convention="same"), "kernel"),
    ("Embedding", dict(input_dim=10), "output_dim"),
    ("Embedding", dict(input_dim=0, output_dim=3), "input_dim"),
    ("Dropout", dict(p=1.5), "'p'"),
    ("Dropout", dict(mode="sometimes"), "mode"),
    ("LeakyReLU", dict(act_type="swish"), "act_type"),
    ("BatchNorm", dict(eps=-1.0), "eps"),
    ("SoftmaxOutput", dict(normalization="mean"), "normalization"),
    ("softmax", dict(dtype="int32"), "dtype"),
    ("MakeLoss", dict(normalization="all"), "normalization"),
    ("BatchNorm", dict(bogus=1), "bogus"),
]


@pytest.mark.parametrize("op,params,param", PARAM_ERRORS)
def test_param_validation_names_op_and_param(op, params, param):
    with pytest.raises(ParamError) as info:
        getattr(mx.sym, op)(V("data"), **params)
    assert op in str(info.value) and param in str(info.value)


# --- shape errors name op, node and shapes -----------------------------------------------------

SHAPE_ERRORS = [
    ("Convolution", dict(kernel=(5, 5), num_filter=2), (1, 1, 4, 4), r"\(1,1,4,4\).*kernel 5"),
    ("Convolution", dict(kernel=(3, 3), dilate=(3, 3), pad=(1, 1), num_filter=2), (1, 1, 4, 4),
     r"\(1,1,4,4\).*dilated to 7"),
    ("Convolution", dict(kernel=(3, 3), num_filter=4, num_group=2), (1, 3, 8, 8), r"3 channels.*num_group=2"),
    ("Convolution", dict(kernel=(3, 3), num_filter=4), (1, 8, 8), r"'data'.*4 dimensions.*\(1,8,8\)"),
    ("Convolution", dict(kernel=(3,), num_filter=4), (1, 2, 8, 8), r"'data'.*3 dimensions.*\(1,2,8,8\)"),
    ("Pooling", dict(kernel=(3, 3)), (1, 1, 2, 2), r"\(1,1,2,2\).*kernel 3 is"),
    ("Pooling", dict(kernel=(2, 2)), (4, 4), r"'data'.*4 dimensions.*\(4,4\)"),
    ("Pooling", dict(global_pool=True), (4, 4), r"'data'.*\(4,4\)"),
    ("LeakyReLU", dict(act_type="prelu"), (4,), r"'data'.*prelu.*\(4,\)"),
    ("SoftmaxOutput", dict(multi_output=True), (4,), r"'data'.*multi_output.*\(4,\)"),
]


@pytest.mark.parametrize("op,params,data,pattern", SHAPE_ERRORS)
def test_shape_errors_name_op_node_and_shape(op, params, data, pattern):
    sym = getattr(mx.sym, op)(V("data"), name="node7", **params)
    with pytest.raises(MXNetError) as info:
        sym.infer_shape(data=data)
    msg = str(info.value)
    assert f"{op} 'node7'" in msg
    assert re.search(pattern, msg), msg


def test_weight_conflict_names_argument_and_both_shapes():
    sym = mx.sym.Convolution(V("data"), kernel=(3, 3), num_filter=4, name="cv")
    with pytest.raises(MXNetError, match=r"Convolution 'cv'.*'weight'.*\(4,2,3,3\).*\(4,3,3,3\)"):
        sym.infer_shape(data=(1, 3, 8, 8), cv_weight=(4, 2, 3, 3))


# --- scalar bodies -----------------------------------------------------------------------------

GRID = np.concatenate([np.linspace(-30.0, 30.0, 241), [-1000.0, -745.0, -1e-8, 0.0, 1e-8, 709.0, 1000.0]])


def _eval(body_spec, xs):
    fn, consts = body_spec
    return np.array([fn(float(x), *consts) for x in xs])


def _sigmoid_ref(x):
    return np.exp(-np.logaddexp(0.0, -x))


ACT_REFS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "sigmoid": _sigmoid_ref,
    "tanh": np.tanh,
    "softrelu": lambda x: np.logaddexp(0.0, x),
    "softsign": lambda x: x / (1.0 + np.abs(x)),
}


@pytest.mark.parametrize("act", sorted(ACT_REFS))
def test_activation_bodies(act):
    got = _eval(get_op("Activation").body({"act_type": act}), GRID)
    np.testing.assert_allclose(got, ACT_REFS[act](GRID), rtol=1e-12, atol=1e-300)


def test_activation_body_hand_values():
    body = get_op("Activation").body
    assert body({"act_type": "softrelu"})[0](0.0) == pytest.approx(math.log(2.0))
    assert body({"act_type": "sigmoid"})[0](0.0) == 0.5
    assert body({"act_type": "softsign"})[0](3.0) == 0.75
    assert body({"act_type": "relu"})[0](-2.0) == 0.0


SELU_A, SELU_L = 1.6732632423543772, 1.0507009873554805
LEAKY_REFS = {
    "leaky": (dict(slope=0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    "elu": (dict(slope=0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(np.minimum(x, 0.0)))),
    "selu": ({}, lambda x: SELU_L * np.where(x > 0, x, SELU_A * np.expm1(np.minimum(x, 0.0)))),
    "gelu": ({}, lambda x: 0.5 * x * (1.0 + scipy.special.erf(x / np.sqrt(2.0)))),
}


@pytest.mark.parametrize("act", sorted(LEAKY_REFS))
def test_leaky_relu_bodies(act):
    extra, ref = LEAKY_REFS[act]
    op = get_op("LeakyReLU")
    params = op.parse_params({"act_type": act, **extra})
    got = _eval(op.body(params), GRID)
    np.testing.assert_allclose(got, ref(GRID), rtol=1e-12, atol=1e-300)


def test_leaky_relu_hand_values_and_no_body_for_prelu_rrelu():
    op = get_op("LeakyReLU")
    fn, consts = op.body(op.parse_params({"act_type": "gelu"}))
    assert fn(1.0, *consts) == pytest.approx(0.8413447460685429, rel=1e-14)
    fn, consts = op.body(op.parse_params({}))
    assert fn(-2.0, *consts) == -0.5  # default slope 0.25
    assert op.body(op.parse_params({"act_type": "prelu"})) is None
    fn, consts = op.body(op.parse_params({"act_type": "rrelu"}))   # fixed mean slope (documented)
    assert fn(-1.0, *consts) == pytest.approx(-(0.125 + 0.334) / 2)


@pytest.mark.parametrize("op", ["BlockGrad", "MakeLoss"])
def test_identity_bodies(op):
    fn, consts = get_op(op).body(get_op(op).parse_params({}))
    np.testing.assert_array_equal(_eval((fn, consts), GRID), GRID)


def test_bodies_compile_with_numba():
    import numba
    specs = [get_op("Activation").body({"act_type": a}) for a in ACT_REFS]
    lrelu = get_op("LeakyReLU")
    specs += [lrelu.body(lrelu.parse_params({"act_type": a})) for a in LEAKY_REFS]
    for fn, consts in specs:
        jitted = numba.njit(fn)
        for x in (-3.0, 0.5, 40.0):
            assert jitted(x, *consts) == pytest.approx(fn(x, *consts), rel=1e-12)


def test_correlation_absolute_difference_gradient_at_ties():
    """|a - b|'s slope is +1 for data1 and -1 for data2 where a == b (MXNet's rule), so equal
    inputs, whose every interior comparison is a tie, still get a gradient."""
    d = np.array([[[[0.5, 0.0, 0.25], [1.0, 0.5, 0.0], [0.25, 0.75, 0.5]]]])
    pad, md = 1, 1
    sym = mx.sym.Correlation(mx.sym.Variable("a"), mx.sym.Variable("b"), kernel_size=1, max_displacement=md,
                             pad_size=pad, is_multiply=False)
    ex = sym.simple_bind(mx.cpu(), a=d.shape, b=d.shape, type_dict={"a": np.float64, "b": np.float64})
    out = ex.forward(is_train=True, a=d, b=d)[0]
    ex.backward(mx.nd.ones(out.shape, dtype="float64"))
    p = np.pad(d[0, 0], pad)
    g1, g2 = np.zeros_like(p), np.zeros_like(p)
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            y1, x1 = i + md, j + md
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    s = 1.0 if p[y1, x1] >= p[y1 + dy, x1 + dx] else -1.0
                    g1[y1, x1] += s
                    g2[y1 + dy, x1 + dx] -= s
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy()[0, 0], g1[pad:-pad, pad:-pad], rtol=1e-12)
    np.testing.assert_allclose(ex.grad_dict["b"].asnumpy()[0, 0], g2[pad:-pad, pad:-pad], rtol=1e-12)


@pytest.mark.parametrize("pad", [(0, 0, 0), (0,), ()])
def test_same_pooling_takes_a_pad_of_zeros_of_any_length(pad):
    """pooling_convention='same' uses no pad, so zeros of any length are accepted (as MXNet);
    ceil(W / stride) windows, the last one cut short; the gradient goes to each window's max."""
    rng = np.random.default_rng(2)
    x = rng.permutation(2 * 11).reshape(1, 2, 11).astype(np.float64)
    sym = mx.sym.Pooling(V("x"), kernel=(2,), stride=(2,), pad=pad, pool_type="max",
                         pooling_convention="same")
    ex = sym.simple_bind(mx.cpu(), x=x.shape, type_dict={"x": "float64"})
    ex.arg_dict["x"][:] = x
    out = ex.forward(is_train=True)[0].asnumpy()
    starts = range(0, 11, 2)
    want = np.array([[[x[0, c, s:s + 2].max() for s in starts] for c in range(2)]])
    np.testing.assert_array_equal(out, want)
    ex.backward(mx.nd.ones(out.shape, dtype="float64"))
    grad = np.zeros_like(x)
    for c in range(2):
        for s in starts:
            grad[0, c, s + int(np.argmax(x[0, c, s:s + 2]))] += 1.0
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), grad)


def test_same_pooling_refuses_a_nonzero_pad():
    with pytest.raises(ParamError, match=r"'same'.*pad.*\(0,1,0\)"):
        mx.nd.Pooling(mx.nd.ones((1, 1, 10)), kernel=(2,), stride=(2,), pad=(0, 1, 0),
                      pooling_convention="same")

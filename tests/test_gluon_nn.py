"""mx.gluon.nn layers: each layer's output, imperative and hybridized, against the same operator
built with mx.sym and bound with the layer's parameter values; the hybridized layer's gradients
(autograd.record + backward) against that executor's backward; MXNet's parameter names and
shapes with inferred input sizes."""
import numpy as np
import pytest

import symjit as mx
from symjit import autograd
from symjit.gluon import nn

S = mx.sym


def _leaky(act, **kw):
    return lambda d, p: S.LeakyReLU(d, act_type=act, **kw)


def _conv(op, **kw):
    return lambda d, p: getattr(S, op)(d, p["weight"], p["bias"], **kw)


def _pool(**kw):
    return lambda d, p: S.Pooling(d, **kw)


# (layer, input shape, reference over the data symbol and the parameters' symbols by short name,
#  the parameters' expected short names and shapes)
CASES = {
    "Dense": (lambda: nn.Dense(3, activation="sigmoid"), (2, 2, 2),
              lambda d, p: S.Activation(S.FullyConnected(d, p["weight"], p["bias"], num_hidden=3),
                                        act_type="sigmoid"),
              {"weight": (3, 4), "bias": (3,)}),
    "Dense_noflatten": (lambda: nn.Dense(3, flatten=False, use_bias=False), (2, 2, 4),
                        lambda d, p: S.FullyConnected(d, p["weight"], num_hidden=3, flatten=False,
                                                      no_bias=True), {"weight": (3, 4)}),
    "Activation": (lambda: nn.Activation("softrelu"), (2, 3),
                   lambda d, p: S.Activation(d, act_type="softrelu"), {}),
    "BatchNorm": (lambda: nn.BatchNorm(), (2, 3, 2),
                  lambda d, p: S.BatchNorm(d, p["gamma"], p["beta"], p["running_mean"], p["running_var"],
                                           fix_gamma=False, eps=1e-5),
                  {"gamma": (3,), "beta": (3,), "running_mean": (3,), "running_var": (3,)}),
    "InstanceNorm": (lambda: nn.InstanceNorm(scale=True), (2, 3, 4),
                     lambda d, p: S.InstanceNorm(d, p["gamma"], p["beta"], eps=1e-5),
                     {"gamma": (3,), "beta": (3,)}),
    "LayerNorm": (lambda: nn.LayerNorm(), (2, 3, 4),
                  lambda d, p: S.LayerNorm(d, p["gamma"], p["beta"]), {"gamma": (4,), "beta": (4,)}),
    "GroupNorm": (lambda: nn.GroupNorm(num_groups=2), (2, 4, 3),
                  lambda d, p: S.GroupNorm(d, p["gamma"], p["beta"], num_groups=2),
                  {"gamma": (2,), "beta": (2,)}),
    "Flatten": (lambda: nn.Flatten(), (2, 3, 2), lambda d, p: S.Flatten(d), {}),
    "HybridLambda": (lambda: nn.HybridLambda(lambda F, x: F.relu(x) * 2), (2, 3),
                     lambda d, p: S.relu(d) * 2, {}),
    "Conv1D": (lambda: nn.Conv1D(2, 3, strides=2, padding=1), (1, 2, 7),
               _conv("Convolution", kernel=(3,), stride=(2,), pad=(1,), num_filter=2),
               {"weight": (2, 2, 3), "bias": (2,)}),
    "Conv2D": (lambda: nn.Conv2D(4, (3, 2), groups=2, dilation=(1, 2)), (1, 2, 5, 5),
               _conv("Convolution", kernel=(3, 2), dilate=(1, 2), num_filter=4, num_group=2),
               {"weight": (4, 1, 3, 2), "bias": (4,)}),
    "Conv3D": (lambda: nn.Conv3D(2, 2, activation="relu"), (1, 1, 3, 3, 3),
               lambda d, p: S.relu(S.Convolution(d, p["weight"], p["bias"], kernel=(2, 2, 2),
                                                 num_filter=2)),
               {"weight": (2, 1, 2, 2, 2), "bias": (2,)}),
    "Conv1DTranspose": (lambda: nn.Conv1DTranspose(2, 3, strides=2, output_padding=1), (1, 3, 4),
                        _conv("Deconvolution", kernel=(3,), stride=(2,), adj=(1,), num_filter=2,
                              no_bias=False),
                        {"weight": (3, 2, 3), "bias": (2,)}),
    "Conv2DTranspose": (lambda: nn.Conv2DTranspose(2, 3, padding=1), (1, 3, 3, 3),
                        _conv("Deconvolution", kernel=(3, 3), pad=(1, 1), num_filter=2, no_bias=False),
                        {"weight": (3, 2, 3, 3), "bias": (2,)}),
    "MaxPool1D": (lambda: nn.MaxPool1D(), (1, 2, 6), _pool(kernel=(2,), stride=(2,), pool_type="max"), {}),
    "MaxPool2D": (lambda: nn.MaxPool2D(3, 2, 1, ceil_mode=True), (1, 2, 6, 6),
                  _pool(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max",
                        pooling_convention="full"), {}),
    "AvgPool1D": (lambda: nn.AvgPool1D(3, 1), (1, 2, 6),
                  _pool(kernel=(3,), stride=(1,), pool_type="avg"), {}),
    "AvgPool2D": (lambda: nn.AvgPool2D(padding=1, count_include_pad=False), (1, 2, 5, 5),
                  _pool(kernel=(2, 2), stride=(2, 2), pad=(1, 1), pool_type="avg",
                        count_include_pad=False), {}),
    "GlobalMaxPool1D": (lambda: nn.GlobalMaxPool1D(), (1, 2, 5),
                        _pool(kernel=(1,), global_pool=True, pool_type="max"), {}),
    "GlobalMaxPool2D": (lambda: nn.GlobalMaxPool2D(), (1, 2, 3, 3),
                        _pool(kernel=(1, 1), global_pool=True, pool_type="max"), {}),
    "GlobalAvgPool1D": (lambda: nn.GlobalAvgPool1D(), (1, 2, 5),
                        _pool(kernel=(1,), global_pool=True, pool_type="avg"), {}),
    "GlobalAvgPool2D": (lambda: nn.GlobalAvgPool2D(), (1, 2, 3, 3),
                        _pool(kernel=(1, 1), global_pool=True, pool_type="avg"), {}),
    "ReflectionPad2D": (lambda: nn.ReflectionPad2D(1), (1, 2, 3, 3),
                        lambda d, p: S.pad(d, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)), {}),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.2), (2, 3), _leaky("leaky", slope=0.2), {}),
    "PReLU": (lambda: nn.PReLU(in_channels=3), (2, 3),
              lambda d, p: S.LeakyReLU(d, p["alpha"], act_type="prelu"), {"alpha": (3,)}),
    "ELU": (lambda: nn.ELU(0.5), (2, 3), _leaky("elu", slope=0.5), {}),
    "SELU": (lambda: nn.SELU(), (2, 3), _leaky("selu"), {}),
    "GELU": (lambda: nn.GELU(), (2, 3), _leaky("gelu"), {}),
    "Swish": (lambda: nn.Swish(2.0), (2, 3), lambda d, p: d * S.sigmoid(d * 2.0), {}),
}


def _reference(case, layer, x, head):
    """The reference symbol bound with the layer's parameter values: its output and gradients
    (data and parameters) for head gradient ``head``."""
    _, _, ref, _ = CASES[case]
    short = {k[len(layer.prefix):]: p for k, p in layer.collect_params().items()}
    sym = ref(S.var("data"), {k: S.var(k) for k in short})
    names, aux_names = sym.list_arguments(), sym.list_auxiliary_states()
    args = {n: x.copy() if n == "data" else short[n].data().copy() for n in names}
    grads = {n: mx.nd.zeros(a.shape) for n, a in args.items()
             if n == "data" or short[n].grad_req != "null"}
    exe = sym.bind(mx.cpu(), args, args_grad=grads, grad_req={n: "write" if n in grads else "null"
                                                              for n in names},
                   aux_states={n: short[n].data().copy() for n in aux_names})
    predict = exe.forward(is_train=False)[0].asnumpy()
    train = exe.forward(is_train=True)[0].asnumpy()
    exe.backward(head)
    return predict, train, {n: g.asnumpy() for n, g in grads.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_layer_matches_the_symbolic_operator(case):
    make, shape, _, expected = CASES[case]
    rng = np.random.default_rng(abs(hash(case)) % 1000)
    layer = make()
    layer.initialize(mx.init.Normal(0.5))
    x = mx.nd.array(rng.standard_normal(shape).astype(np.float32))
    out_imp = layer(x).asnumpy()
    short = {k[len(layer.prefix):]: p.shape for k, p in layer.collect_params().items()}
    assert short == expected
    layer.hybridize()
    out_hyb = layer(x).asnumpy()
    head = mx.nd.array(rng.standard_normal(out_hyb.shape).astype(np.float32))
    ref_out, ref_train, ref_grads = _reference(case, layer, x, head)
    np.testing.assert_allclose(out_imp, ref_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out_hyb, ref_out, rtol=1e-4, atol=1e-5)
    x.attach_grad()
    with autograd.record():
        y = layer(x)
    y.backward(head)
    np.testing.assert_allclose(y.asnumpy(), ref_train, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), ref_grads.pop("data"), rtol=1e-4, atol=1e-5)
    params = {k[len(layer.prefix):]: p for k, p in layer.collect_params().items()}
    for name, g in ref_grads.items():
        np.testing.assert_allclose(params[name].grad().asnumpy(), g, rtol=1e-4, atol=1e-5, err_msg=name)


def test_embedding_rows_and_gradient():
    emb = nn.Embedding(5, 3)
    emb.initialize()
    emb.hybridize()
    idx = mx.nd.array([[0, 4], [4, 1]])
    w = emb.weight.data().asnumpy()
    with autograd.record():
        y = emb(idx)
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), w[[[0, 4], [4, 1]]])
    np.testing.assert_array_equal(emb.weight.grad().asnumpy()[:, 0], [1, 1, 0, 0, 2])


def test_dropout_trains_and_predicts():
    drop = nn.Dropout(0.5)
    x = mx.nd.ones((50, 40))
    np.testing.assert_array_equal(drop(x).asnumpy(), 1.0)          # predict mode: identity
    drop.hybridize()
    np.testing.assert_array_equal(drop(x).asnumpy(), 1.0)
    x.attach_grad()
    with autograd.record():
        y = drop(x)
    y.backward()
    kept = y.asnumpy() != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_array_equal(y.asnumpy()[kept], 2.0)
    np.testing.assert_array_equal(x.grad.asnumpy(), np.where(kept, 2.0, 0.0))   # the same mask


def test_sequential_containers_and_lambda():
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(3, in_units=2), nn.Lambda("relu"), nn.Lambda(lambda x: x * 2))
    net.initialize(mx.init.One())
    x = mx.nd.array([[1.0, -2.0]])
    np.testing.assert_array_equal(net(x).asnumpy(), [[0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(net(-x).asnumpy(), [[2.0, 2.0, 2.0]])
    hs = nn.HybridSequential(prefix="h_")
    with hs.name_scope():
        hs.add(nn.Dense(2, in_units=2), nn.Dense(1, in_units=2))
    assert [b.prefix for b in hs[:1]] == ["h_dense0_"] and hs[1].prefix == "h_dense1_"
    with pytest.raises(ValueError, match="not found"):
        nn.Lambda("no_such_function")


def test_deferred_in_channels_and_units():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(3, 3), nn.BatchNorm(), nn.GlobalAvgPool2D(), nn.Dense(2))
    net.initialize()
    net.hybridize()
    assert net(mx.nd.ones((2, 4, 5, 5))).shape == (2, 2)
    assert net[0].weight.shape == (3, 4, 3, 3) and net[1].gamma.shape == (3,)
    assert net[3].weight.shape == (2, 3)


@pytest.mark.gpu
def test_hybridized_net_on_gpu():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3, in_units=4, activation="relu"), nn.Dense(2, in_units=3))
    net.initialize(mx.init.Normal(0.5), ctx=mx.cpu())
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    ref = net(mx.nd.array(x)).asnumpy()
    with autograd.record():
        (net(mx.nd.array(x)) ** 2).sum().backward()
    ref_grad = net[0].weight.grad().asnumpy()
    net.reset_ctx(mx.gpu(0))
    net.hybridize()
    xg = mx.nd.array(x, ctx=mx.gpu(0))
    with autograd.record():
        y = net(xg)
        loss = (y ** 2).sum()
    loss.backward()
    assert y.context == mx.gpu(0) and net[0].weight.grad().context == mx.gpu(0)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net[0].weight.grad().asnumpy(), ref_grad, rtol=1e-4, atol=1e-6)

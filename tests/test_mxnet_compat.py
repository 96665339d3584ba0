"""Behaviours where symjit followed MXNet 1.x's documentation less closely than it should
(issue "MXNet compatibility", points 2-5; point 1, symbol files, is tests/test_mxnet_files.py;
point 6 and the dtype rule itself are in tests/test_nd_ops.py)."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import symjit as mx

from .opcheck import numeric_grad

R = np.random.default_rng(11)


# --- 2. float64 numpy data gives float32 executors ------------------------------------------------

def test_seed_style_float64_numpy_data_binds_float32():
    """The tutorials build arrays from numpy float64 data and expect float32 executors."""
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3, name='fc')
    data = R.uniform(-1, 1, (4, 5))                               # float64
    args = {'data': mx.nd.array(data), 'fc_weight': mx.nd.array(R.uniform(-1, 1, (3, 5))),
            'fc_bias': mx.nd.array(np.zeros(3))}
    assert {a.dtype for a in args.values()} == {np.float32}
    out = net.bind(mx.cpu(), args).forward()[0]
    assert out.dtype is np.float32
    want = data.astype(np.float32) @ args['fc_weight'].asnumpy().T
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5)


def test_ndarrayiter_of_float64_numpy_feeds_a_float32_module():
    it = mx.io.NDArrayIter(R.uniform(-1, 1, (8, 5)), np.arange(8) % 3, batch_size=4)
    assert it.provide_data[0].dtype == np.float32 and it.provide_label[0].dtype == np.float32
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3, name='fc'),
                               name='softmax')
    mod = mx.mod.Module(net)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params()
    assert mod.get_params()[0]['fc_weight'].dtype is np.float32


# --- 3. Symbol.eval ----------------------------------------------------------------------------------

def test_eval_binds_runs_and_returns_the_outputs():
    """MXNet's documented example: ``c.eval(ctx=mx.cpu(), a=..., b=...)`` is a list of NDArrays."""
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    c = a + b
    ex = c.eval(ctx=mx.cpu(), a=mx.nd.ones([2, 3]), b=mx.nd.ones([2, 3]))
    assert isinstance(ex, list) and len(ex) == 1
    assert ex[0].asnumpy().tolist() == [[2.0] * 3] * 2
    group = mx.sym.Group([c, a * b * 3])
    x, y = R.uniform(-1, 1, (2, 2)), R.uniform(-1, 1, (2, 2))
    outs = group.eval(a=mx.nd.array(x), b=mx.nd.array(y))          # ctx defaults to the current one
    assert [o.context for o in outs] == [mx.cpu()] * 2
    np.testing.assert_allclose(outs[1].asnumpy(), (x * y * 3).astype(np.float32), rtol=1e-6)


def test_eval_runs_inference_mode_and_takes_aux_states():
    x = mx.sym.Variable('x')
    net = mx.sym.Dropout(mx.sym.BatchNorm(x, fix_gamma=False, name='bn'), p=0.9)
    data = R.uniform(-1, 1, (4, 3))
    mean, var = np.array([0.1, -0.2, 0.3]), np.array([1.5, 0.5, 2.0])
    gamma, beta = np.array([1.0, 2.0, 0.5]), np.array([0.0, 0.1, -0.1])
    out = net.eval(x=mx.nd.array(data), bn_gamma=mx.nd.array(gamma), bn_beta=mx.nd.array(beta),
                   bn_moving_mean=mx.nd.array(mean), bn_moving_var=mx.nd.array(var))[0]
    want = (data - mean) / np.sqrt(var + 1e-3) * gamma + beta
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_eval_errors_name_the_inputs():
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    with pytest.raises(mx.MXNetError, match=r"eval: no array given for \['b'\]"):
        (a + b).eval(a=mx.nd.ones((2,)))
    with pytest.raises(mx.MXNetError,
                       match=r"eval: unknown inputs \['c'\]; the symbol's arguments are \['a', 'b'\]"):
        (a + b).eval(a=mx.nd.ones((2,)), b=mx.nd.ones((2,)), c=mx.nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match=r"args\['b'\] must be an NDArray, got list"):
        (a + b).eval(a=mx.nd.ones((2,)), b=[1.0, 2.0])
    with pytest.raises(mx.MXNetError, match=r"elemwise_add.*\(3,\).*\(2,\)"):
        (a + b).eval(a=mx.nd.ones((2,)), b=mx.nd.ones((3,)))


# --- 4. infer_shape_partial: () for what cannot be inferred -----------------------------------------

def test_infer_shape_partial_matches_mxnets_documented_example():
    data, prev = mx.sym.var('data'), mx.sym.var('prev')
    fc1 = mx.sym.FullyConnected(data=data, name='fc1', num_hidden=128)
    fc2 = mx.sym.FullyConnected(data=prev, name='fc2', num_hidden=128)
    out = mx.sym.Activation(data=mx.sym.elemwise_add(fc1, fc2), act_type='relu')
    assert out.list_arguments() == ['data', 'fc1_weight', 'fc1_bias', 'prev', 'fc2_weight', 'fc2_bias']
    assert out.infer_shape(data=(10, 64)) == (None, None, None)
    assert out.infer_shape_partial(data=(10, 64)) == (
        [(10, 64), (128, 64), (128,), (), (), ()], [(10, 128)], [])


def _conv_bn_net() -> mx.sym.Symbol:
    x = mx.sym.Convolution(mx.sym.Variable('data'), kernel=(3, 3), num_filter=4, name='conv')
    x = mx.sym.BatchNorm(x, name='bn')
    x = mx.sym.Embedding(mx.sym.Variable('ids'), input_dim=10, output_dim=6, name='emb') + \
        mx.sym.FullyConnected(x, num_hidden=6, name='fc')
    x = mx.sym.LayerNorm(x, name='ln')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def test_unknown_shapes_are_empty_tuples_in_all_three_lists():
    net = _conv_bn_net()
    args, outs, aux = net.infer_shape_partial()
    assert args == [()] * len(net.list_arguments())
    assert outs == [()] and aux == [(), ()]
    assert all(type(s) is tuple for s in args + outs + aux)
    assert net.infer_shape() == (None, None, None)


def test_partial_then_complete_agree():
    net = _conv_bn_net()
    known = dict(data=(2, 3, 8, 8))
    args, outs, aux = net.infer_shape_partial(**known)
    by_name = dict(zip(net.list_arguments(), args))
    assert by_name['conv_weight'] == (4, 3, 3, 3) and by_name['bn_gamma'] == (4,)
    assert by_name['emb_weight'] == () and by_name['ids'] == ()   # ids unknown: no weight shape
    assert outs == [(2, 6)] and aux == [(4,), (4,)]
    full = net.infer_shape(data=(2, 3, 8, 8), ids=(2,))
    assert net.infer_shape_partial(data=(2, 3, 8, 8), ids=(2,)) == full
    assert dict(zip(net.list_arguments(), full[0]))['emb_weight'] == (10, 6)


# --- 5. backward after forward(is_train=False) -------------------------------------------------------

def _bn_dropout_net() -> mx.sym.Symbol:
    h = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc')
    h = mx.sym.BatchNorm(h, fix_gamma=False, name='bn')
    h = mx.sym.Dropout(h, p=0.5, name='drop')
    return mx.sym.Activation(h, act_type='tanh', name='act')


def _bind_f64(net: mx.sym.Symbol, data_shape: tuple, **extra) -> mx.executor.Executor:
    arg_s, _, aux_s = net.infer_shape(data=data_shape)
    args = {n: mx.nd.array(R.uniform(-1, 1, s), dtype='float64') for n, s in zip(net.list_arguments(), arg_s)}
    args.update({n: mx.nd.array(v, dtype='float64') for n, v in extra.items()})
    grads = {n: mx.nd.zeros(a.shape, dtype='float64') for n, a in args.items() if n not in extra}
    aux = {n: mx.nd.array(R.uniform(0.5, 1.5, s), dtype='float64')
           for n, s in zip(net.list_auxiliary_states(), aux_s)}
    return net.bind(mx.cpu(), args, grads, aux_states=aux or None)


def test_backward_after_inference_forward_is_the_inference_gradient():
    """Dropout is the identity and BatchNorm uses its moving statistics, in the gradient too:
    every gradient equals float64 central differences of the inference forward."""
    ex = _bind_f64(_bn_dropout_net(), (3, 5))
    moving = [a.asnumpy() for a in ex.aux_arrays]
    out = ex.forward(is_train=False)[0].asnumpy()
    head = R.uniform(-1, 1, out.shape)
    ex.backward(mx.nd.array(head, dtype='float64'))
    for name, g in ex.grad_dict.items():
        np.testing.assert_allclose(g.asnumpy(), numeric_grad(ex, name, [head], False),
                                   rtol=1e-6, atol=1e-8, err_msg=name)
    for before, after in zip(moving, ex.aux_arrays):       # inference never updates them
        np.testing.assert_array_equal(after.asnumpy(), before)


def test_inference_backward_leaves_outputs_and_can_repeat():
    ex = _bind_f64(_bn_dropout_net(), (3, 5))
    out = ex.forward(is_train=False)[0].asnumpy()
    head = mx.nd.array(R.uniform(-1, 1, out.shape), dtype='float64')
    ex.backward(head)
    # backward re-ran the forward unfused from BatchNorm (it needs its statistics): same values
    # up to rounding (the folded BatchNorm of the inference program rounds differently)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), out, rtol=1e-13, atol=1e-15)
    first = {n: g.asnumpy() for n, g in ex.grad_dict.items()}
    ex.forward(is_train=False)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), out, rtol=1e-13, atol=1e-15)
    ex.backward(head)
    for n, g in ex.grad_dict.items():
        np.testing.assert_array_equal(g.asnumpy(), first[n])


def test_softmax_output_gradient_from_the_inference_output():
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3, name='fc'),
                               name='softmax')
    label = np.array([0.0, 2.0, 1.0, 2.0])
    ex = _bind_f64(net, (4, 5), softmax_label=label)
    prob = ex.forward(is_train=False)[0].asnumpy()
    ex.backward()
    want = (prob - np.eye(3)[label.astype(int)]).T @ ex.arg_dict['data'].asnumpy()
    np.testing.assert_allclose(ex.grad_dict['fc_weight'].asnumpy(), want, rtol=1e-10)


def test_training_and_inference_backward_alternate():
    """Training-mode gradients after an inference backward are still the training ones."""
    net = mx.sym.Dropout(mx.sym.Variable('data') * 2.0, p=0.5, name='drop')
    ex = net.bind(mx.cpu(), {'data': mx.nd.ones((50,))}, {'data': mx.nd.zeros((50,))})
    ex.forward(is_train=False)
    ex.backward(mx.nd.ones((50,)))
    assert ex.grad_dict['data'].asnumpy().tolist() == [2.0] * 50
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward(mx.nd.ones((50,)))
    grad = ex.grad_dict['data'].asnumpy()
    assert set(np.unique(out)) == {0.0, 4.0}                    # a real mask: dropped or kept 1/(1-p)
    np.testing.assert_array_equal(grad, out)                   # d(2x * mask/(1-p))/dx at x = 1
    ex.forward(is_train=False)
    ex.backward(mx.nd.ones((50,)))
    assert ex.grad_dict['data'].asnumpy().tolist() == [2.0] * 50


def test_monitor_sees_the_inference_backward():
    net = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc'),
                            act_type='relu', name='relu')
    ex = net.simple_bind(mx.cpu(), data=(1, 3))
    seen: list[str] = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name))
    ex.forward(is_train=False)
    ex.backward()
    assert seen == ['fc_output', 'relu_output', 'relu_backward_data',
                    'fc_backward_weight', 'fc_backward_bias', 'fc_backward_data']


# --- MXNet modules symjit does not have yet --------------------------------------------------------

@pytest.mark.parametrize("name, planned", [("np", "use mx.nd"), ("npx", "use mx.nd"), ("numpy", "use mx.nd"),
                                           ("numpy_extension", "use mx.nd")])
def test_missing_mxnet_modules_say_so(name, planned):
    module = importlib.import_module(f"symjit.{name}")   # importable, every name an error
    with pytest.raises(mx.MXNetError, match=rf"^mx\.{name} is not supported by symjit yet"):
        module.array  # noqa: B018
    with pytest.raises(mx.MXNetError, match=rf"^mx\.{name} is not supported by symjit yet: .*classic "
                                            rf"symbolic API .*{planned}"):
        getattr(mx, name)
    with pytest.raises(AttributeError):
        getattr(mx, name)
    assert not hasattr(mx, name)
    with pytest.raises(AttributeError, match="module 'symjit' has no attribute 'nonexistent'"):
        mx.nonexistent  # noqa: B018


def test_ndarray_module_tables():
    from symjit.ndarray import ndarray as nd_module
    assert nd_module._STORAGE_TYPE_STR_TO_ID == {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
    assert nd_module._DTYPE_NP_TO_MX[np.float32] == 0 and nd_module._DTYPE_MX_TO_NP[0] is np.float32
    assert nd_module._GRAD_REQ_MAP == {"null": 0, "write": 1, "add": 3}

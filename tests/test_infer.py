"""Shape and dtype inference through Symbol.infer_shape / infer_shape_partial / infer_type."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.base import DTypeError, MXNetError, ParamError, ShapeError


def fc1() -> mx.sym.Symbol:
    return mx.sym.FullyConnected(data=mx.sym.Variable('data'), name='fc1', num_hidden=10)


def mlp(hidden=(128, 64, 10)) -> mx.sym.Symbol:
    net = mx.sym.Variable('data')
    for i, h in enumerate(hidden):
        net = mx.sym.FullyConnected(net, name=f'fc{i + 1}', num_hidden=h)
        if i + 1 < len(hidden):
            net = mx.sym.Activation(net, name=f'relu{i + 1}', act_type='relu')
    return mx.sym.SoftmaxOutput(net, name='softmax')


def test_fully_connected_shapes():
    args, outs, aux = fc1().infer_shape(data=(100, 100))
    assert args == [(100, 100), (10, 100), (10,)]
    assert outs == [(100, 10)]
    assert aux == []


def test_fully_connected_flattens_data():
    args, outs, _ = fc1().infer_shape(data=(8, 3, 4, 5))
    assert args[1] == (10, 60)
    assert outs == [(8, 10)]


def test_fully_connected_flatten_false_applies_to_last_axis():
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), name='fc', num_hidden=6, flatten=False)
    args, outs, _ = net.infer_shape(data=(2, 3, 5))
    assert args[1] == (6, 5) and outs == [(2, 3, 6)]


def test_mlp_chain():
    net = mlp()
    args, outs, aux = net.infer_shape(data=(32, 784))
    names = net.list_arguments()
    expect = {'data': (32, 784), 'fc1_weight': (128, 784), 'fc1_bias': (128,),
              'fc2_weight': (64, 128), 'fc2_bias': (64,), 'fc3_weight': (10, 64), 'fc3_bias': (10,),
              'softmax_label': (32,)}
    assert dict(zip(names, args)) == expect
    assert outs == [(32, 10)]
    assert aux == []


def test_positional_infer_shape():
    args, outs, _ = fc1().infer_shape((100, 100))
    assert args == [(100, 100), (10, 100), (10,)]
    assert outs == [(100, 10)]


def test_incomplete_gives_nones_and_partial_gives_empty_tuples():
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), name='fc1', num_hidden=10)
    assert net.infer_shape() == (None, None, None)
    args, outs, aux = net.infer_shape_partial()
    assert args == [(), (), ()]  # as MXNet: nothing, not even the bias, before data's shape
    assert outs == [()]
    assert aux == []


def test_partial_with_some_known():
    a = mx.sym.Activation(mx.sym.Variable('x'), act_type='relu', name='r')
    b = mx.sym.FullyConnected(mx.sym.Variable('y'), num_hidden=3, name='f')
    g = mx.sym.Group([a, b])
    args, outs, _ = g.infer_shape_partial(x=(2, 2))
    assert dict(zip(g.list_arguments(), args)) == {'x': (2, 2), 'y': (), 'f_weight': (), 'f_bias': ()}
    assert outs == [(2, 2), ()]
    assert g.infer_shape(x=(2, 2)) == (None, None, None)


def test_backward_inference_from_weight_shape():
    net = fc1()
    args, outs, _ = net.infer_shape_partial(fc1_weight=(10, 20))
    assert args[1] == (10, 20)
    assert outs == [()]  # the batch size stays unknown


def test_variable_shape_attr_is_used():
    data = mx.sym.Variable('data', shape=(4, 7))
    net = mx.sym.FullyConnected(data, name='fc1', num_hidden=3)
    args, outs, _ = net.infer_shape()
    assert args == [(4, 7), (3, 7), (3,)]
    assert outs == [(4, 3)]
    # an explicit shape wins over the attribute
    assert net.infer_shape(data=(5, 7))[1] == [(5, 3)]


def test_batchnorm_shapes():
    net = mx.sym.BatchNorm(mx.sym.Variable('data'), name='bn1')
    args, outs, aux = net.infer_shape(data=(2, 3, 4, 5))
    assert args == [(2, 3, 4, 5), (3,), (3,)]
    assert outs == [(2, 3, 4, 5)]
    assert aux == [(3,), (3,)]


def test_convolution_pooling_chain():
    data = mx.sym.Variable('data')
    c = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name='conv1')
    p = mx.sym.Pooling(c, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool1')
    f = mx.sym.FullyConnected(mx.sym.Flatten(p), num_hidden=10, name='fc')
    args, outs, _ = f.infer_shape(data=(8, 1, 28, 28))
    shapes = dict(zip(f.list_arguments(), args))
    assert shapes['conv1_weight'] == (20, 1, 5, 5)
    assert shapes['conv1_bias'] == (20,)
    # conv: 28 - 5 + 1 = 24; pool: 24 / 2 = 12; flatten: 20 * 12 * 12
    assert shapes['fc_weight'] == (10, 20 * 12 * 12)
    assert outs == [(8, 10)]


# --- dtypes -----------------------------------------------------------------------------------

def test_infer_type_float64_propagates():
    net = mlp((8, 3))
    args, outs, aux = net.infer_type(data='float64')
    assert args == [np.float64] * len(net.list_arguments())
    assert outs == [np.float64]
    assert aux == []


def test_infer_type_positional_and_incomplete():
    a = mx.sym.Variable('a')
    b = mx.sym.Variable('b')
    s = a + b
    assert s.infer_type(np.float32) == ([np.float32, np.float32], [np.float32], [])
    g = mx.sym.Group([mx.sym.Activation(a, act_type='relu'), mx.sym.Activation(b, act_type='relu')])
    assert g.infer_type(a='float32') == (None, None, None)


def test_batchnorm_float16_keeps_float32_params():
    net = mx.sym.BatchNorm(mx.sym.Variable('data'), name='bn1')
    args, outs, aux = net.infer_type(data='float16')
    assert args == [np.float16, np.float32, np.float32]
    assert outs == [np.float16]
    assert aux == [np.float32, np.float32]


def test_variable_dtype_attr_is_used():
    net = mx.sym.Activation(mx.sym.Variable('x', dtype='float64'), act_type='relu')
    assert net.infer_type() == ([np.float64], [np.float64], [])


def test_conflicting_dtypes():
    s = mx.sym.elemwise_add(mx.sym.Variable('a'), mx.sym.Variable('b'), name='add1')
    with pytest.raises(DTypeError) as err:
        s.infer_type(a='float32', b='float64')
    msg = str(err.value)
    assert "elemwise_add 'add1'" in msg and 'float32' in msg and 'float64' in msg


def test_unknown_dtype():
    with pytest.raises(DTypeError, match="'data'"):
        fc1().infer_type(data='complex64')


# --- errors -----------------------------------------------------------------------------------

def test_unknown_argument_name():
    with pytest.raises(MXNetError, match=r"infer_shape: unknown argument 'dta'.*\['data'"):
        fc1().infer_shape(dta=(1, 2))
    with pytest.raises(MXNetError, match=r"infer_type: unknown argument 'dta'"):
        fc1().infer_type(dta='float32')


def test_too_many_positional_shapes():
    with pytest.raises(MXNetError, match='3 arguments'):
        fc1().infer_shape((1, 2), (3, 4), (5,), (6,))


def test_bad_shape_value():
    with pytest.raises(ShapeError, match="'data'"):
        fc1().infer_shape(data=5)
    with pytest.raises(ShapeError, match="negative"):
        fc1().infer_shape(data=(2, -2))
    assert fc1().infer_shape(data=(2, -1)) == (None, None, None)    # -1: an unknown size, as 0


def test_wrong_rank_names_op_node_argument_and_shape():
    net = mx.sym.Convolution(mx.sym.Variable('data'), kernel=(3, 3), num_filter=4, name='conv1')
    with pytest.raises(ShapeError) as err:
        net.infer_shape(data=(2, 3))
    msg = str(err.value)
    assert "Convolution 'conv1'" in msg and "'data'" in msg and '(2,3)' in msg


def test_shared_weight_with_different_input_dims():
    w = mx.sym.Variable('w')
    a = mx.sym.FullyConnected(mx.sym.Variable('x'), weight=w, num_hidden=4, name='fa')
    b = mx.sym.FullyConnected(mx.sym.Variable('y'), weight=w, num_hidden=4, name='fb')
    with pytest.raises(ShapeError) as err:
        mx.sym.Group([a, b]).infer_shape(x=(2, 3), y=(2, 5))
    msg = str(err.value)
    assert "FullyConnected 'fb'" in msg and "'weight'" in msg
    assert '(4,3)' in msg and '(4,5)' in msg


def test_elementwise_shape_conflict():
    s = mx.sym.elemwise_add(mx.sym.Variable('a'), mx.sym.Variable('b'), name='add1')
    with pytest.raises(ShapeError) as err:
        s.infer_shape(a=(2, 3), b=(3, 2))
    msg = str(err.value)
    assert "elemwise_add 'add1'" in msg and "'rhs'" in msg and '(2,3)' in msg and '(3,2)' in msg


def test_kernel_bigger_than_input():
    net = mx.sym.Convolution(mx.sym.Variable('data'), kernel=(5, 5), num_filter=4, name='conv1')
    with pytest.raises(ShapeError, match=r"Convolution 'conv1'.*'data'.*\(2,3,4,4\)"):
        net.infer_shape(data=(2, 3, 4, 4))


def test_bad_op_params():
    with pytest.raises(ParamError, match=r"Convolution.*num_filter"):
        mx.sym.Convolution(mx.sym.Variable('data'), kernel=(3, 3), num_filter=-1)
    with pytest.raises(ParamError, match=r"Convolution.*kernel"):
        mx.sym.Convolution(mx.sym.Variable('data'), kernel='abc', num_filter=2)
    with pytest.raises(ParamError, match=r"Pooling.*pool_type"):
        mx.sym.Pooling(mx.sym.Variable('data'), kernel=(2, 2), pool_type='median')


def test_bad_shape_attr_on_variable():
    v = mx.sym.Variable('data', attr={'__shape__': 'not a shape'})
    net = mx.sym.Activation(v, act_type='relu')
    with pytest.raises(MXNetError, match="__shape__"):
        net.infer_shape()


def test_bad_dtype_attr_on_variable():
    v = mx.sym.Variable('data', attr={'__dtype__': '99'})
    with pytest.raises(DTypeError, match=r"'data'.*__dtype__"):
        mx.sym.Activation(v, act_type='relu').infer_type()

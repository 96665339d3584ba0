"""The Symbol API: naming, listing, composition, attributes, arithmetic, copying, errors."""
from __future__ import annotations

import copy
import json
import pickle

import pytest

import symjit as mx
from symjit.base import MXNetError, ParamError


def mlp() -> mx.sym.Symbol:
    data = mx.sym.Variable('data')
    fc1 = mx.sym.FullyConnected(data=data, name='fc1', num_hidden=128)
    act = mx.sym.Activation(data=fc1, name='relu1', act_type='relu')
    fc2 = mx.sym.FullyConnected(data=act, name='fc2', num_hidden=10)
    return mx.sym.SoftmaxOutput(data=fc2, name='softmax')


# --- naming -----------------------------------------------------------------------------------

def test_auto_names_count_per_hint():
    with mx.name.NameManager():
        x = mx.sym.Variable('x')
        a = mx.sym.FullyConnected(x, num_hidden=3)
        b = mx.sym.FullyConnected(a, num_hidden=3)
        c = mx.sym.Activation(b, act_type='tanh')
    assert (a.name, b.name, c.name) == ('fullyconnected0', 'fullyconnected1', 'activation0')
    assert b.list_arguments() == ['x', 'fullyconnected0_weight', 'fullyconnected0_bias',
                                  'fullyconnected1_weight', 'fullyconnected1_bias']


def test_name_manager_scopes_are_independent():
    with mx.name.NameManager():
        first = mx.sym.Activation(mx.sym.Variable('x'), act_type='relu')
    with mx.name.NameManager():
        second = mx.sym.Activation(mx.sym.Variable('x'), act_type='relu')
    assert first.name == second.name == 'activation0'


def test_parameter_and_label_names():
    net = mlp()
    assert net.list_arguments() == ['data', 'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias',
                                    'softmax_label']
    assert net.list_outputs() == ['softmax_output']
    assert net.list_auxiliary_states() == []


def test_batchnorm_aux_states():
    bn = mx.sym.BatchNorm(data=mx.sym.Variable('data'), name='bn1')
    assert bn.list_arguments() == ['data', 'bn1_gamma', 'bn1_beta']
    assert bn.list_auxiliary_states() == ['bn1_moving_mean', 'bn1_moving_var']
    assert bn.list_inputs() == ['data', 'bn1_gamma', 'bn1_beta', 'bn1_moving_mean', 'bn1_moving_var']
    assert bn.list_outputs() == ['bn1_output']


def test_explicit_parameter_variable():
    fc = mx.sym.FullyConnected(data=mx.sym.Variable('data'), weight=mx.sym.Variable('myweight'),
                               name='fc1', num_hidden=4)
    assert fc.list_arguments() == ['data', 'myweight', 'fc1_bias']


def test_no_bias_drops_the_bias_argument():
    fc = mx.sym.FullyConnected(data=mx.sym.Variable('data'), name='fc1', num_hidden=4, no_bias=True)
    assert fc.list_arguments() == ['data', 'fc1_weight']


def test_prefix_applies_to_given_and_automatic_names():
    with mx.name.Prefix('mlp_'):
        data = mx.sym.Variable('data')
        fc = mx.sym.FullyConnected(data=data, name='fc1', num_hidden=4)
        act = mx.sym.Activation(fc, act_type='relu')
    # as in MXNet, Prefix renames operators (and the variables they create), not Variable()s
    assert fc.list_arguments() == ['data', 'mlp_fc1_weight', 'mlp_fc1_bias']
    assert act.name == 'mlp_activation0'


def test_variables_share_by_name_object_not_by_string():
    w = mx.sym.Variable('w')
    a = mx.sym.FullyConnected(mx.sym.Variable('x'), weight=w, num_hidden=2, no_bias=True, name='a')
    b = mx.sym.FullyConnected(a, weight=w, num_hidden=2, no_bias=True, name='b')
    assert b.list_arguments() == ['x', 'w']


# --- structure --------------------------------------------------------------------------------

def test_get_internals_and_indexing_by_name():
    net = mlp()
    internals = net.get_internals()
    assert internals.list_outputs() == [
        'data', 'fc1_weight', 'fc1_bias', 'fc1_output', 'relu1_output', 'fc2_weight', 'fc2_bias',
        'fc2_output', 'softmax_label', 'softmax_output']
    fc1 = internals['fc1_output']
    assert fc1.list_outputs() == ['fc1_output']
    assert fc1.list_arguments() == ['data', 'fc1_weight', 'fc1_bias']
    assert internals[3].list_outputs() == ['fc1_output']
    assert internals[-1].list_outputs() == ['softmax_output']


def test_getitem_errors():
    net = mlp().get_internals()
    with pytest.raises(MXNetError, match="no output named 'fc9_output'"):
        net['fc9_output']
    with pytest.raises(IndexError):
        net[100]
    with pytest.raises(TypeError):
        net[1.5]


def test_batchnorm_hidden_outputs_are_not_listed():
    bn = mx.sym.BatchNorm(data=mx.sym.Variable('data'), name='bn1')
    assert len(bn) == 1
    assert 'bn1_mean' not in bn.get_internals().list_outputs()
    bn3 = mx.sym.BatchNorm(data=mx.sym.Variable('data'), name='bn2', output_mean_var=True)
    assert bn3.list_outputs() == ['bn2_output', 'bn2_mean', 'bn2_var']


def test_group_and_iteration():
    a = mx.sym.Variable('a')
    fa = mx.sym.Activation(a, act_type='relu', name='ra')
    fb = mx.sym.Activation(mx.sym.Variable('b'), act_type='tanh', name='tb')
    g = mx.sym.Group([fa, fb])
    assert g.list_outputs() == ['ra_output', 'tb_output']
    assert g.list_arguments() == ['a', 'b']
    assert g.name is None
    assert [s.name for s in g] == ['ra', 'tb']
    assert g[1].list_arguments() == ['b']


def test_get_children():
    fc = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc1')
    assert fc.get_children().list_outputs() == ['data', 'fc1_weight', 'fc1_bias']
    assert mx.sym.Variable('x').get_children() is None


def test_repr():
    assert repr(mx.sym.Variable('data')) == '<Symbol data>'
    g = mx.sym.Group([mx.sym.Variable('a'), mx.sym.Variable('b')])
    assert 'a' in repr(g) and 'b' in repr(g) and 'group' in repr(g)


# --- composition ------------------------------------------------------------------------------

def test_compose_tutorial_example():
    net = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data=net, name='fc1', num_hidden=10)
    net2 = mx.sym.Variable('data2')
    net2 = mx.sym.FullyConnected(data=net2, name='net2', num_hidden=10)
    composed_net = net(data=net2, name='compose')
    assert composed_net.list_arguments() == ['data2', 'net2_weight', 'net2_bias',
                                             'compose_fc1_weight', 'compose_fc1_bias']
    # the original symbol is unchanged
    assert net.list_arguments() == ['data', 'fc1_weight', 'fc1_bias']


def test_compose_without_name_and_positionally():
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), name='fc1', num_hidden=10)
    inner = mx.sym.Activation(mx.sym.Variable('x'), act_type='relu', name='r')
    assert net(data=inner).list_arguments() == ['x', 'fc1_weight', 'fc1_bias']
    assert net(inner).list_arguments() == ['x', 'fc1_weight', 'fc1_bias']


def test_compose_errors():
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), name='fc1', num_hidden=10)
    other = mx.sym.Variable('x')
    with pytest.raises(MXNetError, match="'nope' is not an input"):
        net(nope=other)
    group = mx.sym.Group([other, mx.sym.Variable('y')])
    with pytest.raises(TypeError, match="'data'"):
        net(data=group)


# --- attributes -------------------------------------------------------------------------------

def test_variable_attributes():
    v = mx.sym.Variable('w', shape=(3, 4), dtype='float64', lr_mult=0.5, wd_mult=2,
                        init='[\"zero\", {}]', attr={'mood': 'happy'})
    assert v.attr('__shape__') == '(3, 4)'
    assert v.attr('__dtype__') == '1'  # MXNet's dtype flag for float64
    assert v.attr('__lr_mult__') == '0.5'
    assert v.attr('lr_mult') == '0.5'  # hidden keys are found under either name
    assert v.attr('__wd_mult__') == '2'
    assert v.attr('__init__') == '["zero", {}]'
    assert v.attr('mood') == 'happy'
    assert v.attr('missing') is None


def test_hidden_keys_are_stored_in_dunder_form():
    v = mx.sym.Variable('w', attr={'lr_mult': '0.1', 'ctx_group': 'dev1'})
    # stored as __key__ (the JSON has only that form); listed under both names, as MXNet lists them
    assert v.list_attr() == {'__lr_mult__': '0.1', '__ctx_group__': 'dev1',
                             'lr_mult': '0.1', 'ctx_group': 'dev1'}
    assert v.attr('ctx_group') == 'dev1'
    assert json.loads(v.tojson())['nodes'][0]['attrs'] == {'__lr_mult__': '0.1', '__ctx_group__': 'dev1'}


def test_attribute_keywords_at_op_creation():
    data = mx.sym.Variable('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc', lr_mult=0, wd_mult=2, __layout__='NC')
    attrs = fc.list_attr()
    assert attrs['__lr_mult__'] == '0' and attrs['lr_mult'] == '0' and attrs['__wd_mult__'] == '2'
    assert fc.attr('__layout__') == 'NC' and attrs['num_hidden'] == '3'
    assert fc.attr_dict()['fc_weight']['__lr_mult__'] == '0'    # the variables it creates carry them
    node = [n for n in json.loads(fc.tojson())['nodes'] if n['name'] == 'fc'][0]
    assert node['attrs'] == {'num_hidden': '3', '__lr_mult__': '0', '__wd_mult__': '2', '__layout__': 'NC'}
    with pytest.raises(MXNetError, match="weight_lr_mult.*Variable"):
        mx.sym.FullyConnected(data, num_hidden=3, weight_lr_mult=0)
    with pytest.raises(MXNetError, match="unknown parameter"):
        mx.sym.FullyConnected(data, num_hidden=3, layout_='NC')


def test_op_attrs_params_and_attr_dict():
    fc = mx.sym.FullyConnected(mx.sym.Variable('data'), name='fc1', num_hidden=10,
                               attr={'mood': 'sad'})
    assert fc.attr('num_hidden') == '10'
    assert fc.attr('mood') == 'sad'
    d = fc.attr_dict()
    assert d['fc1']['num_hidden'] == '10' and d['fc1']['mood'] == 'sad'
    # variables an op creates carry a copy of its attributes (MXNet does the same)
    assert d['fc1_weight'] == {'mood': 'sad', 'num_hidden': '10'}
    assert 'data' not in d
    rec = fc.list_attr(recursive=True)
    assert rec['fc1$num_hidden'] == '10'


def test_set_attr():
    fc = mx.sym.FullyConnected(mx.sym.Variable('data'), name='fc1', num_hidden=10)
    fc._set_attr(mood='calm', lr_mult='2')
    assert fc.attr('mood') == 'calm'
    assert fc.attr('__lr_mult__') == '2'
    with pytest.raises(TypeError, match="'mood'"):
        fc._set_attr(mood=3)


def test_attr_scope():
    with mx.AttrScope(ctx_group='dev1', group='4'):
        data = mx.sym.Variable('data')
        with mx.AttrScope(group='5'):
            fc = mx.sym.FullyConnected(data, name='fc1', num_hidden=10)
        plain = mx.sym.Variable('plain', attr={'group': '1'})
    outside = mx.sym.Variable('outside')
    assert data.attr('ctx_group') == 'dev1' and data.attr('group') == '4'
    assert fc.attr('__ctx_group__') == 'dev1' and fc.attr('group') == '5'
    assert fc.attr_dict()['fc1_weight']['group'] == '5'
    assert plain.attr('group') == '1'
    assert outside.list_attr() == {}
    with pytest.raises(TypeError, match="'group'"):
        mx.AttrScope(group=4)


# --- arithmetic -------------------------------------------------------------------------------

@pytest.mark.parametrize("expr, op, scalar", [
    (lambda a: a + 1, '_plus_scalar', '1.0'),
    (lambda a: 1 + a, '_plus_scalar', '1.0'),
    (lambda a: 1 - a, '_rminus_scalar', '1.0'),
    (lambda a: a - 2, '_minus_scalar', '2.0'),
    (lambda a: a * 3, '_mul_scalar', '3.0'),
    (lambda a: a / 2, '_div_scalar', '2.0'),
    (lambda a: 2 / a, '_rdiv_scalar', '2.0'),
    (lambda a: a ** 2, '_power_scalar', '2.0'),
    (lambda a: 2 ** a, '_rpower_scalar', '2.0'),
    (lambda a: -a, '_mul_scalar', '-1.0'),
    (lambda a: a > 0, '_greater_scalar', '0.0'),
    (lambda a: a <= 1, '_lesser_equal_scalar', '1.0'),
    (lambda a: a == 1, '_equal_scalar', '1.0'),
])
def test_scalar_arithmetic_builds_symbols(expr, op, scalar):
    import json
    s = expr(mx.sym.Variable('a'))
    assert isinstance(s, mx.sym.Symbol)
    assert s.list_arguments() == ['a']
    node = json.loads(s.tojson())['nodes'][-1]
    assert node['op'] == op
    assert float(node['attrs']['scalar']) == float(scalar)


@pytest.mark.parametrize("expr, op", [
    (lambda a, b: a + b, 'elemwise_add'), (lambda a, b: a - b, 'elemwise_sub'),
    (lambda a, b: a * b, 'elemwise_mul'), (lambda a, b: a / b, 'elemwise_div'),
    (lambda a, b: a ** b, '_power'), (lambda a, b: a > b, '_greater'),
    (lambda a, b: a != b, '_not_equal'),
])
def test_symbol_arithmetic(expr, op):
    import json
    s = expr(mx.sym.Variable('a'), mx.sym.Variable('b'))
    assert s.list_arguments() == ['a', 'b']
    assert json.loads(s.tojson())['nodes'][-1]['op'] == op


def test_arithmetic_auto_names():
    with mx.name.NameManager():
        a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
        assert (a + b).name == '_plus0'
        assert (a + b).name == '_plus1'
        assert (a * 2).name == '_mulscalar0'


def test_symbol_has_no_truth_value():
    with pytest.raises(MXNetError, match="__bool__.*not implemented for Symbol"):
        bool(mx.sym.Variable('a') == mx.sym.Variable('b'))


def test_arithmetic_with_unsupported_type():
    with pytest.raises(TypeError):
        mx.sym.Variable('a') + 'x'


# --- copying ----------------------------------------------------------------------------------

def test_deepcopy_is_independent():
    net = mlp()
    dup = copy.deepcopy(net)
    assert dup.tojson() == net.tojson()
    dup._set_attr(mood='changed')
    assert net.attr('mood') is None


def test_pickle_round_trip():
    v = mx.sym.Variable('data', shape=(2, 3), attr={'mood': 'ok'})
    net = mx.sym.FullyConnected(v, name='fc1', num_hidden=7)
    back = pickle.loads(pickle.dumps(net))
    assert back.tojson() == net.tojson()
    assert back.list_arguments() == net.list_arguments()
    assert back.get_internals()['data'].attr('mood') == 'ok'
    assert back.infer_shape()[1] == [(2, 7)]


# --- errors -----------------------------------------------------------------------------------

def test_bad_param_names_the_op_and_param():
    with pytest.raises(ParamError, match=r"FullyConnected.*num_hidden"):
        mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=0)
    with pytest.raises(ParamError, match=r"FullyConnected.*num_hidden.*missing"):
        mx.sym.FullyConnected(mx.sym.Variable('data'))
    with pytest.raises(ParamError, match=r"Activation.*act_type.*'swish'"):
        mx.sym.Activation(mx.sym.Variable('data'), act_type='swish')
    with pytest.raises(ParamError, match=r"FullyConnected.*unknown parameter.*'num_hiden'"):
        mx.sym.FullyConnected(mx.sym.Variable('data'), num_hiden=3)


def test_group_as_op_input_is_rejected():
    g = mx.sym.Group([mx.sym.Variable('a'), mx.sym.Variable('b')])
    with pytest.raises(MXNetError, match=r"FullyConnected 'fc1'.*'data'.*group of 2"):
        mx.sym.FullyConnected(data=g, num_hidden=2, name='fc1')


def test_unknown_input_name_for_op():
    with pytest.raises(MXNetError, match=r"FullyConnected 'fc1'.*unknown input 'wieght'"):
        mx.sym.FullyConnected(data=mx.sym.Variable('d'), wieght=mx.sym.Variable('w'),
                              num_hidden=2, name='fc1')


def test_an_input_given_as_none_is_not_given():
    # an operator's generated function takes every input by keyword with None for "not given"
    x = mx.sym.Variable("x")
    rev = mx.sym.SequenceReverse(data=x, sequence_length=None, use_sequence_length=False)
    assert rev.list_arguments() == ["x"]
    fc = mx.sym.FullyConnected(data=x, bias=None, no_bias=True, num_hidden=2, name="fc")
    assert fc.list_arguments() == ["x", "fc_weight"]
    data = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    got = mx.nd.SequenceReverse(mx.nd.array(data), sequence_length=None).asnumpy().tolist()
    assert got == data[::-1]
    with pytest.raises(ParamError, match=r"relu: unknown parameter\(s\) \['foo'\]"):
        mx.sym.relu(data=x, foo=None)   # a None for a name that is no input is still an error
    with pytest.raises(ParamError, match=r"unknown parameter\(s\) \['foo'\]"):
        mx.nd.relu(mx.nd.ones((2,)), foo=None)


def test_positional_non_symbol_is_rejected():
    with pytest.raises(TypeError, match="FullyConnected"):
        mx.sym.FullyConnected(3, num_hidden=2)


def test_variable_needs_a_name():
    with pytest.raises(TypeError, match="Variable"):
        mx.sym.Variable('')


def test_gen_atomic_symbol_keeps_the_head_op_alone():
    data, w = mx.sym.Variable("data"), mx.sym.Variable("w")
    y = mx.sym.RNN(mx.sym.relu(data), w, mx.sym.Variable("h0"), mx.sym.Variable("c0"), state_size=4,
                   num_layers=1, state_outputs=True, mode="lstm", name="lstm")
    atom = y._gen_atomic_symbol()
    assert atom.list_arguments() == ["data", "parameters", "state", "state_cell"]
    assert atom.list_outputs() == y.list_outputs()
    assert atom.attr_dict()["lstm"]["state_size"] == "4"
    with pytest.raises(mx.MXNetError, match="variable"):
        data._gen_atomic_symbol()


def test_variable_shape_given_as_an_int_is_one_dimensional():
    """``shape=(1)`` is the int 1 in Python; MXNet's shape parser reads it as ``(1,)``."""
    b = mx.sym.Variable("b", shape=(3))
    assert b.attr("__shape__") == "(3,)"
    y = mx.sym.broadcast_add(mx.sym.Variable("x"), b)
    _, out_shapes, _ = y.infer_shape(x=(2, 3))
    assert out_shapes == [(2, 3)]
    with pytest.raises(TypeError):
        mx.sym.Variable("c", shape="3")

"""Symbol JSON: reading MXNet 1.x's files, writing its format, round trips, malformed files."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symjit as mx
from symjit.base import FormatError

SHARED = Path(__file__).resolve().parents[1].parent / 'shared'
MLP_JSON = SHARED / 'data' / 'mxnet' / 'mlp-symbol.json'


def mxnet_doc() -> dict:
    return json.loads(MLP_JSON.read_text())


def build_mlp() -> mx.sym.Symbol:
    """The network MXNet 1.9.1 saved as mlp-symbol.json (see shared/docs/mxnet-file-formats.md)."""
    net = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(net, name='fc1', num_hidden=16)
    net = mx.sym.BatchNorm(net, name='bn1')
    net = mx.sym.Activation(net, name='relu1', act_type='relu')
    net = mx.sym.FullyConnected(net, name='fc2', num_hidden=3)
    return mx.sym.SoftmaxOutput(net, name='softmax')


def big_graph() -> mx.sym.Symbol:
    """A 20-operator graph touching most op families, with a multi-output op and two heads."""
    data = mx.sym.Variable('data', shape=(2, 3, 8, 8))
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name='conv1')      # 1
    x = mx.sym.BatchNorm(x, fix_gamma=False, eps=1e-4, name='bn1')                           # 2
    x = mx.sym.Activation(x, act_type='relu', name='relu1')                                  # 3
    pool = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool1')    # 4
    y = mx.sym.Convolution(pool, kernel=(1, 1), num_filter=4, no_bias=True, name='conv2')    # 5
    y = mx.sym.LeakyReLU(y, act_type='leaky', slope=0.1, name='lrelu')                       # 6
    y = pool + y                                                                             # 7
    cat = mx.sym.Concat(y, pool, dim=1, name='cat')                                          # 8
    parts = mx.sym.SliceChannel(cat, num_outputs=2, axis=1, name='split')                    # 9
    z = parts[0] * parts[1]                                                                  # 10
    z = z * 0.5                                                                              # 11
    z = mx.sym.Dropout(z, p=0.3, name='drop')                                                # 12
    z = mx.sym.Reshape(z, shape=(0, -1), name='flat')                                        # 13
    fc1 = mx.sym.FullyConnected(z, num_hidden=16, name='fc1',
                                attr={'lr_mult': '0.5', 'mood': 'ok'})                       # 14
    h = mx.sym.Activation(fc1, act_type='tanh', name='tanh1')                                # 15
    h = mx.sym.FullyConnected(h, num_hidden=5, name='fc2')                                   # 16
    h = 1 - h                                                                                # 17
    h = mx.sym.clip(h, a_min=-3.0, a_max=3.0, name='clip')                                   # 18
    out = mx.sym.SoftmaxOutput(h, name='softmax')                                            # 19
    side = mx.sym.BlockGrad(fc1, name='feat')                                                # 20
    return mx.sym.Group([out, side])


# --- MXNet's file -----------------------------------------------------------------------------

def test_load_mxnet_mlp():
    net = mx.sym.load(str(MLP_JSON))
    assert net.list_arguments() == ['data', 'fc1_weight', 'fc1_bias', 'bn1_gamma', 'bn1_beta',
                                    'fc2_weight', 'fc2_bias', 'softmax_label']
    assert net.list_auxiliary_states() == ['bn1_moving_mean', 'bn1_moving_var']
    assert net.list_outputs() == ['softmax_output']
    internals = net.get_internals()
    # op attributes MXNet copied onto the variables it created stay plain string attributes
    assert internals['fc1_weight'].attr('num_hidden') == '16'
    assert internals['bn1_moving_var'].attr('__init__') == '["one", {}]'
    assert internals['fc2_output'].attr('num_hidden') == '3'
    args, outs, aux = net.infer_shape(data=(6, 8))
    assert dict(zip(net.list_arguments(), args))['fc1_weight'] == (16, 8)
    assert outs == [(6, 3)] and aux == [(16,), (16,)]


def test_mxnet_mlp_reserialises_to_the_same_document():
    net = mx.sym.load(MLP_JSON)
    assert json.loads(net.tojson()) == mxnet_doc()


def test_our_mlp_writes_what_mxnet_writes():
    ours = json.loads(build_mlp().tojson())
    theirs = mxnet_doc()
    assert list(ours) == list(theirs)
    assert ours == theirs


# --- round trips ------------------------------------------------------------------------------

def test_twenty_op_round_trip_json_and_shapes():
    net = big_graph()
    text = net.tojson()
    ops = [n['op'] for n in json.loads(text)['nodes'] if n['op'] != 'null']
    assert len(ops) == 20
    back = mx.sym.load_json(text)
    assert back.tojson() == text
    assert back.list_arguments() == net.list_arguments()
    assert back.list_auxiliary_states() == net.list_auxiliary_states()
    assert back.list_outputs() == net.list_outputs() == ['softmax_output', 'feat_output']
    assert back.infer_shape() == net.infer_shape()
    args, outs, _ = net.infer_shape()
    assert outs == [(2, 5), (2, 16)]
    assert dict(zip(net.list_arguments(), args))['fc1_weight'] == (16, 64)


def test_round_trip_keeps_params_and_user_attrs():
    back = mx.sym.load_json(big_graph().tojson())
    internals = back.get_internals()
    assert internals['conv1_output'].attr('kernel') == '(3, 3)'
    assert internals['bn1_output'].attr('fix_gamma') == 'False'
    assert internals['fc1_output'].attr('lr_mult') == '0.5'
    assert internals['fc1_output'].attr('mood') == 'ok'
    assert internals['fc1_weight'].attr('__lr_mult__') == '0.5'
    assert internals['data'].attr('__shape__') == '(2, 3, 8, 8)'


def test_json_attrs_hold_only_given_params_as_strings():
    doc = json.loads(big_graph().tojson())
    by_name = {n['name']: n for n in doc['nodes']}
    assert by_name['conv1']['attrs'] == {'kernel': '(3, 3)', 'pad': '(1, 1)', 'num_filter': '4'}
    assert by_name['pool1']['attrs'] == {'kernel': '(2, 2)', 'stride': '(2, 2)', 'pool_type': 'max'}
    assert by_name['cat']['attrs'] == {'dim': '1', 'num_args': '2'}
    assert by_name['fc1']['attrs'] == {'num_hidden': '16', '__lr_mult__': '0.5', 'mood': 'ok'}
    for node in doc['nodes']:
        assert all(isinstance(v, str) for v in node.get('attrs', {}).values())


def test_aux_inputs_carry_version_one():
    doc = json.loads(build_mlp().tojson())
    bn = next(n for n in doc['nodes'] if n['name'] == 'bn1')
    assert [e[2] for e in bn['inputs']] == [0, 0, 0, 1, 1]


def test_document_tables():
    net = big_graph()
    doc = json.loads(net.tojson())
    nodes = doc['nodes']
    assert doc['arg_nodes'] == [i for i, n in enumerate(nodes) if n['op'] == 'null']
    assert doc['attrs'] == {'mxnet_version': ['int', 10901]}
    counts = {'BatchNorm': 3, 'SliceChannel': 2, 'Dropout': 2}  # Dropout's mask is hidden
    expect = [0]
    for n in nodes:
        expect.append(expect[-1] + counts.get(n['op'], 1))
    assert doc['node_row_ptr'] == expect
    index = {n['name']: i for i, n in enumerate(nodes)}
    assert doc['heads'] == [[index['softmax'], 0, 0], [index['feat'], 0, 0]]
    for i, n in enumerate(nodes):
        assert all(e[0] < i for e in n['inputs'])


def test_hidden_output_reference_round_trips():
    doc = mxnet_doc()
    bn = next(i for i, n in enumerate(doc['nodes']) if n['name'] == 'bn1')
    doc['heads'].append([bn, 1, 0])  # BatchNorm's hidden batch mean
    net = mx.sym.load_json(json.dumps(doc))
    assert net.list_outputs() == ['softmax_output', 'bn1_mean']
    assert json.loads(net.tojson())['heads'] == doc['heads']
    assert net.infer_shape(data=(4, 8))[1] == [(4, 3), (16,)]


def test_save_and_load_file(tmp_path):
    net = big_graph()
    path = tmp_path / 'net-symbol.json'
    net.save(str(path))
    assert mx.sym.load(str(path)).tojson() == net.tojson()


def test_legacy_param_and_attr_keys():
    doc = {
        'nodes': [
            {'op': 'null', 'name': 'data', 'param': {}, 'inputs': [], 'backward_source_id': -1,
             'attr': {'__shape__': '(4, 5)'}},
            {'op': 'null', 'name': 'fc_weight', 'param': {}, 'inputs': [], 'backward_source_id': -1},
            {'op': 'FullyConnected', 'name': 'fc', 'param': {'num_hidden': '2', 'no_bias': 'True'},
             'attr': {'ctx_group': 'dev1'}, 'inputs': [[0, 0], [1, 0]], 'backward_source_id': -1},
        ],
        'arg_nodes': [0, 1],
        'heads': [[2, 0]],
    }
    net = mx.sym.load_json(json.dumps(doc))
    assert net.list_arguments() == ['data', 'fc_weight']
    assert net.attr('no_bias') == 'True'
    assert net.attr('ctx_group') == 'dev1'
    assert net.infer_shape()[1] == [(4, 2)]


def test_load_json_accepts_bytes():
    text = build_mlp().tojson()
    assert mx.sym.load_json(text.encode()).tojson() == text


# --- malformed files --------------------------------------------------------------------------

def fc_doc() -> dict:
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc1')
    return json.loads(net.tojson())


def broken(edit) -> str:
    doc = copy.deepcopy(fc_doc())
    edit(doc)
    return json.dumps(doc)


def _set(path, value):
    def edit(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


@pytest.mark.parametrize('edit, pattern', [
    (_set(['nodes', 3, 'inputs', 1], [7, 0, 0]), r"node 3 \('fc1'\).*node 7, which does not exist"),
    (_set(['nodes', 3, 'inputs', 1], [3, 0, 0]), r"cycle: 3 \('fc1'\) -> 3 \('fc1'\)"),
    (_set(['nodes', 3, 'inputs', 1], [-1, 0, 0]), r"node 3 \('fc1'\).*node -1"),
    (_set(['nodes', 3, 'inputs', 1], [1, 2, 0]), r"node 3 \('fc1'\).*output 2 of node 1 \('fc1_weight'\)"),
    (_set(['nodes', 3, 'inputs', 1], [1, '0', 0]), r"node 3 \('fc1'\).*integers"),
    (_set(['nodes', 3, 'inputs', 1], [1, 0, -2]), r"node 3 \('fc1'\).*negative version"),
    (_set(['nodes', 3, 'inputs'], [[0, 0, 0], [1, 0, 0]]), r"node 3 \('fc1'\).*takes 3 inputs.*gives 2"),
    (_set(['nodes', 3, 'inputs'], 'x'), r"node 3 \('fc1'\).*'inputs' must be a list"),
    (_set(['nodes', 3, 'op'], 'FullyConnectedd'), r"node 3 \('fc1'\).*unknown operator 'FullyConnectedd'"),
    (_set(['nodes', 3, 'attrs', 'num_hidden'], 'abc'), r"node 3 \('fc1'\).*FullyConnected.*num_hidden"),
    (_set(['nodes', 3, 'attrs', 'num_hidden'], '-3'), r"node 3 \('fc1'\).*num_hidden"),
    (_set(['nodes', 3, 'attrs', 'num_hidden'], '__import__("os")'), r"node 3 \('fc1'\).*num_hidden"),
    (_set(['nodes', 3, 'attrs', 'num_hidden'], ['4']), r"node 3 \('fc1'\).*'num_hidden' must be a string"),
    (_set(['nodes', 3, 'attrs'], ['num_hidden']), r"node 3 \('fc1'\).*'attrs' must be an object"),
    (_set(['nodes', 3, 'attrs'], {}), r"node 3 \('fc1'\).*num_hidden.*missing"),
    (_set(['nodes', 0, 'inputs'], [[1, 0, 0]]), r"node 0 \('data'\).*variable node must have no inputs"),
    (_set(['nodes', 0, 'attrs'], {'__shape__': 'oops'}), r"node 0 \('data'\).*__shape__"),
    (_set(['nodes', 0, 'attrs'], {'__dtype__': '42'}), r"node 0 \('data'\).*__dtype__"),
    (_set(['nodes', 2], 'node'), r"node 2.*must be an object"),
    (_set(['heads'], [[9, 0, 0]]), r"heads.*node 9"),
    (_set(['heads'], [[3, 1, 0]]), r"heads.*output 1 of node 3 \('fc1'\)"),
    (_set(['heads'], []), r"'heads' is empty"),
    (_set(['arg_nodes'], [0, 3]), r"arg_nodes lists 3"),
    (_set(['node_row_ptr'], [0, 1, 2, 3]), r"node_row_ptr must have 5 entries"),
    (_set(['node_row_ptr'], [1, 2, 3, 4, 5]), r"node_row_ptr must have 5 entries starting at 0"),
    (_set(['node_row_ptr'], [0, 1, 1, 2, 3]), r"node_row_ptr gives node 1 \('fc1_weight'\) 0 output"),
    (_set(['node_row_ptr'], [0, 1, 2, 3, 2]), r"node 3 \('fc1'\) -1 output"),
    (_set(['node_row_ptr'], 'x'), r"'node_row_ptr' must be a list of integers"),
    (_set(['attrs'], {'mxnet_version': 'new'}), r"mxnet_version"),
])
def test_malformed_documents(edit, pattern):
    with pytest.raises(FormatError, match=pattern):
        mx.sym.load_json(broken(edit))


@pytest.mark.parametrize('key', ['nodes', 'heads'])
def test_missing_top_level_keys(key):
    doc = fc_doc()
    del doc[key]
    with pytest.raises(FormatError, match=f"missing or non-list '{key}'"):
        mx.sym.load_json(json.dumps(doc))


@pytest.mark.parametrize('key', ['op', 'name'])
def test_missing_node_keys(key):
    doc = fc_doc()
    del doc['nodes'][3][key]
    with pytest.raises(FormatError, match=f"node 3.*'{key}'"):
        mx.sym.load_json(json.dumps(doc))


def test_truncated_text():
    text = build_mlp().tojson()
    for cut in (1, len(text) // 3, len(text) // 2, len(text) - 2):
        with pytest.raises(FormatError, match='invalid JSON'):
            mx.sym.load_json(text[:cut])


@pytest.mark.parametrize('text, pattern', [
    ('', 'invalid JSON'),
    ('[1, 2]', 'must be an object'),
    ('{"nodes": [], "heads": [[0, 0, 0]]}', 'heads.*node 0'),
    ('[' * 100000 + ']' * 100000, 'symbol JSON'),
])
def test_not_a_symbol_document(text, pattern):
    with pytest.raises(FormatError, match=pattern):
        mx.sym.load_json(text)


def test_not_utf8():
    with pytest.raises(FormatError, match='UTF-8'):
        mx.sym.load_json(b'\xff\xfe{')


def test_load_names_the_file(tmp_path):
    path = tmp_path / 'bad-symbol.json'
    path.write_text('{"nodes": [')
    with pytest.raises(FormatError, match='bad-symbol.json'):
        mx.sym.load(str(path))


def test_unknown_op_attrs_are_kept_as_user_attrs():
    doc = fc_doc()
    doc['nodes'][3]['attrs']['workspace'] = '512'
    net = mx.sym.load_json(json.dumps(doc))
    assert net.attr('workspace') == '512'
    assert json.loads(net.tojson())['nodes'][3]['attrs']['workspace'] == '512'


# --- property: random chains round-trip -------------------------------------------------------

_layer = st.one_of(
    st.tuples(st.just('fc'), st.integers(1, 64), st.booleans()),
    st.tuples(st.just('act'), st.sampled_from(['relu', 'sigmoid', 'tanh', 'softrelu']), st.booleans()),
)
_text = st.text(st.characters(blacklist_categories=('Cs',)), max_size=8)


@settings(max_examples=40, deadline=None)
@given(layers=st.lists(_layer, min_size=1, max_size=6), attr_value=_text, batch=st.integers(1, 5))
def test_random_chains_round_trip(layers, attr_value, batch):
    net = mx.sym.Variable('data', attr={'note': attr_value})
    for i, (kind, arg, flag) in enumerate(layers):
        if kind == 'fc':
            net = mx.sym.FullyConnected(net, num_hidden=arg, no_bias=flag, name=f'l{i}')
        else:
            net = mx.sym.Activation(net, act_type=arg, name=f'l{i}', attr={'odd': attr_value})
    text = net.tojson()
    back = mx.sym.load_json(text)
    assert back.tojson() == text
    assert back.get_internals()['data'].attr('note') == attr_value
    assert back.infer_shape(data=(batch, 7)) == net.infer_shape(data=(batch, 7))

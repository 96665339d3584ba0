"""Symbol files as MXNet builds write them (issue "MXNet compatibility", point 1).

MXNet's pip build with oneDNN runs ``Pooling`` with a hidden second output (its workspace) and
counts it in ``node_row_ptr``; other files come without ``node_row_ptr`` or from versions before
0.9 (``param``/``attr`` keys, no ``attrs``, aux states not listed as inputs, bare ``lr_mult``).
Each file is made here the way MXNet writes it, loaded, and checked to compute what the symbol
built with symjit's API computes; files written by symjit load back the same way.
"""
from __future__ import annotations

import copy
import json
import random

import numpy as np
import pytest

import symjit as mx
from symjit.base import FormatError

HIDDEN_OUTPUTS = {'Pooling': 2}   # what a oneDNN build counts per node (BatchNorm's 3 as everywhere)


def lenet() -> mx.sym.Symbol:
    """MXNet's LeNet tutorial network, named as Gluon's export names it."""
    x = mx.sym.Variable('data')
    x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=20, name='lenet0_conv0_fwd')
    x = mx.sym.Activation(x, act_type='tanh', name='lenet0_conv0_tanh_fwd')
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max', name='lenet0_pool0_fwd')
    x = mx.sym.Convolution(x, kernel=(5, 5), num_filter=50, name='lenet0_conv1_fwd')
    x = mx.sym.Activation(x, act_type='tanh', name='lenet0_conv1_tanh_fwd')
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max', name='lenet0_pool1_fwd')
    x = mx.sym.Flatten(x, name='lenet0_flatten0_flatten0')
    x = mx.sym.FullyConnected(x, num_hidden=500, name='lenet0_dense0_fwd')
    x = mx.sym.Activation(x, act_type='tanh', name='lenet0_dense0_tanh_fwd')
    x = mx.sym.FullyConnected(x, num_hidden=10, name='lenet0_dense1_fwd')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def onednn_doc(sym: mx.sym.Symbol) -> dict:
    """The document a oneDNN build of MXNet 1.9.1 writes: hidden outputs counted in
    node_row_ptr, every op node with Gluon's profiler scope attribute."""
    doc = json.loads(sym.tojson())
    counts = [HIDDEN_OUTPUTS.get(n['op'], 0) or b - a
              for n, a, b in zip(doc['nodes'], doc['node_row_ptr'], doc['node_row_ptr'][1:])]
    doc['node_row_ptr'] = [0] + list(np.cumsum(counts).tolist())
    for n in doc['nodes']:
        if n['op'] != 'null':
            n.setdefault('attrs', {})['__profiler_scope__'] = 'lenet0:'
    return doc


def forward(sym: mx.sym.Symbol, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
    args = {n: mx.nd.array(arrays[n]) for n in sym.list_arguments()}
    aux = {n: mx.nd.array(arrays[n]) for n in sym.list_auxiliary_states()}
    ex = sym.bind(mx.cpu(), args, aux_states=aux or None, grad_req='null')
    return [o.asnumpy() for o in ex.forward()]


def random_inputs(sym: mx.sym.Symbol, **shapes) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    arg_s, _, aux_s = sym.infer_shape(**shapes)
    names = sym.list_arguments() + sym.list_auxiliary_states()
    arrays = {n: rng.uniform(-0.5, 0.5, s) for n, s in zip(names, arg_s + aux_s)}
    for n in sym.list_auxiliary_states():
        arrays[n] = np.abs(arrays[n]) + 0.5   # moving variances must be positive
    return arrays


# --- oneDNN builds: hidden outputs in node_row_ptr ---------------------------------------------

def test_onednn_lenet_file_loads_and_computes_the_same(tmp_path):
    net = lenet()
    doc = onednn_doc(net)
    pools = [i for i, n in enumerate(doc['nodes']) if n['op'] == 'Pooling']
    rows = doc['node_row_ptr']
    assert [rows[i + 1] - rows[i] for i in pools] == [2, 2]      # the file really counts them
    path = tmp_path / 'lenet-symbol.json'
    path.write_text(json.dumps(doc))
    back = mx.sym.load(str(path))
    assert back.list_arguments() == net.list_arguments()
    assert back.list_outputs() == ['softmax_output']
    assert back.infer_shape(data=(2, 1, 28, 28)) == net.infer_shape(data=(2, 1, 28, 28))
    assert back.get_internals()['lenet0_pool0_fwd_output'].attr('__profiler_scope__') == 'lenet0:'
    arrays = random_inputs(net, data=(2, 1, 28, 28))
    np.testing.assert_array_equal(forward(back, arrays)[0], forward(net, arrays)[0])


def test_onednn_file_with_hidden_outputs_on_several_ops():
    """A oneDNN build also counts hidden outputs of ops symjit gives one output (any op may)."""
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc1')
    doc = json.loads(net.tojson())
    doc['node_row_ptr'] = [0, 1, 2, 3, 5]
    back = mx.sym.load_json(json.dumps(doc))
    assert back.infer_shape(data=(2, 3))[1] == [(2, 4)]


def symjit_form(doc: dict) -> dict:
    """The same document with node_row_ptr as symjit (and MXNet without oneDNN) count it."""
    return {**doc, 'node_row_ptr': json.loads(lenet().tojson())['node_row_ptr']}


def test_onednn_file_round_trips_through_symjit():
    """Loaded and saved again, a oneDNN file becomes the portable form of the same graph (only
    node_row_ptr changes), which loads back to the same document."""
    doc = onednn_doc(lenet())
    ours = json.loads(mx.sym.load_json(json.dumps(doc)).tojson())
    assert ours == symjit_form(doc)
    assert ours != doc
    assert json.loads(mx.sym.load_json(json.dumps(ours)).tojson()) == ours


def test_hidden_workspace_output_is_not_an_output_here():
    """An entry naming the workspace output names an output symjit's Pooling does not have."""
    doc = onednn_doc(lenet())
    pool = next(i for i, n in enumerate(doc['nodes']) if n['op'] == 'Pooling')
    doc['heads'].append([pool, 1, 0])
    with pytest.raises(FormatError, match=r"heads: head 1 refers to output 1 of node \d+ "
                                          r"\('lenet0_pool0_fwd'\), a Pooling, which has 1 output"):
        mx.sym.load_json(json.dumps(doc))


# --- files without node_row_ptr, and nodes out of order ----------------------------------------

def test_file_without_node_row_ptr():
    doc = onednn_doc(lenet())
    expect = symjit_form(doc)
    del doc['node_row_ptr']
    assert json.loads(mx.sym.load_json(json.dumps(doc)).tojson()) == expect


def test_nodes_in_any_order_load_as_the_same_graph():
    doc = json.loads(lenet().tojson())
    order = list(range(len(doc['nodes'])))
    random.Random(3).shuffle(order)
    new_index = {old: new for new, old in enumerate(order)}
    nodes = [copy.deepcopy(doc['nodes'][old]) for old in order]
    for n in nodes:
        n['inputs'] = [[new_index[e[0]], e[1], e[2]] for e in n['inputs']]
    shuffled = {'nodes': nodes, 'heads': [[new_index[h[0]], h[1], h[2]] for h in doc['heads']]}
    assert mx.sym.load_json(json.dumps(shuffled)).tojson() == lenet().tojson()


# --- files from MXNet before 0.9 ---------------------------------------------------------------

def legacy_mlp_doc() -> dict:
    """An MXNet 0.8-style document: 'param'/'attr', no top-level attrs, no node_row_ptr,
    two-element entries, backward_source_id, BatchNorm without its aux-state inputs, a bare
    lr_mult, a node without attrs."""
    return {
        'nodes': [
            {'op': 'null', 'name': 'data', 'param': {}, 'inputs': [], 'backward_source_id': -1},
            {'op': 'null', 'name': 'fc1_weight', 'param': {}, 'inputs': [], 'backward_source_id': -1,
             'attr': {'lr_mult': '2.0'}},
            {'op': 'null', 'name': 'fc1_bias', 'inputs': []},
            {'op': 'FullyConnected', 'name': 'fc1', 'param': {'num_hidden': '16'},
             'inputs': [[0, 0], [1, 0], [2, 0]], 'backward_source_id': -1},
            {'op': 'null', 'name': 'bn1_gamma', 'param': {}, 'inputs': []},
            {'op': 'null', 'name': 'bn1_beta', 'param': {}, 'inputs': []},
            {'op': 'BatchNorm', 'name': 'bn1', 'param': {'eps': '0.001', 'fix_gamma': 'False'},
             'inputs': [[3, 0], [4, 0], [5, 0]], 'backward_source_id': -1},
            {'op': 'Activation', 'name': 'relu1', 'param': {'act_type': 'relu'},
             'inputs': [[6, 0]], 'backward_source_id': -1},
            {'op': 'null', 'name': 'fc2_weight', 'param': {}, 'inputs': []},
            {'op': 'null', 'name': 'fc2_bias', 'param': {}, 'inputs': []},
            {'op': 'FullyConnected', 'name': 'fc2', 'param': {'num_hidden': '3'},
             'inputs': [[7, 0], [8, 0], [9, 0]], 'backward_source_id': -1},
            {'op': 'null', 'name': 'softmax_label', 'inputs': []},
            {'op': 'SoftmaxOutput', 'name': 'softmax', 'param': {},
             'inputs': [[10, 0], [11, 0]], 'backward_source_id': -1},
        ],
        'arg_nodes': [0, 1, 2, 4, 5, 8, 9, 11],
        'heads': [[12, 0]],
    }


def test_legacy_file_loads_with_aux_states_and_hidden_keys():
    net = mx.sym.load_json(json.dumps(legacy_mlp_doc()))
    assert net.list_arguments() == ['data', 'fc1_weight', 'fc1_bias', 'bn1_gamma', 'bn1_beta',
                                    'fc2_weight', 'fc2_bias', 'softmax_label']
    assert net.list_auxiliary_states() == ['bn1_moving_mean', 'bn1_moving_var']
    internals = net.get_internals()
    assert internals['fc1_weight'].attr('__lr_mult__') == '2.0'
    assert internals['bn1_moving_var'].attr('__init__') == '["one", {}]'
    assert internals['bn1_moving_mean'].attr('fix_gamma') == 'False'
    assert net.infer_shape(data=(6, 8))[2] == [(16,), (16,)]


def test_legacy_file_computes_what_the_api_builds():
    net = mx.sym.load_json(json.dumps(legacy_mlp_doc()))
    x = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=16, name='fc1')
    x = mx.sym.BatchNorm(x, eps=0.001, fix_gamma=False, name='bn1')
    x = mx.sym.Activation(x, act_type='relu', name='relu1')
    x = mx.sym.FullyConnected(x, num_hidden=3, name='fc2')
    built = mx.sym.SoftmaxOutput(x, name='softmax')
    arrays = random_inputs(built, data=(6, 8))
    arrays['softmax_label'] = np.arange(6) % 3
    np.testing.assert_array_equal(forward(net, arrays)[0], forward(built, arrays)[0])


def test_version_1_files_keep_bare_attribute_names():
    """Since MXNet 0.9 a bare ``lr_mult`` is an ordinary user attribute, kept as written."""
    doc = json.loads(mx.sym.Variable('w', attr={'lr_mult_note': 'x'}).tojson())
    doc['nodes'][0]['attrs']['ctx'] = 'y'
    back = mx.sym.load_json(json.dumps(doc))
    assert back.attr('ctx') == 'y' and back.attr('lr_mult_note') == 'x'
    assert json.loads(back.tojson()) == doc


# --- symjit's files both ways --------------------------------------------------------------------

def test_symjit_file_loads_in_symjit_and_reads_as_mxnet_writes(tmp_path):
    """What symjit writes is MXNet's document: node_row_ptr counts the outputs MXNet's ops have
    (BatchNorm 3), entries are [node, output, version], arg_nodes lists the variables."""
    path = tmp_path / 'lenet-symbol.json'
    lenet().save(str(path))
    doc = json.loads(path.read_text())
    assert set(doc) == {'nodes', 'arg_nodes', 'node_row_ptr', 'heads', 'attrs'}
    assert all(len(e) == 3 for n in doc['nodes'] for e in n['inputs'])
    assert doc['arg_nodes'] == [i for i, n in enumerate(doc['nodes']) if n['op'] == 'null']
    assert mx.sym.load(str(path)).tojson() == path.read_text()


# --- truly inconsistent files keep failing -------------------------------------------------------

def _cycle(doc: dict) -> None:
    names = [n['name'] for n in doc['nodes']]
    conv1, act1 = names.index('lenet0_conv1_fwd'), names.index('lenet0_conv1_tanh_fwd')
    doc['nodes'][conv1]['inputs'][0] = [act1, 0, 0]


def _row_ptr_too_small(doc: dict) -> None:
    doc['heads'].append([doc['heads'][0][0], 0, 0])
    bn = mx.sym.BatchNorm(mx.sym.Variable('x'), output_mean_var=True, name='bn')
    small = json.loads(bn.tojson())
    small['node_row_ptr'] = [0, 1, 2, 3, 4, 5, 6]     # BatchNorm given 1 row, the file uses 3
    doc.clear()
    doc.update(small)


@pytest.mark.parametrize('edit, pattern', [
    (_cycle, r"the inputs form a cycle: \d+ \('lenet0_conv1_fwd'\) -> \d+ \('lenet0_conv1_tanh_fwd'\)"),
    (lambda d: d['nodes'][3]['inputs'].__setitem__(0, [99, 0, 0]), r"node 99, which does not exist"),
    (lambda d: d['nodes'][3]['inputs'].__setitem__(0, [0, 1, 0]),
     r"node 3 \('lenet0_conv0_fwd'\): input 0 \('data'\) refers to output 1 of node 0 \('data'\), "
     r"a variable, which has 1 output"),
    (lambda d: d['nodes'][4]['inputs'].__setitem__(0, [3, 1, 0]),
     r"node 4 \('lenet0_conv0_tanh_fwd'\): input 0 \('data'\) refers to output 1 of node 3 "
     r"\('lenet0_conv0_fwd'\), a Convolution, which has 1 output"),
    (_row_ptr_too_small, r"node_row_ptr gives node 5 \('bn'\) 1 output\(s\), but the file uses 3"),
])
def test_inconsistent_files_are_rejected(edit, pattern):
    doc = onednn_doc(lenet())
    edit(doc)
    with pytest.raises(FormatError, match=pattern):
        mx.sym.load_json(json.dumps(doc))

"""Symbol.infer_shape / infer_shape_partial with unknown dimensions (0 with classic shapes, -1 inside the
engine and with NumPy shape semantics), in both directions."""
from __future__ import annotations

import pytest

import symjit as mx
from symjit.base import ShapeError
from symjit.ops.partial_shape import concat, convolution, merge, split


def _args(sym, **shapes):
    arg, _, _ = sym.infer_shape(**shapes)
    return None if arg is None else dict(zip(sym.list_arguments(), arg))


def test_merge_fills_unknown_dimensions_and_rejects_disagreements():
    assert merge((-1, 4, -1), (3, -1, -1)) == (3, 4, -1)
    assert merge(None, (-1, 2)) == (-1, 2)
    assert merge((0, -1), (-1, 2)) == (0, 2)         # 0 is a size inside the engine
    with pytest.raises(ValueError, match="disagree"):
        merge((0, 4), (3, 4))
    with pytest.raises(ValueError, match="disagree"):
        merge((2, 4), (3, 4))
    with pytest.raises(ValueError, match="ranks"):
        merge((2, 4), (2,))


def test_elementwise_partners_complete_each_other():
    x = mx.sym.var("x", shape=(0, 7))
    y = mx.sym.var("y", shape=(4, 0))
    assert _args(mx.sym.relu(x) * y) == {"x": (4, 7), "y": (4, 7)}


def test_an_output_known_downstream_completes_the_inputs_upstream():
    data = mx.sym.var("data", shape=(0, 6))
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    tail = mx.sym.var("tail", shape=(9, 0))
    assert _args(fc - tail) == {"data": (9, 6), "fc_weight": (3, 6), "fc_bias": (3,), "tail": (9, 3)}


def test_convolution_back_computes_stride_one_spatial_sizes_only():
    data = mx.sym.var("data", shape=(0, 3, 0, 0))
    one = mx.sym.Convolution(data, kernel=(5, 5), pad=(1, 1), num_filter=8, name="c")
    got = _args(one + mx.sym.var("o", shape=(2, 8, 10, 12)))
    assert got["data"] == (2, 3, 12, 14) and got["c_weight"] == (8, 3, 5, 5)
    two = mx.sym.Convolution(data, kernel=(3, 3), stride=(2, 2), num_filter=8, name="s")
    arg, _, _ = (two + mx.sym.var("o", shape=(2, 8, 5, 5))).infer_shape_partial()
    assert arg[0] == (2, 3, 0, 0)          # a stride of 2 leaves the input length open
    # the weight's channels flow back into the data
    assert convolution({"kernel": (3,), "num_filter": 4, "num_group": 2, "no_bias": True, "stride": (),
                        "dilate": (), "pad": ()}, [(-1, -1, 7), (4, 3, 3)], [None], [])[0][0] == (-1, 6, 7)


def test_concat_and_split_infer_the_one_missing_size():
    params = {"dim": 1}
    ins, outs, _ = concat(params, [(-1, 2), (-1, -1), (5, 3)], [(-1, 9)], [])
    assert ins == [(5, 2), (5, 4), (5, 3)] and outs == [(5, 9)]
    ins, outs, _ = split({"num_outputs": 2, "axis": 0, "squeeze_axis": False}, [None], [(3, -1), (-1, 4)], [])
    assert ins == [(6, 4)] and outs == [(3, 4), (3, 4)]
    a = mx.sym.var("a", shape=(0, 4))
    parts = mx.sym.SliceChannel(a, num_outputs=4, axis=1, squeeze_axis=True)
    assert _args(parts[2] + mx.sym.var("b", shape=(7,))) == {"a": (7, 4), "b": (7,)}


def test_partial_results_keep_zeros_and_complete_inference_gives_nones():
    data = mx.sym.var("data", shape=(2, 0, 0, 0))
    conv = mx.sym.Convolution(mx.sym.cast(data, dtype="float64"), kernel=(3, 3), num_filter=4,
                              no_bias=True, name="k")
    arg, out, _ = conv.infer_shape_partial()
    assert arg == [(2, 0, 0, 0), (4, 0, 3, 3)] and out == [(2, 4, 0, 0)]
    assert conv.infer_shape() == (None, None, None)


def test_parameters_wait_for_the_datas_rank():
    fc = mx.sym.FullyConnected(mx.sym.var("h"), num_hidden=5, name="f") + mx.sym.var("z", shape=(3, 5))
    arg, out, _ = fc.infer_shape_partial()
    assert dict(zip(fc.list_arguments(), arg)) == {"h": (), "f_weight": (), "f_bias": (), "z": (3, 5)}
    assert out == [(3, 5)]


def test_identity_with_attr_like_rhs_ties_shapes_backwards():
    w = mx.sym.var("w")
    scaled = mx.sym.broadcast_mul(w, mx.sym.var("s", shape=(1,)))
    tied = mx.sym._internal._identity_with_attr_like_rhs(scaled, w)
    net = mx.sym.FullyConnected(mx.sym.var("x"), weight=tied, num_hidden=4, no_bias=True)
    assert _args(net, x=(2, 6))["w"] == (4, 6)


def test_conflicts_still_name_the_operator_and_argument():
    x = mx.sym.var("x", shape=(0, 3))
    with pytest.raises(ShapeError, match=r"elemwise_add.*\(2,4\)"):
        mx.sym.elemwise_add(x, mx.sym.var("y", shape=(2, 4))).infer_shape()


def test_ops_without_partial_rules_wait_for_complete_inputs():
    swapped = mx.sym.SwapAxis(mx.sym.var("x"), dim1=0, dim2=1)
    assert swapped.infer_shape_partial(x=(0, 3))[1] == [()]
    assert swapped.infer_shape_partial(x=(2, 3))[1] == [(3, 2)]


def test_where_waits_for_a_complete_condition_then_ties_x_y_and_the_output():
    where = mx.sym.where(mx.sym.var("c"), mx.sym.var("x"), mx.sym.var("y"))
    _, out, _ = where.infer_shape_partial(c=(0,), x=(2, 2), y=(2, 2))
    assert out == [()]                      # a (2,) condition is as possible as a (2, 2) one
    _, out, _ = where.infer_shape_partial(c=(2,), x=(2, 2), y=(2, 2))
    assert out == [(2, 2)]
    arg, out, _ = where.infer_shape_partial(c=(4, 5), x=(0, 5))
    assert arg == [(4, 5), (4, 5), (4, 5)] and out == [(4, 5)]
    arg, out, _ = where.infer_shape_partial(c=(4,), y=(0, 5))
    assert arg == [(4,), (4, 5), (4, 5)] and out == [(4, 5)]


def test_dot_keeps_the_free_axes_and_completes_them_from_a_known_output():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    assert mx.sym.dot(x, y).infer_shape_partial(x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]
    tied = mx.sym.dot(x, y, transpose_a=True) + mx.sym.var("o", shape=(6, 7))
    assert _args(tied, x=(8, 0), y=(0, 7)) == {"x": (8, 6), "y": (8, 7), "o": (6, 7)}
    assert mx.sym.dot(x, y).infer_shape_partial(x=(0,), y=(3,))[0] == [(3,), (3,)]
    with pytest.raises(ShapeError, match="contracted axes have sizes 4 and 5"):
        mx.sym.dot(x, y).infer_shape_partial(x=(0, 4), y=(5, 0))


def test_batch_dot_needs_both_contracted_sizes():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    z = mx.sym.batch_dot(x, y, transpose_b=True)
    arg, out, _ = z.infer_shape_partial(x=(0, 3, 4), y=(7, 5, 4))
    assert arg == [(7, 3, 4), (7, 5, 4)] and out == [(7, 3, 5)]
    assert z.infer_shape_partial(x=(2, 3, 4), y=(2, 5, 0))[1] == [()]


def test_embedding_pick_and_transpose_pass_unknown_sizes_both_ways():
    emb = mx.sym.Embedding(mx.sym.var("i"), input_dim=50, output_dim=8, name="e")
    assert emb.infer_shape_partial(i=(0, 5)) == ([(0, 5), (50, 8)], [(0, 5, 8)], [])
    assert _args(emb + mx.sym.var("o", shape=(2, 0, 8)), i=(0, 5))["i"] == (2, 5)
    picked = mx.sym.pick(mx.sym.var("d"), mx.sym.var("k"), axis=1, keepdims=True)
    arg, out, _ = picked.infer_shape_partial(d=(0, 3, 0), k=(6, 0, 2))
    assert arg == [(6, 3, 2), (6, 1, 2)] and out == [(6, 1, 2)]
    flipped = mx.sym.transpose(mx.sym.var("t"), axes=(0, 3, 2, 1))
    assert flipped.infer_shape_partial(t=(0, 3, 224, 225))[1] == [(0, 225, 224, 3)]
    back = flipped + mx.sym.var("u", shape=(9, 0, 0, 0))
    assert _args(back, t=(0, 3, 4, 5)) == {"t": (9, 3, 4, 5), "u": (9, 5, 4, 3)}
    with mx.np_shape():
        assert emb.infer_shape_partial(i=(-1, 5))[1] == [(-1, 5, 8)]
        assert flipped.infer_shape_partial(t=(-1, 3, 0, 5))[1] == [(-1, 5, 0, 3)]


def test_slices_compute_their_known_axes_and_leave_unknown_ones_unknown():
    data = mx.sym.var("d", shape=(0, 20))
    stepped = mx.sym.slice(data, begin=(None, 4), end=(None, 10), step=(None, 3))
    assert stepped.infer_shape_partial()[1] == [(0, 2)]
    assert mx.sym.slice_axis(data, axis=0, begin=1, end=3).infer_shape_partial()[1] == [(0, 20)]
    assert mx.sym.slice_axis(data, axis=1, begin=-5, end=None).infer_shape_partial()[1] == [(0, 5)]
    with pytest.raises(ShapeError, match="selects nothing"):
        mx.sym.slice_axis(data, axis=1, begin=7, end=7).infer_shape_partial()


def test_parameters_known_in_part_complete_from_an_op_without_a_partial_rule():
    # As a Gluon export writes its parameters (sizes left to inference are 0): BatchNorm has no
    # partial rule, so its gamma waits, then is given as unknown and checked against its known sizes.
    x = mx.sym.var("data")
    w = mx.sym.var("c_weight", shape=(8, 0, 3, 3))
    bn_vars = {k: mx.sym.var(f"b_{k}", shape=(0,)) for k in ("gamma", "beta", "moving_mean", "moving_var")}
    net = mx.sym.BatchNorm(mx.sym.Convolution(x, w, kernel=(3, 3), num_filter=8, no_bias=True), **bn_vars)
    arg, out, aux = net.infer_shape(data=(2, 3, 5, 5))
    assert dict(zip(net.list_arguments(), arg)) == {"data": (2, 3, 5, 5), "c_weight": (8, 3, 3, 3),
                                                     "b_gamma": (8,), "b_beta": (8,)}
    assert out == [(2, 8, 3, 3)] and aux == [(8,), (8,)]
    ex = net.simple_bind(mx.cpu(), data=(2, 3, 5, 5))
    assert ex.outputs[0].shape == (2, 8, 3, 3)
    wrong = mx.sym.BatchNorm(x, mx.sym.var("g", shape=(0, 2)), name="bn")
    with pytest.raises(ShapeError, match=r"BatchNorm 'bn'.*gamma"):
        wrong.infer_shape(data=(2, 4, 3, 3))

"""Symbol.infer_shape / infer_shape_partial with unknown dimensions (0), in both directions."""
from __future__ import annotations

import pytest

import symjit as mx
from symjit.base import ShapeError
from symjit.ops.partial_shape import concat, convolution, merge, split


def _args(sym, **shapes):
    arg, _, _ = sym.infer_shape(**shapes)
    return None if arg is None else dict(zip(sym.list_arguments(), arg))


def test_merge_fills_unknown_dimensions_and_rejects_disagreements():
    assert merge((0, 4, 0), (3, 0, 0)) == (3, 4, 0)
    assert merge(None, (0, 2)) == (0, 2)
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
                        "dilate": (), "pad": ()}, [(0, 0, 7), (4, 3, 3)], [None], [])[0][0] == (0, 6, 7)


def test_concat_and_split_infer_the_one_missing_size():
    params = {"dim": 1}
    ins, outs, _ = concat(params, [(0, 2), (0, 0), (5, 3)], [(0, 9)], [])
    assert ins == [(5, 2), (5, 4), (5, 3)] and outs == [(5, 9)]
    ins, outs, _ = split({"num_outputs": 2, "axis": 0, "squeeze_axis": False}, [None], [(3, 0), (0, 4)], [])
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
    where = mx.sym.where(mx.sym.var("c"), mx.sym.var("x"), mx.sym.var("y"))
    _, out, _ = where.infer_shape_partial(c=(0,), x=(2, 2), y=(2, 2))
    assert out == [()]                      # a (2,) condition is as possible as a (2, 2) one
    _, out, _ = where.infer_shape_partial(c=(2,), x=(2, 2), y=(2, 2))
    assert out == [(2, 2)]

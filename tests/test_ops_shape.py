"""Shape/dtype rules of the reduction, shape-manipulation and matrix-product records.

Every op registered by symjit.ops.reduce, symjit.ops.shape and symjit.ops.linalg must have an entry
in SHAPE_CASES (checked by test_every_op_has_cases). Expected shapes are hand-computed (Reshape's
come from MXNet's documented examples) or computed with numpy in the test.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symjit as mx
from symjit.base import MXNetError, ParamError, ShapeError
from symjit.lower import lookup
from symjit.lower.cpu import CPU
from symjit.ops import Kind, all_ops, get_op
from symjit.symbol.naming import NameManager

MODULES = {"symjit.ops.reduce", "symjit.ops.shape", "symjit.ops.linalg"}

# op -> list of (params, input shapes (by argument name, or a list for variadic ops), output shapes)
SHAPE_CASES: dict[str, list] = {
    "sum": [
        ({"axis": 1}, {"data": (2, 3, 4)}, [(2, 4)]),
        ({"axis": (0, 2), "keepdims": True}, {"data": (2, 3, 4)}, [(1, 3, 1)]),
        ({}, {"data": (2, 3, 4)}, [(1,)]),
        ({"axis": ()}, {"data": (2, 3)}, [(1,)]),
        ({"axis": (0, 1, 2)}, {"data": (2, 3, 4)}, [(1,)]),
        ({"axis": -1}, {"data": (2, 3, 4)}, [(2, 3)]),
        ({"axis": 1, "exclude": True}, {"data": (2, 3, 4)}, [(3,)]),
        ({"axis": (0, 1), "exclude": True}, {"data": (2, 3, 4)}, [(2, 3)]),
        ({"keepdims": True}, {"data": (2, 3)}, [(1, 1)]),
    ],
    "mean": [({"axis": 0}, {"data": (5, 3)}, [(3,)])],
    "prod": [({"axis": (1,), "keepdims": True}, {"data": (5, 3)}, [(5, 1)])],
    "max": [({"axis": 1}, {"data": (5, 3, 2)}, [(5, 2)])],
    "min": [({}, {"data": (5, 3)}, [(1,)])],
    "nansum": [({"axis": -2}, {"data": (5, 3, 2)}, [(5, 2)])],
    "nanprod": [({"axis": 0, "exclude": True}, {"data": (5, 3)}, [(5,)])],
    "norm": [
        ({}, {"data": (2, 3)}, [(1,)]),
        ({"axis": 1}, {"data": (2, 3)}, [(2,)]),
        ({"ord": 1, "axis": 0}, {"data": (2, 3)}, [(3,)]),
        ({"axis": (0, 1), "keepdims": True}, {"data": (2, 3, 4)}, [(1, 1, 4)]),
        ({"axis": (0, 1, 3)}, {"data": (2, 3, 4, 5)}, [(4,)]),
    ],
    "argmax": [
        ({"axis": 1}, {"data": (2, 3)}, [(2,)]),
        ({"axis": 0, "keepdims": True}, {"data": (2, 3)}, [(1, 3)]),
        ({}, {"data": (2, 3)}, [(1,)]),
        ({"keepdims": True}, {"data": (2, 3)}, [(1, 1)]),
        ({"axis": 0}, {"data": (7,)}, [(1,)]),
    ],
    "argmin": [({"axis": -1}, {"data": (2, 3, 4)}, [(2, 3)])],
    "softmax_cross_entropy": [({}, {"data": (4, 10), "label": (4,)}, [(1,)])],
    "Flatten": [
        ({}, {"data": (2, 3, 4)}, [(2, 12)]),
        ({}, {"data": (2, 3)}, [(2, 3)]),
        ({}, {"data": (5,)}, [(5, 1)]),
    ],
    "Reshape": [  # MXNet's documented examples
        ({"shape": (4, 0, 2)}, {"data": (2, 3, 4)}, [(4, 3, 2)]),
        ({"shape": (2, 0, 0)}, {"data": (2, 3, 4)}, [(2, 3, 4)]),
        ({"shape": (6, 1, -1)}, {"data": (2, 3, 4)}, [(6, 1, 4)]),
        ({"shape": (3, -1, 8)}, {"data": (2, 3, 4)}, [(3, 1, 8)]),
        ({"shape": (-1,)}, {"data": (2, 3, 4)}, [(24,)]),
        ({"shape": (-2,)}, {"data": (2, 3, 4)}, [(2, 3, 4)]),
        ({"shape": (2, -2)}, {"data": (2, 3, 4)}, [(2, 3, 4)]),
        ({"shape": (-2, 1, 1)}, {"data": (2, 3, 4)}, [(2, 3, 4, 1, 1)]),
        ({"shape": (-3, 4)}, {"data": (2, 3, 4)}, [(6, 4)]),
        ({"shape": (-3, -3)}, {"data": (2, 3, 4, 5)}, [(6, 20)]),
        ({"shape": (0, -3)}, {"data": (2, 3, 4)}, [(2, 12)]),
        ({"shape": (-3, -2)}, {"data": (2, 3, 4)}, [(6, 4)]),
        ({"shape": (-4, 1, 2, -2)}, {"data": (2, 3, 4)}, [(1, 2, 3, 4)]),
        ({"shape": (2, -4, -1, 3, -2)}, {"data": (2, 3, 4)}, [(2, 1, 3, 4)]),
        ({"shape": (-1, 0)}, {"data": (10, 5, 4)}, [(40, 5)]),
        ({"shape": (-1, 0), "reverse": True}, {"data": (10, 5, 4)}, [(50, 4)]),
        ({"shape": (0, -1)}, {"data": (2, 3, 4)}, [(2, 12)]),
        ({"shape": (0, 2, -1, -4), "reverse": True}, {"data": (3, 8)}, [(3, 2, 4)]),
        ({"shape": (-1, 2), "reverse": True}, {"data": (3, 8)}, [(12, 2)]),
        ({"shape": (-3,), "reverse": True}, {"data": (3, 8)}, [(24,)]),
        ({"shape": (-3, 0), "reverse": True}, {"data": (2, 3, 4)}, [(6, 4)]),
        ({"shape": (0, -3), "reverse": True}, {"data": (2, 3, 4)}, [(2, 12)]),
        ({"shape": (-2, 0, 0), "reverse": True}, {"data": (2, 3, 4)}, [(2, 3, 4)]),
        ({"target_shape": (0, 4)}, {"data": (2, 3, 4)}, [(6, 4)]),
        ({"target_shape": (0,), "keep_highest": True}, {"data": (2, 3, 4)}, [(2, 12)]),
    ],
    "expand_dims": [
        ({"axis": 0}, {"data": (2, 3)}, [(1, 2, 3)]),
        ({"axis": 2}, {"data": (2, 3)}, [(2, 3, 1)]),
        ({"axis": -1}, {"data": (2, 3)}, [(2, 3, 1)]),
        ({"axis": -3}, {"data": (2, 3)}, [(1, 2, 3)]),
    ],
    "squeeze": [
        ({}, {"data": (1, 3, 1, 4)}, [(3, 4)]),
        ({"axis": 2}, {"data": (1, 3, 1, 4)}, [(1, 3, 4)]),
        ({"axis": (0, -2)}, {"data": (1, 3, 1, 4)}, [(3, 4)]),
        ({}, {"data": (1, 1)}, [(1,)]),
    ],
    "transpose": [
        ({}, {"data": (2, 3, 4)}, [(4, 3, 2)]),
        ({"axes": (1, 0, 2)}, {"data": (2, 3, 4)}, [(3, 2, 4)]),
        ({"axes": (0, -1, 1)}, {"data": (2, 3, 4)}, [(2, 4, 3)]),
    ],
    "SwapAxis": [
        ({"dim1": 0, "dim2": 2}, {"data": (2, 3, 4)}, [(4, 3, 2)]),
        ({}, {"data": (2, 3, 4)}, [(2, 3, 4)]),
    ],
    "reverse": [({"axis": (0, 1)}, {"data": (2, 3)}, [(2, 3)])],
    "tile": [
        ({"reps": (2, 2)}, {"data": (2, 3)}, [(4, 6)]),
        ({"reps": (2,)}, {"data": (2, 3)}, [(2, 6)]),
        ({"reps": (2, 1, 3)}, {"data": (2, 3)}, [(2, 2, 9)]),
    ],
    "repeat": [
        ({"repeats": 2, "axis": 1}, {"data": (2, 3)}, [(2, 6)]),
        ({"repeats": 2}, {"data": (2, 3)}, [(12,)]),
        ({"repeats": 2, "axis": -2}, {"data": (2, 3)}, [(4, 3)]),
    ],
    "Concat": [
        ({"dim": 1}, [(2, 3), (2, 4), (2, 1)], [(2, 8)]),
        ({"dim": 0}, [(2, 3), (5, 3)], [(7, 3)]),
        ({"dim": -1}, [(2, 3, 1), (2, 3, 2)], [(2, 3, 3)]),
        ({}, [(4, 5)], [(4, 5)]),
    ],
    "stack": [
        ({}, [(2, 3)] * 3, [(3, 2, 3)]),
        ({"axis": 1}, [(2, 3)] * 3, [(2, 3, 3)]),
        ({"axis": -1}, [(2, 3)] * 4, [(2, 3, 4)]),
    ],
    "SliceChannel": [
        ({"num_outputs": 3}, {"data": (2, 6, 4)}, [(2, 2, 4)] * 3),
        ({"num_outputs": 4, "axis": 2, "squeeze_axis": True}, {"data": (2, 6, 4)}, [(2, 6)] * 4),
        ({"num_outputs": 2, "axis": -3}, {"data": (2, 6, 4)}, [(1, 6, 4)] * 2),
    ],
    "slice_axis": [
        ({"axis": 1, "begin": 0, "end": 2}, {"data": (3, 4)}, [(3, 2)]),
        ({"axis": 1, "begin": -3, "end": -1}, {"data": (3, 4)}, [(3, 2)]),
        ({"axis": 0, "begin": 1, "end": None}, {"data": (3, 4)}, [(2, 4)]),
    ],
    "slice": [
        ({"begin": (0, 1), "end": (2, 4)}, {"data": (3, 4)}, [(2, 3)]),
        ({"begin": (None, 0), "end": (None, 3), "step": (-1, 2)}, {"data": (3, 4)}, [(3, 2)]),
        ({"begin": (1,), "end": (None,)}, {"data": (3, 4)}, [(2, 4)]),
    ],
    "take": [
        ({}, {"a": (3, 2), "indices": (2, 2)}, [(2, 2, 2)]),
        ({"axis": 1, "mode": "wrap"}, {"a": (3, 2), "indices": (2, 2)}, [(3, 2, 2)]),
        ({"axis": -1}, {"a": (3,), "indices": (1,)}, [(1,)]),
    ],
    "pick": [
        ({"axis": 1}, {"data": (3, 2), "index": (3,)}, [(3,)]),
        ({"axis": 0}, {"data": (3, 2), "index": (2,)}, [(2,)]),
        ({"axis": 1, "keepdims": True}, {"data": (3, 2), "index": (3, 1)}, [(3, 1)]),
        ({}, {"data": (3, 2, 5), "index": (3, 2)}, [(3, 2)]),
    ],
    "one_hot": [
        ({"depth": 5}, {"indices": (4,)}, [(4, 5)]),
        ({"depth": 2}, {"indices": (2, 3)}, [(2, 3, 2)]),
    ],
    "dot": [
        ({}, {"lhs": (2, 3), "rhs": (3, 4)}, [(2, 4)]),
        ({"transpose_a": True}, {"lhs": (3, 2), "rhs": (3, 4)}, [(2, 4)]),
        ({"transpose_b": True}, {"lhs": (2, 3), "rhs": (4, 3)}, [(2, 4)]),
        ({"transpose_a": True, "transpose_b": True}, {"lhs": (3, 2), "rhs": (4, 3)}, [(2, 4)]),
        ({}, {"lhs": (3,), "rhs": (3,)}, [(1,)]),
        ({}, {"lhs": (3,), "rhs": (3, 4)}, [(4,)]),
        ({}, {"lhs": (2, 3), "rhs": (3,)}, [(2,)]),
        ({}, {"lhs": (2, 3, 4), "rhs": (4, 5, 6)}, [(2, 3, 5, 6)]),
        ({"transpose_a": True}, {"lhs": (4, 2, 3), "rhs": (4, 5)}, [(2, 3, 5)]),
    ],
    "batch_dot": [
        ({}, {"lhs": (4, 2, 3), "rhs": (4, 3, 5)}, [(4, 2, 5)]),
        ({"transpose_a": True}, {"lhs": (4, 3, 2), "rhs": (4, 3, 5)}, [(4, 2, 5)]),
        ({"transpose_b": True}, {"lhs": (4, 2, 3), "rhs": (4, 5, 3)}, [(4, 2, 5)]),
        ({}, {"lhs": (2, 4, 2, 3), "rhs": (2, 4, 3, 5)}, [(2, 4, 2, 5)]),
    ],
}


def _my_ops() -> dict:
    return {n: op for n, op in all_ops().items()
            if op.shape is not None and op.shape.__module__ in MODULES and not op.extra.get("backward_of")}


def _build(op_name: str, params: dict, inputs):
    """The op applied to fresh variables named after its arguments (or a0, a1... when variadic)."""
    if isinstance(inputs, list):
        vs = [mx.sym.Variable(f"a{i}") for i in range(len(inputs))]
        return getattr(mx.sym, op_name)(*vs, **params), {f"a{i}": s for i, s in enumerate(inputs)}
    vs = {k: mx.sym.Variable(k) for k in inputs}
    return getattr(mx.sym, op_name)(**vs, **params), dict(inputs)


def test_every_op_has_cases():
    ops = _my_ops()
    assert {"sum", "Reshape", "Concat", "SliceChannel", "dot", "batch_dot"} <= set(ops)
    missing = sorted(set(ops) - set(SHAPE_CASES))
    assert not missing, f"ops without shape cases: {missing}"
    assert not sorted(set(SHAPE_CASES) - set(ops)), "cases for ops not registered by these modules"


CASES = [(name, *case) for name, cases in SHAPE_CASES.items() for case in cases]


@pytest.mark.parametrize("op_name,params,inputs,expected", CASES)
def test_shape_rule(op_name, params, inputs, expected):
    sym, known = _build(op_name, params, inputs)
    args, outs, aux = sym.infer_shape(**known)
    assert outs == expected
    assert args == [known[a] for a in sym.list_arguments()]
    assert aux == []


@pytest.mark.parametrize("op_name", sorted(SHAPE_CASES))
def test_unknown_input_gives_unknown_output(op_name):
    params, inputs, expected = SHAPE_CASES[op_name][0]
    sym, _ = _build(op_name, params, inputs)
    assert sym.infer_shape() == (None, None, None)


def test_aliases_and_records():
    for alias, canonical in [("sum_axis", "sum"), ("max_axis", "max"), ("min_axis", "min"),
                             ("flatten", "Flatten"), ("reshape", "Reshape"), ("concat", "Concat"),
                             ("split", "SliceChannel"), ("swapaxes", "SwapAxis"), ("flip", "reverse"),
                             ("crop", "slice")]:
        assert get_op(alias) is get_op(canonical)
    for name in ("Reshape", "Flatten", "expand_dims"):
        op = get_op(name)
        assert op.extra.get("view") is True and (0, 0) in lookup(op, CPU).inplace_pairs({})
    for name in ("sum", "mean", "norm", "argmax"):
        assert get_op(name).kind == Kind.REDUCTION
    assert get_op("argmax").kind == Kind.REDUCTION
    assert get_op("transpose").kind == Kind.INJECTIVE
    assert get_op("dot").kind == Kind.OUT_ELEMWISE_FUSABLE
    assert get_op("batch_dot").kind == Kind.OUT_ELEMWISE_FUSABLE


def test_split_outputs_named_by_num_outputs():
    with NameManager():
        data = mx.sym.Variable("data")
        s = mx.sym.split(data, num_outputs=3, axis=1)
        assert s.list_outputs() == ["split0_output0", "split0_output1", "split0_output2"]
        s2 = mx.sym.SliceChannel(data, num_outputs=2)
        assert s2.list_outputs() == ["slicechannel0_output0", "slicechannel0_output1"]
    assert len(s) == 3
    assert s[1].infer_shape(data=(2, 6))[1] == [(2, 2)]


def test_concat_takes_inputs_by_position():
    a, b, c = (mx.sym.Variable(n) for n in "abc")
    cat = mx.sym.Concat(a, b, c, dim=0, name="cat")
    assert cat.list_arguments() == ["a", "b", "c"]
    assert cat.attr("num_args") == "3"
    assert get_op("Concat").list_arguments({"num_args": 3, "dim": 0}) == ["arg0", "arg1", "arg2"]
    with pytest.raises(MXNetError, match="positionally"):
        mx.sym.Concat(arg0=a, arg1=b)


def test_slice_params_round_trip_as_strings():
    s = mx.sym.slice(mx.sym.Variable("x"), begin=(None, 1), end=[None, 3])
    assert s.attr("begin") == "(None,1)" and s.attr("end") == "(None,3)" and s.attr("step") == "()"
    assert s.infer_shape(x=(4, 5))[1] == [(4, 2)]
    again = mx.sym.slice(mx.sym.Variable("x"), begin="(None, 1)", end="(None, 3)")
    assert again.infer_shape(x=(4, 5))[1] == [(4, 2)]


# --- errors: name the op, node, argument and shapes -------------------------------------------
SHAPE_ERRORS = [
    ("Concat", {"dim": 1}, [(2, 3), (3, 4)], ["Concat", "'arg1'", "(3,4)", "(2,3)", "dim=1"]),
    ("Concat", {"dim": 1}, [(2, 3), (2, 3, 1)], ["Concat", "'arg1'", "(2,3,1)"]),
    ("stack", {}, [(2, 3), (2, 4)], ["stack", "'arg1'", "(2,4)", "(2,3)"]),
    ("sum", {"axis": 3}, {"data": (2, 3)}, ["sum", "axis=3", "out of range"]),
    ("sum", {"axis": (0, -2)}, {"data": (2, 3)}, ["sum", "twice"]),
    ("Reshape", {"shape": (5, 5)}, {"data": (2, 3, 4)}, ["Reshape", "(5,5)", "(2,3,4)", "25", "24"]),
    ("Reshape", {"shape": (-1, -1)}, {"data": (2, 3)}, ["Reshape", "-1"]),
    ("Reshape", {"shape": (0, 0, 0)}, {"data": (2, 3)}, ["Reshape", "code 0", "(2,3)"]),
    ("Reshape", {"shape": (-4, 5, -1)}, {"data": (6, 2)}, ["Reshape", "split"]),
    ("Reshape", {"shape": (-5,)}, {"data": (6, 2)}, ["Reshape", "-5"]),
    ("Reshape", {"shape": (0, -2), "reverse": True}, {"data": (3, 8)}, ["Reshape", "reverse", "code 0"]),
    ("SliceChannel", {"num_outputs": 4}, {"data": (2, 6)}, ["SliceChannel", "(2,6)", "num_outputs=4"]),
    ("SliceChannel", {"num_outputs": 3, "squeeze_axis": True}, {"data": (2, 6)}, ["squeeze_axis"]),
    ("dot", {}, {"lhs": (2, 3), "rhs": (4, 5)}, ["dot", "(2,3)", "(4,5)", "3 and 4"]),
    ("dot", {"transpose_a": True}, {"lhs": (3,), "rhs": (3,)}, ["dot", "vectors"]),
    ("batch_dot", {}, {"lhs": (2, 3), "rhs": (3, 4)}, ["batch_dot", "(2,3)", ">= 3"]),
    ("batch_dot", {}, {"lhs": (4, 2, 3), "rhs": (5, 3, 2)}, ["batch_dot", "(4,2,3)", "(5,3,2)", "batch"]),
    ("batch_dot", {}, {"lhs": (4, 2, 3), "rhs": (4, 2, 3)}, ["batch_dot", "3 and 2"]),
    ("transpose", {"axes": (0, 0, 1)}, {"data": (2, 3, 4)}, ["transpose", "twice"]),
    ("transpose", {"axes": (1, 0)}, {"data": (2, 3, 4)}, ["transpose", "all 3 axes"]),
    ("expand_dims", {"axis": 3}, {"data": (2, 3)}, ["expand_dims", "axis=3", "[-3, 2]"]),
    ("squeeze", {"axis": 1}, {"data": (1, 3)}, ["squeeze", "(1,3)", "size is 3"]),
    ("slice_axis", {"axis": 0, "begin": 5, "end": None}, {"data": (3, 4)},
     ["slice_axis", "begin=5", "(3,4)"]),
    ("slice_axis", {"axis": 0, "begin": 2, "end": 1}, {"data": (3, 4)}, ["slice_axis", "nothing"]),
    ("slice", {"begin": (0, 0, 0), "end": (1, 1, 1)}, {"data": (3, 4)}, ["slice", "3 entries", "(3,4)"]),
    ("pick", {"axis": 1}, {"data": (3, 2), "index": (2,)}, ["pick", "'index'", "(2,)", "(3,)"]),
    ("softmax_cross_entropy", {}, {"data": (4, 10), "label": (5,)}, ["'label'", "(5,)", "(4,)"]),
    ("argmax", {"axis": 2}, {"data": (2, 3)}, ["argmax", "axis=2"]),
    ("SwapAxis", {"dim1": 0, "dim2": 3}, {"data": (2, 3)}, ["SwapAxis", "dim2=3"]),
    ("reverse", {"axis": (2,)}, {"data": (2, 3)}, ["reverse", "axis=2"]),
    ("diag", {"k": 5}, {"data": (3, 4)}, ["diag", "k=5", "3x4", "(3,4)"]),
    ("diag", {"k": -4}, {"data": (3, 4)}, ["diag", "k=-4", "outside"]),
]


@pytest.mark.parametrize("op_name,params,inputs,needles", SHAPE_ERRORS)
def test_shape_errors_name_op_node_and_shapes(op_name, params, inputs, needles):
    sym, known = _build(op_name, params, inputs)
    with pytest.raises(ShapeError) as info:
        sym.infer_shape(**known)
    msg = str(info.value)
    assert f"'{sym._outputs[0][0].name}'" in msg
    for needle in needles:
        assert needle in msg, (needle, msg)


PARAM_ERRORS = [
    ("Concat", {"num_args": 0}, ["Concat", "num_args"]),
    ("SliceChannel", {}, ["SliceChannel", "num_outputs", "missing"]),
    ("norm", {"ord": 3}, ["norm", "ord"]),
    ("one_hot", {"depth": 3, "dtype": "bool"}, ["one_hot", "dtype"]),
    ("one_hot", {"depth": -1}, ["one_hot", "depth"]),
    ("take", {"mode": "nearest"}, ["take", "mode"]),
    ("Reshape", {}, ["Reshape", "shape"]),
    ("Reshape", {"shape": (2, -1), "target_shape": (2, 0)}, ["Reshape", "target_shape"]),
    ("slice", {"begin": (0,), "end": (1,), "step": (0,)}, ["slice", "step"]),
    ("slice", {"begin": (0, 1), "end": (1,)}, ["slice", "same length"]),
    ("slice", {"begin": "(0, 'a')", "end": (1, 2)}, ["slice", "begin"]),
    ("pick", {"axis": None}, ["pick", "axis"]),
    ("tile", {"reps": (2, 0)}, ["tile", "reps"]),
    ("repeat", {"repeats": 0}, ["repeat", "repeats"]),
    ("dot", {"forward_stype": "csr"}, ["forward_stype", "csr"]),
    ("sum", {"keepdim": True}, ["sum", "keepdim"]),
    ("expand_dims", {}, ["expand_dims", "axis"]),
]


@pytest.mark.parametrize("op_name,params,needles", PARAM_ERRORS)
def test_param_errors(op_name, params, needles):
    op = get_op(op_name)
    syms = [mx.sym.Variable(f"v{i}") for i in range(2 if op.variadic else 1)]
    with pytest.raises(ParamError) as info:
        getattr(mx.sym, op_name)(*syms, **params)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


# --- dtype rules ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_argmax_returns_indices_in_input_dtype(dtype):
    for op in (mx.sym.argmax, mx.sym.argmin):
        out = op(mx.sym.Variable("x"), axis=1)
        assert out.infer_type(x=dtype)[1] == [np.dtype(dtype).type]


def test_dtype_rules():
    x, i = mx.sym.Variable("x"), mx.sym.Variable("i")
    assert mx.sym.one_hot(i, depth=3).infer_type(i="int32") == ([np.int32], [np.float32], [])
    assert mx.sym.one_hot(i, depth=3, dtype="int64").infer_type(i="float32")[1] == [np.int64]
    assert mx.sym.one_hot(i, depth=3, dtype="float64").attr("dtype") == "float64"
    assert mx.sym.norm(x).infer_type(x="float64")[1] == [np.float64]
    assert mx.sym.norm(x, out_dtype="float16").infer_type(x="float32")[1] == [np.float16]
    assert mx.sym.take(x, i).infer_type(x="float64", i="int32") == ([np.float64, np.int32], [np.float64], [])
    assert mx.sym.pick(x, i).infer_type(x="float16", i="float32")[1] == [np.float16]
    assert mx.sym.sum(x).infer_type(x="int32")[1] == [np.int32]
    assert mx.sym.Concat(x, i).infer_type(x="float64") == ([np.float64] * 2, [np.float64], [])
    assert mx.sym.dot(x, i).infer_type(x="float16")[1] == [np.float16]
    sce = mx.sym.softmax_cross_entropy(x, i)
    assert sce.infer_type(x="float32") == ([np.float32, np.float32], [np.float32], [])


# --- property tests against numpy -------------------------------------------------------------
shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data())
def test_reduce_matches_numpy(shape, data):
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    keep = data.draw(st.booleans())
    exclude = data.draw(st.booleans())
    arr = np.zeros(shape)
    if not axes:
        red = tuple(range(len(shape)))
    elif exclude:
        red = tuple(i for i in range(len(shape)) if i not in axes)
    else:
        red = tuple(axes)
    want = arr.sum(axis=red, keepdims=keep).shape or (1,)
    sym = mx.sym.sum(mx.sym.Variable("x"), axis=tuple(axes), keepdims=keep, exclude=exclude)
    assert sym.infer_shape(x=shape)[1] == [want]


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data())
def test_slice_transpose_tile_repeat_match_numpy(shape, data):
    arr = np.zeros(shape)
    x = mx.sym.Variable("x")
    n = data.draw(st.integers(1, len(shape)))
    ends = st.one_of(st.none(), st.integers(-5, 5))
    b = tuple(data.draw(ends) for _ in range(n))
    e = tuple(data.draw(ends) for _ in range(n))
    s = tuple(data.draw(st.one_of(st.none(), st.integers(-3, 3).filter(bool))) for _ in range(n))
    want = arr[tuple(slice(*t) for t in zip(b, e, s))].shape
    sym = mx.sym.slice(x, begin=b, end=e, step=s)
    if 0 in want:
        with pytest.raises(ShapeError, match="selects nothing"):
            sym.infer_shape(x=shape)
    else:
        assert sym.infer_shape(x=shape)[1] == [want]
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    assert mx.sym.transpose(x, axes=perm).infer_shape(x=shape)[1] == [np.transpose(arr, perm).shape]
    reps = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=4)))
    assert mx.sym.tile(x, reps=reps).infer_shape(x=shape)[1] == [np.tile(arr, reps).shape]
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    assert mx.sym.repeat(x, repeats=2, axis=ax).infer_shape(x=shape)[1] == [np.repeat(arr, 2, ax).shape]


@settings(max_examples=60, deadline=None)
@given(lshape=shapes, rshape=shapes, ta=st.booleans(), tb=st.booleans())
def test_dot_matches_numpy_contraction(lshape, rshape, ta, tb):
    # MXNet's dot contracts lhs's last axis (first with transpose_a) with rhs's first (last with transpose_b)
    la = 0 if ta else len(lshape) - 1
    rb = len(rshape) - 1 if tb else 0
    if len(lshape) == 1 and len(rshape) == 1:
        ta = tb = False
        la = rb = 0
    rshape = rshape[:rb] + (lshape[la],) + rshape[rb + 1:]
    want = np.tensordot(np.zeros(lshape), np.zeros(rshape), axes=([la], [rb])).shape or (1,)
    sym = mx.sym.dot(mx.sym.Variable("a"), mx.sym.Variable("b"), transpose_a=ta, transpose_b=tb)
    assert sym.infer_shape(a=lshape, b=rshape)[1] == [want]


@settings(max_examples=40, deadline=None)
@given(batch=st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple),
       m=st.integers(1, 4), k=st.integers(1, 4), n=st.integers(1, 4), ta=st.booleans(), tb=st.booleans())
def test_batch_dot_matches_numpy_matmul(batch, m, k, n, ta, tb):
    lhs, rhs = np.zeros((*batch, m, k)), np.zeros((*batch, k, n))
    want = np.matmul(lhs, rhs).shape
    lshape = (*batch, k, m) if ta else lhs.shape
    rshape = (*batch, n, k) if tb else rhs.shape
    sym = mx.sym.batch_dot(mx.sym.Variable("a"), mx.sym.Variable("b"), transpose_a=ta, transpose_b=tb)
    assert sym.infer_shape(a=lshape, b=rshape)[1] == [want]


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data())
def test_reshape_minus_one_and_zero_match_numpy(shape, data):
    # (0, -1) keeps the first dim and flattens the rest; a random full target with one -1 matches numpy
    arr = np.zeros(shape)
    x = mx.sym.Variable("x")
    assert mx.sym.Reshape(x, shape=(0, -1)).infer_shape(x=shape)[1] == [arr.reshape(shape[0], -1).shape]
    size = arr.size
    first = data.draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
    want = arr.reshape(first, -1).shape
    assert mx.sym.reshape(x, shape=(first, -1)).infer_shape(x=shape)[1] == [want]
    assert mx.sym.Flatten(x).infer_shape(x=shape)[1] == [arr.reshape(shape[0], -1).shape]


@pytest.mark.parametrize("shape", [(7,), (5, 4), (3, 4, 6), (2, 3, 2, 5)])
def test_unravel_and_ravel_agree_with_numpy_including_leading_minus_one(shape):
    """unravel_index gives numpy's index rows; a leading -1 in ``shape`` lets the first row take
    whatever the flat position leaves over, and ravel_multi_index accepts it too."""
    rng = np.random.default_rng(5)
    rows = np.stack([rng.integers(0, n, 40) for n in shape])
    flat = np.ravel_multi_index(rows, shape)
    for form in (shape, (-1,) + shape[1:]):
        got = mx.nd.unravel_index(mx.nd.array(flat, dtype="int64"), shape=form).asnumpy()
        np.testing.assert_array_equal(got, rows)
        back = mx.nd.ravel_multi_index(mx.nd.array(rows, dtype="int64"), shape=form).asnumpy()
        np.testing.assert_array_equal(back, flat)


@pytest.mark.parametrize("ord_,axis,keepdims", [(2, (0, 1, 2), False), (2, (0, 2, 3), True),
                                                (1, (1, 2, 3), False), (2, (0, 1, 2, 3), True)])
def test_norm_over_more_than_two_axes(ord_, axis, keepdims):
    """norm reduces any set of axes: ord=2 the square root of the sum of squares, ord=1 the sum
    of absolute values; its gradient is x / norm (ord 2) or sign(x) (ord 1) times the head's."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0.2, 1.0, (2, 3, 2, 4)) * rng.choice([-1.0, 1.0], (2, 3, 2, 4))
    if ord_ == 2:
        want = np.sqrt((x * x).sum(axis=axis, keepdims=True))
        dnorm = x / want
    else:
        want = np.abs(x).sum(axis=axis, keepdims=True)
        dnorm = np.sign(x)
    a = mx.nd.array(x, dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.norm(a, ord=ord_, axis=axis, keepdims=keepdims)
    shape = want.shape if keepdims else tuple(n for i, n in enumerate(x.shape) if i not in axis)
    np.testing.assert_allclose(y.asnumpy(), want.reshape(shape or (1,)), rtol=1e-12)
    head = rng.uniform(0.5, 1.5, y.shape)
    y.backward(mx.nd.array(head, dtype="float64"))
    np.testing.assert_allclose(a.grad.asnumpy(), dnorm * head.reshape(want.shape), rtol=1e-12)


@pytest.mark.parametrize("src,spec,reverse,dst", [
    ((2, 3, 5, 5), (0, -1), False, (2, 75)),
    ((2, 3, 5, 6), (-3, -1), False, (6, 30)),
    ((64, 1, 2, 3), (-4, 16, -1, -2), False, (16, 4, 1, 2, 3)),
    ((2, 3, 4, 5), (3, -1, 0), True, (3, 8, 5)),
    ((2, 3, 5, 6), (-2, 1, 30), True, (2, 3, 1, 30)),
    ((1, 2, 3, 64), (-2, -1, 16, -4), True, (1, 2, 3, 4, 16)),
])
def test_reshape_infers_an_unknown_input_dimension_from_its_output(src, spec, reverse, dst):
    """With one input dimension unknown (0) and the output's shape known from the op reading it,
    Reshape gives the input dimension the size the output's elements leave for it."""
    assert mx.sym.Variable("d").reshape(spec, reverse=reverse).infer_shape(d=src)[1] == [dst]
    for i in range(len(src)):
        held = src[:i] + (0,) + src[i + 1:]
        net = mx.sym.Variable("d").reshape(spec, reverse=reverse) + mx.sym.ones(shape=dst)
        ins, outs, _ = net.infer_shape(d=held)
        assert (ins, outs) == ([src], [dst]), held


def test_reshape_reverse_reads_the_codes_right_to_left():
    """reverse=True reverses the codes too: a -4 comes after the two sizes it splits into."""
    x = mx.sym.Variable("d")
    assert x.reshape((16, -1, -4), reverse=True).infer_shape(d=(64,))[1] == [(16, 4)]
    with pytest.raises(ShapeError, match="-4"):
        x.reshape((-4, 16, -1), reverse=True).infer_shape(d=(64,))

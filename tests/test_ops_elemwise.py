"""Elementwise and broadcast operator records: shape/dtype rules, params, scalar bodies.

Table-driven over every record of symjit/ops/elementwise.py and symjit/ops/broadcast.py: an op
registered there without an entry in REF fails ``test_every_op_has_a_table_entry``. References are
numpy (or scipy for erf) formulas written here.
"""
from __future__ import annotations

import json
import math

import numba
import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

import symjit as mx
from symjit.base import DTypeError, MXNetError, ParamError, ShapeError
from symjit.jitext import install
from symjit.lower import LOOP, lookup
from symjit.lower.cpu import CPU
from symjit.ops import Kind, all_ops, find_op
from symjit.ops import broadcast as bmod
from symjit.ops import elementwise as emod
from symjit.ops.registry import aliases

install()    # these tests compile the scalar bodies with numba directly: register the helpers first

MY_MODULES = {emod.__name__, bmod.__name__}


def _is_mine(op) -> bool:
    if "backward_of" in op.extra:   # internal gradient ops: tested through tests/cases
        return False
    if "family" in op.extra:   # the family module says where the op belongs
        return op.extra["family"] in ("elementwise", "broadcast")
    fns = [getattr(op.body, "fn", None), op.body, op.shape, op.dtype]
    return any(getattr(f, "__module__", None) in MY_MODULES for f in fns if f is not None)


MY_OPS = {name: op for name, op in all_ops().items() if _is_mine(op)}


def _round_ref(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _mod_ref(a, b):
    return np.where(b == 0, 0.0, np.mod(a, b))


def _cmp(f):
    return lambda a, b: f(a, b).astype(np.float64)


# name -> (category, numpy reference, python-safe domain). Domains: 'any', 'pos' (x > 0),
# 'nonzero'; for binary ops they restrict the *second* operand ('rhs'), or 'pos_lhs'.
UNARY_REF = {
    "exp": (np.exp, "any"), "expm1": (np.expm1, "any"), "log": (np.log, "pos"),
    "log1p": (np.log1p, "pos"), "log2": (np.log2, "pos"), "log10": (np.log10, "pos"),
    "sqrt": (np.sqrt, "pos"), "rsqrt": (lambda x: 1.0 / np.sqrt(x), "pos"), "cbrt": (np.cbrt, "any"),
    "square": (np.square, "any"), "reciprocal": (lambda x: 1.0 / x, "nonzero"), "abs": (np.abs, "any"),
    "sign": (np.sign, "any"), "negative": (np.negative, "any"),
    "relu": (lambda x: np.where(x > 0, x, 0.0), "any"),
    "sigmoid": (scipy.special.expit, "any"), "tanh": (np.tanh, "any"),
    "softsign": (lambda x: x / (1.0 + np.abs(x)), "any"), "erf": (scipy.special.erf, "any"),
    "cos": (np.cos, "any"), "sin": (np.sin, "any"), "floor": (np.floor, "any"), "ceil": (np.ceil, "any"),
    "round": (_round_ref, "any"), "trunc": (np.trunc, "any"), "_copy": (lambda x: x, "any"),
    "zeros_like": (np.zeros_like, "any"), "ones_like": (np.ones_like, "any"),
    "Cast": (lambda x: x, "any"), "broadcast_to": (lambda x: x, "any"),
    "broadcast_axis": (lambda x: x, "any"),
}
BINARY_REF = {
    "add": (np.add, "any"), "sub": (np.subtract, "any"), "mul": (np.multiply, "any"),
    "div": (np.divide, "nonzero"), "mod": (_mod_ref, "any"), "power": (np.power, "pos_lhs"),
    "maximum": (np.maximum, "any"), "minimum": (np.minimum, "any"), "hypot": (np.hypot, "any"),
    "equal": (_cmp(np.equal), "any"), "not_equal": (_cmp(np.not_equal), "any"),
    "greater": (_cmp(np.greater), "any"), "greater_equal": (_cmp(np.greater_equal), "any"),
    "lesser": (_cmp(np.less), "any"), "lesser_equal": (_cmp(np.less_equal), "any"),
}
SAME = {"elemwise_add": "add", "elemwise_sub": "sub", "elemwise_mul": "mul", "elemwise_div": "div"}
SAME.update({f"_{k}": k for k in BINARY_REF if k not in ("add", "sub", "mul", "div")})
BCAST = {f"broadcast_{k}": k for k in BINARY_REF}
# scalar op -> (binary reference key, reversed?)
SCALAR = {"_plus_scalar": ("add", False), "_minus_scalar": ("sub", False), "_rminus_scalar": ("sub", True),
          "_mul_scalar": ("mul", False), "_div_scalar": ("div", False), "_rdiv_scalar": ("div", True),
          "_mod_scalar": ("mod", False), "_rmod_scalar": ("mod", True), "_power_scalar": ("power", False),
          "_rpower_scalar": ("power", True)}
SCALAR.update({f"_{k}_scalar": (k, False) for k in ("maximum", "minimum", "hypot", "equal", "not_equal",
                                                   "greater", "greater_equal", "lesser", "lesser_equal")})

REF: dict[str, tuple] = {}
REF.update({n: ("unary", *v) for n, v in UNARY_REF.items()})
REF.update({n: ("binary", *BINARY_REF[k]) for n, k in SAME.items()})
REF.update({n: ("binary", *BINARY_REF[k]) for n, k in BCAST.items()})
REF.update({n: ("scalar", k, rev) for n, (k, rev) in SCALAR.items()})
REF["clip"] = ("clip", None, "any")
REF["smooth_l1"] = ("smooth_l1", None, "any")
REF["where"] = ("where", None, "any")
REF["broadcast_like"] = ("like", None, "any")

# params that make each op valid, where it has required ones
PARAMS = {n: {"scalar": 2.5} for n in SCALAR}
PARAMS.update({"clip": {"a_min": -1.0, "a_max": 2.0}, "smooth_l1": {"scalar": 2.0},
               "Cast": {"dtype": "float64"}, "broadcast_to": {"shape": (2, 3)},
               "broadcast_axis": {"axis": (0,), "size": (2,)}})

ANY = np.array([-7.25, -3.5, -2.5, -1.5, -1.0, -0.7, -0.5, -0.3, -1e-20, 0.0, 1e-20, 0.3, 0.5, 0.7, 1.0,
                1.5, 2.5, 3.0, 3.5, 7.25, 27.0, -8.0, 0.49999999999999994, -0.49999999999999994])
EDGE = np.array([np.inf, -np.inf, np.nan, -0.0, 1e300, -1e300, 1e-310, 1000.0, -1000.0, 710.0, -745.0,
                 4.5e15 + 0.5, -4.5e15 - 0.5])


def _domain(values: np.ndarray, domain: str) -> np.ndarray:
    if domain == "pos":
        return values[values > 0]
    if domain == "nonzero":
        return values[values != 0]
    return values


def _apply(fn, consts, *cols):
    return np.array([fn(*vals, *consts) for vals in zip(*cols)], dtype=np.float64)


def _check(got, want, name):
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300, equal_nan=True, err_msg=name)


def _fn_consts(name):
    return MY_OPS[name].body(MY_OPS[name].parse_params(PARAMS.get(name, {})))


def _read(name, ins):
    """The input columns the body reads (a shape-only input lends only its shape)."""
    shape_only = lookup(MY_OPS[name], CPU).shape_only
    return [col for slot, col in enumerate(ins) if slot not in shape_only]


def _pairs(lhs_dom: str, rhs_dom: str, values=ANY):
    a, b = np.meshgrid(_domain(values, lhs_dom), _domain(values, rhs_dom))
    return a.ravel(), b.ravel()


def _cases(name, values, python: bool):
    """(inputs, expected) for op ``name`` over ``values``, as numpy arrays."""
    cat, ref, dom = REF[name][0], REF[name][1], REF[name][-1]
    fn, consts = _fn_consts(name)
    with np.errstate(all="ignore"):
        if cat == "unary":
            x = _domain(values, dom) if python else values
            want = ref(x)
            if name == "Cast" or name.startswith("broadcast_"):
                want = x
            return (x,), want
        if cat == "binary":
            a, b = _pairs("pos" if (python and dom == "pos_lhs") else "any",
                          dom if (python and dom == "nonzero") else "any", values)
            return (a, b), ref(a, b)
        if cat == "scalar":
            key, rev = ref, dom
            bref, bdom = BINARY_REF[key]
            x = values
            if python and rev and bdom == "nonzero":
                x = x[x != 0]
            if python and not rev and bdom == "pos_lhs":
                x = x[x > 0]
            s = consts[0]
            return (x,), (bref(np.full_like(x, s), x) if rev else bref(x, np.full_like(x, s)))
        if cat == "clip":
            return (values,), np.maximum(np.minimum(values, 2.0), -1.0)
        if cat == "smooth_l1":  # sigma = 2: quadratic inside |x| < 1/4
            return (values,), np.where(np.abs(values) < 0.25, 2.0 * values**2, np.abs(values) - 0.125)
        if cat == "where":
            c, x = _pairs("any", "any", values)
            y = x[::-1].copy()
            return (c, x, y), np.where(c != 0, x, y)
        if cat == "like":
            a, b = _pairs("any", "any", values)
            return (a, b), a
    raise AssertionError(cat)


# ---------------------------------------------------------------------------------------------
# coverage and record metadata


def test_every_op_has_a_table_entry():
    assert set(MY_OPS) == set(REF), (sorted(set(MY_OPS) - set(REF)), sorted(set(REF) - set(MY_OPS)))
    assert set(MY_OPS) == set(emod.OPS) | set(bmod.OPS)


@pytest.mark.parametrize("name", sorted(REF))
def test_record_metadata(name):
    op = MY_OPS[name]
    assert op.doc
    assert (op.grad is None) == bool(op.extra.get("no_grad")), "a gradient rule xor no_grad"
    rule = lookup(op, CPU)
    assert rule is LOOP or name in ("where", "broadcast_like")
    fn, consts = _fn_consts(name)
    assert isinstance(consts, tuple) and all(isinstance(c, float) for c in consts)
    # a plain module-level function the compiler can wrap
    module = __import__(fn.__module__, fromlist=["x"])
    assert fn.__qualname__ == fn.__name__ and getattr(module, fn.__name__) is fn
    n_in = len(op.list_arguments(op.parse_params(PARAMS.get(name, {})))) - len(rule.shape_only)
    assert fn.__code__.co_argcount == n_in + len(consts)
    if name == "where":   # a 1-D condition aligns at axis 0: its own lowering, not fused
        assert op.kind == Kind.INJECTIVE and rule.emit is not None and rule.inplace == ((1, 0),)
    elif name.startswith("broadcast_"):
        assert op.kind == Kind.BROADCAST
    else:
        assert op.kind == Kind.ELEMWISE


def test_aliases_resolve():
    want = {"_Plus": "elemwise_add", "_plus": "elemwise_add", "_add": "elemwise_add",
            "_Minus": "elemwise_sub", "_minus": "elemwise_sub", "_sub": "elemwise_sub",
            "_Mul": "elemwise_mul", "_mul": "elemwise_mul", "_Div": "elemwise_div", "_div": "elemwise_div",
            "_Mod": "_mod", "_Power": "_power", "_Maximum": "_maximum", "_Minimum": "_minimum",
            "identity": "_copy", "cast": "Cast", "broadcast_plus": "broadcast_add",
            "broadcast_minus": "broadcast_sub", "broadcast_axes": "broadcast_axis",
            "_RMinusScalar": "_rminus_scalar", "_RPowerScalar": "_rpower_scalar",
            "_EqualScalar": "_equal_scalar", "_LesserEqualScalar": "_lesser_equal_scalar"}
    for alias, canonical in want.items():
        assert find_op(alias).name == canonical, alias
    # every CamelCase name Symbol's arithmetic calls exists
    for called in ("_Plus", "_PlusScalar", "_Minus", "_MinusScalar", "_RMinusScalar", "_Mul", "_MulScalar",
                   "_Div", "_DivScalar", "_RDivScalar", "_Mod", "_ModScalar", "_RModScalar", "_Power",
                   "_PowerScalar", "_RPowerScalar", "_equal", "_not_equal", "_greater", "_greater_equal",
                   "_lesser", "_lesser_equal", "_equal_scalar", "_not_equal_scalar", "_greater_scalar",
                   "_greater_equal_scalar", "_lesser_scalar", "_lesser_equal_scalar"):
        assert called in MY_OPS or aliases().get(called) in MY_OPS, called


# ---------------------------------------------------------------------------------------------
# scalar bodies against numpy


@pytest.mark.parametrize("name", sorted(REF))
def test_body_python(name):
    fn, consts = _fn_consts(name)
    ins, want = _cases(name, ANY, python=True)
    _check(_apply(fn, consts, *_read(name, ins)), want, name)


@pytest.mark.parametrize("name", sorted(REF))
def test_body_njit(name):
    fn, consts = _fn_consts(name)
    jit = numba.njit(fn, error_model="numpy")
    ins, want = _cases(name, np.concatenate([ANY, EDGE]), python=False)
    _check(_apply(jit, consts, *_read(name, ins)), want, name)


@pytest.mark.parametrize("name", ["sigmoid", "relu", "elemwise_add", "_greater_scalar", "clip", "round"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_body_njit_other_dtypes(name, dtype):
    fn, consts = _fn_consts(name)
    jit = numba.njit(fn, error_model="numpy")
    x = np.array([-3, -1, 0, 1, 2, 5], dtype=dtype)
    cols = (x,) * (fn.__code__.co_argcount - len(consts))
    got = np.array([jit(*v, *consts) for v in zip(*cols)], dtype=np.float64)
    want = np.array([fn(*(float(t) for t in v), *consts) for v in zip(*cols)])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_sigmoid_stable_for_large_inputs():
    fn, _ = _fn_consts("sigmoid")
    assert fn(-1000.0) == 0.0 and fn(1000.0) == 1.0  # no OverflowError in pure Python either
    assert fn(-700.0) == pytest.approx(math.exp(-700.0), rel=1e-12)


def test_mod_sign_and_zero():
    fn, _ = _fn_consts("_mod")
    assert [fn(-7.0, 3.0), fn(7.0, -3.0), fn(-7.0, -3.0), fn(7.0, 0.0)] == [2.0, -2.0, -1.0, 0.0]


def test_round_halves_away_from_zero():
    fn, _ = _fn_consts("round")
    assert [fn(v) for v in (-1.5, 1.5, -1.9, 1.9, 2.1, 2.5, -2.5, 0.49999999999999994)] == \
        [-2.0, 2.0, -2.0, 2.0, 2.0, 3.0, -3.0, 0.0]


# ---------------------------------------------------------------------------------------------
# shape inference through mx.sym


def _sym(name, *inputs, **params):
    return getattr(mx.sym, name)(*inputs, name="op", **params)


def _var(n):
    return mx.sym.Variable(n)


UNARY_SHAPED = sorted(n for n, v in REF.items()
                      if v[0] in ("unary", "scalar", "clip", "smooth_l1") and not n.startswith("broadcast_"))


@pytest.mark.parametrize("name", UNARY_SHAPED)
def test_unary_shape(name):
    s = _sym(name, _var("x"), **PARAMS.get(name, {}))
    assert s.infer_shape(x=(2, 3, 4)) == ([(2, 3, 4)], [(2, 3, 4)], [])
    assert s.infer_shape_partial() == ([()], [()], [])


@pytest.mark.parametrize("name", sorted(SAME))
def test_same_shape_binary(name):
    s = _sym(name, _var("a"), _var("b"))
    assert s.list_arguments() == ["a", "b"]
    assert s.infer_shape(a=(4, 5)) == ([(4, 5), (4, 5)], [(4, 5)], [])
    assert s.infer_shape(b=(3,)) == ([(3,), (3,)], [(3,)], [])  # backward: lhs from rhs
    with pytest.raises(ShapeError) as exc:
        s.infer_shape(a=(4, 5), b=(5, 4))
    msg = str(exc.value)
    assert name in msg and "'op'" in msg and "(4,5)" in msg and "(5,4)" in msg and "rhs" in msg


BCAST_CASES = [((2, 3), (3,), (2, 3)), ((2, 1, 3), (4, 1), (2, 4, 3)), ((1,), (5, 4), (5, 4)),
               ((3, 1), (1, 4), (3, 4)), ((2, 3), (2, 3), (2, 3)), ((1, 1), (1,), (1, 1))]


@pytest.mark.parametrize("name", sorted(BCAST))
def test_broadcast_binary_shapes(name):
    for lhs, rhs, out in BCAST_CASES:
        s = _sym(name, _var("a"), _var("b"))
        assert s.infer_shape(a=lhs, b=rhs) == ([lhs, rhs], [out], []), (lhs, rhs)
        assert np.broadcast_shapes(lhs, rhs) == out
    s = _sym(name, _var("a"), _var("b"))
    assert s.infer_shape_partial(a=(2, 3)) == ([(2, 3), ()], [()], [])  # nothing inferred backward
    with pytest.raises(ShapeError) as exc:
        s.infer_shape(a=(2, 3), b=(4,))
    msg = str(exc.value)
    assert name in msg and "'op'" in msg and "(2,3)" in msg and "(4,)" in msg


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), max_size=4), st.lists(st.integers(1, 4), max_size=4))
def test_broadcast_rule_matches_numpy(lhs, rhs):
    lhs, rhs = tuple(lhs), tuple(rhs)
    s = mx.sym.broadcast_mul(_var("a"), _var("b"))
    with mx.np_shape():     # () a 0-d shape, as numpy's (with classic shapes it is an unknown one)
        try:
            want = np.broadcast_shapes(lhs, rhs)
        except ValueError:
            with pytest.raises(ShapeError):
                s.infer_shape(a=lhs, b=rhs)
            return
        assert s.infer_shape(a=lhs, b=rhs)[1] == [want]


def test_broadcast_to():
    s = _sym("broadcast_to", _var("x"), shape=(2, 0, 4))
    assert s.infer_shape(x=(1, 3, 1))[1] == [(2, 3, 4)]
    assert s.infer_shape(x=(2, 3, 4))[1] == [(2, 3, 4)]
    assert _sym("broadcast_to", _var("x"), shape=(5, 6)).infer_shape_partial()[1] == [(5, 6)]
    with pytest.raises(ShapeError, match=r"broadcast_to 'op'.*\(2,3,4,1\).*shape=\(2,0,4\)"):
        s.infer_shape(x=(2, 3, 4, 1))
    with pytest.raises(ShapeError, match=r"\(3,3,1\)"):
        s.infer_shape(x=(3, 3, 1))
    with pytest.raises(ParamError, match="broadcast_to.*shape"):
        _sym("broadcast_to", _var("x"), shape=(2, -1))


def test_broadcast_axis():
    x = _var("x")
    assert _sym("broadcast_axis", x, axis=(0, 2), size=(2, 3)).infer_shape(x=(1, 2, 1))[1] == [(2, 2, 3)]
    assert _sym("broadcast_axes", x, axis=-1, size=5).infer_shape(x=(2, 1))[1] == [(2, 5)]
    assert _sym("broadcast_axis", x).infer_shape(x=(2, 1))[1] == [(2, 1)]
    with pytest.raises(ShapeError, match=r"broadcast_axis 'op'.*\(2,2\).*size 1"):
        _sym("broadcast_axis", x, axis=1, size=3).infer_shape(x=(2, 2))
    with pytest.raises(ShapeError, match="out of range"):
        _sym("broadcast_axis", x, axis=2, size=3).infer_shape(x=(2, 1))
    with pytest.raises(ParamError, match="broadcast_axis.*'axis'.*'size'"):
        _sym("broadcast_axis", x, axis=(0, 1), size=(2,))
    with pytest.raises(ParamError, match="broadcast_axis.*size"):
        _sym("broadcast_axis", x, axis=(0,), size=(0,))


def test_broadcast_like():
    a, b = _var("a"), _var("b")
    assert _sym("broadcast_like", a, b).infer_shape(a=(1, 3), b=(2, 3))[1] == [(2, 3)]
    s = _sym("broadcast_like", a, b, lhs_axes=(0,), rhs_axes=(-1,))
    assert s.infer_shape(a=(1,), b=(1, 5))[1] == [(5,)]
    with pytest.raises(ShapeError, match=r"broadcast_like 'op'.*\(2,3\).*\(2,3,4\)"):
        _sym("broadcast_like", a, b).infer_shape(a=(2, 3), b=(2, 3, 4))
    with pytest.raises(ShapeError, match=r"\(3,3\)"):
        _sym("broadcast_like", a, b).infer_shape(a=(3, 3), b=(2, 3))
    with pytest.raises(ParamError, match="lhs_axes"):
        _sym("broadcast_like", a, b, lhs_axes=(0, 1), rhs_axes=(0,))


def test_broadcast_like_rhs_of_another_dtype():
    # rhs only lends its shape: an int32 rhs leaves a float64 lhs's values and dtype alone
    s = _sym("broadcast_like", _var("a"), _var("b"))
    assert s.infer_type(a=np.float64, b=np.int32) == ([np.float64, np.int32], [np.float64], [])
    lhs = mx.nd.array([[1.5], [-2.0]], dtype="float64")
    got = mx.nd.broadcast_like(lhs, mx.nd.zeros((2, 3), dtype="int32"))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.asnumpy(), [[1.5] * 3, [-2.0] * 3])


def test_where_shapes():
    c, x, y = _var("c"), _var("x"), _var("y")
    s = _sym("where", c, x, y)
    assert s.list_arguments() == ["c", "x", "y"]
    assert s.infer_shape(x=(2, 3)) == ([(2, 3)] * 3, [(2, 3)], [])
    assert s.infer_shape(c=(2,), y=(2, 3)) == ([(2,), (2, 3), (2, 3)], [(2, 3)], [])
    with pytest.raises(ShapeError, match=r"where 'op'.*condition.*\(3,\)"):
        s.infer_shape(c=(3,), x=(2, 3))
    with pytest.raises(ShapeError, match=r"where 'op'.*\(2,4\)"):
        s.infer_shape(x=(2, 3), y=(2, 4))


# ---------------------------------------------------------------------------------------------
# dtype inference


@pytest.mark.parametrize("name", sorted(list(SAME) + list(BCAST)))
def test_binary_dtypes(name):
    s = _sym(name, _var("a"), _var("b"))
    assert s.infer_type(a=np.int32) == ([np.int32, np.int32], [np.int32], [])  # comparisons too
    assert s.infer_type(b=np.float16)[0] == [np.float16, np.float16]
    with pytest.raises(DTypeError) as exc:
        s.infer_type(a=np.float32, b=np.float64)
    msg = str(exc.value)
    assert name in msg and "float32" in msg and "float64" in msg


def test_unary_and_scalar_dtypes():
    for name in ("exp", "_greater_scalar", "_rpower_scalar", "clip", "zeros_like"):
        s = _sym(name, _var("x"), **PARAMS.get(name, {}))
        assert s.infer_type(x=np.float64) == ([np.float64], [np.float64], []), name


def test_cast_dtype():
    s = _sym("Cast", _var("x"), dtype="int32")
    assert s.infer_type(x=np.float32) == ([np.float32], [np.int32], [])
    assert mx.sym.cast(_var("x"), dtype=np.float16).infer_type(x="uint8")[1] == [np.float16]
    assert s.infer_shape(x=(3, 2))[1] == [(3, 2)]
    assert json.loads(s.tojson())["nodes"][1]["attrs"] == {"dtype": "int32"}


def test_where_dtype():
    s = _sym("where", _var("c"), _var("x"), _var("y"))
    assert s.infer_type(c=np.int32, x=np.float32) == ([np.int32, np.float32, np.float32], [np.float32], [])
    with pytest.raises(DTypeError, match="where"):
        s.infer_type(x=np.float32, y=np.float64)


# ---------------------------------------------------------------------------------------------
# params


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_scalar_param(name):
    with pytest.raises(ParamError, match=f"{name}.*'scalar'"):
        _sym(name, _var("x"))
    with pytest.raises(ParamError, match=f"{name}.*'scalar'"):
        _sym(name, _var("x"), scalar="abc")
    s = _sym(name, _var("x"), scalar=3)
    assert s.attr("scalar") == "3.0"
    assert find_op(name).parse_params({"scalar": "-1.5"}) == {"scalar": -1.5}  # from JSON attrs


def test_other_params():
    x = _var("x")
    with pytest.raises(ParamError, match="clip.*'a_max'"):
        mx.sym.clip(x, a_min=0.0)
    with pytest.raises(ParamError, match="Cast.*'dtype'"):
        mx.sym.Cast(x, dtype="complex64")
    with pytest.raises(ParamError, match="smooth_l1.*'scalar'"):
        mx.sym.smooth_l1(x, scalar=0.0)
    with pytest.raises(ParamError, match="Cast.*'dtype'"):
        mx.sym.Cast(x)
    with pytest.raises(ParamError, match="exp.*unknown"):
        mx.sym.exp(x, scalar=1.0)
    with pytest.raises(MXNetError, match="elemwise_add"):
        mx.sym.elemwise_add(x, x, x)


# ---------------------------------------------------------------------------------------------
# Symbol arithmetic builds these records


def _nodes(sym):
    nodes = json.loads(sym.tojson())["nodes"]
    return [(n["op"], n["name"], n.get("attrs", {})) for n in nodes if n["op"] != "null"]


def test_symbol_arithmetic_records():
    a, b = _var("a"), _var("b")
    with mx.name.NameManager():
        cases = [
            (a + b, ("elemwise_add", "_plus0", {})),
            (a - 1, ("_minus_scalar", "_minusscalar0", {"scalar": "1.0"})),
            (1 - a, ("_rminus_scalar", "_rminusscalar0", {"scalar": "1.0"})),
            (2 ** a, ("_rpower_scalar", "_rpowerscalar0", {"scalar": "2.0"})),
            (-a, ("_mul_scalar", "_mulscalar0", {"scalar": "-1.0"})),
            (a == b, ("_equal", "_equal0", {})),
            (a > 1, ("_greater_scalar", "_greater_scalar0", {"scalar": "1.0"})),
            (a * b, ("elemwise_mul", "_mul0", {})),
            (a / 2, ("_div_scalar", "_divscalar0", {"scalar": "2.0"})),
            (a + b, ("elemwise_add", "_plus1", {})),
        ]
        for sym, want in cases:
            assert _nodes(sym)[-1] == want
    s = (a + b) * 2 - 1
    assert s.infer_shape(a=(2, 3))[1] == [(2, 3)]
    assert [op for op, _, _ in _nodes(s)] == ["elemwise_add", "_mul_scalar", "_minus_scalar"]
    with pytest.raises(ShapeError):
        (a + b).infer_shape(a=(2, 3), b=(3, 2))


def test_smooth_l1_sigma_defaults_to_one():
    x = np.array([1.0, 2.0, 0.5, -3.0, 0.0])
    want = np.where(np.abs(x) < 1, 0.5 * x * x, np.abs(x) - 0.5)
    np.testing.assert_allclose(mx.nd.smooth_l1(mx.nd.array(x, dtype="float64")).asnumpy(), want)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_mod_gradient_is_zero_for_integers(dtype):
    """mod has no derivative on integers: MXNet's integer kernels of its gradients give 0 (a head
    gradient of 1 must not flow to either side), while floats get 1 and -floor(a / b)."""
    a, b = mx.sym.Variable("a", dtype=dtype), mx.sym.Variable("b", dtype=dtype)
    x = np.array([[5, 7, -3]], dtype)
    y = np.array([[3], [2]], dtype)
    ga, gb = mx.nd.zeros(x.shape, dtype=dtype), mx.nd.zeros(y.shape, dtype=dtype)
    exe = mx.sym.broadcast_mod(a, b).bind(mx.cpu(), {"a": mx.nd.array(x, dtype=dtype),
                                                     "b": mx.nd.array(y, dtype=dtype)},
                                          args_grad={"a": ga, "b": gb})
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 3), dtype=dtype)])
    if dtype.startswith("int"):
        assert not ga.asnumpy().any() and not gb.asnumpy().any()
    else:
        assert ga.asnumpy().tolist() == [[2, 2, 2]]
        assert gb.asnumpy().ravel().tolist() == (-np.floor(x / y)).sum(axis=1).tolist()
    floats = {"mod": [1, 1], "rmod": [-4, -2]}   # d(v % 4)/dv = 1, d(20 % v)/dv = -floor(20 / v)
    for name, op in (("mod", lambda v: v % 4), ("rmod", lambda v: 20 % v)):   # the scalar forms
        v = mx.nd.array([5, 7], dtype=dtype)
        v.attach_grad()
        with mx.autograd.record():
            out = op(v)
        out.backward()
        assert v.grad.asnumpy().tolist() == ([0, 0] if dtype.startswith("int") else floats[name])

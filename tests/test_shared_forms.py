"""Kernels shared where binds differ: in light programs, broadcast loops and kept-rank reductions
are written once per rank, not once per pattern (the kernels read which axes are stretched, and for
a reduction to an output of the input's rank which are reduced, from the arrays' shapes at run
time), so binding a broadcast op over new patterns reuses the kernels compiled for the first, and
their scalar constants are kernel arguments; a softmax's temperature and the norm layers' eps and
momentum are kernel arguments in every program. Numbers are checked against numpy every time."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import symjit as mx
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config

# (lhs, rhs) pairs of rank 3: every axis stretched on one side, the other, both or neither
PATTERNS = [((2, 1, 4), (1, 3, 4)), ((2, 3, 1), (2, 1, 4)), ((1, 3, 4), (2, 3, 4)),
            ((2, 3, 4), (1, 1, 1)), ((1, 1, 4), (2, 3, 1)), ((2, 3, 4), (2, 3, 4))]


def _modules(sym, shapes: dict, grads: bool) -> dict[str, str]:
    """The kernel modules of the program (name -> source), compiled for the CPU without loading."""
    req = {n: "write" for n in shapes} if grads else {}
    c = compile_symbol(sym, shapes, {n: np.float32 for n in shapes}, req, grads,
                       Config(cache=False), target="cpu", load=False)
    return c.program.kernel_modules


def _forms(sym, shapes: dict, grads: bool) -> set[str]:
    return set(_modules(sym, shapes, grads))


def _pair(op):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    return getattr(mx.sym, op)(a, b)


def test_every_broadcast_pattern_of_a_rank_shares_the_forward_kernel():
    """Every pattern that stretches an operand shares one kernel; arrays of one shape keep a plain
    loop (what LLVM compiles fastest)."""
    stretched = [p for p in PATTERNS if p[0] != p[1]]
    forms = [_forms(_pair("broadcast_mul"), {"a": lhs, "b": rhs}, False) for lhs, rhs in stretched]
    assert len(set().union(*forms)) == 1, forms
    plain = _modules(_pair("broadcast_mul"), {"a": (2, 3, 4), "b": (2, 3, 4)}, False)
    assert [" * _s" in src or "== 1 else 1" in src for src in plain.values()] == [False], plain


def test_gradients_of_patterns_stretching_both_sides_share_their_kernels():
    """Both inputs stretched: the same fused loop with one reduction epilogue and the same kept-rank
    reduction, whichever axes are stretched."""
    both = PATTERNS[:2] + [((1, 1, 4), (2, 3, 1)), ((2, 1, 1), (1, 3, 4))]
    forms = [_forms(_pair("broadcast_mul"), {"a": lhs, "b": rhs}, True) for lhs, rhs in both]
    assert all(f == forms[0] for f in forms), forms


def test_gradients_reduced_to_one_stretched_side_share_their_kernels():
    """One input stretched: its gradient is an elementwise loop (the negation of the head
    gradient, for a subtraction) ending in a kept-rank reduction, which reads the reduced axes from
    the output's shape too, so every pattern of the rank shares its kernel."""
    one = [((2, 3, 4), (1, 3, 4)), ((2, 3, 4), (2, 1, 4)), ((2, 3, 4), (1, 1, 4)), ((2, 3, 4), (2, 3, 1))]
    for op in ("broadcast_minus", "broadcast_div"):
        forms = [_forms(_pair(op), {"a": lhs, "b": rhs}, True) for lhs, rhs in one]
        assert all(f == forms[0] for f in forms), (op, forms)


def _run(op: str, lhs: tuple, rhs: tuple, rng) -> tuple:
    x = rng.uniform(0.5, 2.0, lhs).astype(np.float32)
    y = rng.uniform(0.5, 2.0, rhs).astype(np.float32)
    out_shape = np.broadcast_shapes(lhs, rhs)
    head = rng.uniform(-1, 1, out_shape).astype(np.float32)
    ga, gb = mx.nd.zeros(lhs), mx.nd.zeros(rhs)
    exe = _pair(op).bind(mx.cpu(), {"a": mx.nd.array(x), "b": mx.nd.array(y)},
                         args_grad={"a": ga, "b": gb})
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(head)])
    return x, y, head, exe.outputs[0].asnumpy(), ga.asnumpy(), gb.asnumpy()


def _unbroadcast(g: np.ndarray, shape: tuple) -> np.ndarray:
    axes = tuple(d for d, n in enumerate(shape) if n == 1 and g.shape[d] != 1)
    return g.sum(axis=axes, keepdims=True)


@pytest.mark.parametrize("lhs, rhs", PATTERNS + [((3, 1, 5, 1), (1, 4, 1, 2)), ((0, 3, 1), (1, 3, 4))])
def test_forward_and_gradients_match_numpy_for_every_pattern(lhs, rhs):
    rng = np.random.default_rng(len(lhs) * 10 + sum(lhs))
    with mx.util.np_shape(0 in lhs + rhs):   # zero-size arrays need NumPy shape semantics
        _check_mul_div(lhs, rhs, rng)


def _check_mul_div(lhs, rhs, rng):
    x, y, head, out, ga, gb = _run("broadcast_mul", lhs, rhs, rng)
    np.testing.assert_allclose(out, x * y, rtol=1e-6)
    np.testing.assert_allclose(ga, _unbroadcast(head * y, lhs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb, _unbroadcast(head * x, rhs), rtol=1e-5, atol=1e-6)
    x, y, head, out, ga, gb = _run("broadcast_div", lhs, rhs, rng)
    np.testing.assert_allclose(out, x / y, rtol=1e-6)
    np.testing.assert_allclose(gb, _unbroadcast(-head * x / (y * y), rhs), rtol=1e-5, atol=1e-6)


KEPT_AXES = [(0,), (1,), (2,), (0, 1), (1, 2), (0, 2), (0, 1, 2)]


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_kept_rank_reductions_of_any_axes_match_numpy_and_share_one_kernel(op):
    """Adjacent axes take the (A, R, B) kernel, axes apart the loop; one kernel form either way."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    data = mx.sym.Variable("data")
    forms = set()
    for axes in KEPT_AXES:
        sym = getattr(mx.sym, op)(data, axis=axes, keepdims=True)
        forms |= _forms(sym, {"data": x.shape}, False)
        exe = sym.bind(mx.cpu(), {"data": mx.nd.array(x)})
        got = exe.forward()[0].asnumpy()
        want = getattr(np, op)(x.astype(np.float64), axis=axes, keepdims=True)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{op} over {axes}")
    assert len(forms) == 1, forms


@pytest.mark.parametrize("op, want", [("sum", 0.0), ("mean", np.nan)])   # max/min: a shape error
def test_kept_rank_reduction_over_an_empty_axis(op, want):
    data = mx.sym.Variable("data")
    with mx.util.np_shape(True):
        sym = getattr(mx.sym, op)(data, axis=(1,), keepdims=True)
        exe = sym.bind(mx.cpu(), {"data": mx.nd.zeros((2, 0, 3))})
        got = exe.forward()[0].asnumpy()
    assert got.shape == (2, 1, 3)
    np.testing.assert_array_equal(got, np.full((2, 1, 3), want, np.float32))


def test_a_mean_epilogue_of_a_broadcast_loop_divides_by_its_own_count():
    """``mean(a * b, keepdims)`` fuses the mean into the broadcast loop; its count is the loop's
    elements per output element, read at run time."""
    rng = np.random.default_rng(5)
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    for (lhs, rhs), axes in itertools.product(PATTERNS[:3], [(0,), (1, 2)]):
        sym = mx.sym.mean(mx.sym.broadcast_mul(a, b), axis=axes, keepdims=True)
        x = rng.uniform(-1, 1, lhs).astype(np.float32)
        y = rng.uniform(-1, 1, rhs).astype(np.float32)
        got = sym.bind(mx.cpu(), {"a": mx.nd.array(x), "b": mx.nd.array(y)}).forward()[0].asnumpy()
        np.testing.assert_allclose(got, (x * y).mean(axis=axes, keepdims=True), rtol=1e-5, atol=1e-6)


def test_a_model_program_keeps_one_kernel_per_pattern():
    """A program with a GEMM (a model's) writes its broadcast loop for its own pattern: LLVM
    compiles it faster and it runs faster than the any-pattern loop; only light programs share."""
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    net = mx.sym.FullyConnected(mx.sym.broadcast_mul(a, b) * 0.5, num_hidden=3, name="fc")
    shapes = {"a": (2, 4), "b": (1, 4), "fc_weight": (3, 4), "fc_bias": (3,)}
    loops = [src for src in _modules(net, shapes, False).values() if "_mul" in src]
    assert len(loops) == 1 and "[0, i1]" in loops[0] and " * _s" not in loops[0], loops
    assert "np.float32(0.5)" in loops[0], loops   # its constants written in
    light = _modules(_pair("broadcast_mul"), {"a": (2, 4), "b": (1, 4)}, False).values()
    assert [" * _s" in src for src in light] == [True], light


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_temperatures_share_their_kernels(op):
    """The temperature is passed to the kernel (``KernelWriter.const``), not written into it."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    head = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    data = mx.sym.Variable("data")
    forms = []
    for axis, temperature in [(0, 1.0), (0, 3.0), (0, 0.5), (1, 2.0), (1, 7.0)]:
        sym = getattr(mx.sym, op)(data, axis=axis, temperature=temperature)
        forms.append((axis, frozenset(_forms(sym, {"data": x.shape}, True))))
        z = x.astype(np.float64) / temperature
        e = np.exp(z - z.max(axis=axis, keepdims=True))
        y = e / e.sum(axis=axis, keepdims=True)
        if op == "softmax":
            want, grad = y, y * (head - (head * y).sum(axis=axis, keepdims=True)) / temperature
        else:
            want, grad = np.log(y), (head - y * head.sum(axis=axis, keepdims=True)) / temperature
        g = mx.nd.zeros(x.shape)
        exe = sym.bind(mx.cpu(), {"data": mx.nd.array(x)}, args_grad={"data": g})
        np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), want, rtol=1e-5, atol=1e-6)
        exe.backward([mx.nd.array(head)])
        np.testing.assert_allclose(g.asnumpy(), grad, rtol=1e-4, atol=1e-6)
    assert len({f for a, f in forms if a == 0}) == 1 and len({f for a, f in forms if a == 1}) == 1, forms


def test_norm_layers_differing_in_eps_and_momentum_share_their_kernels():
    """BatchNorm's eps and momentum and LayerNorm's eps are kernel arguments: a net's norm layers
    (and a test's sweep over eps) compile one kernel, and each still uses its own values."""
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (4, 3, 5)).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, 3).astype(np.float32), rng.uniform(-1, 1, 3).astype(np.float32)
    mean, var = rng.uniform(-0.1, 0.1, 3).astype(np.float32), rng.uniform(0.001, 0.01, 3).astype(np.float32)
    data = mx.sym.Variable("data")
    bn_forms, ln_forms = set(), set()
    shapes = {"data": x.shape, **{f"bn_{n}": (3,) for n in ("gamma", "beta", "moving_mean", "moving_var")}}
    for eps, momentum in [(1e-3, 0.9), (0.05, 0.8), (2e-5, 0.5)]:
        bn = mx.sym.BatchNorm(data, eps=eps, momentum=momentum, fix_gamma=False, name="bn")
        bn_forms.add(frozenset(_forms(bn, shapes, False)))
        exe = bn.bind(mx.cpu(), {"data": mx.nd.array(x), "bn_gamma": mx.nd.array(gamma),
                                 "bn_beta": mx.nd.array(beta)},
                      aux_states={"bn_moving_mean": mx.nd.array(mean), "bn_moving_var": mx.nd.array(var)})
        c = (slice(None), None)   # per channel, broadcast over (N, C, W)
        want = (x - mean[c]) / np.sqrt(var[c] + eps) * gamma[c] + beta[c]
        np.testing.assert_allclose(exe.forward(is_train=False)[0].asnumpy(), want, rtol=1e-4, atol=1e-5)
        moving = mx.nd.array(mean)
        train = bn.bind(mx.cpu(), {"data": mx.nd.array(x), "bn_gamma": mx.nd.array(gamma),
                                   "bn_beta": mx.nd.array(beta)},
                        aux_states={"bn_moving_mean": moving, "bn_moving_var": mx.nd.array(var)})
        train.forward(is_train=True)
        np.testing.assert_allclose(moving.asnumpy(), momentum * mean + (1 - momentum) * x.mean(axis=(0, 2)),
                                   rtol=1e-4, atol=1e-6)
        ln = mx.sym.LayerNorm(data, axis=-1, eps=eps, name="ln")
        ln_forms.add(frozenset(_forms(ln, {"data": x.shape, "ln_gamma": (5,), "ln_beta": (5,)}, False)))
        got = ln.bind(mx.cpu(), {"data": mx.nd.array(x), "ln_gamma": mx.nd.ones(5),
                                 "ln_beta": mx.nd.zeros(5)}).forward()[0].asnumpy()
        m, v = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
        np.testing.assert_allclose(got, (x - m) / np.sqrt(v + eps), rtol=1e-4, atol=1e-5)
    assert len(bn_forms) == 1 and len(ln_forms) == 1, (bn_forms, ln_forms)


def test_scalar_constants_of_a_light_program_are_kernel_arguments():
    """``x * s + c`` and ``clip(x, lo, hi)`` over several constants: one kernel each, right values."""
    rng = np.random.default_rng(13)
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    data = mx.sym.Variable("data")
    affine, clip = set(), set()
    for s_, c_, lo, hi in [(0.5, 1.0, -1.0, 1.0), (3.0, -2.5, 0.0, 0.25), (-1.0, 0.0, -0.5, 2.0)]:
        for sym, forms, want in [(data * s_ + c_, affine, x * np.float32(s_) + np.float32(c_)),
                                 (mx.sym.clip(data, lo, hi), clip, np.clip(x, lo, hi))]:
            forms.add(frozenset(_forms(sym, {"data": x.shape}, False)))
            got = sym.bind(mx.cpu(), {"data": mx.nd.array(x)}).forward()[0].asnumpy()
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert len(affine) == 1 and len(clip) == 1, (affine, clip)

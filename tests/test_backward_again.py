"""Any number of ``backward`` calls after one ``forward``: each reads the activations that forward
left, so ``grad_req='add'`` accumulates the same gradient again and ``'write'`` rewrites it. The
memory plan keeps every forward value a backward program reads out of the backward's reuse
(:func:`symjit.compiler.passes.plan.kept`); these graphs had a backward kernel write over such a
value before."""
from __future__ import annotations

import numpy as np
import pytest

import symjit as mx
from symjit.compiler.passes.plan import kept
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config

R = np.random.default_rng(11)


def _leaky_fc():
    x = mx.sym.Variable("x")
    return mx.sym.FullyConnected(mx.sym.LeakyReLU(x, slope=0.5), num_hidden=1, no_bias=True, name="c")


def _sum_fc():
    return mx.sym.FullyConnected(mx.sym.Variable("a") + mx.sym.Variable("b"), num_hidden=2, name="c")


def _deconv_relu_conv():
    x = mx.sym.Variable("x")
    d = mx.sym.Deconvolution(x, kernel=(3, 3), num_filter=2, no_bias=True, name="d")
    return mx.sym.Convolution(mx.sym.relu(d), kernel=(3, 3), num_filter=2, name="c")


def _bn_block():
    x = mx.sym.Variable("x")
    c = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=3, no_bias=True, name="c1")
    b = mx.sym.Activation(mx.sym.BatchNorm(c, fix_gamma=False, name="bn"), act_type="relu")
    c2 = mx.sym.Convolution(b, kernel=(3, 3), pad=(1, 1), num_filter=3, no_bias=True, name="c2")
    return mx.sym.relu(c2 + x)


NETS = {"leakyrelu-fc": (_leaky_fc, {"x": (1, 2)}),
        "sum-fc": (_sum_fc, {"a": (2, 3), "b": (2, 3)}),
        "deconv-relu-conv": (_deconv_relu_conv, {"x": (1, 2, 4, 4)}),
        "conv-bn-relu-conv-add": (_bn_block, {"x": (2, 3, 5, 5)})}


def _bind(build, shapes, req, ctx):
    sym = build()
    ex = sym.simple_bind(ctx, grad_req=req, type_dict={n: "float64" for n in shapes}, **shapes)
    rng = np.random.default_rng(3)
    for arr in ex.arg_dict.values():
        arr[:] = rng.uniform(-1.0, 1.0, arr.shape)
    for arr in ex.grad_arrays:
        if arr is not None:
            arr[:] = 0.0
    return ex


def _variants() -> list:
    """Every net on the CPU; the two small ones on CUDA too (the convolution nets take minutes on
    numba's simulator, where the op cases check every op's repeated backward as well)."""
    out = []
    for net in NETS:
        for req in ("add", "write"):
            out.append(pytest.param(net, req, mx.cpu(), id=f"{net}-{req}-cpu"))
            if net in ("leakyrelu-fc", "sum-fc"):
                out.append(pytest.param(net, req, mx.gpu(0), id=f"{net}-{req}-cuda", marks=pytest.mark.gpu))
    return out


@pytest.mark.parametrize("net, req, ctx", _variants())
def test_backward_calls_after_one_forward(net, req, ctx):
    build, shapes = NETS[net]
    ex = _bind(build, shapes, req, ctx)
    out = ex.forward(is_train=True)[0]
    head = mx.nd.array(R.uniform(-1.0, 1.0, out.shape), ctx=ctx, dtype="float64")
    ex.backward(head)
    once = {n: g.asnumpy() for n, g in ex.grad_dict.items() if g is not None}
    assert any(np.abs(g).max() > 0 for g in once.values())
    for calls in (2, 3):
        ex.backward(head)
        scale = calls if req == "add" else 1
        for name, g in once.items():
            np.testing.assert_allclose(ex.grad_dict[name].asnumpy(), scale * g, rtol=1e-12, atol=1e-14,
                                       err_msg=f"{net}: gradient of {name} after {calls} backward calls")


def test_documented_case_against_its_analytic_gradient():
    ex = _bind(_leaky_fc, {"x": (1, 2)}, "add", mx.cpu())
    ex.arg_dict["x"][:] = np.array([[1.0, -2.0]])
    ex.arg_dict["c_weight"][:] = np.array([[0.5, 0.25]])
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((1, 1), dtype="float64"))
    ex.backward(mx.nd.ones((1, 1), dtype="float64"))
    np.testing.assert_allclose(ex.grad_dict["c_weight"].asnumpy(), [[2.0, -2.0]])
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), [[1.0, 0.25]])


def test_plan_keeps_what_the_backward_reads():
    """Every kept value's buffer outlives the program's last group and no backward value shares
    it, while forward-only temporaries still share buffers."""
    sym, shapes = _bn_block(), {"x": (2, 3, 5, 5)}
    arg_s, _, aux_s = sym.infer_shape(**shapes)
    names = sym.list_arguments() + sym.list_auxiliary_states()
    shp = dict(zip(names, arg_s + aux_s))
    c = compile_symbol(sym, shp, {n: np.float64 for n in names}, {n: "write" for n in sym.list_arguments()},
                       True, Config.from_env(), load=False)
    p, g = c.plan, c.graph
    keep = [v for v in kept(c.groups) if v in p.buffer_of]
    assert keep
    backward = {o for grp in c.groups if grp.phase == "backward" for o in grp.outputs}
    for v in keep:
        buf = p.buffers[p.buffer_of[v]]
        assert buf["end"] == len(c.groups)
        assert not set(buf["values"]) & backward, g.values[v].name

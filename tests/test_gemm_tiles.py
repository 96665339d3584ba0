"""GEMMs on numba's threads in convolution nets: the tile kernels against numpy, the pass that
marks a graph's GEMM ops, and which kernel the CPU lowering picks (counted in the generated
source, not run), then a LeNet step against the same net with BLAS's GEMMs."""
from __future__ import annotations

import numpy as np
import pytest
from symjit.kernels.cpu import gemm_shapes, gemm_tiles
from symjit.kernels.cpu.conv_shapes import vec_tile

import symjit as mx
from examples.nets import lenet, mlp
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config
from symjit.lower.cpu.threaded import place_gemms

from .partsrun import in_parts

needs_tile = pytest.mark.skipif(vec_tile()[0] == 0, reason="the host has no AVX-512 or AVX2 tile")

# (M, K, N): LeNet's fc1 and fc2, the MLP's, rows and columns off the tile and vector sizes,
# one-deep products, and sizes over SPLIT_MIN (threaded) and under it (one run)
SHAPES = [(64, 800, 500), (64, 500, 10), (100, 784, 128), (7, 33, 17), (6, 1, 16), (13, 5, 40),
          (32, 512, 1000), (10, 64, 500), (17, 3, 6)]


def _operands(m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def _close(out, ref, k):
    assert not np.isnan(out).any()
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5 * k * max(1.0, np.abs(ref).max()))


def _taken(form: str, m: int, k: int, n: int) -> bool:
    """Whether the tile kernel of ``form`` takes the float32 product at any size (the size
    threshold set to one multiply-add, as the tests below run it)."""
    saved, gemm_shapes.GEMM_TILES_MIN_MACS = gemm_shapes.GEMM_TILES_MIN_MACS, 1
    try:
        return gemm_shapes.prefers_gemm_tiles(form, m, k, n, "float32")
    finally:
        gemm_shapes.GEMM_TILES_MIN_MACS = saved


# Each form's kernel is compiled apart; the default tier runs the nn kernel, --exhaustive all three.
FORM_CASES = [pytest.param(form, m, k, n, marks=[] if form == "nn" else [pytest.mark.exhaustive],
                           id=f"{form}-{m}-{k}-{n}")
              for form in ("nn", "tn", "nt") for m, k, n in SHAPES if _taken(form, m, k, n)]


@needs_tile
def test_every_shape_is_taken_by_a_tile_kernel():
    assert all(any(_taken(form, *shape) for form in ("nn", "tn", "nt")) for shape in SHAPES)


@needs_tile
@pytest.mark.parametrize("form,m,k,n", FORM_CASES)
def test_tile_kernels_match_numpy(form, m, k, n, monkeypatch):
    monkeypatch.setattr(gemm_shapes, "GEMM_TILES_MIN_MACS", 1)   # the kernels at every size
    a, b, ref = _operands(m, k, n)
    out = np.full((m, n), np.nan, np.float32)
    if form == "nn":
        in_parts(gemm_tiles.gemm_nn_tiles_parts, a, b, out)
    elif form == "tn":
        in_parts(gemm_tiles.gemm_tn_tiles_parts, np.ascontiguousarray(a.T), b, out)   # (a.T).T @ b
    else:
        scratch = np.full(gemm_shapes.gemm_nt_scratch(m, k, n), np.nan, np.float32)
        in_parts(gemm_tiles.gemm_nt_tiles_parts, a, np.ascontiguousarray(b.T), out, scratch)
    _close(out, ref, k)


def test_tiles_need_a_tile_of_rows_and_a_vector_of_columns():
    mr = vec_tile()[0]
    assert not gemm_shapes.prefers_gemm_tiles("nt", 2, 512, 1000, "float32")   # out.T: 2 columns
    assert not gemm_shapes.prefers_gemm_tiles("nn", 64, 500, 10, "float32")    # 10 columns
    assert not gemm_shapes.prefers_gemm_tiles("nn", 64, 500, 16, "float64")
    assert gemm_shapes.prefers_gemm_tiles("nn", 64, 500, 16, "float32") == (mr > 0)
    assert not gemm_shapes.prefers_gemm_tiles("nn", 8, 16, 16, "float32")   # under BLAS's threads


def _compiled(sym, shape, train=True):
    shapes, _, _ = sym.infer_shape(data=shape)
    names = sym.list_arguments()
    reqs = {n: ("null" if n in ("data", "softmax_label") else "write") for n in names} if train else {}
    return compile_symbol(sym, dict(zip(names, shapes)), {n: np.float32 for n in names}, reqs, train,
                          Config(cache=False), target="cpu", load=False)


def test_only_graphs_with_convolutions_mark_their_gemms():
    conv = _compiled(lenet(), (64, 1, 28, 28))
    gemms = [op for op in conv.graph.ops if op.op.name in ("FullyConnected", "dot")]
    assert gemms and all(op.gemm == "threads" for op in gemms)
    dense = _compiled(mlp(), (100, 784))
    assert all(op.gemm == "" for op in dense.graph.ops)
    assert place_gemms(dense.graph) is dense.graph


@needs_tile
def test_lenet_runs_its_gemms_as_tiles_and_the_mlp_keeps_blas():
    src = _compiled(lenet(), (64, 1, 28, 28)).program.source
    # fc1 and fc2 forwards, fc1's data gradient, both weight gradients (fc2's data gradient has 10
    # columns of depth: gemm_nn of (64, 10) @ (10, 500) does fit)
    for kind in ("nt", "nn", "tn"):
        assert f"gemm_{kind}_tiles_parts" in src, kind
    assert "np.dot(" not in src and "gemm_nt(" not in src
    dense = _compiled(mlp(), (100, 784)).program.source
    assert "tiles_parts" not in dense and "np.dot(" in dense


@needs_tile
def test_lenet_step_matches_the_blas_gemms(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.random((16, 1, 28, 28), np.float32)
    y = (np.arange(16) % 10).astype(np.float32)
    results = []
    for tiles in (1, 0):
        monkeypatch.setattr(gemm_shapes, "GEMM_TILES", tiles)
        net = lenet()
        params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
        ex = net.simple_bind(mx.cpu(), data=x.shape, grad_req={n: "write" for n in params})
        src = ex._program("train").program.source
        assert ("tiles_parts" in src) == bool(tiles)
        wrng = np.random.default_rng(1)
        for n in params:
            ex.arg_dict[n][:] = wrng.uniform(-0.1, 0.1, ex.arg_dict[n].shape).astype(np.float32)
        ex.arg_dict["data"][:] = x
        ex.arg_dict["softmax_label"][:] = y
        ex.forward(is_train=True)
        ex.backward()
        results.append([ex.outputs[0].asnumpy()] + [ex.grad_dict[n].asnumpy() for n in params])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6 * max(1.0, np.abs(want).max()))


@needs_tile
def test_dot_products_of_a_convolution_net_match_blas(monkeypatch):
    """``dot`` with transpose_b (the tile's ``a @ b.T`` through the scratch) and with transpose_a,
    forward and gradients, against the same net with BLAS's GEMMs."""
    data, w, v = mx.sym.Variable("data"), mx.sym.Variable("w"), mx.sym.Variable("v")
    h = mx.sym.Flatten(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name="c"))
    net = mx.sym.Group([mx.sym.dot(h, w, transpose_b=True), mx.sym.dot(h, v, transpose_a=True)])
    shapes = {"data": (32, 1, 8, 8), "w": (64, 512), "v": (32, 48)}
    rng = np.random.default_rng(0)
    values = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    results = []
    for tiles in (1, 0):
        monkeypatch.setattr(gemm_shapes, "GEMM_TILES", tiles)
        ex = net.simple_bind(mx.cpu(), grad_req="write", **shapes)
        src = ex._program("train").program.source
        assert ("gemm_nt_tiles_parts" in src and "gemm_tn_tiles_parts" in src) == bool(tiles)
        for n, x in values.items():
            ex.arg_dict[n][:] = x
        outs = [o.asnumpy() for o in ex.forward(is_train=True)]
        ex.backward([mx.nd.array(np.ones_like(o)) for o in outs])
        results.append(outs + [ex.grad_dict[n].asnumpy() for n in shapes])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(want).max()))

"""The lowering interface: rules keyed by (op, target), the facts the passes read from them, and the
targets behind one loop generator."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from symjit.kernels.cpu.conv_shapes import vec_tile

import symjit as mx
from symjit.base import MXNetError
from symjit.cli import main
from symjit.compiler.passes.build import build_forward
from symjit.compiler.passes.fuse import fuse
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config
from symjit.lower import LOOP, Target, get_target, lookup, register_target, rule, target_names
from symjit.lower.cpu import CPU, CPUTarget
from symjit.lower.cuda import CUDA, CUDATarget
from symjit.lower.rules import ANY
from symjit.ops import get_op

ROOT = Path(__file__).resolve().parents[1]
F32 = np.dtype("float32")


def _forward(net, shapes):
    return build_forward(net, shapes, {n: F32 for n in shapes}, False)


def test_lookup_prefers_the_target_then_the_neutral_rule_then_the_loop():
    like = get_op("broadcast_like")
    assert lookup(like, CPU) is lookup(like, CUDA) and lookup(like, CPU).target is ANY
    assert lookup(like, CPU).shape_only == (1,)
    assert lookup(get_op("relu"), CPU) is LOOP and lookup(get_op("relu"), CUDA) is LOOP
    fc = lookup(get_op("FullyConnected"), CPU)
    assert fc.target is CPUTarget and fc.epilogue and fc.emit is not None
    assert lookup(get_op("FullyConnected"), CUDA).target is CUDATarget   # the tiled GEMM
    assert lookup(get_op("batch_dot"), CUDA).target is ANY   # the per-element product
    assert lookup(get_op("BatchNorm"), CUDA).target is CUDATarget   # a block reduction per channel
    assert lookup(get_op("Custom"), CUDA) is lookup(get_op("Custom"), CPU)   # host call
    assert lookup(get_op("sum"), CPU).reduce == "sum"
    assert lookup(get_op("LeakyReLU"), CPU).inplace_pairs({"act_type": "prelu"}) == ()
    assert lookup(get_op("LeakyReLU"), CPU).inplace_pairs({"act_type": "leaky"}) == ((0, 0),)


def test_rule_errors_are_clear():
    with pytest.raises(MXNetError, match="FullyConnected: two lowering rules for target 'cpu'"):
        rule("FullyConnected", CPUTarget)
    with pytest.raises(MXNetError, match="unknown operator 'not_an_op'"):
        rule("not_an_op", CPUTarget)
    with pytest.raises(MXNetError, match="keyed by a Target class or a target, not 'cpu'"):
        lookup(get_op("relu"), "cpu")
    with pytest.raises(MXNetError, match=r"unknown compile target 'tpu' \(expected one of \['cpu', 'cuda'\]"):
        get_target("tpu")
    assert target_names() == ["cpu", "cuda"]


def test_a_reduction_epilogue_is_a_fact_of_the_cpu_rule():
    a = mx.sym.Variable("a")
    g = _forward(mx.sym.sum(mx.sym.exp(a) * 2.0, axis=1), {"a": (3, 4)})
    cpu, cuda = fuse(g, CPU), fuse(g, CUDA)
    assert [len(grp.ops) for grp in cpu] == [3]          # exp, *2 and the sum in one loop
    assert [len(grp.ops) for grp in cuda] == [2, 1]      # no reduction epilogue on CUDA
    assert cuda[1].rules[0].target is CUDATarget and cuda[1].rules[0].reduce is None   # block or thread


def test_a_target_names_the_op_it_cannot_lower(tmp_path, capsys):
    """A target without a rule for an op (here a bare test target: the CPU's code generation, but
    not a CPU subclass, so none of its rules: the neutral ones and elementwise loops only) says
    so, naming the op and the node, in compile_symbol and in `symjit compile` (no traceback)."""
    from symjit.lower.target import _TARGETS

    Bare = type("Bare", (Target,), {**{k: v for k, v in vars(CPUTarget).items() if not k.startswith("__")},
                                    "name": "bare"})

    register_target(Bare())
    try:
        a = mx.sym.Variable("a")
        net = mx.sym.LayerNorm(mx.sym.exp(a) * 2.0, name="total")
        shapes = {"a": (3, 4), "total_gamma": (4,), "total_beta": (4,)}
        with pytest.raises(MXNetError, match="LayerNorm 'total': no bare lowering"):
            compile_symbol(net, shapes, {n: F32 for n in shapes}, {}, False, Config.from_env(),
                           target="bare", load=False)
        path = tmp_path / "net-symbol.json"
        net.save(str(path))
        rc = main(["compile", str(path), "--shape", "a=3,4", "--target", "bare", "--grad-req", "null"])
        err = capsys.readouterr().err
        assert rc == 2 and "LayerNorm 'total': no bare lowering" in err and "Traceback" not in err
    finally:
        del _TARGETS["bare"]


def test_shape_only_input_is_not_a_kernel_input():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    net = mx.sym.exp(mx.sym.broadcast_like(x, y, lhs_axes=(0,), rhs_axes=(1,))) * 2.0
    g = _forward(net, {"x": (1, 3), "y": (2, 5)})
    (grp,) = fuse(g, CPU)
    assert grp.inputs == [g.args["x"]]


# broadcast_like with lhs_axes/rhs_axes: rhs (2, 5) has neither the output's (5, 3) shape nor its
# rank alignment, so a loop that loaded it would read out of bounds. Run fused, with numba's bounds
# checks on, on the CPU and on the CUDA simulator.
BOUNDS_SCRIPT = r"""
import numpy as np, symjit as mx
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config

x, y = mx.sym.Variable('x'), mx.sym.Variable('y')
net = mx.sym.exp(mx.sym.broadcast_like(x, y, lhs_axes=(0,), rhs_axes=(1,))) * 2.0
xv = np.array([[0.5, -1.0, 2.0]], np.float32)
yv = np.zeros((2, 5), np.float32)
want = np.exp(np.broadcast_to(xv, (5, 3))) * 2.0
for target in ('cpu', 'cuda'):
    c = compile_symbol(net, {'x': xv.shape, 'y': yv.shape}, {'x': xv.dtype, 'y': yv.dtype}, {}, False,
                       Config.from_env().replace(program_calls=16), target=target)
    assert sum(not grp.view for grp in c.groups) == 1, c.groups
    g = c.graph
    out = np.zeros((5, 3), np.float32)
    arr = lambda v: {'x': xv, 'y': yv}[g.values[v].ref] if g.values[v].kind == 'arg' else out
    seg, = c.program.segments['forward']
    if seg.kind == 'calls':   # the CPU: one kernel, called from the host
        for fn, args in c.target.prepare_calls(c.module, seg.launches, {v: arr(v) for v in seg.vids}):
            fn(*args)
    else:                     # CUDA: the phase's program function, the stream first
        c.module.forward(0, *[arr(v) for v in c.program.entries['forward'][1]])
    np.testing.assert_allclose(out, want, rtol=1e-6)
    print(target, 'ok')
"""


def test_broadcast_like_axes_fused_under_boundscheck_and_simulator(tmp_path):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NUMBA_BOUNDSCHECK="1", SYMJIT_CACHE="0",
               SYMJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", BOUNDS_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["cpu", "ok", "cuda", "ok"]


def test_both_targets_share_the_loop_generator():
    """The CPU and CUDA kernels of one elementwise group differ only where the target does."""
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    net = mx.sym.tanh(mx.sym.broadcast_mul(x, y) + 1.0)
    shapes, types = {"x": (4, 3), "y": (1, 3)}, {"x": F32, "y": F32}
    compiled = {t: compile_symbol(net, shapes, types, {}, False, Config.from_env(), target=t, load=False)
                for t in ("cpu", "cuda")}
    srcs = {t: c.program.source for t, c in compiled.items()}
    assert "for i0 in range(" in srcs["cpu"] and "for flat in range(cuda.grid(1)" in srcs["cuda"]
    g = compiled["cpu"].graph
    y, out = g.args["y"], g.outputs[0]
    for src in srcs.values():   # the same loads (broadcast by axis steps), composition and store
        assert re.search(rf"= v{y}\[i0 \* _s\d+, i1 \* _s\d+\]", src) and f"v{out}[i0, i1] = " in src
        assert f"= 0 if v{y}.shape[0] == 1 else 1" in src


# --- workspaces: kernels never allocate ----------------------------------------------------------

ALLOCATING = ("np.empty", "np.zeros", "np.ones", "empty_like", "zeros_like", "ones_like",
              "ascontiguousarray", ".copy()")


def _case_program(case, is_train: bool):
    from .opcheck import grad_inputs
    sym = case.build({n: mx.sym.Variable(n) for n in case.inputs})
    names = sym.list_arguments() + sym.list_auxiliary_states()
    wrt = grad_inputs(case, sym.list_arguments()) if is_train else []
    reqs = {n: ("write" if n in wrt else "null") for n in sym.list_arguments()}
    return compile_symbol(sym, {n: case.inputs[n].shape for n in names},
                          {n: case.inputs[n].dtype for n in names}, reqs if wrt else {}, case.is_train,
                          Config.from_env(), load=False)


def test_no_generated_kernel_allocates():
    """Every op case, forward and backward: scratch comes from the plan (rule workspaces)."""
    from .cases import all_cases
    offenders = []
    for case in all_cases():
        for is_train in (False, True):
            src = _case_program(case, is_train).program.source
            offenders += [f"{case} ({'train' if is_train else 'infer'}): {pat}" for pat in ALLOCATING
                          if pat in src]
    assert not offenders, offenders


def test_convolution_scratch_is_a_planned_workspace(capsys, tmp_path):
    from symjit.kernels.cpu.conv import conv2d_cols_shape
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    c = compile_symbol(net, {"data": (2, 3, 6, 6), "conv_weight": (4, 3, 3, 3), "conv_bias": (4,)},
                       {"data": F32, "conv_weight": F32, "conv_bias": F32}, {"conv_weight": "write"},
                       False, Config.from_env(), load=False)
    g = c.graph
    fwd = next(grp for grp in c.groups if grp.anchor is not None and grp.anchor.name == "conv")
    (ws,) = fwd.workspace
    want = conv2d_cols_shape("forward_cnhw", (2, 3, 6, 6), (4, 3, 3, 3), (2, 4, 6, 6), 1)
    assert want[0] == 1 and g.values[ws].name == "conv_workspace0" and g.values[ws].shape == want
    assert ws in c.plan.offsets and ws in fwd.outputs
    buf = c.plan.buffers[c.plan.buffer_of[ws]]
    assert buf["start"] == buf["end"] == fwd.id          # alive only while its kernel runs
    wgrad = [grp for grp in c.groups if grp.anchor is not None
             and grp.anchor.op.name == "_backward_Convolution_weight"]
    assert len(wgrad) == 1 and len(wgrad[0].workspace) == 1
    path = tmp_path / "conv-symbol.json"
    net.save(str(path))
    main(["compile", str(path), "--shape", "data=2,3,6,6", "--format", "json", "--grad-req", "null"])
    memory = json.loads(capsys.readouterr().out)["memory"]
    assert memory["workspace_bytes"] == want[1] * 4


def test_convolution_of_an_image_bigger_than_its_block_runs_blocks_of_output_rows():
    """A layer whose one image's im2col exceeds its block budget (32 filters: 32 * 12 Ki elements)
    over a plane of >= ROWS_MIN_PIXELS outputs plans a workspace of whole output rows, and the
    compiled net computes the convolution (in float64: in float32 the SIMD tile kernels take it)."""
    from symjit.kernels.cpu.conv import conv2d_block_elems, conv2d_cols_shape, conv2d_forward_rows
    x_shape, w_shape, out_shape = (2, 16, 70, 70), (32, 16, 3, 3), (2, 32, 68, 68)
    net = mx.sym.Activation(mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=32,
                                               name="conv"), act_type="relu")
    limit = conv2d_block_elems(w_shape, 1)
    rows = conv2d_forward_rows(16 * 9, 32, 68, 68, limit)
    assert 1 < rows < 68 and (16 * 9 + 32) * 68 * 68 > limit
    f64 = np.dtype("float64")
    c = compile_symbol(net, {"data": x_shape, "conv_weight": w_shape, "conv_bias": (32,)},
                       {"data": f64, "conv_weight": f64, "conv_bias": f64}, {}, False, Config.from_env(),
                       load=False)
    fwd = next(grp for grp in c.groups if grp.anchor is not None and grp.anchor.name == "conv")
    (ws,) = fwd.workspace
    assert c.graph.values[ws].shape == conv2d_cols_shape("forward", x_shape, w_shape, out_shape, 1, limit) \
        == (1, (16 * 9 + 32) * rows * 68)
    assert "conv2d_forward(" in c.program.source
    rng = np.random.default_rng(0)
    args = {"data": rng.standard_normal(x_shape), "conv_weight": rng.standard_normal(w_shape) * 0.1,
            "conv_bias": rng.standard_normal(32)}
    ex = net.bind(mx.cpu(), {k: mx.nd.array(v, dtype="float64") for k, v in args.items()}, grad_req="null")
    got = ex.forward()[0].asnumpy()
    windows = np.lib.stride_tricks.sliding_window_view(args["data"], (3, 3), axis=(2, 3))
    want = np.einsum("nchwij,fcij->nfhw", windows, args["conv_weight"])
    want += args["conv_bias"][None, :, None, None]
    np.testing.assert_allclose(got, np.maximum(want, 0.0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind, x_shape, params", [
    ("depthwise", (2, 8, 6, 6), dict(kernel=(3, 3), num_filter=8, num_group=8, pad=(1, 1))),
    ("1x1", (2, 8, 24, 24), dict(kernel=(1, 1), num_filter=4)),
    ("", (2, 8, 12, 12), dict(kernel=(1, 1), num_filter=4)),          # 144 pixels: im2col + GEMM
    ("", (2, 8, 24, 24), dict(kernel=(1, 1), num_filter=4, stride=(2, 2))),
])
def test_cpu_convolution_picks_a_direct_kernel_by_shape(kind, x_shape, params):
    """Depthwise and big-image 1x1 forwards call conv_direct's kernels and plan no scratch; the rest
    im2col + GEMM with a planned workspace (the program is generated, not compiled)."""
    net = mx.sym.Activation(mx.sym.Convolution(mx.sym.Variable("data"), name="conv", no_bias=True,
                                               **params), act_type="relu")
    w_shape = (params["num_filter"], x_shape[1] // params.get("num_group", 1), *params["kernel"])
    c = compile_symbol(net, {"data": x_shape, "conv_weight": w_shape}, {"data": F32, "conv_weight": F32},
                       {}, False, Config.from_env(), load=False)
    src = c.program.source
    fwd = next(grp for grp in c.groups if grp.anchor is not None and grp.anchor.name == "conv")
    if kind:
        assert f"conv2d_forward_{kind}(" in src and "im2col" not in src and not fwd.workspace
    else:
        assert "conv_direct" not in src and len(fwd.workspace) == 1
    assert len(c.groups) == 1     # the relu stays in the convolution's epilogue


def test_a_wide_3x3_convolution_runs_winograd_forward_and_gradients():
    """96 channels over 6 x 14 x 14 (294 output tiles, 1176 positions: too many for the tiles'
    small-plane rule): the forward and both gradients call the Winograd kernels; the compiled net's
    output and gradients match numpy's convolution."""
    x_shape, w_shape = (6, 96, 14, 14), (96, 96, 3, 3)
    net = mx.sym.Activation(mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), pad=(1, 1),
                                               num_filter=96, name="conv"), act_type="relu")
    rng = np.random.default_rng(0)
    args = {"data": rng.standard_normal(x_shape), "conv_weight": rng.standard_normal(w_shape) * 0.05,
            "conv_bias": rng.standard_normal(96)}
    ex = net.bind(mx.cpu(), {k: mx.nd.array(v.astype(np.float32)) for k, v in args.items()},
                  args_grad={k: mx.nd.zeros(v.shape) for k, v in args.items()})
    c = compile_symbol(net, {"data": x_shape, "conv_weight": w_shape, "conv_bias": (96,)},
                       {"data": F32, "conv_weight": F32, "conv_bias": F32},
                       {"data": "write", "conv_weight": "write", "conv_bias": "write"}, True,
                       Config.from_env(), load=False)
    src = c.program.source
    assert "conv2d_forward_winograd_parts(" in src and "conv2d_backward_data_winograd_parts(" in src
    assert "conv2d_backward_weight_winograd_parts(" in src and "im2col" not in src
    got = ex.forward(is_train=True)[0].asnumpy()
    padded = np.pad(args["data"], ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    pre = np.einsum("nchwij,fcij->nfhw", windows, args["conv_weight"])
    pre += args["conv_bias"][None, :, None, None]
    np.testing.assert_allclose(got, np.maximum(pre, 0.0), rtol=1e-4, atol=1e-4)
    head = rng.standard_normal(got.shape)
    ex.backward(mx.nd.array(head.astype(np.float32)))
    dpre = head * (pre > 0)
    dpadded = np.zeros_like(padded)
    for i in range(3):
        for j in range(3):
            tap = args["conv_weight"][:, :, i, j]
            dpadded[:, :, i:i + 14, j:j + 14] += np.einsum("nfhw,fc->nchw", dpre, tap)
    got_dx = ex.grad_dict["data"].asnumpy()
    np.testing.assert_allclose(got_dx, dpadded[:, :, 1:-1, 1:-1], rtol=1e-4, atol=1e-4)
    dw = np.einsum("nfhw,nchwij->fcij", dpre, windows)
    np.testing.assert_allclose(ex.grad_dict["conv_weight"].asnumpy(), dw, rtol=1e-4, atol=1e-3)


def test_cuda_launch_plan_and_ptx_errors(tmp_path, capsys, monkeypatch):
    x = mx.sym.Variable("x")
    path = tmp_path / "n-symbol.json"
    (mx.sym.tanh(mx.sym.transpose(x)) * 2.0).save(str(path))
    base = ["compile", str(path), "--shape", "x=3,300", "--grad-req", "null"]
    assert main([*base, "--target", "cuda"]) == 0
    out = capsys.readouterr().out
    assert "== launch plan (cuda) ==" in out and "k0: 900 elements, grid 4 x block 256" in out
    assert main([*base, "--target", "cuda", "--format", "json"]) == 0
    launches = json.loads(capsys.readouterr().out)["launches"]
    assert [(la["kernel"], la["grid"], la["block"]) for la in launches] == [("k0", 4, 256), ("k1", 4, 256)]
    assert main(base) == 0 and "launch plan" not in capsys.readouterr().out   # CPU kernels are calls
    assert main([*base, "--emit", "ptx"]) == 2
    assert "--emit ptx needs --target cuda" in capsys.readouterr().err
    monkeypatch.setattr("numba.config.ENABLE_CUDASIM", 1)
    assert main([*base, "--target", "cuda", "--emit", "ptx"]) == 2
    assert "unset NUMBA_ENABLE_CUDASIM" in capsys.readouterr().err
    monkeypatch.undo()
    with pytest.raises(MXNetError, match="--arch 'hopper': expected a CUDA architecture"):
        from symjit.lower.cuda.ptx import parse_arch
        parse_arch("hopper")


def test_loop_outputs_never_overwrite_what_an_in_loop_product_reads():
    """A CUDA FullyConnected computes each element inside the loop from a whole row of its input:
    the fused product's output must not take over that input's buffer (the CPU's GEMM finishes
    before the loop, so there it may)."""
    x = mx.sym.Variable("x")
    h = mx.sym.relu(x)
    fc = mx.sym.FullyConnected(h, num_hidden=6, no_bias=True, name="fc")
    net = mx.sym.Group([mx.sym.transpose(fc * h), fc])   # fc * h is a temporary; h dies in its loop
    shapes, types = {"x": (4, 6), "fc_weight": (6, 6)}, {"x": F32, "fc_weight": F32}
    for target, may in (("cpu", True), ("cuda", False)):
        c = compile_symbol(net, shapes, types, {}, False, Config.from_env(), target=target, load=False)
        h_id = next(op.outputs[0] for op in c.graph.ops if op.op.name == "relu")
        assert any(i == h_id for _, i in c.plan.inplace) is may, (target, c.plan.inplace)


def test_cuda_gemm_is_one_tiled_kernel_with_its_epilogue():
    """FullyConnected + relu on CUDA: one kernel launched a block per output tile, staging operand
    tiles in shared memory, with the bias and the relu applied before the store; the dot products
    of its backward program are tiled too."""
    x = mx.sym.Variable("x")   # small: the simulator tiles products up to 4096 multiply-adds
    net = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=6, name="fc"), act_type="relu")
    shapes = {"x": (17, 5), "fc_weight": (6, 5), "fc_bias": (6,)}
    reqs = {"x": "write", "fc_weight": "write", "fc_bias": "write"}
    c = compile_symbol(net, shapes, {n: F32 for n in shapes}, reqs, True, Config(cache=False),
                       target="cuda", load=False)
    fwd = [g for g in c.groups if g.phase == "forward" and not g.view]
    assert len(fwd) == 1 and [op.op.name for op in fwd[0].ops] == ["FullyConnected", "Activation"]
    tiles = [name for name, (per, _) in c.program.spans.items() if per == "tile"]
    assert f"k{fwd[0].id}" in tiles and len(tiles) >= 3   # forward, and the data/weight gradients
    assert c.program.spans[f"k{fwd[0].id}"] == ("tile", 2 * 1)   # ceil(17/16) * ceil(6/16)
    src = c.program.source
    assert src.count("cuda.shared.array") >= 2 * len(tiles) and "cuda.syncthreads()" in src


def test_cuda_reductions_pick_a_block_per_output_for_long_slices():
    """A full sum on CUDA is one block whose threads share the work (block reduction), a sum of
    short rows a thread per output; both reduce what the CPU reduces."""
    x = mx.sym.Variable("x")
    for net, shape, per, n in ((mx.sym.sum(x), (40, 50), "block", 1),
                               (mx.sym.max(x, axis=1), (1000, 4), "element", 1000)):
        c = compile_symbol(net, {"x": shape}, {"x": F32}, {}, False, Config(cache=False),
                           target="cuda", load=False)
        assert list(c.program.spans.values()) == [(per, n)], c.program.spans
    assert "block_reduce" in compile_symbol(mx.sym.sum(x), {"x": (40, 50)}, {"x": F32}, {}, False,
                                            Config(cache=False), target="cuda", load=False).program.source


def test_cuda_softmax_gives_long_rows_a_block():
    """softmax (and its gradient) over rows of 32 entries or more: a block per row on CUDA; short
    rows keep a thread per element."""
    x = mx.sym.Variable("x")
    for shape, per in (((6, 40), "block"), ((6, 5), "element")):
        c = compile_symbol(mx.sym.softmax(x), {"x": shape}, {"x": F32}, {"x": "write"}, True,
                           Config(cache=False), target="cuda", load=False)
        spans = sorted(c.program.spans.values())
        assert spans == ([("block", 6)] * 2 if per == "block" else [("element", 30)] * 2), spans


def test_cuda_convolution_is_an_implicit_gemm_unless_grouped():
    """Convolution + relu on CUDA: one tiled kernel (the patch gathered into shared memory, no
    column buffer), and its data and weight gradients tiled too; a grouped convolution keeps a
    thread per output element."""
    x = mx.sym.Variable("x")
    for groups, per in ((1, "tile"), (2, "element")):
        net = mx.sym.Activation(mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1),
                                                   num_group=groups, name="cv"), act_type="relu")
        shapes = {"x": (1, 2, 5, 5), "cv_weight": (4, 2 // groups, 3, 3), "cv_bias": (4,)}
        c = compile_symbol(net, shapes, {n: F32 for n in shapes}, {n: "write" for n in shapes}, True,
                           Config(cache=False), target="cuda", load=False)
        fwd = [g for g in c.groups if g.phase == "forward" and not g.view]
        assert [op.op.name for op in fwd[0].ops] == ["Convolution", "Activation"]
        kinds = {g.ops[0].op.name: c.program.spans[f"k{g.id}"][0] for g in c.groups
                 if f"k{g.id}" in c.program.spans}
        for op in ("Convolution", "_backward_Convolution_data", "_backward_Convolution_weight"):
            assert kinds[op] == per, kinds


@pytest.mark.skipif(vec_tile()[0] == 0, reason="the host has neither AVX2 nor AVX-512: no tile kernels")
@pytest.mark.parametrize("batch", [1, 2])
def test_a_big_plane_convolution_runs_the_simd_tile_kernels(batch, monkeypatch, wide_tile_rule):
    """float32 over 80 x 80 planes at stride 1, 32 channels and filters: the forward and both
    gradients call the tile kernels of conv_vec; output and gradients match numpy's. The batch
    fits the scratch's block, so the forward leaves its result there for the epilogue loop to read
    (``conv2d_forward_vec_flat_parts``); with a block budget of one image (no
    ``VEC_BLOCK_IMAGES`` of 1), two images take a block each and the kernel writes the output itself."""
    if batch == 2:
        from symjit.kernels.cpu import conv_shapes
        monkeypatch.setattr(conv_shapes, "VEC_BLOCK_IMAGES", 1)
    x_shape, w_shape = (batch, 32, 80, 80), (32, 32, 3, 3)
    net = mx.sym.Activation(mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), pad=(1, 1),
                                               num_filter=32, name="conv"), act_type="relu")
    rng = np.random.default_rng(1)
    args = {"data": rng.standard_normal(x_shape), "conv_weight": rng.standard_normal(w_shape) * 0.05,
            "conv_bias": rng.standard_normal(32)}
    c = compile_symbol(net, {"data": x_shape, "conv_weight": w_shape, "conv_bias": (32,)},
                       {"data": F32, "conv_weight": F32, "conv_bias": F32},
                       {"data": "write", "conv_weight": "write", "conv_bias": "write"}, True,
                       Config.from_env(), load=False)
    src = c.program.source
    forward = "conv2d_forward_vec_flat_parts(" if batch == 1 else "conv2d_forward_vec_parts("
    assert forward in src and "conv2d_backward_data_vec_parts(" in src
    assert "conv2d_backward_weight_vec_parts(" in src and "im2col" not in src
    ex = net.bind(mx.cpu(), {k: mx.nd.array(v.astype(np.float32)) for k, v in args.items()},
                  args_grad={k: mx.nd.zeros(v.shape) for k, v in args.items()})
    got = ex.forward(is_train=True)[0].asnumpy()
    padded = np.pad(args["data"], ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    pre = np.einsum("nchwij,fcij->nfhw", windows, args["conv_weight"])
    pre += args["conv_bias"][None, :, None, None]
    np.testing.assert_allclose(got, np.maximum(pre, 0.0), rtol=1e-4, atol=1e-4)
    head = rng.standard_normal(got.shape)
    ex.backward(mx.nd.array(head.astype(np.float32)))
    dpre = head * (got > 0)   # relu's mask as computed (a pre-activation within rounding of 0: either side)
    dpadded = np.zeros_like(padded)
    for i in range(3):
        for j in range(3):
            tap = args["conv_weight"][:, :, i, j]
            dpadded[:, :, i:i + 80, j:j + 80] += np.einsum("nfhw,fc->nchw", dpre, tap)
    got_dx = ex.grad_dict["data"].asnumpy()
    np.testing.assert_allclose(got_dx, dpadded[:, :, 1:-1, 1:-1], rtol=1e-4, atol=1e-4)
    dw = np.einsum("nfhw,nchwij->fcij", dpre, windows)
    np.testing.assert_allclose(ex.grad_dict["conv_weight"].asnumpy(), dw, rtol=1e-4, atol=1e-3)

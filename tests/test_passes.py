"""Pass tests that run nothing: graphs verified between passes, fused groups counted and compared
with the expected grouping, memory plans checked for validity and against MXNet's figures."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.compiler.passes.autodiff import autodiff
from symjit.compiler.passes.build import build_forward
from symjit.compiler.passes.fuse import MAX_GROUP_OPS, fuse
from symjit.compiler.passes.plan import _intervals, plan_memory
from symjit.compiler.passes.simplify import simplify
from symjit.config import Config
from symjit.executor import Executor
from symjit.lower.cpu import CPU

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples.nets import deep_mlp, lenet, mlp, mlp_bn  # noqa: E402

MiB = 2 ** 20


def lower(sym, data_shape, training: bool, fusion: bool = True, grad_data: bool = False):
    names = sym.list_arguments() + sym.list_auxiliary_states()
    arg_s, _, aux_s = sym.infer_shape(data=data_shape)
    shapes = dict(zip(names, list(arg_s) + list(aux_s)))
    fwd = build_forward(sym, shapes, {n: np.dtype("float32") for n in names}, training)
    fwd.verify()
    g = fwd
    if training:
        reqs = {n: ("write" if n not in ("data", "softmax_label") or grad_data else "null")
                for n in sym.list_arguments()}
        g = autodiff(fwd, reqs)
        g.verify()
    g = CPU.schedule(simplify(g, fusion))
    g.verify()
    groups = fuse(g, CPU, enabled=fusion)
    return g, groups, plan_memory(g, groups)


def check_plan(g, groups, plan) -> None:
    """No two buffers alive at the same step overlap in memory; every temporary has a buffer;
    in-place pairs share a buffer and a size."""
    bufs = plan.buffers
    for a in bufs:
        for b in bufs:
            if a["id"] < b["id"] and not (a["end"] < b["start"] or b["end"] < a["start"]):
                oa, ob = plan.offsets[a["values"][0]], plan.offsets[b["values"][0]]
                assert oa + a["size"] <= ob or ob + b["size"] <= oa, (a, b)
    life = _intervals(g, groups)
    for b in bufs:   # values sharing a buffer (views aside) live one after the other
        vals = sorted((v for v in b["values"] if v not in plan.aliases), key=lambda v: life[v])
        for prev, nxt in zip(vals, vals[1:]):
            assert life[nxt][0] >= life[prev][1], (g.values[prev], life[prev], g.values[nxt], life[nxt])
    for o, i in plan.inplace:
        assert plan.buffer_of[o] == plan.buffer_of[i]
        assert g.values[o].nbytes == g.values[i].nbytes
    assert max((plan.offsets[b["values"][0]] + b["size"] for b in bufs), default=0) == plan.planned_bytes


@pytest.mark.parametrize("net, shape, training, mxnet_mb", [
    (deep_mlp, (100, 784), True, 4),      # MXNet 1.9.1: 4 MB
    (deep_mlp, (100, 784), False, 0),     # MXNet 1.9.1: under 1 MB
    (lenet, (64, 1, 28, 28), True, 12),   # MXNet 1.9.1: 12 MB
    (lenet, (64, 1, 28, 28), False, 4),   # MXNet 1.9.1: 4 MB
])
def test_memory_no_more_than_mxnet(net, shape, training, mxnet_mb):
    """MXNet's figures count activations, not its operators' workspaces (a separate resource), in
    whole MiB rounded down (its executor's ``debug_str`` prints ``bytes >> 20`` "MB allocated"): the
    plan, in the same unit, is no larger."""
    g, groups, plan = lower(net(), shape, training)
    check_plan(g, groups, plan)
    used = plan.activation_bytes
    assert used >> 20 <= mxnet_mb, f"{used / MiB:.2f} MiB, MXNet {mxnet_mb} MB"
    assert used <= plan.planned_bytes
    assert plan.inplace, "expected in-place reuse"
    assert plan.planned_bytes < plan.naive_bytes


@pytest.mark.parametrize("fusion", [True, False])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("net, shape", [
    (mlp, (100, 784)), (mlp_bn, (100, 784)), (deep_mlp, (100, 784)), (lenet, (64, 1, 28, 28)),
])
def test_every_plan_is_valid(net, shape, training, fusion):
    for grad_data in (False, True):
        check_plan(*lower(net(), shape, training, fusion, grad_data))


def test_inference_plan_frees_forward_values_early():
    _, _, train = lower(deep_mlp(), (100, 784), True)
    _, _, infer = lower(deep_mlp(), (100, 784), False)
    assert infer.planned_bytes * 4 < train.planned_bytes


def test_relu_runs_in_place_on_the_gemm_output():
    g, groups, plan = lower(mlp(), (100, 784), False)
    pairs = {(g.values[o].name, g.values[i].name) for o, i in plan.inplace}
    assert ("relu1_output", "fc1_output") in pairs and ("relu2_output", "fc2_output") in pairs


def test_mlp_grouping_forward_and_backward():
    g, groups, _ = lower(mlp(), (100, 784), True)
    kernels = [[op.name for op in grp.ops] for grp in groups if not grp.view]
    assert kernels[:4] == [["fc1", "relu1"], ["fc2", "relu2"], ["fc3"], ["softmax"]]
    fused_backward = [k for k in kernels if any(n.startswith("_backward_activation") for n in k)]
    assert all(k[0].startswith("dot") for k in fused_backward)   # activation grad in the GEMM epilogue
    assert any(any(n.startswith("sum") for n in k) for k in fused_backward), \
        "the bias gradient sum should fuse into the loop computing its input"


def test_batchnorm_inference_folds_into_gemm_epilogue():
    g, groups, _ = lower(deep_mlp(3, 32), (8, 20), False)
    kernels = [[op.op.name for op in grp.ops] for grp in groups if not grp.view]
    assert kernels[0] == ["FullyConnected", "_BatchNorm_inference", "Activation"]
    assert len(kernels) == 5   # 3 fused layers, the output layer, softmax


def test_elementwise_chain_is_one_kernel_and_unfused_is_one_per_op():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    net = mx.sym.tanh(mx.sym.sigmoid(x * 2.0 + 1.0) - x / 3.0) * y
    shapes = {"x": (4, 5), "y": (4, 5)}
    g = build_forward(net, shapes, {"x": np.dtype("float64"), "y": np.dtype("float64")}, False)
    assert len(fuse(g, CPU)) == 1
    assert len(fuse(g, CPU, enabled=False)) == len(g.ops) == 7


def test_a_fused_group_stops_at_the_op_limit_and_still_computes_the_chain():
    """A chain of 2.5 * MAX_GROUP_OPS dependent elementwise ops fuses into three kernels (each
    at most MAX_GROUP_OPS ops, the values where they split materialized), and same-shaped
    independent chains with only external inputs split the same way; the results are numpy's."""
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    n = MAX_GROUP_OPS * 5 // 2
    chain = x
    for i in range(n):
        chain = chain * 0.5 if i % 2 else chain + y
    shapes, dtypes = {"x": (3, 4), "y": (3, 4)}, {"x": np.dtype("float64"), "y": np.dtype("float64")}
    groups = fuse(build_forward(chain, shapes, dtypes, False), CPU)
    assert [len(grp.ops) for grp in groups] == [MAX_GROUP_OPS, MAX_GROUP_OPS, n - 2 * MAX_GROUP_OPS]
    parts = mx.sym.Group([mx.sym.exp(x * float(i)) for i in range(MAX_GROUP_OPS)])
    sizes = [len(grp.ops) for grp in fuse(build_forward(parts, shapes, dtypes, False), CPU)]
    assert sizes == [MAX_GROUP_OPS, MAX_GROUP_OPS] and len(fuse(build_forward(
        mx.sym.Group([mx.sym.exp(x * float(i)) for i in range(MAX_GROUP_OPS // 2)]), shapes, dtypes,
        False), CPU)) == 1
    rng = np.random.default_rng(0)
    xv, yv = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4))
    want = xv
    for i in range(n):
        want = want * 0.5 if i % 2 else want + yv
    ex = chain.bind(mx.cpu(), {"x": mx.nd.array(xv, dtype="float64"), "y": mx.nd.array(yv, dtype="float64")})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), want, rtol=1e-12, atol=1e-12)


def test_dead_backward_ops_are_removed():
    g, _, _ = lower(mlp(), (10, 784), True, grad_data=False)
    assert "data" not in g.grads
    first_layer_dx = [op for op in g.ops if op.phase == "backward" and op.op.name == "dot"
                      and g.values[op.inputs[1]].name == "fc1_weight"]
    assert not first_layer_dx, "the data gradient of the first layer is dead and must be dropped"
    g2, _, _ = lower(mlp(), (10, 784), True, grad_data=True)
    assert "data" in g2.grads


def test_placement_index_finds_exactly_the_buffers_alive_with_a_new_one():
    from symjit.compiler.passes.plan import _SPAN, _Placed
    rng = np.random.default_rng(3)
    placed, every = _Placed(), []
    for k in range(400):
        start = int(rng.integers(0, 20 * _SPAN))
        end = start + int(rng.choice([0, 1, _SPAN - 1, _SPAN, _SPAN + 1, 7 * _SPAN]))
        if k % 50 == 0:
            start, end = _SPAN * (k // 50), _SPAN * (k // 50) + _SPAN   # bucket edges
        placed.add(64 * k, 64, start, end)
        every.append((64 * k, 64, start, end))
        lo = int(rng.integers(0, 21 * _SPAN))
        hi = lo + int(rng.choice([0, 3, 2 * _SPAN]))
        want = sorted((o, s) for o, s, st, en in every if not (en < lo or st > hi))
        assert placed.clashes(lo, hi) == want


def test_slices_taking_whole_inputs_of_a_concat_read_those_inputs():
    """``slice_axis`` of whole Concat inputs: the input itself or a Concat of the pieces, and the
    full Concat is built only where something else reads it; same values, same gradients."""
    a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
    cat = mx.sym.concat(a, b * 2, c, dim=0)
    middle = mx.sym.slice_axis(cat, axis=0, begin=2, end=5)          # b * 2
    tail = mx.sym.slice_axis(cat, axis=-2, begin=-7, end=None)       # b * 2 and c
    odd = mx.sym.slice_axis(cat, axis=0, begin=1, end=5)             # not on an edge: a real slice
    shapes = {"a": (2, 4), "b": (3, 4), "c": (4, 4)}
    types = {n: np.dtype("float64") for n in shapes}
    rng = np.random.default_rng(3)
    vals = {n: rng.uniform(-1, 1, s) for n, s in shapes.items()}
    full = np.concatenate([vals["a"], vals["b"] * 2, vals["c"]])
    grad_a_odd = np.zeros((2, 4))
    grad_a_odd[1] = 1.0
    cases = [(mx.sym.Group([middle * 3, tail]), [full[2:5] * 3, full[2:]], 0, np.zeros((2, 4))),
             (mx.sym.Group([middle * 3, odd]), [full[2:5] * 3, full[1:5]], 1, grad_a_odd),
             (mx.sym.Group([middle * 3, cat]), [full[2:5] * 3, full], 0, np.ones((2, 4)))]
    for sym, wants, slices, grad_a in cases:
        g = build_forward(sym, shapes, types, True)
        assert sum(op.op.name == "Concat" for op in g.ops) == 1
        assert sum(op.op.name == "slice_axis" for op in g.ops) == slices
        ex = sym.bind(mx.cpu(), {n: mx.nd.array(v, dtype="float64") for n, v in vals.items()},
                      args_grad={n: mx.nd.zeros(s, dtype="float64") for n, s in shapes.items()})
        for got, want in zip(ex.forward(is_train=True), wants):
            np.testing.assert_array_equal(got.asnumpy(), want)
        ex.backward([mx.nd.ones(w.shape, dtype="float64") for w in wants])
        np.testing.assert_array_equal(ex.grad_dict["b"].asnumpy(), np.full((3, 4), 8.0))   # 2 * 3 + 2
        np.testing.assert_array_equal(ex.grad_dict["a"].asnumpy(), grad_a)


@pytest.mark.parametrize("training", [True, False])
def test_plan_of_an_unrolled_loop_spanning_many_buckets_is_valid(training):
    """A while loop unrolled 40 steps by hand (each step's condition a reduction, its new state
    kept while every condition so far held): a few hundred kernel groups, so buffers fall in many
    of the placement index's buckets."""
    a, s = mx.sym.var("a"), mx.sym.var("s")
    active, rows = None, []
    for _ in range(40):
        flag = mx.sym.reshape(mx.sym.sum(s) < 1e9, shape=(1,))
        active = flag if active is None else active * flag
        rows.append(s * a)
        s = mx.sym.where(mx.sym.broadcast_like(active, s), s * 0.5 + a, s)
    sym = mx.sym.Group([mx.sym.stack(*rows, axis=0, num_args=40), s])
    shapes = {"a": (3,), "s": (3,)}
    g = build_forward(sym, shapes, {n: np.dtype("float32") for n in shapes}, training)
    if training:
        g = autodiff(g, {"a": "write", "s": "write"})
    g = CPU.schedule(simplify(g, True))
    groups = fuse(g, CPU, enabled=True)
    plan = plan_memory(g, groups)
    assert len(groups) > 4 * 64
    check_plan(g, groups, plan)


def test_schedule_order_sweep_places_every_buffer_where_the_scan_does():
    """The one-sweep placer gives the offsets of the scanning best-fit placer on buffers taken by
    start step, with holes, merges and ties."""
    from symjit.compiler.passes.plan import _place, _sweep
    rng = np.random.default_rng(5)
    for trial in range(30):
        n = int(rng.integers(1, 400))
        starts = np.sort(rng.integers(0, 200, n))
        buffers = [{"size": 64 * int(rng.choice([1, 1, 2, 3, 8, 50])), "start": int(st),
                    "end": int(st + rng.choice([0, 1, 2, 5, 30, 300]))} for st in starts]
        order = sorted(range(n), key=lambda b: (buffers[b]["start"], b))
        assert _sweep(buffers, order) == _place(buffers, order), trial


def _rnn_parameter_gradient(layers: int, fusion: bool):
    out = mx.sym.RNN(mx.sym.var("x"), mx.sym.var("p"), mx.sym.var("s"), mx.sym.var("c"),
                     state_size=16, num_layers=layers, mode="lstm", state_outputs=True)
    arg_shapes, _, _ = out.infer_shape(x=(6, 2, 16))
    shapes = dict(zip(out.list_arguments(), arg_shapes))
    g = build_forward(out, shapes, {n: np.dtype("float32") for n in shapes}, True)
    g = CPU.schedule(simplify(autodiff(g, {"p": "write", "x": "null", "s": "null", "c": "null"}), fusion))
    groups = fuse(g, CPU, enabled=fusion)
    plan = plan_memory(g, groups)
    check_plan(g, groups, plan)
    return g, groups, plan, 4 * shapes["p"][0]


def test_gradient_parts_of_one_value_wait_at_most_sum_cap_at_a_time():
    """``RNN`` cuts its parameter vector into pieces (four per layer), each piece's gradient
    (unfused) a vector-sized part of the vector's gradient: with 12 pieces, the parts are summed
    once ``SUM_CAP`` wait, so no more than that (and their sum) are alive at any step."""
    from symjit.compiler.passes.autodiff import SUM_CAP
    g, groups, plan, vector_bytes = _rnn_parameter_gradient(3, False)
    vector = [b for b in plan.buffers if b["size"] == vector_bytes]
    assert len(vector) >= 2
    most = max(sum(b["start"] <= step <= b["end"] for b in vector) for step in range(len(groups)))
    assert most <= SUM_CAP + 1 < 12


def test_the_gradients_of_a_value_cut_into_pieces_are_joined_not_summed():
    """Fused, the pieces' gradients are one Concat into the vector's gradient: no padded copy of
    the vector is made, and the gradient is the one the unfused program sums."""
    g, groups, plan, vector_bytes = _rnn_parameter_gradient(3, True)
    names = [op.op.name for op in g.ops]
    assert "_backward_slice" not in names and "Concat" in names
    assert not [b for b in plan.buffers if b["size"] == vector_bytes]
    rng = np.random.default_rng(0)
    out = mx.sym.RNN(mx.sym.var("x"), mx.sym.var("p"), mx.sym.var("s"), mx.sym.var("c"),
                     state_size=16, num_layers=3, mode="lstm")
    arg_shapes, _, _ = out.infer_shape(x=(6, 2, 16))
    args = {n: mx.nd.array(rng.normal(size=s) * 0.3) for n, s in zip(out.list_arguments(), arg_shapes)}
    head = mx.nd.array(rng.normal(size=(6, 2, 16)))
    got = {}
    for fused in (True, False):
        grad = mx.nd.zeros(args["p"].shape)
        ex = Executor(out, mx.cpu(), args, {"p": grad}, {"p": "write", "x": "null", "s": "null", "c": "null"},
                      None, config=Config.from_env().replace(fusion=fused))
        ex.forward(is_train=True)
        ex.backward(head)
        got[fused] = grad.asnumpy()
    np.testing.assert_allclose(got[True], got[False], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [17, 40, 300])
def test_wide_joins_and_splits_become_trees_of_narrow_ones_with_the_same_values(n):
    """``stack``/``Concat`` of ``n`` inputs, ``SliceChannel`` of ``n`` outputs, and their gradients
    (a split and a join of ``n``): no op of the compiled graph takes more than ``WIDE``, and
    every value is the plain copy numpy makes."""
    from symjit.compiler.passes.simplify import WIDE
    rng = np.random.default_rng(n)
    xs = [mx.sym.var(f"x{i}") for i in range(n)]
    vals = {f"x{i}": rng.normal(size=(2, 3)).astype(np.float32) for i in range(n)}
    head = rng.normal(size=(2, n, 3)).astype(np.float32)
    for sym, want in ((mx.sym.stack(*xs, axis=1), np.stack(list(vals.values()), 1)),
                      (mx.sym.Concat(*xs, dim=1), np.concatenate(list(vals.values()), 1))):
        g = autodiff(build_forward(sym, {k: v.shape for k, v in vals.items()},
                                   {k: np.dtype("float32") for k in vals}, True),
                     dict.fromkeys(vals, "write"))
        g = simplify(g, True)
        assert max(max(len(op.inputs), len(op.outputs)) for op in g.ops) <= WIDE
        grads = {k: mx.nd.zeros(v.shape) for k, v in vals.items()}
        ex = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in vals.items()}, args_grad=grads)
        np.testing.assert_array_equal(ex.forward(is_train=True)[0].asnumpy(), want)
        ex.backward(mx.nd.array(head.reshape(want.shape)))
        pieces = np.split(head.reshape(want.shape), n, axis=1)
        for i in range(n):
            np.testing.assert_array_equal(grads[f"x{i}"].asnumpy(), pieces[i].reshape(2, 3))
    x = rng.normal(size=(n, 2)).astype(np.float32)
    outs = mx.sym.SliceChannel(mx.sym.var("x"), num_outputs=n, axis=0, squeeze_axis=True) \
        .bind(mx.cpu(), {"x": mx.nd.array(x)}).forward()
    for i, o in enumerate(outs):
        np.testing.assert_array_equal(o.asnumpy(), x[i])


@pytest.mark.parametrize("spans", [[(1, 3), (5, 7), (7, 8)], [(1, 4), (3, 6)]])
def test_gradient_of_slices_is_their_heads_in_place_and_zeros_elsewhere(spans):
    """Disjoint slices along one axis: the gradient is one Concat of the heads and zeros (no
    padded copies); overlapping ones keep their padded sum. Either way the head gradients land
    where the slices came from and add up where they overlap."""
    x = mx.sym.var("x")
    out = mx.sym.Group([mx.sym.slice_axis(x, axis=1, begin=lo, end=hi) for lo, hi in spans])
    g = autodiff(build_forward(out, {"x": (3, 9)}, {"x": np.dtype("float32")}, True), {"x": "write"})
    names = [op.op.name for op in simplify(g, True).ops]
    disjoint = all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert ("_backward_slice" in names) != disjoint
    rng = np.random.default_rng(1)
    heads = [rng.normal(size=(3, hi - lo)).astype(np.float32) for lo, hi in spans]
    grad = mx.nd.zeros((3, 9))
    ex = out.bind(mx.cpu(), {"x": mx.nd.array(rng.normal(size=(3, 9)))}, args_grad={"x": grad})
    ex.forward(is_train=True)
    ex.backward([mx.nd.array(h) for h in heads])
    want = np.zeros((3, 9), np.float32)
    for (lo, hi), h in zip(spans, heads):
        want[:, lo:hi] += h
    np.testing.assert_array_equal(grad.asnumpy(), want)

"""Kernels in parts: the BatchNorm, pooling and depthwise convolution kernels (channels or planes
run in parts on the host's threads) give the serial kernels' results to the last bit and are
chosen by the compiler from ``SPLIT_MIN`` elements on; generated loops in parts; the pool that
runs the parts, and the barrier where a kernel's parts meet."""
from __future__ import annotations

import numpy as np
import pytest
from symjit.kernels.cpu import norm, pool
from symjit.kernels.cpu._parallel import SPLIT_MIN

import symjit as mx
from symjit import threads
from symjit.threads import PARTS_MIN

from .partsrun import in_parts

RNG = np.random.default_rng(7)


def _bn_inputs(shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    c = shape[1]
    return x, RNG.random(c).astype(dtype) + 0.5, RNG.standard_normal(c).astype(dtype)


def _bn(name: str, parts: int, *args) -> None:
    fn = getattr(norm, name)
    if name.endswith("_parts"):
        in_parts(fn, *args, parts=parts)
    else:
        fn(*args)


@pytest.mark.parametrize("parts", [1, 2, 3])
@pytest.mark.parametrize("shape,dtype", [((3, 5, 7), np.float32), ((4, 9, 33), np.float64),
                                         ((2, 1, 10), np.float32), ((0, 3, 4), np.float32),
                                         ((6, 37, 1), np.float32), ((0, 5, 1), np.float64)])
def test_batchnorm_in_parts_matches_serial(shape, dtype, parts):
    x, g, b = _bn_inputs(shape, dtype)
    c = shape[1]
    outs = []
    for name in ("batchnorm_forward_train", "batchnorm_forward_train_parts"):
        mm, mv = np.full(c, 0.3, dtype), np.full(c, 2.0, dtype)
        out, sm, si = np.zeros_like(x), np.zeros(c, dtype), np.ones(c, dtype)
        if shape[0]:   # the training forward needs N * S > 0
            _bn(name, parts, x, g, b, mm, mv, out, sm, si, 1e-3, 0.9, False, True)
        outs.append((out, sm, si, mm, mv))
    for name in ("batchnorm_forward_inference", "batchnorm_forward_inference_parts"):
        out, sm, si = np.empty_like(x), np.empty(c, dtype), np.empty(c, dtype)
        _bn(name, parts, x, g, b, np.full(c, 0.3, dtype), np.full(c, 2.0, dtype), out, sm, si, 1e-3, True)
        outs.append((out, sm, si))
    sm, si = outs[0][1], outs[0][2]
    d = RNG.standard_normal(shape).astype(dtype)
    for base, extra in (("batchnorm_backward", ()), ("batchnorm_relu_backward", (b,))):
        for stats in (True, False):
            for name in (base, base + "_parts"):
                for alias in ("none", "dout"):   # dx its own buffer, or written over dout
                    dd = d.copy()
                    dx = dd if alias == "dout" else np.empty_like(x)
                    dg, db = np.empty(c, dtype), np.empty(c, dtype)
                    _bn(name, parts, x, dd, g, *extra, sm, si, dx, dg, db, False, stats)
                    outs.append((dx, dg, db))
    serial, threaded = outs[0::2], outs[1::2]
    for s, t in zip(serial, threaded):
        for a, b_ in zip(s, t):
            np.testing.assert_array_equal(a, b_)


@pytest.mark.parametrize("shape,k,s,p", [((3, 5, 9, 9), 3, 2, 1), ((2, 3, 8, 8), 2, 2, 0),
                                          ((1, 1, 5, 4), 3, 1, 1), ((2, 2, 7, 7), 2, 2, 0),
                                          ((2, 3, 4, 4), 3, 3, 2)])
def test_pools_threaded_match_serial(shape, k, s, p):
    x = RNG.standard_normal(shape).astype(np.float32)
    x[0, 0, 1, 1] = np.nan
    oh, ow = ((shape[2] + 2 * p - k) // s + 1, (shape[3] + 2 * p - k) // s + 1)
    geo = ((k, k), (s, s), (p, p))
    o1 = np.full((shape[0], shape[1], oh, ow), 5, np.float32)
    o2 = np.full_like(o1, 6)
    pool.max_pool2d_forward(x, o1, *geo)
    in_parts(pool.max_pool2d_forward_parts, x, o2, *geo)
    np.testing.assert_array_equal(o1, o2)
    d = RNG.standard_normal(o1.shape).astype(np.float32)
    g1, g2 = np.full_like(x, 7), np.full_like(x, 8)
    pool.max_pool2d_backward(x, d, g1, *geo)
    in_parts(pool.max_pool2d_backward_parts, x, d, g2, *geo)
    np.testing.assert_array_equal(g1, g2)
    for include in (True, False):
        a1, a2 = np.full_like(o1, 5), np.full_like(o1, 6)
        pool.avg_pool2d_forward(x, a1, *geo, include)
        in_parts(pool.avg_pool2d_forward_parts, x, a2, *geo, include)
        np.testing.assert_array_equal(a1, a2)
        pool.avg_pool2d_backward(d, g1, *geo, include)
        in_parts(pool.avg_pool2d_backward_parts, d, g2, *geo, include)
        np.testing.assert_array_equal(g1, g2)


@pytest.mark.parametrize("x_shape, w_shape, s, p", [
    ((2, 6, 11, 9), (6, 1, 3, 3), 2, 1),
    ((1, 3, 6, 6), (6, 1, 5, 5), 1, 2),     # two filters per channel
    ((40, 1, 4, 4), (1, 1, 3, 3), 1, 0),    # 40 planes in 32 parts
])
def test_depthwise_threaded_matches_serial(x_shape, w_shape, s, p):
    from symjit.kernels.cpu import conv_direct
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    oh, ow = conv_direct.conv2d_output_size(x_shape[2:], w_shape[2:], (s, s), (p, p), (1, 1))
    o1 = np.full((x_shape[0], w_shape[0], oh, ow), 5, np.float32)
    o2 = np.full_like(o1, 6)
    conv_direct.conv2d_forward_depthwise(x, w, o1, (s, s), (p, p), (1, 1))
    in_parts(conv_direct.conv2d_forward_depthwise_parts, x, w, o2, (s, s), (p, p), (1, 1))
    np.testing.assert_array_equal(o1, o2)


def test_compiler_calls_the_threaded_kernels_from_split_min():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, name="conv")
    net = mx.sym.Pooling(mx.sym.BatchNorm(net, name="bn"), kernel=(2, 2), stride=(2, 2),
                         pool_type="max", name="pool")
    big = (2, 4, 128, 128)                     # 131072 elements
    assert np.prod(big) >= SPLIT_MIN
    for shape, threaded in ((big, True), ((2, 4, 8, 8), False)):
        ex = net.simple_bind(mx.cpu(), data=shape)
        x = RNG.standard_normal(shape).astype(np.float32)
        ex.arg_dict["conv_weight"][:] = np.eye(4, dtype=np.float32).reshape(4, 4, 1, 1)   # conv = x
        ex.forward(is_train=True, data=x)
        ex.backward(mx.nd.ones(ex.outputs[0].shape))
        xd = x.astype(np.float64)   # fix_gamma: gamma is 1, beta 0 (initialised zeros)
        axes = (0, 2, 3)
        y = (xd - xd.mean(axis=axes, keepdims=True)) / np.sqrt(xd.var(axis=axes, keepdims=True) + 1e-3)
        ref = y.reshape(shape[0], shape[1], shape[2] // 2, 2, shape[3] // 2, 2).max(axis=(3, 5))
        np.testing.assert_allclose(ex.outputs[0].asnumpy(), ref, rtol=1e-4, atol=1e-4)
        source = "\n".join(text for p in ex._programs.values()   # kernels; building blocks called directly
                            for text in [p.program.module_source, *p.program.kernel_modules.values()])
        for kernel in ("batchnorm_forward_train", "max_pool2d_forward", "max_pool2d_backward",
                       "batchnorm_backward", "conv_bias_grad"):
            assert (f"{kernel}_parts" in source) == threaded, (kernel, shape)
    dw = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, num_group=4, no_bias=True,
                            name="dw")
    for shape, threaded in ((big, True), ((2, 4, 8, 8), False)):
        ex = dw.simple_bind(mx.cpu(), data=shape, grad_req="null")
        source = "\n".join(p.program.source for p in ex._programs.values())   # a direct call
        assert ("conv2d_forward_depthwise_parts" in source) == threaded, shape


def test_policy_sets_the_parts_in_each_executor_thread():
    import threading
    sets, seen = [], []

    class Probe:
        def others(self):
            return 1.0

    pol = threads.BlasThreads(sets.append, Probe(), cores=2, interval=0.0)
    pol.adapt()
    assert sets == [1] and threads.parts_for_thread() == 1

    def other():   # another thread that runs an executor gets the count too
        pol.adapt()
        seen.append(threads.parts_for_thread())
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [1]
    fixed = threads.BlasThreads(sets.append, None, cores=2, fixed=2)
    fixed.adapt()
    assert sets[-1] == 2 and threads.parts_for_thread() == 2
    threads.set_parts(len(threads.usable_cores()))


def test_idle_threads_give_their_core_back_unless_the_user_chose():
    assert threads.idle_settings({}) == {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "50000",
                                         "OPENBLAS_THREAD_TIMEOUT": "20"}
    assert threads.idle_settings({"OMP_WAIT_POLICY": "ACTIVE"}) == {"OPENBLAS_THREAD_TIMEOUT": "20"}
    assert threads.idle_settings({"GOMP_SPINCOUNT": "0"}) == {"OPENBLAS_THREAD_TIMEOUT": "20"}
    assert threads.idle_settings({"OPENBLAS_THREAD_TIMEOUT": "4", "OMP_WAIT_POLICY": "x"}) == {}


def test_a_cached_program_with_threaded_kernels_loads_in_a_new_process(tmp_path):
    """Machine code that calls a threaded kernel (a program function, compiled or loaded from
    numba's cache in the second process) links against numba's threading layer, which must be
    running first (else LLVM aborts: "Symbol not found: allocate_sched")."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    code = ("import numpy as np, symjit as mx\n"
            "net = mx.sym.Convolution(mx.sym.Variable('data'), kernel=(3, 3), num_filter=8, pad=(1, 1))\n"
            "net = mx.sym.Activation(mx.sym.BatchNorm(net, name='bn'), act_type='relu')\n"
            "net = mx.sym.Pooling(net, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='max')\n"
            "ex = net.simple_bind(mx.cpu(), data=(2, 3, 128, 128))\n"
            "ex.forward(is_train=True, data=np.ones((2, 3, 128, 128), np.float32))\n"
            "ex.backward(mx.nd.ones(ex.outputs[0].shape))\n"
            "print(float(np.abs(ex.outputs[0].asnumpy()).sum()))\n")
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, SYMJIT_CACHE_DIR=str(tmp_path / "cache"), SYMJIT_AOT="off", PYTHONPATH=root)
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert float(proc.stdout.strip().splitlines()[-1]) == 0.0   # relu(BN(const)) is 0


@pytest.mark.parametrize("shape", [(3, 5, 2, 3), (2, 7, 1, 1), (4, 2, 9, 5)])
def test_conv_bias_grad_threaded_matches_serial(shape):
    from symjit.kernels.cpu import conv
    dout = RNG.standard_normal(shape).astype(np.float32)
    a, b = np.full(shape[1], 3, np.float32), np.full(shape[1], 4, np.float32)
    conv.conv_bias_grad(dout, a)
    in_parts(conv.conv_bias_grad_parts, dout, b)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, dout.astype(np.float64).sum(axis=(0, 2, 3)), rtol=1e-5, atol=1e-5)


# Generated loops in parts (CPUTarget.open_map_loop, symjit.parts): every branch of the split of
# the loop's axes, against numpy, with operands broadcast along the merged and the inner axes.
MAP_SHAPES = [
    (1100000,),             # one axis: parts of it
    (2, 550000),            # few leading iterations: serial axis 0, parts of the last
    (1100, 1000),           # parts of axis 0
    (2, 3, 180000),         # axes 0-1 make 6 < MAP_PARTS: serial loops, parts of the last
    (2, 64, 96, 90),        # axes 0-1 merged (128 iterations)
    (16, 3, 150, 160),      # axis 0 alone (16 iterations)
    (1, 2, 3, 4, 46000),    # axes 0-3 merged (24 iterations)
    (1, 2, 4, 1, 140000),   # axes 0-2 merged (8)
]


@pytest.mark.parametrize("shape", MAP_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("parts", [2, 3])
def test_generated_map_loops_in_parts_match_numpy(shape, parts, monkeypatch):
    import symjit.parts
    import symjit.threads
    from symjit.lower.cpu import MAP_PARTS
    from symjit.lower.writer import PARTS_SUFFIX
    assert np.prod(shape) >= PARTS_MIN and MAP_PARTS >= 2
    ran = []
    run = symjit.parts.POOL.run

    def counted(fn, args, n):
        ran.append(n)
        return run(fn, args, n)
    monkeypatch.setattr(symjit.threads, "parts_for_thread", lambda: parts)
    monkeypatch.setattr(symjit.parts.POOL, "run", counted)
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    net = mx.sym.relu(mx.sym.broadcast_add(a * 2.0, b) - 1.0)
    rows = (1,) * (len(shape) - 2) + shape[-2:-1] + (1,) if len(shape) > 1 else (1,)
    ex = net.simple_bind(mx.cpu(), a=shape, b=rows, grad_req="null")
    x = RNG.standard_normal(shape).astype(np.float32)
    y = RNG.standard_normal(rows).astype(np.float32)
    ex.forward(a=x, b=y)
    want = np.maximum(x * np.float32(2) + y - np.float32(1), 0)
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), want)
    prog = next(iter(ex._programs.values())).program
    source = "\n".join(prog.kernel_modules.values())
    assert "prange" not in source and "parallel=True" not in source and "_nparts" in source
    assert any(fn.endswith(PARTS_SUFFIX) for fn in prog.kernel_texts)
    assert ran and set(ran) == {parts}


def test_a_light_broadcast_loop_has_one_form_whatever_its_size(monkeypatch):
    """A light program's broadcast loop is written for any extents: a small bind calls its kernel
    whole (part 0 of 1), a big one in parts, and both load one kernel module."""
    import symjit.parts
    import symjit.threads
    from symjit.lower.writer import PARTS_SUFFIX, WHOLE_SUFFIX
    ran = []
    run = symjit.parts.POOL.run

    def counted(fn, args, n):
        ran.append(n)
        return run(fn, args, n)
    monkeypatch.setattr(symjit.threads, "parts_for_thread", lambda: 2)
    monkeypatch.setattr(symjit.parts.POOL, "run", counted)
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    net = mx.sym.broadcast_mul(a, b) + 1.0
    modules = []
    for shape, rows, suffix in [((3, 4, 5, 6), (1, 4, 1, 6), WHOLE_SUFFIX),
                                ((8, 40, 64, 64), (1, 40, 1, 64), PARTS_SUFFIX)]:
        assert (np.prod(shape) >= PARTS_MIN) == (suffix == PARTS_SUFFIX)
        ex = net.simple_bind(mx.cpu(), a=shape, b=rows, grad_req="null")
        x = RNG.standard_normal(shape).astype(np.float32)
        y = RNG.standard_normal(rows).astype(np.float32)
        ex.forward(a=x, b=y)
        np.testing.assert_array_equal(ex.outputs[0].asnumpy(), x * y + np.float32(1))
        prog = next(iter(ex._programs.values())).program
        assert [fn for fn in prog.kernel_texts if fn.endswith(suffix)]
        modules.append(set(prog.kernel_modules))
    assert modules[0] == modules[1] and ran == [2]


def test_small_loops_and_accumulating_anchors_stay_serial():
    from symjit.lower.writer import WHOLE_SUFFIX
    a, w = mx.sym.Variable("a"), mx.sym.Variable("w")
    # a model's program (a GEMM): its small map loop is a plain serial loop
    fc = mx.sym.FullyConnected(a, w, num_hidden=100, no_bias=True)
    small = (mx.sym.exp(fc) + 1.0).simple_bind(mx.cpu(), a=(4, 8), w=(100, 8), grad_req="null")
    src = "\n".join(text for p in small._programs.values() for text in p.program.kernel_modules.values())
    assert "_nparts" not in src
    # a light program's is written for any extents: in parts, called whole
    small = (mx.sym.exp(a) + 1.0).simple_bind(mx.cpu(), a=(4, 100), grad_req="null")
    fns = [fn for p in small._programs.values() for fn in p.program.kernel_texts]
    assert fns and all(fn.endswith(WHOLE_SUFFIX) for fn in fns)
    # a reduction anchor sums over its axis inside the loop: that loop stays serial
    big = (2, 300, 400)
    red = mx.sym.sum(a, axis=1, keepdims=True) * 2.0
    ex = red.simple_bind(mx.cpu(), a=big, grad_req="null")
    x = RNG.standard_normal(big).astype(np.float32)
    ex.forward(a=x)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), x.astype(np.float64).sum(axis=1, keepdims=True) * 2,
                               rtol=1e-4, atol=1e-3)
    # a big map loop runs in parts (an entry holds it: tests/test_aot.py)
    ex = mx.sym.exp(a).simple_bind(mx.cpu(), a=(2, 1000, 600), grad_req="null")
    prog = next(iter(ex._programs.values())).program
    assert any("_nparts" in text for _, text in prog.kernel_texts.values())


def test_anchors_with_statements_before_the_loop_keep_it_whole():
    """Every part runs the statements before its loop: a kernel whose anchor computes there (a
    GEMM) or draws a seed keeps one call, and its result is computed once."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    fc = mx.sym.relu(mx.sym.FullyConnected(x, w, num_hidden=1000, no_bias=True))
    ex = fc.simple_bind(mx.cpu(), x=(1100, 40), w=(1000, 40), grad_req="null")
    xv = RNG.standard_normal((1100, 40)).astype(np.float32)
    wv = RNG.standard_normal((1000, 40)).astype(np.float32)
    ex.forward(x=xv, w=wv)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), np.maximum(xv @ wv.T, 0), rtol=1e-4, atol=1e-4)
    drawn = mx.sym.random.uniform(shape=(1100, 1000)) * 2.0
    for e in (ex, drawn.simple_bind(mx.cpu())):
        texts = [text for p in e._programs.values() for text in p.program.kernel_modules.values()]
        busy = [t for t in texts if "gemm" in t or "np.random" in t]
        assert busy and not any("_nparts" in t for t in busy)


def test_an_anchor_emitting_statements_in_its_loop_keeps_it_serial():
    """An element expression that emits statements of its own (an accumulation, a check) may
    write state the iterations share: ``emit_loop`` then writes its loop serially again. Here
    transpose's rule is swapped for one whose expression emits a statement."""
    from symjit.lower import rules
    from symjit.lower.cpu import CPUTarget
    key = ("transpose", CPUTarget)
    keep = rules._RULES.pop(key, None)

    def emit(k, node, ins, outs):
        def expr(idx):
            t = k.tmp("s")
            k.line(f"{t} = {ins[0]}[{idx[1]}, {idx[0]}]")
            return t
        return expr
    rules.rule("transpose", CPUTarget, emit)
    try:
        shape = (1031, 1033)
        assert np.prod(shape) >= PARTS_MIN
        ex = mx.sym.transpose(mx.sym.Variable("a")).simple_bind(mx.cpu(), a=shape, grad_req="null")
        x = RNG.standard_normal(shape).astype(np.float32)
        ex.forward(a=x)
        np.testing.assert_array_equal(ex.outputs[0].asnumpy(), x.T)
        source = "\n".join(text for p in ex._programs.values()   # kernels; building blocks called directly
                            for text in [p.program.module_source, *p.program.kernel_modules.values()])
        assert "_s" in source and "_nparts" not in source
    finally:
        del rules._RULES[key]
        if keep is not None:
            rules._RULES[key] = keep


def test_part_pool_runs_every_part_and_raises_a_parts_error():
    from symjit.parts import POOL, PartsCall, whole_call
    seen = []

    def fill(out, part, parts, sync):
        seen.append((part, parts))
        n = out.shape[0]
        out[part * n // parts:(part + 1) * n // parts] = part
    out = np.full(9, -1)
    PartsCall(fill, parts=3)(out, *whole_call())
    assert sorted(seen) == [(0, 3), (1, 3), (2, 3)] and out.tolist() == [0] * 3 + [1] * 3 + [2] * 3

    def bad(part, parts, sync):
        if part == parts - 1:
            raise ValueError(f"part {part} failed")
    with pytest.raises(ValueError, match="part 2 failed"):
        POOL.run(bad, (), 3)
    POOL.run(fill, (out,), 1)   # one part: the caller alone
    assert out.tolist() == [0] * 9


def test_part_pool_works_in_a_forked_child():
    """A forked child has none of its parent's threads: its pool makes its own workers."""
    import os

    from symjit.parts import POOL
    out = np.zeros(4)

    def fill(part, parts, sync):
        out[part] = part + 1
    POOL.run(fill, (), 2)   # the parent's workers exist now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: run in parts, report, and leave without pytest's exit handlers
        try:
            POOL.run(fill, (), 4)
            os.write(write, b"ok" if out.tolist() == [1, 2, 3, 4] else b"wrong")
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.read(read, 16) == b"ok" and status == 0


def test_a_kernels_parts_meet_at_barriers_and_a_failed_part_releases_the_others():
    """A kernel with phases (each part writes its share, then every part reads all of it) gives
    the whole-call result in 2 and 3 parts, its parts meeting at ``spin.barrier`` between phases
    (3 parts on our 2 cores: a part waits for one that has no core); and when a part raises
    before a barrier, the pool raises the abort flag and the parts waiting there return."""
    import numba
    from symjit.kernels.cpu.spin import barrier

    from symjit.parts import POOL

    @numba.njit(nogil=True)
    def phases(x, out, rounds, part, parts, sync):
        n = x.shape[0]
        for r in range(rounds):
            for i in range(part * n // parts, (part + 1) * n // parts):
                x[i] = x[i] * 0.5 + r
            if not barrier(sync, parts):
                return
            if part == 0:
                out[r] = x.sum()
            if not barrier(sync, parts, 0):
                return

    results = []
    for parts in (1, 2, 3):
        x, out = np.arange(1000, dtype=np.float64), np.zeros(200)
        POOL.run(phases, (x, out, 200), parts)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])

    @numba.njit(nogil=True)
    def fails(flag, part, parts, sync):
        if part == 1:
            raise ValueError("part 1 failed")
        if barrier(sync, parts):
            flag[0] = 1   # never: part 1 does not come

    flag = np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="part 1 failed"):
        POOL.run(fails, (flag,), 3)
    assert flag[0] == 0


def test_the_part_arguments_have_one_layout_for_kernels_host_and_writer():
    """The writer's trailing parameters, the host's whole call and the barrier's state agree: a
    generated kernel in parts called with :func:`symjit.parts.whole_call` and a block call the
    writer rewrites to a whole call pass the same number of arguments and the same state."""
    from symjit.kernels.cpu import spin, sync_state

    from symjit.lower.writer import PART_PARAMS
    from symjit.parts import PART_ARGS, whole_call

    part, parts, sync = whole_call()
    assert len(PART_PARAMS) == PART_ARGS == len(whole_call()) == sync_state.PART_ARGS
    assert (part, parts) == (0, 1) and sync.shape == (sync_state.SYNC_LENGTH,) and sync.dtype == np.int64
    assert spin.SYNC_ABORT == sync_state.SYNC_ABORT < sync_state.SYNC_LENGTH
    assert spin.barrier(sync, 1) and not sync.any()

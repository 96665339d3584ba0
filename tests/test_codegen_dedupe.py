"""Groups of one kernel form share one kernel function (compiled once), on both targets."""
from __future__ import annotations

import numpy as np

import symjit as mx
from symjit.compiler.codegen.generate import canonical_form
from symjit.compiler.pipeline import compile_symbol
from symjit.config import Config


def _blocks(n: int, hidden: int = 6):
    h = mx.sym.Variable("data")
    for i in range(n):
        h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=hidden, name=f"fc{i}"),
                              act_type="tanh", name=f"t{i}")
    return h


def _compile(sym, target="cpu", train=False):
    shapes, _, _ = sym.infer_shape(data=(3, 6))
    names = sym.list_arguments()
    reqs = {n: "write" for n in names} if train else {}
    return compile_symbol(sym, dict(zip(names, shapes)), {n: np.float32 for n in names}, reqs, train,
                          Config(cache=False), target=target, load=False)


def test_repeated_blocks_compile_one_kernel_per_form():
    for target in ("cpu", "cuda"):
        c = _compile(_blocks(4), target)
        fns = [c.program.kernel_of[f"k{grp.id}"] for grp in c.groups if not grp.view]
        # the first three blocks write their tanh in place over their GEMM's output (one array);
        # the last one's output is the program's, a buffer of its own: a second form
        assert len(fns) == 4 and len(set(fns[:3])) == 1 and fns[3] != fns[0], (target, fns)
        # two kernels in the generated code (+ the programs): kernel modules' KERNELs on the cpu
        assert c.program.source.count("\ndef k") + c.program.source.count("\ndef KERNEL(") == 2
        train = _compile(_blocks(4), target, train=True)   # the backward blocks repeat too
        groups = len(train.program.kernel_of)
        assert len(set(train.program.kernel_of.values())) <= groups // 2, (target, groups)


def test_shared_kernels_compute_each_group_on_its_own_arrays():
    sym = _blocks(3)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    args = {"data": mx.nd.array(x)}
    for i in range(3):
        args[f"fc{i}_weight"] = mx.nd.array(rng.standard_normal((6, 6)).astype(np.float32) * 0.5)
        args[f"fc{i}_bias"] = mx.nd.array(rng.standard_normal(6).astype(np.float32))
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    kernel_of = ex._programs["train"].program.kernel_of
    assert len(set(kernel_of.values())) <= len(kernel_of) - 4, kernel_of   # groups share kernels
    out = ex.forward(is_train=True)[0].asnumpy()
    h, acts = x.astype(np.float64), []
    for i in range(3):
        h = np.tanh(h @ args[f"fc{i}_weight"].asnumpy().T + args[f"fc{i}_bias"].asnumpy())
        acts.append(h)
    np.testing.assert_allclose(out, h, rtol=1e-5, atol=1e-6)
    head = rng.standard_normal(out.shape).astype(np.float32)
    ex.backward(mx.nd.array(head))
    g = head.astype(np.float64)
    for i in reversed(range(3)):
        g = g * (1 - acts[i] ** 2)
        below = acts[i - 1] if i else x
        np.testing.assert_allclose(grads[f"fc{i}_weight"].asnumpy(), g.T @ below, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(grads[f"fc{i}_bias"].asnumpy(), g.sum(0), rtol=1e-4, atol=1e-5)
        g = g @ args[f"fc{i}_weight"].asnumpy()
    np.testing.assert_allclose(grads["data"].asnumpy(), g, rtol=1e-4, atol=1e-5)


def test_canonical_form_renames_only_whole_parameter_names():
    text = "def k2(v1, v10):\n    v10[0] = v1[0] + _v1 + v100"
    assert canonical_form(text, "k2", ["v1", "v10"]) == \
        "def KERNEL(a0, a1):\n    a1[0] = a0[0] + _v1 + v100"


def test_convolutions_differing_only_in_geometry_share_a_kernel():
    """Strides, pads and kernel sizes are kernel arguments: convolutions (and poolings) that differ
    only in them share one kernel, and each still computes with its own geometry."""
    x = mx.sym.Variable("data")
    a = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True, name="a")
    b = mx.sym.Convolution(x, kernel=(3, 3), stride=(2, 2), num_filter=4, no_bias=True, name="b")
    pa = mx.sym.Pooling(a, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pa")
    pb = mx.sym.Pooling(b, kernel=(3, 3), stride=(1, 1), pool_type="max", name="pb")
    net = mx.sym.Group([pa, pb])
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    ws = {n: rng.standard_normal((4, 3, 3, 3)).astype(np.float32) for n in ("a", "b")}
    ex = net.bind(mx.cpu(), {"data": mx.nd.array(xs), "a_weight": mx.nd.array(ws["a"]),
                             "b_weight": mx.nd.array(ws["b"])}, grad_req="null")
    prog = ex._programs["infer"].program
    fns = {grp.ops[0].name: prog.kernel_of[f"k{grp.id}"] for grp in ex._programs["infer"].groups}
    assert fns["a"] == fns["b"] and fns["pa"] == fns["pb"], fns
    outs = [o.asnumpy() for o in ex.forward()]

    def conv(x, w, stride, pad):
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        oh = (x.shape[2] - 3) // stride + 1
        out = np.zeros((x.shape[0], 4, oh, oh))
        for i in range(oh):
            for j in range(oh):
                patch = x[:, :, i * stride:i * stride + 3, j * stride:j * stride + 3]
                out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
        return out

    def maxpool(x, k, s):
        oh = (x.shape[2] - k) // s + 1
        return np.array([[[[x[n, c, i * s:i * s + k, j * s:j * s + k].max() for j in range(oh)]
                           for i in range(oh)] for c in range(x.shape[1])] for n in range(x.shape[0])])
    np.testing.assert_allclose(outs[0], maxpool(conv(xs, ws["a"], 1, 1), 2, 2), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outs[1], maxpool(conv(xs, ws["b"], 2, 0), 3, 1), rtol=1e-4, atol=1e-4)


def test_slices_at_different_offsets_share_a_kernel_and_keep_their_own_offsets():
    """A slice's start is a kernel argument: the pieces of one flat vector (the packed weights of
    an RNN layer) and their gradients share kernels, each reading and writing its own place."""
    x = mx.sym.Variable("data")
    pieces = [mx.sym.slice_axis(x, axis=0, begin=b, end=b + 3, name=f"p{b}") for b in (0, 3, 7)]
    parts = [mx.sym.slice(x, begin=(b,), end=(b + 2,), name=f"s{b}") for b in (1, 6)]
    net = mx.sym.Group([p * (i + 2) for i, p in enumerate(pieces + parts)])
    xs = np.arange(10, dtype=np.float32)
    grad = mx.nd.zeros((10,))
    ex = net.bind(mx.cpu(), {"data": mx.nd.array(xs)}, args_grad={"data": grad})
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    for i, (lo, n) in enumerate([(0, 3), (3, 3), (7, 3), (1, 2), (6, 2)]):
        np.testing.assert_array_equal(outs[i], xs[lo:lo + n] * (i + 2))
    ex.backward([mx.nd.ones(o.shape) for o in outs])
    want = np.zeros(10, np.float32)
    for i, (lo, n) in enumerate([(0, 3), (3, 3), (7, 3), (1, 2), (6, 2)]):
        want[lo:lo + n] += i + 2
    np.testing.assert_array_equal(grad.asnumpy(), want)
    prog = ex._programs["train"]
    fns = {grp.ops[0].name: prog.program.kernel_of[f"k{grp.id}"] for grp in prog.groups
           if not grp.view and grp.ops[0].op.name in ("slice_axis", "slice")}
    assert len({fns[f"p{b}"] for b in (0, 3, 7)}) == 1 and fns["s1"] == fns["s6"], fns


def test_an_output_in_place_over_an_input_is_one_parameter():
    """A kernel whose output the plan puts in place over one of its inputs takes that array once,
    under the input's name (two names for one buffer made LLVM run the loop's scalar fallback);
    a chain of in-place outputs of one kernel resolves to the first input."""
    from types import SimpleNamespace

    from symjit.compiler.codegen.generate import _same_arrays
    c = _compile(_blocks(2))
    src = c.program.kernel_texts
    first = c.groups[0]
    (fn_text,) = [text for name, (_, text) in src.items() if name == f"k{first.id}"]
    head = fn_text[fn_text.index("def "):fn_text.index(":\n")]
    pairs = dict(c.plan.inplace)
    out = next(o for o in first.outputs if o in pairs)          # the tanh over the GEMM's output
    assert f"v{out}" not in fn_text and f"v{pairs[out]}" in head, fn_text
    v = SimpleNamespace(shape=(2, 3), dtype=np.dtype("float32"))
    w = SimpleNamespace(shape=(3, 2), dtype=np.dtype("float32"))
    g = SimpleNamespace(values={1: v, 2: v, 3: v, 4: w, 5: v, 6: v})
    # 3 over 2 over 1 (all the kernel's), 4 over 1 with another shape, 6 over 5 (5 not the kernel's)
    assert _same_arrays(g, [1, 2, 3, 4, 6], {2: 1, 3: 2, 4: 1, 6: 5}) == {2: 1, 3: 1}


def test_convolutions_with_different_epilogues_share_one_building_block_kernel():
    """Each forward convolution's im2col + GEMM runs as a kernel of its own (k<group>p0) before its
    epilogue's: three layers with three different epilogues call one such kernel, and no epilogue
    kernel links the building block (numba would re-optimise it in each)."""
    x = mx.sym.Variable("data")
    a = mx.sym.Activation(mx.sym.Convolution(x, num_filter=4, kernel=(3, 3), pad=(1, 1), name="c0"),
                          act_type="relu")
    b = mx.sym.tanh(mx.sym.Convolution(a, num_filter=4, kernel=(3, 3), pad=(1, 1), name="c1"))
    out = mx.sym.Convolution(b, num_filter=4, kernel=(3, 3), pad=(1, 1), name="c2") * 2.0
    shapes, _, _ = out.infer_shape(data=(2, 4, 6, 6))
    names = out.list_arguments()
    c = compile_symbol(out, dict(zip(names, shapes)), {n: np.float32 for n in names}, {}, False,
                       Config(cache=False), target="cpu", load=False)
    kernel_of = c.program.kernel_of
    prior = {k: f for k, f in kernel_of.items() if "p" in k}
    epilogues = {f for k, f in kernel_of.items() if "p" not in k}
    assert len(prior) == 3 and len(set(prior.values())) == 1, kernel_of
    assert len(epilogues) == 3, kernel_of
    texts = c.program.kernel_texts      # each kernel function's source, as written for its first group
    assert "conv2d_forward" in texts[next(iter(prior.values()))][1]
    assert not any("conv2d_forward" in texts[f][1] for f in epilogues)
    launches = [fn for seg in c.program.segments["forward"] for fn, *_ in seg.launches]
    groups = sorted(int(k[1:-2]) for k in prior)             # each building block right before its group
    assert launches == [kernel_of[f"k{g}{part}"] for g in groups for part in ("p0", "")], launches


def test_a_kernel_that_only_calls_a_building_block_is_that_building_block():
    """The prior convolution kernel's body is one call of ``conv2d_forward_cnhw`` with its own
    arguments: the program imports that compiled function under the kernel's name instead of
    generating (and numba compiling) a kernel module that would link and re-optimise it."""
    from symjit.kernels.cpu import conv
    x = mx.sym.Variable("data")
    out = mx.sym.Activation(mx.sym.Convolution(x, num_filter=4, kernel=(3, 3), pad=(1, 1), name="c0"),
                            act_type="relu")
    shapes, _, _ = out.infer_shape(data=(2, 4, 6, 6))
    names = out.list_arguments()
    c = compile_symbol(out, dict(zip(names, shapes)), {n: np.float32 for n in names}, {}, False,
                       Config(cache=False), target="cpu", load=True)
    prior = c.program.kernel_of["k0p0"]
    assert f"from symjit.kernels.cpu.conv import conv2d_forward_cnhw as {prior}" in c.program.module_source
    assert getattr(c.module, prior) is conv.conv2d_forward_cnhw
    assert len(c.program.kernel_modules) == 1          # the epilogue's kernel only
    assert c.program.kernel_texts[prior][0] == "symjit.kernels.cpu.conv"


def test_kernel_writer_direct_only_for_a_lone_call_of_its_own_arguments():
    from symjit.lower.writer import KernelWriter, ModuleWriter

    def writer(params):
        return KernelWriter(ModuleWriter("@numba.njit", ""), "k1", params)
    k = writer(["v1", "v2"])
    c = k.const((1, 1))
    k.call("m", "f", ["v1", "v2", c])
    assert k.direct == ("m", "f", ["v1", "v2"])
    k.line("v2[0] = 1")                         # more than the call
    assert k.direct is None
    k = writer(["v1", "v2", "v3"])
    k.call("m", "f", ["v3", "v1"])              # some of its arrays, in another order
    assert k.direct == ("m", "f", ["v3", "v1"])
    k = writer(["v1", "v2"])
    c = k.const(2)
    k.call("m", "f", [c, "v1"])                 # consts not last
    assert k.direct is None
    k = writer(["v1", "v2"])
    k.call("m", "f", ["v1", "v1"])              # an array twice
    assert k.direct is None
    k = writer(["v1"])
    k.call("m", "f", ["v1", "t"])               # a name that is not a parameter
    assert k.direct is None
    k = writer(["v1", "v2"])
    k.line("t = v1.reshape(-1)")
    k.call("m", "f", ["v1", "v2"])              # a line before it
    assert k.direct is None

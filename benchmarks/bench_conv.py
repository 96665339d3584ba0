"""Benchmark the convolution kernels of ``symjit.kernels.cpu.conv`` on LeNet shapes and a bigger one.

Prints a table: shape, method, best time in ms over a few repeats, and GFLOP/s (2 FLOPs per
multiply-add of the convolution itself). Run: ``python benchmarks/bench_conv.py [--dtype float64]``.
``--lenet`` times a LeNet training step instead (batch 64, forward + backward, parameter gradients
only), then each generated kernel of its program that touches a 4-D array (convolution, pooling).
``--direct`` times the direct depthwise and 1x1 forwards against im2col + GEMM.
"""
from __future__ import annotations

import argparse
import ast
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np
from symjit.kernels.cpu import conv

# (label, x shape, w shape, stride, pad, dilate, groups)
SHAPES = [
    ("lenet-conv1", (64, 1, 28, 28), (20, 1, 5, 5), (1, 1), (0, 0), (1, 1), 1),
    ("lenet-conv2", (64, 20, 12, 12), (50, 20, 5, 5), (1, 1), (0, 0), (1, 1), 1),
    ("resnet-3x3", (16, 64, 28, 28), (64, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1),
]

N_METHODS = 9


def best_time(fn: Callable[[], None], repeats: int = 7, min_time: float = 0.2) -> float:
    """Best mean seconds per call over ``repeats`` batches of calls lasting ``min_time`` each."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    loops = max(1, int(min_time / one))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - t0) / loops)
    return best


@numba.njit(cache=True)
def epilogue_copy(y, out):
    """``out[n, f] = y[f, n]``: the loop nest the compiler generates after a filter-major forward."""
    for i0 in range(out.shape[0]):
        for i1 in range(out.shape[1]):
            for i2 in range(out.shape[2]):
                for i3 in range(out.shape[3]):
                    out[i0, i1, i2, i3] = y[i1, i0, i2, i3]


def cases(xs, ws, stride, pad, dilate, groups, dtype):
    """Yield ``(method, callable)`` pairs for one shape.

    ``serial`` and ``prange(T)`` run the same whole-batch GEMMs; the parallel kernels also spread
    im2col, col2im and the NCHW <-> filter-major copies over T numba threads. ``cnhw`` is the
    forward the compiler emits: the result left filter-major, the copy to NCHW fused into the
    kernel's elementwise epilogue (here a plain copy loop stands in for that epilogue).
    """
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    oh, ow = conv.conv2d_output_size(xs[2:], ws[2:], stride, pad, dilate)
    out = np.empty((xs[0], ws[0], oh, ow), dtype)
    dx, dw = np.empty_like(x), np.empty_like(w)
    args = (stride, pad, dilate, groups)

    def scratch(kind):
        return np.empty(conv.conv2d_cols_shape(kind, xs, ws, out.shape, groups), dtype)

    cf, cc, cd, cw = (scratch(k) for k in ("forward", "forward_cnhw", "backward_data", "backward_weight"))

    def cnhw(kernel):
        epilogue_copy(kernel(x, w, out, cc, *args), out)

    yield "fwd direct", lambda: conv.conv2d_forward_direct(x, w, out, cf, *args)
    yield "fwd serial", lambda: conv.conv2d_forward(x, w, out, cf, *args)
    yield "fwd cnhw (+epilogue copy)", lambda: cnhw(conv.conv2d_forward_cnhw)
    yield "bwd-data serial", lambda: conv.conv2d_backward_data(out, w, dx, cd, *args)
    yield "bwd-weight serial", lambda: conv.conv2d_backward_weight(out, x, dw, cw, *args)
    yield "bias-grad", lambda: conv.conv_bias_grad(out, dw[:, 0, 0, 0].copy())


def run_case(shape_index: int, method_index: int, dtype: np.dtype) -> None:
    """Time one (shape, method) pair and print its table row."""
    label, xs, ws, stride, pad, dilate, groups = SHAPES[shape_index]
    oh, ow = conv.conv2d_output_size(xs[2:], ws[2:], stride, pad, dilate)
    flops = 2 * xs[0] * ws[0] * ws[1] * ws[2] * ws[3] * oh * ow
    method, fn = list(cases(xs, ws, stride, pad, dilate, groups, dtype))[method_index]
    sec = best_time(fn)
    desc = f"{label} {xs}*{ws}"
    rate = "" if method == "bias-grad" else f"{flops / sec / 1e9:8.1f}"
    print(f"{desc:<44} {method:<30} {sec * 1e3:9.3f} {rate}", flush=True)


def lenet_step(rounds: int = 15) -> None:
    """Time LeNet training steps (best and median of ``rounds`` rounds of 20), then its kernels."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import symjit as mx
    from examples.nets import lenet

    net = lenet()
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    ex = net.simple_bind(mx.cpu(), data=(64, 1, 28, 28), grad_req={n: "write" for n in params})
    for a in ex.arg_dict.values():
        a[:] = np.random.default_rng(0).normal(0, 0.05, a.shape)
    ex.arg_dict["softmax_label"][:] = np.arange(64) % 10

    def step():
        ex.forward(is_train=True)
        ex.backward()

    for _ in range(3):
        step()
    steps = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(20):
            step()
        steps.append((time.perf_counter() - t0) / 20)
    best, median = min(steps), statistics.median(steps)
    print(f"LeNet step (batch 64): best {best * 1e3:.2f} ms, median {median * 1e3:.2f} ms "
          f"-> {64 / best:.0f} samples/s")
    try:   # the executor's internals: skip the per-kernel table if they changed
        kernel_times(ex, rounds)
    except (AttributeError, KeyError, IndexError) as err:
        print(f"per-kernel timing unavailable: {err!r}")


def kernel_times(ex, rounds: int) -> None:
    """Best time of each generated kernel of the training program that touches a 4-D array."""
    prog = ex._programs["train"]
    src = prog.program.source
    groups = {phase: [g for g in prog.groups if g.phase == phase and not g.view and not g.host]
              for phase in ("forward", "backward")}   # one call line per group, in order
    for phase in ("forward", "backward"):
        arrays = ex._bound["train"][phase][0][1]
        env = dict(zip(re.search(rf"def {phase}\((.*?)\):", src).group(1).split(", "), arrays))
        for group, line in zip(groups[phase], src[src.find(f"def {phase}("):].split("\n")[1:]):
            call = ast.parse(line.strip()).body[0].value   # kN(arrays..., attribute literals...)
            args = [_argument(a, env) for a in call.args]
            if any(getattr(a, "ndim", 0) == 4 for a in args):
                fn = getattr(prog.module, call.func.id)
                sec = best_time(lambda fn=fn, args=args: fn(*args), repeats=rounds, min_time=0.02)
                print(f"  {phase:<8} {sec * 1e3:7.3f} ms  {group.describe()}")


def _argument(node: ast.expr, env: dict):
    """A kernel call's argument in the program source: a bound array by name, or an attribute
    literal (``np.int64(2)``, a tuple of them), read from the syntax tree (nothing is evaluated)."""
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.Tuple):
        return tuple(_argument(e, env) for e in node.elts)
    if isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
        return np.int64(node.args[0].value)
    raise KeyError(ast.dump(node))


# (x shape, w shape, stride, groups) of MobileNet v2's depthwise layers and 1x1 layers of it and ResNet-50
DIRECT = [
    ((2, 32, 112, 112), (32, 1, 3, 3), 1, 32), ((2, 96, 112, 112), (96, 1, 3, 3), 2, 96),
    ((2, 144, 56, 56), (144, 1, 3, 3), 1, 144), ((2, 576, 14, 14), (576, 1, 3, 3), 1, 576),
    ((2, 960, 7, 7), (960, 1, 3, 3), 1, 960), ((32, 144, 56, 56), (144, 1, 3, 3), 1, 144),
    ((2, 16, 112, 112), (96, 16, 1, 1), 1, 1), ((32, 144, 28, 28), (32, 144, 1, 1), 1, 1),
    ((32, 64, 56, 56), (256, 64, 1, 1), 1, 1), ((32, 576, 14, 14), (96, 576, 1, 1), 1, 1),
]


def _direct_row(xs: tuple, ws: tuple, s: int, groups: int, dtype: np.dtype, rng) -> str:
    from symjit.kernels.cpu import conv_direct as cd
    x, w = rng.random(xs, dtype=np.float32).astype(dtype), rng.random(ws, dtype=np.float32).astype(dtype)
    stride, pad, dil = (s, s), (ws[2] // 2,) * 2, (1, 1)
    out = np.empty((xs[0], ws[0], *conv.conv2d_output_size(xs[2:], ws[2:], stride, pad, dil)), dtype)
    limit = conv.conv2d_block_elems(ws, groups)
    whole = conv.conv2d_images_per_block(xs, ws, out.shape, limit) == xs[0]
    kind = "forward_cnhw" if whole else "forward"
    cols = np.empty(conv.conv2d_cols_shape(kind, xs, ws, out.shape, groups, limit), dtype)
    gemm = getattr(conv, f"conv2d_{kind}")
    if cd.is_depthwise(xs, ws, groups):
        name, direct = "depthwise", lambda: cd.conv2d_forward_depthwise(x, w, out, stride, pad, dil)
    else:
        name, direct = "1x1", lambda: cd.conv2d_forward_1x1(x, w, out, groups)
    times: dict[str, list[float]] = {"gemm": [], "direct": []}
    for _ in range(5):
        times["gemm"].append(best_time(lambda: gemm(x, w, out, cols, stride, pad, dil, groups), 1, 0.05))
        times["direct"].append(best_time(direct, 1, 0.05))
    a, b = min(times["gemm"]) * 1e3, min(times["direct"]) * 1e3
    return f"{str(xs):<20} {str(ws):<18} {s:>2} {a:>15.3f} {b:>10.3f} {a / b:>7.2f}x ({name})"


def direct_table(dtype: np.dtype) -> None:
    """The direct kernels (``conv_direct.py``) against im2col + GEMM (the compiler's whole-batch or
    blocked forward, as it would choose), forward only, on MobileNet/ResNet shapes, interleaved."""
    rng = np.random.default_rng(0)
    print(f"{'x':<20} {'w':<18} {'s':>2} {'im2col+GEMM ms':>15} {'direct ms':>10} {'direct':>8}")
    for xs, ws, s, groups in DIRECT:
        print(_direct_row(xs, ws, s, groups, dtype, rng), flush=True)


def main() -> None:
    """Run every case, each in a fresh process (so BLAS/Numba thread pools of one case cannot
    slow down the next), and print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--case", nargs=2, type=int, help=argparse.SUPPRESS)
    ap.add_argument("--lenet", action="store_true", help="time a LeNet training step and its kernels")
    ap.add_argument("--direct", action="store_true",
                    help="the direct depthwise and 1x1 kernels against im2col + GEMM")
    args = ap.parse_args()
    dtype = np.dtype(args.dtype)
    if args.direct:
        direct_table(dtype)
        return
    if args.lenet:
        lenet_step()
        return
    if args.case:
        run_case(args.case[0], args.case[1], dtype)
        return
    print(f"dtype={dtype}, numba threads={numba.get_num_threads()}")
    print(f"{'shape':<44} {'method':<30} {'ms':>9} {'GFLOP/s':>8}", flush=True)
    for i in range(len(SHAPES)):
        for j in range(N_METHODS):
            subprocess.run([sys.executable, __file__, "--dtype", dtype.name, "--case", str(i), str(j)],
                           check=True)


if __name__ == "__main__":
    main()

"""Benchmark the convolution kernels of ``symjit.kernels.cpu.conv`` on LeNet shapes and a bigger one.

Prints a table: shape, method, best time in ms over a few repeats, and GFLOP/s (2 FLOPs per
multiply-add of the convolution itself). Run: ``python benchmarks/bench_conv.py [--dtype float64]``.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable

import numba
import numpy as np
from symjit.kernels.cpu import conv

# (label, x shape, w shape, stride, pad, dilate, groups)
SHAPES = [
    ("lenet-conv1", (64, 1, 28, 28), (20, 1, 5, 5), (1, 1), (0, 0), (1, 1), 1),
    ("lenet-conv2", (64, 20, 12, 12), (50, 20, 5, 5), (1, 1), (0, 0), (1, 1), 1),
    ("resnet-3x3", (16, 64, 28, 28), (64, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1),
]

N_METHODS = 7


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


def cases(xs, ws, stride, pad, dilate, groups, dtype):
    """Yield ``(method, callable)`` pairs for one shape."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    oh, ow = conv.conv2d_output_size(xs[2:], ws[2:], stride, pad, dilate)
    out = np.empty((xs[0], ws[0], oh, ow), dtype)
    dx, dw = np.empty_like(x), np.empty_like(w)
    nt = numba.get_num_threads()
    args = (stride, pad, dilate, groups)

    def scratch(kind, nch):
        return np.empty(conv.conv2d_cols_shape(kind, xs, ws, out.shape, groups, nch), dtype)

    c1, cp = scratch("forward", 1), scratch("forward", nt)
    w1, wp = scratch("backward_weight", 1), scratch("backward_weight", nt)
    yield "fwd direct", lambda: conv.conv2d_forward_direct(x, w, out, c1, *args)
    yield "fwd im2col+gemm", lambda: conv.conv2d_forward(x, w, out, c1, *args)
    yield f"fwd im2col+gemm prange({nt})", lambda: conv.conv2d_forward_parallel(x, w, out, cp, *args)
    yield "bwd-data gemm+col2im", lambda: conv.conv2d_backward_data(out, w, dx, c1, *args)
    yield f"bwd-data prange({nt})", lambda: conv.conv2d_backward_data_parallel(out, w, dx, cp, *args)
    yield "bwd-weight im2col+gemm", lambda: conv.conv2d_backward_weight(out, x, dw, w1, *args)
    yield f"bwd-weight prange({nt})", lambda: conv.conv2d_backward_weight_parallel(out, x, dw, wp, *args)


def run_case(shape_index: int, method_index: int, dtype: np.dtype) -> None:
    """Time one (shape, method) pair and print its table row."""
    label, xs, ws, stride, pad, dilate, groups = SHAPES[shape_index]
    oh, ow = conv.conv2d_output_size(xs[2:], ws[2:], stride, pad, dilate)
    flops = 2 * xs[0] * ws[0] * ws[1] * ws[2] * ws[3] * oh * ow
    method, fn = list(cases(xs, ws, stride, pad, dilate, groups, dtype))[method_index]
    sec = best_time(fn)
    desc = f"{label} {xs}*{ws}"
    print(f"{desc:<44} {method:<30} {sec * 1e3:9.3f} {flops / sec / 1e9:8.1f}", flush=True)


def main() -> None:
    """Run every case, each in a fresh process (so BLAS/Numba thread pools of one case cannot
    slow down the next), and print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--case", nargs=2, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    dtype = np.dtype(args.dtype)
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

"""Time the CPU pooling forward kernels on the model zoo's pooling shapes: best milliseconds of
several calls per shape, float32 (max pooling, then Inception's average pools); with
``--backward``, the max pooling gradients (threaded forms, as the compiler calls them on big
arrays).

    python benchmarks/bench_pool.py [--calls 7] [--backward]

To compare two revisions, run it from each one's checkout in turn (alternate them: the machine's
speed drifts).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from symjit.kernels.cpu import pool

from symjit.parts import run_in_parts

# (name, x shape, kernel, stride, pad)
CASES = [
    ("ResNet stem, batch 2", (2, 64, 112, 112), (3, 3), (2, 2), (1, 1)),
    ("ResNet stem, batch 32", (32, 64, 112, 112), (3, 3), (2, 2), (1, 1)),
    ("SqueezeNet pool1, batch 2", (2, 64, 111, 111), (3, 3), (2, 2), (0, 0)),
    ("Inception stem pool, batch 2", (2, 192, 71, 71), (3, 3), (2, 2), (0, 0)),
    ("Inception branch (3x3/1 pad 1), batch 2", (2, 288, 35, 35), (3, 3), (1, 1), (1, 1)),
    ("LeNet pool1 (2x2 tiles), batch 64", (64, 20, 24, 24), (2, 2), (2, 2), (0, 0)),
]
AVG_CASES = [   # Inception v3's branch pools (3x3, stride 1, pad 1, the padding counted)
    ("avg (2, 288, 35, 35)", (2, 288, 35, 35), (3, 3), (1, 1), (1, 1)),
    ("avg (2, 768, 17, 17)", (2, 768, 17, 17), (3, 3), (1, 1), (1, 1)),
    ("avg (2, 2048, 8, 8)", (2, 2048, 8, 8), (3, 3), (1, 1), (1, 1)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=7)
    ap.add_argument("--backward", action="store_true", help="time max_pool2d_backward_parts")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    if args.backward:
        backward(rng, args.calls)
        return
    runs = [(c, pool.max_pool2d_forward, ()) for c in CASES]
    runs += [(c, pool.avg_pool2d_forward, (True,)) for c in AVG_CASES]
    for (name, shape, kernel, stride, pad), kernel_fn, extra in runs:
        x = rng.standard_normal(shape).astype(np.float32)
        oh, ow = pool.pool_output_size(shape[2:], kernel, stride, pad, "valid")
        out = np.empty(shape[:2] + (oh, ow), np.float32)
        kernel_fn(x, out, kernel, stride, pad, *extra)
        best = float("inf")
        for _ in range(args.calls):
            t = time.perf_counter()
            kernel_fn(x, out, kernel, stride, pad, *extra)
            best = min(best, time.perf_counter() - t)
        print(f"{name}: {best * 1e3:.3f} ms")


def backward(rng, calls: int) -> None:
    """The max pooling gradient (recomputing each window's argmax) on :data:`CASES`."""
    for name, shape, kernel, stride, pad in CASES:
        x = rng.standard_normal(shape).astype(np.float32)
        oh, ow = pool.pool_output_size(shape[2:], kernel, stride, pad, "valid")
        dout = rng.standard_normal(shape[:2] + (oh, ow)).astype(np.float32)
        dx = np.empty_like(x)
        run_in_parts(pool.max_pool2d_backward_parts, x, dout, dx, kernel, stride, pad)
        best = float("inf")
        for _ in range(calls):
            t = time.perf_counter()
            run_in_parts(pool.max_pool2d_backward_parts, x, dout, dx, kernel, stride, pad)
            best = min(best, time.perf_counter() - t)
        print(f"{name} (gradient): {best * 1e3:.3f} ms")


if __name__ == "__main__":
    main()

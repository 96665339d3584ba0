"""Time the CPU BatchNorm backward kernels with ``dx`` a buffer of its own and in place over
``dout`` or ``x`` (as the compiler plans it), on ResNet's stem at batch 32: best milliseconds.

    python benchmarks/bench_norm.py [--calls 5] [--batch 32]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from symjit.kernels.cpu import norm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    shape = (args.batch, 64, 112 * 112)
    x = rng.standard_normal(shape).astype(np.float32)
    dout = rng.standard_normal(shape).astype(np.float32)
    c = shape[1]
    gamma, beta = np.ones(c, np.float32), np.zeros(c, np.float32)
    mean, inv = np.zeros(c, np.float32), np.ones(c, np.float32)
    dg, db = np.empty(c, np.float32), np.empty(c, np.float32)
    for kernel in ("batchnorm_backward", "batchnorm_relu_backward"):
        fn = getattr(norm, kernel)
        head = (gamma, beta) if kernel == "batchnorm_relu_backward" else (gamma,)
        cases = {"own dx": lambda: (x, dout, np.empty_like(x)),
                 "dx = dout": lambda: (x, dout.copy(), None),
                 "dx = x": lambda: (x.copy(), dout, None)}
        for label, make in cases.items():
            best = float("inf")
            for _ in range(args.calls):
                x_, d_, dx = make()
                dx = d_ if label == "dx = dout" else (x_ if label == "dx = x" else dx)
                t = time.perf_counter()
                fn(x_, d_, *head, mean, inv, dx, dg, db, False, True)
                best = min(best, time.perf_counter() - t)
            print(f"{kernel}, {label}: {best * 1e3:.1f} ms")


if __name__ == "__main__":
    main()

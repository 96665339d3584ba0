"""Time the CPU optimizer update kernels on one flat weight (the tutorial MLP's first layer:
784 x 128 floats): microseconds per call, best of several rounds.

    python benchmarks/bench_optim.py [--size 100352] [--calls 2000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from symjit.kernels.cpu import optim


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=784 * 128)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    w = rng.random(args.size, dtype=np.float32)
    g, m, v = w.copy(), np.zeros_like(w), np.zeros_like(w)
    runs = {
        "sgd_update": lambda: optim.sgd_update(w, g, 0.1, 1e-4, 0.01, -1.0),
        "sgd_mom_update": lambda: optim.sgd_mom_update(w, g, m, 0.1, 0.9, 1e-4, 0.01, -1.0),
        "sgd_mom_update, clip 1.0": lambda: optim.sgd_mom_update(w, g, m, 0.1, 0.9, 1e-4, 0.01, 1.0),
        "adam_wdclip_update": lambda: optim.adam_wdclip_update(w, g, m, v, 0.1, 0.9, 0.99, 1e-8, 0.0,
                                                               1.0, -1.0),
    }
    for name, run in runs.items():
        run()   # compile (or load from numba's cache)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(args.calls):
                run()
            best = min(best, (time.perf_counter() - t0) / args.calls)
        print(f"{name}: {best * 1e6:.1f} us")


if __name__ == "__main__":
    main()

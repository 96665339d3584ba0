"""Time the CPU BatchNorm backward kernels with ``dx`` a buffer of its own and in place over
``dout`` or ``x`` (as the compiler plans it), on ResNet's stem at batch 32: best milliseconds.

``--dense`` times BatchNorm after FullyConnected instead (``(N, C)`` data, the kernels' ``S == 1``
views): the row-wise kernels the kernels take there (:mod:`symjit.kernels.cpu.norm_rows`) against
the per-channel loop they replace, alternating, best microseconds of ``--calls`` rounds of 200.

    python benchmarks/bench_norm.py [--calls 5] [--batch 32] [--dense]
"""
from __future__ import annotations

import argparse
import time

import numba
import numpy as np
from symjit.kernels.cpu import norm

DENSE = [(100, 128), (100, 64), (256, 512), (32, 4096)]


def _best_us(fn, rounds: int, n: int = 200) -> float:
    fn()
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


def _dense_cases(n: int, c: int, rng) -> dict:
    """name: (row-wise call, per-channel loop) on ``(n, c, 1)`` float32 data."""
    x = rng.standard_normal((n, c, 1)).astype(np.float32)
    dout = rng.standard_normal(x.shape).astype(np.float32)
    out, dx = np.empty_like(x), np.empty_like(x)
    gamma, beta = np.ones(c, np.float32), np.zeros(c, np.float32)
    mm, mv, sm, si = (np.zeros(c, np.float32) for _ in range(4))
    dg, db = np.empty(c, np.float32), np.empty(c, np.float32)
    fwd = (x, gamma, beta, mm, mv, out, sm, si, 1e-3, 0.9, True, True)
    bwd = (x, dout, gamma, sm, si, dx, dg, db, True, True)
    rbwd = (x, dout, gamma, beta, sm, si, dx, dg, db, True, True)

    return {"forward (training)": (lambda: norm.batchnorm_forward_train(*fwd), lambda: _train_loop(*fwd)),
            "backward": (lambda: norm.batchnorm_backward(*bwd), lambda: _backward_loop(*bwd)),
            "BatchNorm + relu backward": (lambda: norm.batchnorm_relu_backward(*rbwd),
                                          lambda: _relu_backward_loop(*rbwd))}


# The per-channel loops as the kernels ran them for every S (compiled here, the channel helpers
# being the kernels' own).
@numba.njit
def _train_loop(x, gamma, beta, mm, mv, out, sm, si, eps, momentum, fix_gamma, update):
    for c in range(x.shape[1]):
        norm._train_channel(x, gamma, beta, mm, mv, out, sm, si, eps, momentum, fix_gamma, update, c)


@numba.njit
def _backward_loop(x, dout, gamma, sm, si, dx, dg, db, fix_gamma, stats):
    for c in range(x.shape[1]):
        norm._backward_channel(x, dout, gamma, sm, si, dx, dg, db, fix_gamma, stats, 0, c)


@numba.njit
def _relu_backward_loop(x, dout, gamma, beta, sm, si, dx, dg, db, fix_gamma, stats):
    for c in range(x.shape[1]):
        norm._relu_backward_channel(x, dout, gamma, beta, sm, si, dx, dg, db, fix_gamma, stats, 0, c)


def dense(rounds: int) -> None:
    """The row-wise kernels against the per-channel loop, on FullyConnected outputs."""
    rng = np.random.default_rng(0)
    print("(N, C): kernel: row-wise / per-channel loop, best us")
    for n, c in DENSE:
        for name, (rows, channels) in _dense_cases(n, c, rng).items():
            a, b = _best_us(rows, rounds), _best_us(channels, rounds)
            print(f"({n}, {c}): {name}: {a:.1f} / {b:.1f} us ({b / a:.1f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dense", action="store_true")
    args = ap.parse_args()
    if args.dense:
        dense(args.calls)
        return
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

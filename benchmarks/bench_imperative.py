"""Per-call cost of imperative operator calls on the CPU: ``mx.nd`` functions and NDArray arithmetic
(the registry's compiled kernels, through the fast path of a repeated call), the generic
``symjit.imperative.invoke`` they fall back on, numpy on the same host arrays, and PyTorch eager
when it is installed. Microseconds per call, best of five rounds, after a warm-up call (which
compiles or loads the kernel). PyTorch runs with one thread, as symjit's small kernels do.

    python benchmarks/bench_imperative.py [--calls 20000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import symjit as mx
from symjit.imperative import invoke


def best_us(fn, calls: int, rounds: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def _rows() -> dict:
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.uniform(-1, 1, 100))
    y = mx.nd.array(rng.uniform(-1, 1, 100))
    out = mx.nd.zeros((100,))
    data = mx.nd.array(rng.uniform(-1, 1, (1, 784)))
    w, b = mx.nd.array(rng.uniform(-1, 1, (128, 784))), mx.nd.zeros((128,))
    big, grad = mx.nd.array(rng.uniform(-1, 1, (128, 784))), mx.nd.array(rng.uniform(-1, 1, (128, 784)))
    xh, yh, dh, wh, bh, bigh, gradh = (a.asnumpy() for a in (x, y, data, w, b, big, grad))
    rows = {
        "relu, 100 elements": {
            "mx.nd.relu": lambda: mx.nd.relu(x),
            "mx.nd.relu, out=": lambda: mx.nd.relu(x, out=out),
            "invoke (generic path)": lambda: invoke("relu", [x]),
            "numpy": lambda: np.maximum(xh, 0),
        },
        "FullyConnected, 1 x 784 -> 128": {
            "mx.nd.FullyConnected": lambda: mx.nd.FullyConnected(data, w, b, num_hidden=128),
            "invoke (generic path)": lambda: invoke("FullyConnected", [data, w, b], {"num_hidden": 128}),
            "numpy": lambda: dh @ wh.T + bh,
        },
        "x * 2.0, 100 elements": {"NDArray": lambda: x * 2.0, "numpy": lambda: xh * 2.0},
        "x + y, 100 elements": {"NDArray": lambda: x + y, "numpy": lambda: xh + yh},
        "x += y, 100 elements": {"NDArray": lambda: x.__iadd__(y), "numpy": lambda: xh.__iadd__(yh)},
        "x += y, 128 x 784 elements": {"NDArray": lambda: big.__iadd__(grad),
                                       "numpy": lambda: bigh.__iadd__(gradh)},
        "sgd_update into the weight, 128 x 784": {
            "mx.nd.sgd_update, out=weight": lambda: mx.nd.sgd_update(big, grad, lr=1e-6, wd=1e-4, out=big),
            "numpy": lambda: bigh.__isub__(1e-6 * (gradh + 1e-4 * bigh)),
        },
    }
    try:
        import torch
        torch.set_num_threads(1)
        tx, ty, td, tw, tb = (torch.tensor(a) for a in (xh, yh, dh, wh, bh))
        rows["relu, 100 elements"]["PyTorch eager"] = lambda: torch.relu(tx)
        rows["FullyConnected, 1 x 784 -> 128"]["PyTorch eager"] = \
            lambda: torch.nn.functional.linear(td, tw, tb)
        rows["x * 2.0, 100 elements"]["PyTorch eager"] = lambda: tx * 2.0
        rows["x + y, 100 elements"]["PyTorch eager"] = lambda: tx + ty
        rows["x += y, 100 elements"]["PyTorch eager"] = lambda: tx.add_(ty)
        tbig, tgrad = torch.tensor(bigh), torch.tensor(gradh)
        rows["x += y, 128 x 784 elements"]["PyTorch eager"] = lambda: tbig.add_(tgrad)
    except ImportError:
        print("(PyTorch not installed: no PyTorch column)")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    for op, runs in _rows().items():
        print(op)
        for name, fn in runs.items():
            print(f"  {name:28s} {best_us(fn, args.calls):8.2f} us")


if __name__ == "__main__":
    main()

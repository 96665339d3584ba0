"""Per-call cost of imperative operator calls on the CPU: the registry path that GPU NDArrays use
(``symjit.imperative.invoke``: a cached compiled program called on the arrays), the numpy path
``mx.nd`` takes on the CPU today, and PyTorch eager when it is installed. Microseconds per call,
best of several rounds, after a warm-up call (compiles or loads the kernel).

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.uniform(-1, 1, 100))
    out = mx.nd.zeros((100,))
    data = mx.nd.array(rng.uniform(-1, 1, (1, 784)))
    w, b = mx.nd.array(rng.uniform(-1, 1, (128, 784))), mx.nd.zeros((128,))
    fc_out = mx.nd.zeros((1, 128))
    rows = {
        "relu, 100 elements": {
            "registry (invoke)": lambda: invoke("relu", [x]),
            "registry, out=": lambda: invoke("relu", [x], out=[out]),
            "numpy (mx.nd.relu)": lambda: mx.nd.relu(x),
        },
        "FullyConnected, 1 x 784 -> 128": {
            "registry (invoke)": lambda: invoke("FullyConnected", [data, w, b], {"num_hidden": 128}),
            "registry, out=": lambda: invoke("FullyConnected", [data, w, b], {"num_hidden": 128},
                                             out=[fc_out]),
            "numpy (mx.nd.dot + bias)": lambda: mx.nd.dot(data, w, transpose_b=True) + b,
        },
    }
    try:
        import torch
        tx, tw, tb = torch.tensor(x.asnumpy()), torch.tensor(w.asnumpy()), torch.tensor(b.asnumpy())
        td = torch.tensor(data.asnumpy())
        rows["relu, 100 elements"]["PyTorch eager"] = lambda: torch.relu(tx)
        rows["FullyConnected, 1 x 784 -> 128"]["PyTorch eager"] = \
            lambda: torch.nn.functional.linear(td, tw, tb)
    except ImportError:
        print("(PyTorch not installed: no PyTorch column)")
    for op, runs in rows.items():
        print(op)
        for name, fn in runs.items():
            print(f"  {name:28s} {best_us(fn, args.calls):8.2f} us")


if __name__ == "__main__":
    main()

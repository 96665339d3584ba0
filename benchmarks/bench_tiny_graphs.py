"""Cold binds of many tiny graphs, as MXNet's operator tests make them: a seeded stream of random
graphs of two to four elementwise, scalar and broadcast operators over two inputs of a random small
shape (1 to 4 axes of 1 to 6), each bound with gradients (``simple_bind``, ``grad_req='write'``)
and run once (forward in training mode, backward), all in one new process with an empty kernel
cache. Prints the process's time, the median and worst bind + step of one graph, and how many
kernel modules the cache holds after it.

``--compare`` runs the same stream a second time with ``SYMJIT_PROGRAM_CALLS=16`` (every phase
through one compiled program function, the default before small elementwise programs called their
kernels from the host), alternating the two ``--rounds`` times, each process with a new cache.

    python benchmarks/bench_tiny_graphs.py [--graphs 200] [--seed 0] [--compare] [--rounds 1]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

UNARY = ("exp", "tanh", "sigmoid", "relu", "square", "negative", "abs", "sin")
BINARY = ("+", "-", "*", "maximum")
BROADCAST = ("broadcast_add", "broadcast_mul", "broadcast_sub")


def make_graph(mx, rng) -> tuple:
    """One random graph and its inputs' shapes: ``a`` of a random shape, ``b`` of the same shape or
    of that shape with some axes set to 1 (for the broadcast operators)."""
    shape = tuple(int(d) for d in rng.integers(1, 7, rng.integers(1, 5)))
    broadcast = bool(rng.integers(0, 2))
    b_shape = tuple(d if rng.integers(0, 2) else 1 for d in shape) if broadcast else shape
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    x = a
    for _ in range(int(rng.integers(2, 5))):
        kind = rng.integers(0, 4)
        if kind == 0:
            op = UNARY[rng.integers(len(UNARY))]
            x = mx.sym.Activation(x, act_type="relu") if op == "relu" else getattr(mx.sym, op)(x)
        elif kind == 1:
            x = x * float(rng.uniform(0.5, 2.0)) + float(rng.uniform(-1, 1))
        elif broadcast:
            x = getattr(mx.sym, BROADCAST[rng.integers(len(BROADCAST))])(x, b)
        else:
            op = BINARY[rng.integers(len(BINARY))]
            x = mx.sym.maximum(x, b) if op == "maximum" else {"+": x + b, "-": x - b, "*": x * b}[op]
    if "b" not in x.list_arguments():
        x = mx.sym.broadcast_add(x, b) if broadcast else x + b
    return x, shape, b_shape


def child(graphs: int, seed: int) -> dict:
    t0 = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    import numpy as np

    import symjit as mx
    rng = np.random.default_rng(seed)
    times = []
    for _ in range(graphs):
        net, shape, b_shape = make_graph(mx, rng)
        start = time.perf_counter()
        ex = net.simple_bind(mx.cpu(), a=shape, b=b_shape)
        ex.arg_dict["a"][:] = rng.uniform(-1, 1, shape)
        ex.arg_dict["b"][:] = rng.uniform(-1, 1, b_shape)
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones(ex.outputs[0].shape))
        ex.grad_dict["a"].asnumpy()
        times.append(time.perf_counter() - start)
    return {"total": time.perf_counter() - t0, "median": statistics.median(times), "worst": max(times)}


def run(graphs: int, seed: int, extra: dict) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYMJIT_CACHE_DIR=cache, PYTHONPATH=str(ROOT), SYMJIT_PROGRESS="0")
        env.pop("SYMJIT_PROGRAM_CALLS", None)
        env.update(extra)
        start = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "--child", str(graphs), "--seed", str(seed)],
                             env=env, check=True, capture_output=True, text=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        result["process"] = time.perf_counter() - start
        result["kernels"] = len(list(Path(cache, "kernels").glob("symjit_gen_*.py")))
        return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.seed)))
        return
    variants = {"default": {}}
    if args.compare:
        variants["program functions (SYMJIT_PROGRAM_CALLS=16)"] = {"SYMJIT_PROGRAM_CALLS": "16"}
    for _ in range(args.rounds):
        for name, extra in variants.items():
            r = run(args.graphs, args.seed, extra)
            print(f"{name}: {args.graphs} graphs bound cold and run once: process {r['process']:.1f} s, "
                  f"per graph median {r['median'] * 1e3:.0f} ms, worst {r['worst']:.2f} s; "
                  f"{r['kernels']} generated modules in the cache", flush=True)


if __name__ == "__main__":
    main()

"""Cold binds of many tiny graphs, as MXNet's operator tests make them: a seeded stream of random
graphs of two to four elementwise, scalar, broadcast and reduce operators over two inputs of a
random small shape (1 to 4 axes of 1 to 6), each bound with gradients (``simple_bind``,
``grad_req='write'``) and run one or two passes (forward in training mode, backward), all in one
new process with an empty kernel cache (cold), then the same stream in a second process on the
cache the first one filled (warm). Prints each process's time, the median and worst bind + first
pass of one graph, and how many kernel modules the cache holds after it.

The variants, alternated ``--rounds`` times (the machine may be shared: compare them as ratios of
one run): ``interpreted`` (the default settings: small programs run their first passes
interpreted, :mod:`symjit.compiler.tier`) and ``compiled`` (``SYMJIT_INTERPRET=0``: every program
compiles at its bind); ``--compare`` adds ``SYMJIT_PROGRAM_CALLS=16`` (every phase through one
compiled program function) to the compiled one. ``--mxnet-python`` runs the stream with MXNet
1.9.1 too (an interpreter that has it: ``import mxnet as mx``, the same calls).
``--no-reduce`` gives the stream of the runs logged before reductions were added (elementwise,
scalar and broadcast operators, one pass each).

    python benchmarks/bench_tiny_graphs.py [--graphs 200] [--seed 0] [--rounds 1] [--compare]
        [--mxnet-python /path/to/bin/python] [--no-reduce] [--no-compiled]
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
REDUCE = ("sum", "mean", "max")


def make_graph(mx, rng, reduce: bool = True) -> tuple:
    """One random graph and its inputs' shapes: ``a`` of a random shape, ``b`` of the same shape or
    of that shape with some axes set to 1 (for the broadcast operators); with ``reduce``, a fifth
    kind of step reduces over one axis (kept, size 1) and broadcasts the result back."""
    shape = tuple(int(d) for d in rng.integers(1, 7, rng.integers(1, 5)))
    broadcast = bool(rng.integers(0, 2))
    b_shape = tuple(d if rng.integers(0, 2) else 1 for d in shape) if broadcast else shape
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    x = a
    for _ in range(int(rng.integers(2, 5))):
        kind = rng.integers(0, 5 if reduce else 4)
        if kind == 0:
            op = UNARY[rng.integers(len(UNARY))]
            x = mx.sym.Activation(x, act_type="relu") if op == "relu" else getattr(mx.sym, op)(x)
        elif kind == 1:
            x = x * float(rng.uniform(0.5, 2.0)) + float(rng.uniform(-1, 1))
        elif kind == 4:
            op = REDUCE[rng.integers(len(REDUCE))]
            x = mx.sym.broadcast_sub(x, getattr(mx.sym, op)(x, axis=int(rng.integers(len(shape))),
                                                           keepdims=True))
        elif broadcast:
            x = getattr(mx.sym, BROADCAST[rng.integers(len(BROADCAST))])(x, b)
        else:
            op = BINARY[rng.integers(len(BINARY))]
            x = mx.sym.maximum(x, b) if op == "maximum" else {"+": x + b, "-": x - b, "*": x * b}[op]
    if "b" not in x.list_arguments():
        x = mx.sym.broadcast_add(x, b) if broadcast else x + b
    return x, shape, b_shape


def child(graphs: int, seed: int, module: str, reduce: bool) -> dict:
    t0 = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    import importlib

    import numpy as np
    mx = importlib.import_module(module)
    rng = np.random.default_rng(seed)
    firsts, alls = [], []
    for _ in range(graphs):
        net, shape, b_shape = make_graph(mx, rng, reduce)
        passes = int(rng.integers(1, 3)) if reduce else 1
        start = time.perf_counter()
        ex = net.simple_bind(mx.cpu(), a=shape, b=b_shape)
        ex.arg_dict["a"][:] = rng.uniform(-1, 1, shape)
        ex.arg_dict["b"][:] = rng.uniform(-1, 1, b_shape)
        for p in range(passes):
            ex.forward(is_train=True)
            ex.backward(mx.nd.ones(ex.outputs[0].shape))
            ex.grad_dict["a"].asnumpy()
            if p == 0:
                firsts.append(time.perf_counter() - start)
        alls.append(time.perf_counter() - start)
    return {"total": time.perf_counter() - t0, "median": statistics.median(firsts), "worst": max(firsts),
            "graphs": sum(alls)}


def run(python: str, module: str, graphs: int, seed: int, extra: dict, reduce: bool, cache: str) -> dict:
    env = dict(os.environ, SYMJIT_CACHE_DIR=cache, PYTHONPATH=str(ROOT), SYMJIT_PROGRESS="0")
    for key in ("SYMJIT_PROGRAM_CALLS", "SYMJIT_INTERPRET", "SYMJIT_INTERPRET_CALLS"):
        env.pop(key, None)
    env.update(extra)
    start = time.perf_counter()
    cmd = [python, __file__, "--child", str(graphs), "--seed", str(seed), "--module", module]
    out = subprocess.run(cmd + ([] if reduce else ["--no-reduce"]), env=env, check=True,
                         capture_output=True, text=True).stdout
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
    ap.add_argument("--mxnet-python", default=None, help="an interpreter with MXNet 1.9.1")
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--no-compiled", action="store_true",
                    help="leave out the compiled variant (minutes for 200 graphs); ratios then against "
                         "the interpreted one")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--module", default="symjit", help=argparse.SUPPRESS)
    args = ap.parse_args()
    reduce = not args.no_reduce
    if args.child is not None:
        print(json.dumps(child(args.child, args.seed, args.module, reduce)))
        return
    variants = {"interpreted": (sys.executable, "symjit", {})}
    if not args.no_compiled:
        variants["compiled (SYMJIT_INTERPRET=0)"] = (sys.executable, "symjit", {"SYMJIT_INTERPRET": "0"})
    if args.compare:
        variants["compiled, program functions (SYMJIT_PROGRAM_CALLS=16)"] = (
            sys.executable, "symjit", {"SYMJIT_INTERPRET": "0", "SYMJIT_PROGRAM_CALLS": "16"})
    if args.mxnet_python:
        variants["mxnet"] = (args.mxnet_python, "mxnet", {})
    results: dict[str, list[dict]] = {}
    for _ in range(args.rounds):
        for name, (python, module, extra) in variants.items():
            with tempfile.TemporaryDirectory() as cache:
                for state in ("cold", "warm"):
                    r = run(python, module, args.graphs, args.seed, extra, reduce, cache)
                    results.setdefault(f"{name}, {state}", []).append(r)
                    print(f"{name}, {state}: {args.graphs} graphs bound and run: "
                          f"process {r['process']:.1f} s (graphs {r['graphs']:.1f} s), bind + first pass "
                          f"per graph median {r['median'] * 1e3:.1f} ms, worst {r['worst']:.2f} s; "
                          f"{r['kernels']} generated modules in the cache", flush=True)
    base = "interpreted" if args.no_compiled else "compiled (SYMJIT_INTERPRET=0)"
    for state in ("cold", "warm"):
        ref = results[f"{base}, {state}"]
        for name in variants:
            mine = results[f"{name}, {state}"]
            ratios = [statistics.median(r[key] for r in mine) / statistics.median(r[key] for r in ref)
                      for key in ("process", "median")]
            print(f"{name} / {base.split(' ')[0]}, {state}: process {ratios[0]:.2f}x, "
                  f"per-graph median {ratios[1]:.3f}x")

if __name__ == "__main__":
    main()

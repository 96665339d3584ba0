"""Binding one computation many times: what code that sweeps ``grad_req`` combinations, rebinds a
``Module`` or checks gradients per perturbation does (MXNet's
``test_convolution_independent_gradients`` binds one convolution under all 27 combinations, three
rounds per configuration).

For each case (a convolution with bias, a two-layer MLP), in a new process with an empty kernel
cache: the first round binds every ``grad_req`` combination of the case's three arguments once and
runs a training forward and backward pass on each (compiles included); the next rounds do the same
again. Prints the seconds of the first round and the milliseconds per bind (with its passes) of
the later ones.

    python benchmarks/bench_rebind.py [--rounds 3] [--src PATH]

``--src PATH`` runs the cases with the symjit package found under ``PATH`` (another checkout), so
two versions can be compared alternately in one run.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

REQS = ("null", "write", "add")


def _case(name: str):
    import symjit as mx
    if name == "conv":
        x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")
        sym = mx.sym.Convolution(x, w, b, num_filter=8, kernel=(3, 3), pad=(1, 1), name="conv")
        return sym, {"x": (2, 8, 16, 16), "w": (8, 8, 3, 3), "b": (8,)}
    x, w1, w2 = mx.sym.var("x"), mx.sym.var("w1"), mx.sym.var("w2")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, w1, num_hidden=64, no_bias=True, name="fc1"),
                          act_type="relu")
    sym = mx.sym.FullyConnected(h, w2, num_hidden=10, no_bias=True, name="fc2")
    return sym, {"x": (32, 100), "w1": (64, 100), "w2": (10, 64)}


def _round(name: str) -> int:
    import numpy as np

    import symjit as mx
    sym, shapes = _case(name)
    rng = np.random.default_rng(0)
    n = 0
    for reqs in itertools.product(REQS, repeat=len(shapes)):
        args = {k: mx.nd.array(rng.normal(size=s)) for k, s in shapes.items()}
        grads = {k: mx.nd.zeros(s) for k, s in shapes.items()}
        exe = sym.bind(mx.cpu(), args, args_grad=grads, grad_req=dict(zip(shapes, reqs)))
        exe.forward(is_train=True)
        exe.backward(exe.outputs[0])
        exe.outputs[0].wait_to_read()
        n += 1
    return n


def one(name: str, rounds: int) -> dict:
    """Run one case's rounds in this process."""
    start = time.perf_counter()
    n = _round(name)
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(rounds - 1):
        _round(name)
    later = time.perf_counter() - start
    return {"case": name, "binds_per_round": n, "first_round_s": first,
            "later_ms_per_bind": 1e3 * later / max(1, n * (rounds - 1))}


def run_case(name: str, rounds: int, src: str | None) -> dict:
    """One case in a new process with an empty kernel cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYMJIT_CACHE_DIR=cache)
        path = [os.path.dirname(os.path.abspath(__file__))] + ([src] if src else [])
        code = (f"import json, sys; sys.path[:0] = {path!r}; import bench_rebind as b; "
                f"print(json.dumps(b.one({name!r}, {rounds})))")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of binds per case (the first compiles)")
    ap.add_argument("--src", default=None, help="a checkout whose symjit package to run instead")
    args = ap.parse_args()
    print(f"{'case':6} {'binds/round':>11} {'first round (s)':>16} {'later (ms/bind)':>16}")
    for name in ("conv", "mlp"):
        r = run_case(name, args.rounds, args.src)
        print(f"{r['case']:6} {r['binds_per_round']:>11} {r['first_round_s']:>16.2f} "
              f"{r['later_ms_per_bind']:>16.2f}")


if __name__ == "__main__":
    main()

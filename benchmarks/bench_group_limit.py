"""Compile time of one big fused group against the same ops cut at ``MAX_GROUP_OPS``: a program of
``--chains`` independent same-shaped elementwise chains (three ops each: a unary math function,
a scale, an add), the shape of a lazy queue of many calls, bound in a new kernel cache at each
limit in turn (and in a fresh process each, so numba's in-process caches start empty), seconds
from bind to the first forward's result::

    python benchmarks/bench_group_limit.py [--chains 75] [--limits 100000,64,32]

A limit above the op count keeps the whole program one kernel (the pass without a limit).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUN = r"""
import sys, time
import numpy as np
import symjit as mx
from symjit.compiler.passes import fuse
fuse.MAX_GROUP_OPS = int(sys.argv[1])
chains = int(sys.argv[2])
fns = [mx.sym.exp, mx.sym.tanh, mx.sym.sin, mx.sym.log1p, mx.sym.sigmoid, mx.sym.cos, mx.sym.sqrt,
       mx.sym.arctan, mx.sym.softsign, mx.sym.erf]
x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
net = mx.sym.Group([fns[i % len(fns)](x + float(i) * 0.01) * 0.5 + y for i in range(chains)])
args = {"x": mx.nd.array(np.linspace(0.1, 0.9, 6000).reshape(60, 100)),
        "y": mx.nd.ones((60, 100))}
start = time.perf_counter()
ex = net.bind(mx.cpu(), args)
ex.forward()[0].asnumpy()
print(f"{time.perf_counter() - start:.2f}")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chains", type=int, default=75, help="independent chains of 3 ops")
    ap.add_argument("--limits", default="100000,64,32", help="MAX_GROUP_OPS values, comma-separated")
    args = ap.parse_args()
    print(f"{args.chains} chains of 3 ops, one (60, 100) float32 shape; bind + first forward, s")
    for limit in (int(v) for v in args.limits.split(",")):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, SYMJIT_CACHE_DIR=cache, SYMJIT_INTERPRET="0", PYTHONPATH=str(ROOT))
            out = subprocess.run([sys.executable, "-c", RUN, str(limit), str(args.chains)], env=env,
                                 capture_output=True, text=True, check=True).stdout.split()[-1]
        print(f"limit {limit:>6}: {out} s")


if __name__ == "__main__":
    main()

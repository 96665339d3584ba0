"""Compile time of many BatchNorm variants, as an operator test binds them: every rank in
``--ranks``, every channel axis, ``fix_gamma`` off and on, each recorded with ``mx.autograd`` and
differentiated (its forward and backward in one program) and called once for inference, in a fresh
process and kernel cache (numba's cache of symjit's building blocks, next to their source, kept as
after any earlier use on the machine). Prints the seconds and what the kernel cache holds then:
generated kernel modules and program modules::

    python benchmarks/bench_norm_variants.py [--ranks 2,3,4,5] [--repeat 2]
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
ranks = [int(r) for r in sys.argv[1].split(",")]
start = time.perf_counter()
for nd in ranks:
    shape = tuple(range(3, 3 + nd))
    for axis in range(nd):
        for fix_gamma in (False, True):
            c = shape[axis]
            x = mx.nd.random.uniform(shape=shape)
            gamma, beta = mx.nd.random.uniform(shape=(c,)), mx.nd.random.uniform(shape=(c,))
            mm, mv = mx.nd.zeros((c,)), mx.nd.ones((c,))
            for a in (x, gamma, beta):
                a.attach_grad()
            with mx.autograd.record():
                out = mx.nd.BatchNorm(x, gamma, beta, mm, mv, axis=axis, fix_gamma=fix_gamma)
            out.backward(mx.nd.ones(shape))
            x.grad.asnumpy()
            mx.nd.BatchNorm(x, gamma, beta, mm, mv, axis=axis, fix_gamma=fix_gamma).asnumpy()
print(f"{time.perf_counter() - start:.1f}")
"""


def _kinds(cache: str) -> tuple[int, int]:
    """(kernel modules, program modules) in a kernel cache."""
    kernels = programs = 0
    for f in Path(cache, "kernels").glob("symjit_gen_*.py"):
        text = f.read_text()
        if "\ndef forward" in text or "\ndef backward" in text:
            programs += 1
        else:
            kernels += 1
    return kernels, programs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="2,3,4,5", help="data ranks, comma-separated")
    ap.add_argument("--repeat", type=int, default=2, help="fresh processes and caches, one after the other")
    args = ap.parse_args()
    variants = sum(2 * int(r) for r in args.ranks.split(","))
    print(f"{variants} BatchNorm variants (rank x axis x fix_gamma), recorded + backward + inference")
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, SYMJIT_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
            out = subprocess.run([sys.executable, "-c", RUN, args.ranks], env=env, capture_output=True,
                                 text=True, check=True).stdout.split()[-1]
            kernels, programs = _kinds(cache)
        print(f"run {i + 1}: {out} s; kernel cache: {kernels} kernel modules, {programs} program modules")


if __name__ == "__main__":
    main()

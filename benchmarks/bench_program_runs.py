"""Program functions compiled at the bind, or once a program has run ``SYMJIT_PROGRAM_RUNS``
forward passes (symjit.compiler.program_tier): each setting in a new process with an empty kernel
cache, taking turns.

* ``binds``: what MXNet's ``test_stn`` does, a convolution, FullyConnected and SpatialTransformer
  graph bound with gradients for ``--binds`` image shapes and run forward and backward once each:
  seconds in all;
* ``loop``: the tutorial MLP (784-128-64-10, batch 100) bound for training, then ``--steps``
  passes (forward, backward): seconds to the end of the bind, of the first ``program_runs``
  passes, and of the rest, and the median step of the rest (us).

    python benchmarks/bench_program_runs.py [--runs 0,8] [--binds 24] [--steps 200] [--rounds 2]
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def binds(count: int) -> dict:
    import symjit as mx
    start = time.perf_counter()
    data = mx.sym.Variable("data")
    for k in range(count):
        n, c, side = 1 + k % 2, 1 + (k // 2) % 3, (5, 9, 13, 17)[(k // 6) % 4]
        loc = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=2, name="loc_conv")
        loc = mx.sym.FullyConnected(mx.sym.flatten(loc), num_hidden=6, name="loc_fc")
        net = mx.sym.SpatialTransformer(data, loc, target_shape=((side + 1) // 2, (side + 1) // 2),
                                        transform_type="affine", sampler_type="bilinear")
        ex = net.simple_bind(mx.cpu(), data=(n, c, side, side))
        ex.arg_dict["data"][:] = np.random.default_rng(k).standard_normal((n, c, side, side))
        ex.arg_dict["loc_fc_bias"][:] = np.array([0.5, 0, 0, 0, 0.5, 0])
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones(ex.outputs[0].shape))
        ex.grad_dict["data"].asnumpy()
    return {"seconds": time.perf_counter() - start}


def loop(steps: int) -> dict:
    sys.path.insert(0, str(ROOT))
    import symjit as mx
    from examples.nets import mlp
    start = time.perf_counter()
    ex = mlp().simple_bind(mx.cpu(), data=(100, 784))
    bound = time.perf_counter()
    rng = np.random.default_rng(0)
    ex.arg_dict["data"][:] = rng.random((100, 784), np.float32)
    ex.arg_dict["softmax_label"][:] = rng.integers(0, 10, 100)
    for name in ex.arg_dict:
        if name.endswith("weight"):
            ex.arg_dict[name][:] = rng.standard_normal(ex.arg_dict[name].shape) * 0.05
    first = ex._cfg.program_runs or 1
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        ex.forward(is_train=True)
        ex.backward()
        ex.grad_arrays[1].wait_to_read()
        times.append(time.perf_counter() - t)
    return {"bind": bound - start, "first": sum(times[:first]), "rest": sum(times[first:]),
            "step_us": statistics.median(times[first:]) * 1e6}


def run(kind: str, runs: int, count: int) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SYMJIT_CACHE_DIR=cache, SYMJIT_PROGRAM_RUNS=str(runs), SYMJIT_AOT="off",
                   PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, __file__, "--child", kind, "--count", str(count)], env=env,
                              capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="0,8", help="SYMJIT_PROGRAM_RUNS settings to compare")
    ap.add_argument("--binds", type=int, default=24)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(binds(a.count) if a.child == "binds" else loop(a.count)))
        return
    settings = [int(r) for r in a.runs.split(",")]
    for r in range(a.rounds):
        for runs in settings:
            b = run("binds", runs, a.binds)
            m = run("loop", runs, a.steps)
            print(f"round {r} SYMJIT_PROGRAM_RUNS={runs}: {a.binds} STN binds {b['seconds']:.1f} s; "
                  f"MLP loop: bind {m['bind']:.2f} s, first passes {m['first']:.2f} s, "
                  f"the other {a.steps - (runs or 1)} {m['rest']:.2f} s, step {m['step_us']:.0f} us",
                  flush=True)


if __name__ == "__main__":
    main()

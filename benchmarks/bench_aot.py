"""Run time of a warm process with ahead-of-time modules against numba's kernel cache: the tutorial
MLP (784-128-64-10, batch 100) trained by a hand loop (forward, backward, one SGD-momentum `updater`
call per parameter), each in a new process on one warm cache, alternated. Prints the best time per
step of each process (best of five blocks of 200 steps), and the same for forward + backward alone
and for the six update calls alone.

    python benchmarks/bench_aot.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(part: str) -> dict:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    import symjit as mx
    from examples.nets import mlp
    net = mlp()
    ex = net.simple_bind(mx.cpu(), data=(100, 784))
    rng = np.random.default_rng(0)
    for a in ex.arg_dict.values():
        a[:] = rng.random(a.shape, dtype=np.float32) * 0.1
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=0.01))

    def step() -> None:
        if part != "update":
            ex.forward(is_train=True)
            ex.backward()
        if part != "forward_backward":
            for i, n in enumerate(params):
                updater(i, ex.grad_dict[n], ex.arg_dict[n])
    for _ in range(20):
        step()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(200):
            step()
        best = min(best, (time.perf_counter() - start) / 200)
    return {"us": best * 1e6, "aot": type(ex._programs["train"].module).__name__ == "Loaded",
            "numba": "numba" in sys.modules}


def run(cache: str, aot: str, part: str) -> dict:
    env = dict(os.environ, SYMJIT_CACHE_DIR=cache, SYMJIT_AOT=aot, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, __file__, "--child", part], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    with tempfile.TemporaryDirectory() as cache:
        run(cache, "sync", "step")       # kernels, then the program's and the updates' entries
        for part in ("step", "forward_backward", "update"):
            best = {"aot": float("inf"), "off": float("inf")}
            for _ in range(args.rounds):
                for mode in best:
                    r = run(cache, "auto" if mode == "aot" else "off", part)
                    assert r["aot"] == (mode == "aot") and r["numba"] == (mode == "off"), r
                    best[mode] = min(best[mode], r["us"])
            print(f"{part}: ahead of time {best['aot']:.0f} us, numba's cache {best['off']:.0f} us "
                  f"({best['aot'] / best['off']:.3f}x)", flush=True)


if __name__ == "__main__":
    main()

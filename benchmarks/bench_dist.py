"""Distributed KVStore costs: one dist_sync push+pull round of a whole model's gradients, and
training throughput of the tutorial MLP with 1 and 2 workers, all in one run.

    python benchmarks/bench_dist.py [--workers 1,2] [--rounds 200]

For each worker count it runs ``symjit launch -n N`` on this file in worker mode: rank 0 reports
the median time of a ``push`` + ``pull`` of every parameter (one call each, as ``Module.update``
makes them) for the MLP (109k floats, 437 KB a worker sends per step) and a ResNet-18-sized set
(11.7M floats in 62 arrays), with and without an SGD-momentum updater, and for the MLP also
pushed one key per call (one allreduce per key instead of one bucket). Then it trains the MLP
for one epoch with
``examples/train_mlp_dist.py`` and reports the global samples/s of the epoch.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

MLP = [(128, 784), (128,), (64, 128), (64,), (10, 64), (10,)]


def resnet18_shapes() -> list[tuple[int, ...]]:
    """The parameter shapes of ResNet-18 (convolutions, BatchNorm gamma/beta, the classifier)."""
    convs, cin = [(64, 3, 7, 7)], 64
    for cout in (64, 128, 256, 512):
        for _ in range(2):
            convs += [(cout, cin, 3, 3), (cout, cout, 3, 3)] + ([(cout, cin, 1, 1)] if cin != cout else [])
            cin = cout
    return convs + [(c[0],) for c in convs for _ in range(2)] + [(1000, 512), (1000,)]


def worker(rounds: int) -> None:
    import symjit as mx
    kv = mx.kv.create("dist_sync")
    sets = {"mlp": MLP, "resnet18": resnet18_shapes()}
    arrays = {}
    for label, shapes in sets.items():
        names = [f"{label}{i}" for i in range(len(shapes))]
        kv.init(names, [mx.nd.ones(s) for s in shapes])
        arrays[label] = (names, [mx.nd.ones(s) for s in shapes], [mx.nd.zeros(s) for s in shapes])
    for updater in ("none", "sgd_mom"):
        if updater == "sgd_mom":
            kv.set_optimizer(mx.optimizer.SGD(learning_rate=1e-6, momentum=0.9))
        for label, (names, grads, outs) in arrays.items():
            times = []
            for _ in range((rounds if label == "mlp" else max(5, rounds // 20)) + 3):
                t0 = time.perf_counter()
                kv.push(names, grads)
                kv.pull(names, out=outs)
                times.append(time.perf_counter() - t0)
            if kv.rank == 0:
                floats = sum(int(np.prod(s)) for s in sets[label])
                print(f"RESULT {label} {updater} {floats} {np.median(times[3:]) * 1e3:.3f}", flush=True)
            if label == "mlp":   # the same gradients pushed one key per call: one message per key
                times = []
                for _ in range(rounds + 3):
                    t0 = time.perf_counter()
                    for name, g in zip(names, grads):
                        kv.push(name, g)
                    kv.pull(names, out=outs)
                    times.append(time.perf_counter() - t0)
                if kv.rank == 0:
                    floats = sum(int(np.prod(s)) for s in sets[label])
                    ms = np.median(times[3:]) * 1e3
                    print(f"RESULT mlp-per-key {updater} {floats} {ms:.3f}", flush=True)


def run(workers: list[int], rounds: int) -> None:
    rows, train = [], {}
    for n in workers:
        out = subprocess.run([sys.executable, "-m", "symjit.cli", "launch", "-n", str(n), "python",
                              __file__, "--worker", "--rounds", str(rounds)],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("RESULT"):
                _, label, updater, floats, ms = line.split()
                rows.append((n, label, updater, int(floats), float(ms)))
        log = subprocess.run([sys.executable, "-m", "symjit.cli", "launch", "-n", str(n), "python",
                              "examples/train_mlp_dist.py", "--epochs", "1"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stderr
        speeds = [float(s) for s in re.findall(r"Rank\[0\] Epoch\[0\] Batch \[\d+\]\tSpeed: ([\d.]+)", log)
                  or re.findall(r"^Epoch\[0\] Batch \[\d+\]\tSpeed: ([\d.]+)", log, re.M)]
        train[n] = np.median(speeds) * n
    print("| workers | parameters | updater | floats | push+pull (ms) |\n|---|---|---|---|---|")
    for n, label, updater, floats, ms in rows:
        print(f"| {n} | {label} | {updater} | {floats / 1e6:.2f}M | {ms:.3f} |")
    print("\n| workers | MLP training, global samples/s (batch 100 over all workers) |\n|---|---|")
    for n, speed in train.items():
        print(f"| {n} | {speed / 1e3:.1f}k |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.rounds)
    else:
        run([int(w) for w in args.workers.split(",")], args.rounds)


if __name__ == "__main__":
    main()

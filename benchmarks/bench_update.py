"""Time one training step's parameter update for the tutorial MLP (784-128-64-10: six weights and
biases, float32) on the CPU, microseconds per step, best of several rounds:

- ``kernels``: the update kernels called directly, one per parameter (the floor);
- ``updater per index``: ``updater(i, grad, weight)`` for each parameter, as the seed's loop does;
- ``updater, one list``: ``updater(indices, grads, weights)``, as ``Module.update``,
  ``FeedForward.fit`` and a KVStore push of all keys call it (one fused kernel call per step);
- ``mx.nd operators``: the update operator called into the weight per parameter
  (``mx.nd.sgd_mom_update(w, g, m, ..., out=w)``, ``mx.nd.adam_update``), as code written against
  MXNet's operators does (sgd and adam only).

    python benchmarks/bench_update.py [--calls 2000] [--optimizer sgd|adam|adamax|nadam|...]

(the ``kernels`` floor is timed for sgd and adam only).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import symjit as mx
from symjit.ndarray.optim_ops import update_kernels

SHAPES = [(128, 784), (128,), (64, 128), (64,), (10, 64), (10,)]
NAMES = ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "fc3_weight", "fc3_bias"]


def best(run, calls: int, rounds: int = 3) -> float:
    run()   # compile (or load from numba's cache), build caches
    out = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            run()
        out = min(out, (time.perf_counter() - t0) / calls)
    return out * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--optimizer", default="sgd", choices=sorted(mx.optimizer.Optimizer.opt_registry))
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    params = dict(learning_rate=0.1, wd=1e-4, rescale_grad=0.01,
                  param_idx2name=dict(enumerate(NAMES)))
    if args.optimizer == "sgd":
        params["momentum"] = 0.9
    opt = mx.optimizer.create(args.optimizer, **params)
    updater = mx.optimizer.get_updater(opt)
    ws = [mx.nd.array(rng.standard_normal(s).astype(np.float32) * 0.01) for s in SHAPES]
    gs = [mx.nd.array(rng.standard_normal(s).astype(np.float32)) for s in SHAPES]
    idx = list(range(len(ws)))

    def per_index():
        for i in idx:
            updater(i, gs[i], ws[i])
    per_index()   # states exist from here on
    k = update_kernels(mx.cpu())
    flat = [(w._data.reshape(-1), g._data.reshape(-1),
             *[s._data.reshape(-1) for s in (st if isinstance(st, tuple) else (st,)) if s is not None])
            for w, g, st in zip(ws, gs, (updater.states[i] for i in idx))]
    runs = {"updater per index": per_index, "updater, one list": lambda: updater(idx, gs, ws)}
    states = [st if isinstance(st, tuple) else (st,) for st in (updater.states[i] for i in idx)]
    if args.optimizer == "sgd":
        def kernels():
            for w, g, m in flat:
                k.sgd_mom_update(w, g, m, 0.1, 0.9, 1e-4, 0.01, -1.0)

        def operators():
            for w, g, (m,) in zip(ws, gs, states):
                mx.nd.sgd_mom_update(w, g, m, lr=0.1, momentum=0.9, wd=1e-4, rescale_grad=0.01, out=w)
        runs = {"kernels": kernels, **runs, "mx.nd operators": operators}
    elif args.optimizer == "adam":
        def kernels():
            for w, g, m, v in flat:
                k.adam_wdclip_update(w, g, m, v, 0.001, 0.9, 0.999, 1e-8, 0.0, 0.01, -1.0)

        def operators():
            for w, g, (m, v) in zip(ws, gs, states):
                mx.nd.adam_update(w, g, m, v, lr=0.001, wd=0.0, rescale_grad=0.01, out=w)
        runs = {"kernels": kernels, **runs, "mx.nd operators": operators}
    for name, run in runs.items():
        print(f"{args.optimizer} {name}: {best(run, args.calls):.1f} us per step")


if __name__ == "__main__":
    main()

"""Train MXNet's tutorial MLP (784-128-64-10, relu, SoftmaxOutput, batch 100, SGD momentum 0.9) with
a hand loop over the executor; print samples/s, bind times (cold: empty kernel cache; warm: cache
filled, new process; rebind: same process) and the memory plan.

    python benchmarks/bench_mlp.py [--epochs 1] [--batch-size 100] [--mnist DIR]
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402
from examples.nets import mlp  # noqa: E402


def bind_once(batch: int) -> dict:
    """Bind (compile) the training executor; returns timings in seconds."""
    t0 = time.perf_counter()
    from symjit.kernels.cpu.optim import sgd_update  # numba's one-time start-up in a process:
    one = np.ones(1, np.float32)                      # the first cached kernel it loads
    sgd_update(one, one, 0.0, 0.0, 1.0, -1.0)
    import symjit.executor  # noqa: F401  (the compiler's own modules, imported on first bind)
    t1 = time.perf_counter()
    reqs = {n: ("null" if n in ("data", "softmax_label") else "write") for n in mlp().list_arguments()}
    ex = mlp().simple_bind(mx.cpu(), grad_req=reqs, data=(batch, 784))
    t2 = time.perf_counter()
    ex2 = mlp().simple_bind(mx.cpu(), grad_req=reqs, data=(batch, 784))
    t3 = time.perf_counter()
    plan = ex._programs["train"].plan
    del ex2
    return {"numba_startup": t1 - t0, "bind": t2 - t1, "rebind_same_process": t3 - t2,
            "planned_bytes": plan.planned_bytes, "naive_bytes": plan.naive_bytes,
            "kernels": len(ex._programs["train"].groups)}


def bind_in_subprocess(cache_dir: str, batch: int) -> dict:
    env = dict(os.environ, SYMJIT_CACHE_DIR=cache_dir, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, __file__, "--bind-only", "--batch-size", str(batch)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def train(epochs: int, batch: int, mnist: str | None) -> dict:
    from symjit.io import load_mnist
    data = load_mnist(mnist)
    X = data["train_data"].reshape(-1, 784)
    Y = data["train_label"]
    # parameter gradients only (as MXNet's Module binds a training executor): no data gradient
    reqs = {n: ("null" if n in ("data", "softmax_label") else "write") for n in mlp().list_arguments()}
    ex = mlp().simple_bind(mx.cpu(), grad_req=reqs, data=(batch, 784))
    rng = np.random.default_rng(0)
    params = [n for n in ex.arg_dict if n not in ("data", "softmax_label")]
    for n in params:
        a = ex.arg_dict[n]
        a[:] = rng.uniform(-0.07, 0.07, a.shape) if n.endswith("weight") else 0.0
    moms = {n: mx.nd.zeros(ex.arg_dict[n].shape) for n in params}
    data_nd, label_nd = ex.arg_dict["data"], ex.arg_dict["softmax_label"]
    n_batches = len(X) // batch
    lr = 0.1
    t0 = time.perf_counter()
    for _ in range(epochs):
        for b in range(n_batches):
            data_nd[:] = X[b * batch:(b + 1) * batch]
            label_nd[:] = Y[b * batch:(b + 1) * batch]
            ex.forward(is_train=True)
            ex.backward()
            for n in params:
                w = ex.arg_dict[n]
                mx.nd.sgd_mom_update(w, ex.grad_dict[n], moms[n], lr=lr, momentum=0.9, wd=0.0,
                                     rescale_grad=1.0 / batch, out=w)
    elapsed = time.perf_counter() - t0
    Xt, Yt = data["test_data"].reshape(-1, 784), data["test_label"]
    correct = 0
    for b in range(len(Xt) // batch):
        out = ex.forward(is_train=False, data=Xt[b * batch:(b + 1) * batch])[0].asnumpy()
        correct += int((out.argmax(1) == Yt[b * batch:(b + 1) * batch]).sum())
    return {"samples_per_s": epochs * n_batches * batch / elapsed, "seconds": elapsed,
            "test_accuracy": correct / (len(Xt) // batch * batch)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--mnist", default=None, help="MNIST directory (default: symjit's lookup)")
    ap.add_argument("--bind-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.bind_only:
        print(json.dumps(bind_once(args.batch_size)))
        return
    with tempfile.TemporaryDirectory() as cache:
        cold = bind_in_subprocess(cache, args.batch_size)
        warm = bind_in_subprocess(cache, args.batch_size)
    res = train(args.epochs, args.batch_size, args.mnist)
    print(f"MLP 784-128-64-10, batch {args.batch_size}, SGD momentum 0.9, {args.epochs} epoch(s)")
    print(f"  training loop:      {res['samples_per_s']:,.0f} samples/s ({res['seconds']:.2f} s), "
          f"test accuracy {res['test_accuracy']:.4f}")
    print(f"  bind, cold cache:     {cold['bind'] * 1e3:.0f} ms (new process, empty kernel cache)")
    print(f"  bind, warm cache:     {warm['bind'] * 1e3:.0f} ms (new process, kernels from the disk cache)")
    print(f"  rebind, same process: {warm['rebind_same_process'] * 1e3:.1f} ms")
    print(f"  (not included above: process start-up, {warm['numba_startup'] * 1e3:.0f} ms: numba's "
          f"initialisation on its first cached kernel, and importing symjit's compiler modules)")
    print(f"  memory plan: {warm['kernels']} kernels, planned {warm['planned_bytes']:,} bytes "
          f"vs naive {warm['naive_bytes']:,} bytes")


if __name__ == "__main__":
    main()

"""The tutorial MLP (784-128-64-10, batch 100, SGD momentum 0.9, Accuracy) trained three ways on
MNIST, samples/s of whole epochs: the seed's custom loop (``simple_bind``, ``NDArrayIter``,
``forward(data=..., softmax_label=...)``, one ``updater(i, grad, weight)`` per parameter,
``metric.update``), ``Module.fit`` and ``FeedForward.fit`` (no validation data, a
``Speedometer``-free run). The target: both ``fit`` paths within 15% of the loop.

    python benchmarks/bench_fit.py [--epochs 3] [--rounds 3] [--mnist DIR]

Each way runs in a process of its own, the three alternating ``--rounds`` times; an epoch's time
is taken from the epoch end, and the best epoch of the best round counts (the first epoch of a
``fit`` includes its bind, from a warm kernel cache, so it is left out).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BATCH = 100


def _data(mnist: str | None):
    sys.path.insert(0, str(ROOT))
    import symjit as mx
    from examples.common import example_mnist
    data = example_mnist(argparse.Namespace(mnist=mnist))
    return mx, data["train_data"].reshape(-1, 784), data["train_label"]


def loop_worker(mnist, epochs: int) -> list[float]:
    mx, x, y = _data(mnist)
    from examples.nets import mlp
    train = mx.io.NDArrayIter(x, y, BATCH, shuffle=True)
    net = mlp()
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    ex = net.simple_bind(mx.cpu(), data=(BATCH, 784), grad_req={n: "write" for n in params})
    init = mx.init.Uniform(0.07)
    for n in params:
        init(mx.init.InitDesc(n), ex.arg_dict[n])
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-4, rescale_grad=1.0 / BATCH)
    updater = mx.optimizer.get_updater(opt)
    metric = mx.metric.Accuracy()
    times = []
    for _ in range(epochs + 1):
        train.reset()
        metric.reset()
        t0, seen = time.perf_counter(), 0
        for b in train:
            ex.forward(is_train=True, data=b.data[0], softmax_label=b.label[0])
            ex.backward()
            for k, n in enumerate(params):
                updater(k, ex.grad_dict[n], ex.arg_dict[n])
            metric.update([b.label[0]], ex.outputs)
            seen += BATCH
        times.append(seen / (time.perf_counter() - t0))
    return times[1:]


def _epoch_clock():
    marks = [time.perf_counter()]

    def epoch_end(*_args):
        marks.append(time.perf_counter())
    return marks, epoch_end


def module_worker(mnist, epochs: int) -> list[float]:
    mx, x, y = _data(mnist)
    from examples.nets import mlp
    train = mx.io.NDArrayIter(x, y, BATCH, shuffle=True)
    marks, epoch_end = _epoch_clock()
    mod = mx.mod.Module(mlp(), context=mx.cpu())
    mod.fit(train, num_epoch=epochs + 1, optimizer="sgd", eval_metric="acc",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4},
            initializer=mx.init.Uniform(0.07), epoch_end_callback=epoch_end)
    n = (len(x) // BATCH) * BATCH
    return [n / (b - a) for a, b in zip(marks[1:], marks[2:])]


def feedforward_worker(mnist, epochs: int) -> list[float]:
    mx, x, y = _data(mnist)
    from examples.nets import mlp
    train = mx.io.NDArrayIter(x, y, BATCH, shuffle=True)
    marks, epoch_end = _epoch_clock()
    model = mx.model.FeedForward(mlp(), ctx=mx.cpu(), num_epoch=epochs + 1, optimizer="sgd",
                                 learning_rate=0.1, momentum=0.9, wd=1e-4,
                                 initializer=mx.init.Uniform(0.07))
    model.fit(train, eval_metric="acc", epoch_end_callback=epoch_end)
    n = (len(x) // BATCH) * BATCH
    return [n / (b - a) for a, b in zip(marks[1:], marks[2:])]


WORKERS = {"loop": loop_worker, "module": module_worker, "feedforward": feedforward_worker}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mnist", default=str(ROOT.parent / "shared" / "data" / "mnist"))
    ap.add_argument("--worker", choices=list(WORKERS), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args.mnist, args.epochs)))
        return
    best = {w: 0.0 for w in WORKERS}
    # Workers bind from a warm cache; with SYMJIT_AOT=background each would start an ahead-of-time
    # builder when it exits, which would load the machine during the next worker's measurement.
    aot = os.environ.get("SYMJIT_AOT", "off")
    env = dict(os.environ, PYTHONPATH=str(ROOT), SYMJIT_AOT="off" if aot == "background" else aot)
    for r in range(args.rounds):
        for w in WORKERS:
            out = subprocess.run([sys.executable, __file__, "--worker", w, "--epochs", str(args.epochs),
                                  "--mnist", args.mnist], env=env, capture_output=True, text=True, check=True)
            rates = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"  round {r}: {w}: " + ", ".join(f"{v:,.0f}" for v in rates) + " samples/s", flush=True)
            best[w] = max(best[w], max(rates))
    loop = best["loop"]
    for w, v in best.items():
        print(f"{w:12s} {v:10,.0f} samples/s  {v / loop:.2f}x the loop")


if __name__ == "__main__":
    main()

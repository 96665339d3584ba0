"""MXNet's custom training loop tutorial: the MLP bound with simple_bind, initialised with
``mx.init.Uniform``, updated by an ``mx.optimizer.SGD`` through ``get_updater``, and scored with
``mx.metric.Accuracy`` over ``mx.io.NDArrayIter`` batches.

    python examples/custom_loop.py [--epochs 10] [--batches N] [--mnist DIR]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402
from examples.nets import mlp  # noqa: E402
from symjit.io import load_mnist  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batches", type=int, default=0, help="batches per epoch (0: all)")
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--mnist", default=None)
    args = ap.parse_args()
    default = ROOT.parent / "shared" / "data" / "mnist"
    data = load_mnist(args.mnist or (str(default) if default.is_dir() else None))
    batch = args.batch_size
    train = mx.io.NDArrayIter(data["train_data"].reshape(-1, 784), data["train_label"], batch, shuffle=True)
    net = mlp()
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    ex = net.simple_bind(mx.cpu(), data=(batch, 784), grad_req={n: "write" for n in params})
    mx.random.seed(0)
    init = mx.init.Uniform(0.07)
    for n in params:
        init(mx.init.InitDesc(n), ex.arg_dict[n])
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-4, rescale_grad=1.0 / batch)
    updater = mx.optimizer.get_updater(opt)
    metric = mx.metric.Accuracy()
    for epoch in range(args.epochs):
        train.reset()
        metric.reset()
        t0, seen = time.perf_counter(), 0
        for i, b in enumerate(train):
            if args.batches and i >= args.batches:
                break
            ex.forward(is_train=True, data=b.data[0], softmax_label=b.label[0])
            ex.backward()
            for k, n in enumerate(params):
                updater(k, ex.grad_dict[n], ex.arg_dict[n])
            metric.update([b.label[0]], ex.outputs)
            seen += batch
        name, acc = metric.get()
        print(f"epoch {epoch}: train {name} {acc:.4f}, {seen / (time.perf_counter() - t0):,.0f} samples/s")


if __name__ == "__main__":
    main()

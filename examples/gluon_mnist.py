"""Gluon on MNIST: an MLP (784-128-64-10, relu) and a LeNet (two conv(tanh)+max-pool stages, a
500-unit tanh Dense layer, the 10-unit output), each trained by a hand-written Gluon loop:
``gluon.data.DataLoader`` batches of an ``ArrayDataset``, the forward pass under
``autograd.record()``, ``SoftmaxCrossEntropyLoss``, ``backward()``, ``gluon.Trainer.step`` (SGD with
momentum). The nets are hybridized (traced once, run as one compiled program per batch shape)
unless ``--imperative`` runs every layer as its own call. Prints the training loss, the time per
epoch and per batch, and the test accuracy after each epoch.

    python examples/gluon_mnist.py [--net mlp|lenet|both] [--epochs 2] [--batches N]
                                   [--batch-size 64] [--imperative] [--mnist DIR]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import symjit as mx  # noqa: E402
from examples.common import example_ctx, example_mnist, example_parser, gluon_accuracy  # noqa: E402
from symjit import autograd, gluon  # noqa: E402
from symjit.gluon import nn  # noqa: E402


def make_net(kind: str) -> nn.HybridSequential:
    """The MLP or the LeNet, as Gluon layers."""
    net = nn.HybridSequential()
    with net.name_scope():
        if kind == "mlp":
            net.add(nn.Dense(128, activation="relu"), nn.Dense(64, activation="relu"), nn.Dense(10))
        else:
            net.add(nn.Conv2D(20, kernel_size=5, activation="tanh"), nn.MaxPool2D(pool_size=2, strides=2),
                    nn.Conv2D(50, kernel_size=5, activation="tanh"), nn.MaxPool2D(pool_size=2, strides=2),
                    nn.Flatten(), nn.Dense(500, activation="tanh"), nn.Dense(10))
    return net


def train(kind: str, data: dict, args, ctx: mx.Context) -> float:
    """Train one net; returns its final test accuracy."""
    n = args.batches * args.batch_size if args.batches else len(data["train_data"])
    train_set = gluon.data.ArrayDataset(data["train_data"][:n], data["train_label"][:n])
    test_set = gluon.data.ArrayDataset(data["test_data"], data["test_label"])
    train_loader = gluon.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                                         last_batch="discard")
    test_loader = gluon.data.DataLoader(test_set, batch_size=1000)
    mx.random.seed(0)
    np.random.seed(0)   # the loader's shuffling
    net = make_net(kind)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if not args.imperative:
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-4})
    mode = "imperative" if args.imperative else "hybridized"
    acc = 0.0
    for epoch in range(args.epochs):
        t0, total, batches, first = time.perf_counter(), 0.0, 0, 0.0
        for x, y in train_loader:
            x, y = x.as_in_context(ctx), y.as_in_context(ctx)
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
            total += float(loss.mean().asscalar())
            batches += 1
            if batches == 1:   # the first step of a run compiles the programs
                first = time.perf_counter() - t0
        seconds = time.perf_counter() - t0
        rest = (seconds - first) / max(batches - 1, 1)
        acc = gluon_accuracy(net, test_loader, ctx)
        print(f"{kind} ({mode}) epoch {epoch}: loss {total / max(batches, 1):.4f}, {batches} batches in "
              f"{seconds:.1f} s (first {first:.1f} s, then {1000 * rest:.1f} ms/batch), "
              f"test accuracy {acc:.4f}", flush=True)
    return acc


def main() -> None:
    ap = example_parser(__doc__, epochs=2, batch_size=64)
    ap.add_argument("--net", choices=("mlp", "lenet", "both"), default="both")
    ap.add_argument("--imperative", action="store_true", help="do not hybridize: run each layer as a call")
    ap.add_argument("--lr", type=float, default=0.05, help="SGD learning rate")
    args = ap.parse_args()
    data = example_mnist(args)
    ctx = example_ctx(args)
    for kind in (("mlp", "lenet") if args.net == "both" else (args.net,)):
        t0 = time.perf_counter()
        acc = train(kind, data, args, ctx)
        print(f"{kind}: test accuracy {acc:.4f} after {args.epochs} epochs, {time.perf_counter() - t0:.1f} s "
              "in all")


if __name__ == "__main__":
    main()

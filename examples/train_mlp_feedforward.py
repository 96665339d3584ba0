"""MXNet's MNIST tutorial MLP (128-64-10, relu) trained with ``mx.model.FeedForward``.

    python examples/train_mlp_feedforward.py [--epochs 10] [--batches N] [--mnist DIR]

Logs Speedometer lines and per-epoch Train/Validation accuracy (``logging``), then prints
``test accuracy: <value>`` from ``predict`` and from ``score``.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402
from examples.common import example_ctx, example_mnist, example_parser  # noqa: E402
from examples.nets import mlp  # noqa: E402


def parse_args(doc: str) -> argparse.Namespace:
    """The command line shared by the two MLP training examples."""
    ap = example_parser(doc, epochs=10)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.0)
    return ap.parse_args()


def mnist_iters(args: argparse.Namespace) -> tuple:
    """Shuffled training and ordered test NDArrayIters over flattened [0, 1] images."""
    data = example_mnist(args)
    X, Y = data["train_data"].reshape(-1, 784), data["train_label"]
    Xt, Yt = data["test_data"].reshape(-1, 784), data["test_label"]
    train = mx.io.NDArrayIter(X, Y, args.batch_size, shuffle=True)
    test = mx.io.NDArrayIter(Xt, Yt, args.batch_size)
    return train, test, Xt, Yt


def initializer() -> mx.init.Initializer:
    """Xavier (fan-in, magnitude 2.34), as MXNet's image-classification MNIST example uses."""
    return mx.init.Xavier(factor_type="in", magnitude=2.34)


def monitor() -> mx.mon.Monitor:
    """Every 200 batches, log the norm of each weight (``fc1_weight``) and of its gradient
    (``fc1_backward_weight``)."""
    return mx.mon.Monitor(200, pattern=".*weight")


def main() -> None:
    args = parse_args(__doc__)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mx.random.seed(42)
    train, test, Xt, Yt = mnist_iters(args)
    model = mx.model.FeedForward(mlp(), ctx=example_ctx(args), num_epoch=args.epochs,
                                 epoch_size=args.batches or None, learning_rate=args.lr,
                                 momentum=args.momentum, initializer=initializer())
    t0 = time.perf_counter()
    model.fit(X=train, eval_data=test, monitor=monitor(),
              batch_end_callback=mx.callback.Speedometer(args.batch_size, 100))
    print(f"training took {time.perf_counter() - t0:.1f} s")
    prob = model.predict(test)
    print(f"test accuracy: {float((prob.argmax(1) == Yt).mean()):.4f}")
    print(f"score accuracy: {model.score(test):.4f}")


if __name__ == "__main__":
    main()

"""MXNet's MNIST tutorial MLP (128-64-10, relu) trained with ``mx.mod.Module.fit``.

    python examples/train_mlp_module.py [--epochs 10] [--batches N] [--mnist DIR]

Logs Speedometer lines and per-epoch Train/Validation accuracy (``logging``), then prints
``test accuracy: <value>`` from ``predict`` and the ``score`` result.
"""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402
from examples.common import example_ctx  # noqa: E402
from examples.nets import mlp  # noqa: E402
from examples.train_mlp_feedforward import initializer, mnist_iters, monitor, parse_args  # noqa: E402


def main() -> None:
    args = parse_args(__doc__)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mx.random.seed(42)
    train, test, Xt, Yt = mnist_iters(args)
    if args.batches:
        train = mx.io.ResizeIter(train, args.batches)
    mod = mx.mod.Module(mlp(), context=example_ctx(args))
    t0 = time.perf_counter()
    mod.fit(train, eval_data=test, num_epoch=args.epochs, monitor=monitor(),
            optimizer="sgd", optimizer_params={"learning_rate": args.lr, "momentum": args.momentum},
            initializer=initializer(),
            batch_end_callback=mx.callback.Speedometer(args.batch_size, 100))
    print(f"training took {time.perf_counter() - t0:.1f} s")
    prob = mod.predict(test).asnumpy()
    print(f"test accuracy: {float((prob.argmax(1) == Yt).mean()):.4f}")
    print(f"score: {mod.score(test, 'acc')}")


if __name__ == "__main__":
    main()

"""MXNet's custom training loop tutorial: the MLP bound with simple_bind, initialised with
``mx.init.Uniform``, updated by an ``mx.optimizer.SGD`` through ``get_updater``, and scored with
``mx.metric.Accuracy`` over ``mx.io.NDArrayIter`` batches.

    python examples/custom_loop.py [--epochs 10] [--batches N] [--mnist DIR]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402
from examples.common import example_ctx, example_mnist, example_parser  # noqa: E402
from examples.nets import mlp  # noqa: E402


def main() -> None:
    args = example_parser(__doc__, epochs=10).parse_args()
    data = example_mnist(args)
    batch = args.batch_size
    train = mx.io.NDArrayIter(data["train_data"].reshape(-1, 784), data["train_label"], batch, shuffle=True)
    net = mlp()
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    ex = net.simple_bind(example_ctx(args), data=(batch, 784), grad_req={n: "write" for n in params})
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

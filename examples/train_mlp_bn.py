"""MXNet's low-level tutorial: a BatchNorm+tanh MLP bound with simple_bind and trained with a
hand-written SGD loop over the executor, on MNIST.

    python examples/train_mlp_bn.py [--epochs 3] [--batches N] [--mnist DIR]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples.common import example_ctx, example_mnist, example_parser  # noqa: E402
from examples.nets import mlp_bn  # noqa: E402


def init_params(ex, rng: np.random.Generator) -> list[str]:
    """Uniform weights, gamma 1, beta/bias 0, moving mean 0 and var 1; returns the parameter names."""
    params = [n for n in ex.arg_dict if n not in ("data", "softmax_label")]
    for n in params:
        arr = ex.arg_dict[n]
        arr[:] = rng.uniform(-0.07, 0.07, arr.shape) if n.endswith("weight") else (
            1.0 if n.endswith("gamma") else 0.0)
    for n, arr in ex.aux_dict.items():
        arr[:] = 1.0 if n.endswith("var") else 0.0
    return params


def train_epoch(ex, params: list[str], X, Y, rng, lr: float, n_batches: int) -> float:
    """One epoch of plain SGD over shuffled batches; returns samples/s."""
    batch = ex.arg_dict["data"].shape[0]
    order = rng.permutation(len(X))
    t0 = time.perf_counter()
    for b in range(n_batches):
        idx = order[b * batch:(b + 1) * batch]
        ex.forward(is_train=True, data=X[idx], softmax_label=Y[idx])
        ex.backward()
        for n in params:
            ex.arg_dict[n][:] -= lr * ex.grad_dict[n]
    return n_batches * batch / (time.perf_counter() - t0)


def accuracy(ex, X, Y) -> float:
    """Inference-mode accuracy over whole batches of (X, Y)."""
    batch = ex.arg_dict["data"].shape[0]
    n = len(X) // batch
    correct = 0
    for b in range(n):
        out = ex.forward(is_train=False, data=X[b * batch:(b + 1) * batch])[0].asnumpy()
        correct += int((out.argmax(1) == Y[b * batch:(b + 1) * batch]).sum())
    return correct / (n * batch)


def main() -> None:
    args = example_parser(__doc__, epochs=3).parse_args()
    data = example_mnist(args)
    X, Y = data["train_data"].reshape(-1, 784), data["train_label"]
    Xv, Yv = data["test_data"].reshape(-1, 784), data["test_label"]
    t0 = time.perf_counter()
    ex = mlp_bn().simple_bind(example_ctx(args), data=(args.batch_size, 784))
    print(f"bind (compile) took {time.perf_counter() - t0:.2f} s")
    rng = np.random.default_rng(0)
    params = init_params(ex, rng)
    n_batches = args.batches or len(X) // args.batch_size
    for epoch in range(args.epochs):
        speed = train_epoch(ex, params, X, Y, rng, 0.1 / args.batch_size, n_batches)
        print(f"epoch {epoch}: validation accuracy {accuracy(ex, Xv, Yv):.4f}, {speed:,.0f} samples/s")


if __name__ == "__main__":
    main()

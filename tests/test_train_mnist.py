"""Issue acceptance: a 3-layer BatchNorm+tanh MLP trained with a hand SGD loop over the executor
on MNIST reaches >= 0.95 validation accuracy after 3 epochs (batch 100), as MXNet's tutorial."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import symjit as mx
from symjit.io import load_mnist

ROOT = Path(__file__).resolve().parents[1]
MNIST = ROOT.parent / "shared" / "data" / "mnist"
sys.path.insert(0, str(ROOT))

from examples.nets import mlp_bn  # noqa: E402
from examples.train_mlp_bn import accuracy, init_params, train_epoch  # noqa: E402


def test_bn_tanh_mlp_reaches_tutorial_accuracy():
    data = load_mnist(str(MNIST))
    X, Y = data["train_data"].reshape(-1, 784), data["train_label"]
    ex = mlp_bn().simple_bind(mx.cpu(), data=(100, 784))
    rng = np.random.default_rng(1)
    params = init_params(ex, rng)
    for _ in range(3):
        train_epoch(ex, params, X, Y, rng, lr=0.1 / 100, n_batches=len(X) // 100)
    acc = accuracy(ex, data["test_data"].reshape(-1, 784), data["test_label"])
    assert acc >= 0.95, f"validation accuracy {acc:.4f} after 3 epochs"

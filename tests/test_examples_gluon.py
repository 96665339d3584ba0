"""The Gluon examples run (on a few batches): MNIST with autograd, Trainer and DataLoader, and the
fine-tuning of a model-zoo net on a synthetic image folder."""
from __future__ import annotations

import re

from tests.test_examples import run


def test_gluon_mnist_short():
    out = run("examples/gluon_mnist.py", "--net", "mlp", "--epochs", "1", "--batches", "40")
    assert float(out.split("test accuracy ")[-1].split()[0]) > 0.7, out


def test_gluon_finetune_short(tmp_path):
    saved = tmp_path / "tuned.params"
    out = run("examples/gluon_finetune.py", "--model", "mobilenet0.25", "--epochs", "1", "--batches", "2",
              "--save", str(saved))
    assert re.search(r"classes \['disc', 'square', 'stripes'\]: 144 training, 48 validation", out), out
    assert "epoch 0: train accuracy" in out and saved.is_file(), out

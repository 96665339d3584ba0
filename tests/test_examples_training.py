"""The FeedForward and Module MNIST examples run on a few batches and learn something."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> str:
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("script", ["train_mlp_feedforward.py", "train_mlp_module.py"])
def test_training_example_short(script):
    out = run(f"examples/{script}", "--epochs", "1", "--batches", "150")
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", out).group(1))
    assert accuracy > 0.8, out[-2000:]
    assert "Epoch[0] Train-accuracy=" in out and "Epoch[0] Validation-accuracy=" in out
    assert "Speed:" in out and "Time cost=" in out

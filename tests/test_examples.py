"""The examples run (on a reduced number of batches)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> str:
    proc = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_symbol_basics():
    out = run("examples/symbol_basics.py")
    assert "compose_fc1_weight" in out and "JSON round trip keeps arguments: True" in out


def test_train_mlp_bn_short():
    out = run("examples/train_mlp_bn.py", "--epochs", "1", "--batches", "60")
    accuracy = float(out.split("validation accuracy ")[1].split(",")[0])
    assert accuracy > 0.8, out


def test_kvstore_walkthrough():
    out = run("examples/kvstore_walkthrough.py")
    assert "after pushing ones from 4 devices: [[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]]" in out
    assert "after push with the updater: [[6.0, 6.0, 6.0], [6.0, 6.0, 6.0]]" in out
    assert "list of keys: [3.0, 3.0, 3.0]" in out


def test_custom_loop_short():
    out = run("examples/custom_loop.py", "--epochs", "1", "--batches", "100")
    assert float(out.split("train accuracy ")[1].split(",")[0]) > 0.5, out


def test_lenet_short():
    out = run("examples/lenet.py", "--epochs", "1", "--batches", "40")
    assert float(out.split("test accuracy ")[1].split()[0]) > 0.7, out

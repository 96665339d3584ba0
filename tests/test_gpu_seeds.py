"""The seed programs (BN+tanh MLP, FeedForward MLP, the custom loop, LeNet with Module) train on
mx.gpu(0) under numba's CUDA simulator with the CPU's results (tests/gpu_seeds.py, in a process of
its own with the simulator enabled; a few tiny batches: the simulator interprets every thread)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from . import gpu_seeds

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.gpu


def test_seed_programs_on_gpu_match_the_cpu(tmp_path) -> None:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", SYMJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "tests.gpu_seeds"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    passed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert passed == [s.__name__ for s in gpu_seeds.SEEDS], proc.stdout

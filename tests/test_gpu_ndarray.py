"""NDArray operations on mx.gpu(0), on numba's CUDA simulator, against the CPU
(tests/gpu_ndarray_checks.py, run in a process of its own with the simulator enabled)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from . import gpu_ndarray_checks

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.gpu


def test_gpu_ndarray_operations_match_the_cpu(tmp_path) -> None:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", SYMJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "tests.gpu_ndarray_checks"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    passed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert passed == [c.__name__ for c in gpu_ndarray_checks.CHECKS], proc.stdout

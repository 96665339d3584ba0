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


# The two checks that compile most (every NDArray function on both devices) run with --exhaustive.
HEAVY = ("check_arithmetic_matches_cpu", "check_reductions_dot_clip_and_shape_functions_match_cpu")


@pytest.mark.parametrize("names", [
    pytest.param(HEAVY, marks=pytest.mark.exhaustive, id="arithmetic-reductions"),
    pytest.param(tuple(c.__name__ for c in gpu_ndarray_checks.CHECKS if c.__name__ not in HEAVY),
                 id="copies-streams-errors-float16")])
def test_gpu_ndarray_operations_match_the_cpu(tmp_path, names) -> None:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", SYMJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "tests.gpu_ndarray_checks", *names], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    passed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert passed == list(names), proc.stdout

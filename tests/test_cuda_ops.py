"""Every op case the CUDA target can lower runs forward on numba's CUDA simulator against the same
numpy reference as the CPU, and backward against the CPU executor's gradients where the whole
training program lowers (tests/cuda_cases.py); every op with a CUDA rule has such a case."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from symjit.lower import lookup
from symjit.ops import all_ops

from .cases import all_cases

ROOT = Path(__file__).resolve().parents[1]


def test_cuda_matches_numpy_and_the_cpu_on_the_simulator(tmp_path):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", SYMJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "tests.cuda_cases"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["failed"] == {}, report["failed"]
    # op variants without a CUDA lowering yet: a bounds check that stops the program, and
    # softmax over valid lengths
    assert sorted(report["unlowered"]) == ["log_softmax-length", "softmax-length", "take-raise-valid"], \
        report["unlowered"]
    ops = all_ops()
    with_rule = {name for name, op in ops.items() if lookup(op, "cuda") is not None}
    # an op with a CUDA rule and an inference case ran on CUDA in at least one case
    ran_ops = {cid.split("-")[0] for cid in report["ran"]}
    public = {c.op for c in all_cases() if not c.is_train}
    assert (with_rule & public) - ran_ops == set()
    # every gradient op with a CUDA rule ran in a training program checked against the CPU
    internal = {name for name in with_rule if "backward_of" in ops[name].extra}
    assert internal - set(report["exercised"]) == set()
    assert len(report["backward"]) >= 190, len(report["backward"])
    assert report["nets"] == ["lenet", "mlp"]   # a training step of each matched the CPU

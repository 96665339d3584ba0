"""The float32 oracle over the op cases (tests/cases): each case's float32 outputs and gradients
against its own float64 run on the same inputs (rounded to float32; integral inputs stay
integral), within the op's float32 error model (``symjit/ops/float32.py``; see
``tests/opcheck.py``, ``check_float32``).

Each family's first case runs fused and unfused on the CPU and fused on CUDA with ``--exhaustive``
(CI), fused on the CPU in the default tier (the cost of a float32 and a float64 program per case
keeps the other cases out for now: the op cases are most of CI's time)."""
from __future__ import annotations

import os

import pytest

from .opcheck import check_float32
from .test_op_exec import CASES, CONTEXTS, FIRST_OF_FAMILY


def _float32_variants() -> list:
    """(case, target, fusion) of the oracle: each family's first case fused and unfused on the CPU
    and fused on CUDA (``gpu``); all but the fused CPU program ``exhaustive``."""
    return [pytest.param(case, target, fusion,
                         marks=([pytest.mark.gpu] if target == "cuda" else [])
                         + ([] if (target, fusion) == ("cpu", True) else [pytest.mark.exhaustive]),
                         id=f"{case}-{target}-{'fused' if fusion else 'unfused'}-f32")
            for case in CASES if id(case) in FIRST_OF_FAMILY
            for target, fusion in (("cpu", True), ("cpu", False), ("cuda", True))]


@pytest.fixture(autouse=True)
def _kernels_called_from_the_host(monkeypatch):
    """As in test_op_exec: the programs' kernels called one by one unless the run says otherwise."""
    if "SYMJIT_PROGRAM_CALLS" not in os.environ:
        monkeypatch.setenv("SYMJIT_PROGRAM_CALLS", "0")


@pytest.mark.parametrize("case, target, fusion", _float32_variants())
def test_float32_like_float64(case, target, fusion):
    check_float32(case, fusion, CONTEXTS[target])


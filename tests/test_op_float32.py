"""The float32 oracle over the op cases (tests/cases): each case's float32 outputs and gradients
against its own float64 run on the same inputs (rounded to float32; integral inputs stay
integral), within the op's float32 error model (``symjit/ops/float32.py``; see
``tests/opcheck.py``, ``check_float32``).

Every case runs fused on the CPU; each family's first case also unfused and on CUDA. The tiers
are ``tests/test_op_exec.py``'s: the default tier runs each op's first case fused on the CPU and
each family's first case on every target, the rest is marked ``exhaustive``."""
from __future__ import annotations

import os

import pytest

from .opcheck import check_float32
from .test_op_exec import CASES, CONTEXTS, FIRST_OF_FAMILY, FIRST_OF_OP


def _in_default_tier(case, target: str, fusion: bool) -> bool:
    """test_op_exec's default tier: each family's first case anywhere, each op's first fused on
    the CPU."""
    return id(case) in FIRST_OF_FAMILY or (id(case) in FIRST_OF_OP and (target, fusion) == ("cpu", True))


def _float32_variants() -> list:
    """(case, target, fusion) of the oracle: fused CPU for every case, unfused CPU and CUDA for
    each family's first; ``exhaustive`` outside the default tier, ``gpu`` on CUDA."""
    runs = [(case, "cpu", True) for case in CASES]
    runs += [(case, target, fusion) for case in CASES if id(case) in FIRST_OF_FAMILY
             for target, fusion in (("cpu", False), ("cuda", True))]
    return [pytest.param(case, target, fusion,
                         marks=[m for m, on in ((pytest.mark.gpu, target == "cuda"),
                                                (pytest.mark.exhaustive,
                                                 not _in_default_tier(case, target, fusion))) if on],
                         id=f"{case}-{target}-{'fused' if fusion else 'unfused'}-f32")
            for case, target, fusion in runs]


@pytest.fixture(autouse=True)
def _kernels_called_from_the_host(monkeypatch):
    """As in test_op_exec: the programs' kernels called one by one unless the run says otherwise."""
    if "SYMJIT_PROGRAM_CALLS" not in os.environ:
        monkeypatch.setenv("SYMJIT_PROGRAM_CALLS", "0")


@pytest.mark.parametrize("case, target, fusion", _float32_variants())
def test_float32_like_float64(case, target, fusion):
    check_float32(case, fusion, CONTEXTS[target])


def test_float32_variants_cover_every_op_and_family():
    """Without ``--exhaustive``, each op's first case runs fused on the CPU, and each family's
    first case on every target."""
    default = [p.values for p in _float32_variants() if not any(m.name == "exhaustive" for m in p.marks)]
    assert {c.op for c, t, f in default if t == "cpu" and f} == {c.op for c in CASES}
    everywhere = {(t, f) for c, t, f in default if id(c) in FIRST_OF_FAMILY}
    assert everywhere == {("cpu", True), ("cpu", False), ("cuda", True)}

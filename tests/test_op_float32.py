"""The float32 oracle over the op cases (tests/cases): each case's float32 outputs and gradients
against its own float64 run on the same inputs (rounded to float32; integral inputs stay
integral), within the op's float32 error model (``symjit/ops/float32.py``; see
``tests/opcheck.py``, ``check_float32``).

The oracle runs inside the op-case tests of ``tests/test_op_exec.py`` (``float32_fusions``): the
test that already binds a case's float64 program (its training program, or its inference program
when the case has no gradient) runs it again on the rounded inputs, so each check adds only a
float32 program, whose kernels (shape-generic) the case's other checks and other cases share.
With ``--exhaustive`` (CI) each op's and each family's first case runs in float32 fused and
unfused on the CPU (both from the fused CPU test: the unfused test of an op's first case is
compiled again at -O3 by CI), and on
CUDA (numba's simulator in CI) in every variant the case runs there: fused for the cases of
``ON_CUDA`` (every case of an op with a CUDA lowering of its own, each other op's first case; the
rest share the target-neutral lowering the CPU runs, and CI compiles every case's CUDA kernels to
PTX), unfused too for each family's first case. The default tier runs each family's first case
so. This module checks that coverage, and that the oracle fails a result beyond its bound."""
from __future__ import annotations

import pytest

from symjit.ops.float32 import MODELS, Float32Error

from .opcheck import check_float32
from .test_op_exec import (
    BACKWARD_VARIANTS,
    CASES,
    CUDA_OWN,
    FIRST_OF_FAMILY,
    FIRST_OF_OP,
    FORWARD_VARIANTS,
    float32_fusions,
)


def _float32_runs(exhaustive: bool) -> dict[int, set]:
    """``{case id: {(target, fusion)}}`` of the float32 programs the op-case tests check: the
    forward tests of the cases without gradients, the backward tests of the others."""
    runs: dict[int, set] = {}
    for param in [p for p in FORWARD_VARIANTS if p.values[0].grad == "none"] + BACKWARD_VARIANTS:
        case, target, fusion = param.values
        if not exhaustive and any(m.name == "exhaustive" for m in param.marks):
            continue
        runs.setdefault(id(case), set()).update(
            (target, f) for f in float32_fusions(case, target, fusion, exhaustive))
    return runs


@pytest.mark.parametrize("exhaustive", [True, False], ids=["exhaustive", "default"])
def test_every_case_runs_through_the_float32_oracle(exhaustive):
    """Each op's and each family's first case (each family's first in the default tier) fused
    and unfused on the CPU; on CUDA, every variant the tier runs there of the cases of ops with a
    CUDA lowering of their own and of each family's first case."""
    runs = _float32_runs(exhaustive)
    on_cuda = {id(p.values[0]): set() for p in FORWARD_VARIANTS + BACKWARD_VARIANTS}
    for p in FORWARD_VARIANTS + BACKWARD_VARIANTS:
        if p.values[1] == "cuda" and (exhaustive or not any(m.name == "exhaustive" for m in p.marks)):
            on_cuda[id(p.values[0])].add(("cuda", p.values[2]))
    for case in CASES:
        if not (exhaustive or id(case) in FIRST_OF_FAMILY):
            assert not runs.get(id(case)), str(case)
            continue
        want = {("cpu", True), ("cpu", False)} if id(case) in FIRST_OF_OP | FIRST_OF_FAMILY else set()
        if id(case) in CUDA_OWN | FIRST_OF_FAMILY:
            want |= on_cuda[id(case)]
        assert runs.get(id(case), set()) == want, str(case)


def test_the_oracle_fails_a_float32_result_beyond_its_bound(monkeypatch):
    """With no rounding allowed (0 ulps), the float32 ``exp`` differs from the float64 one and the
    oracle says by how much."""
    monkeypatch.setitem(MODELS, "exp", Float32Error(0.0))
    case = next(c for c in CASES if c.op == "exp")
    with pytest.raises(AssertionError, match="differs from float64 by .* float32 epsilons"):
        check_float32(case)

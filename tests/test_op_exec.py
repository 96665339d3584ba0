"""Every case of every op family, through compiled kernels: forward vs numpy, backward vs
central finite differences in float64 (see tests/opcheck.py)."""
from __future__ import annotations

import pytest

from .cases import all_cases
from .opcheck import check_backward, check_forward

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad != "none"], ids=str)
def test_backward(case):
    check_backward(case)

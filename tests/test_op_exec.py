"""Every case of every op family, through compiled kernels on every target (the CPU, and CUDA on
numba's simulator or a GPU), fused and unfused: the forward against its numpy reference; the
gradients of the fused CPU program against central finite differences in float64, and every other
(target, fusion) program's gradients against those (see tests/opcheck.py)."""
from __future__ import annotations

import pytest

import symjit as mx
from symjit.base import MXNetError

from .cases import all_cases
from .opcheck import check_backward, check_backward_like_cpu, check_forward

CASES = all_cases()
CONTEXTS = {"cpu": mx.cpu(), "cuda": mx.gpu(0)}
TARGETS = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
# op variants the CUDA target does not lower yet (a bounds check that stops the program, softmax
# over valid lengths): binding them on a GPU is a clear error naming the op
CUDA_UNLOWERED = {"take-raise-valid", "softmax-length", "log_softmax-length"}


def _unlowered(case, target: str) -> bool:
    return target == "cuda" and str(case) in CUDA_UNLOWERED


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_forward(case, target, fusion):
    if _unlowered(case, target):
        with pytest.raises(MXNetError, match="no cuda lowering"):
            check_forward(case, fusion, CONTEXTS[target])
        return
    check_forward(case, fusion, CONTEXTS[target])


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", [c for c in CASES if c.grad != "none"], ids=str)
def test_backward(case, target, fusion):
    if _unlowered(case, target):
        with pytest.raises(MXNetError, match="no cuda lowering"):
            check_backward_like_cpu(case, fusion, CONTEXTS[target])
    elif target == "cpu" and fusion:
        check_backward(case)
    else:
        check_backward_like_cpu(case, fusion, CONTEXTS[target])


def test_every_unlowered_cuda_variant_is_a_case():
    assert CUDA_UNLOWERED <= {str(c) for c in CASES}

"""The doctests of ``symjit.kernels`` (the ``kernels/`` directory, which the root conftest.py keeps
pytest from importing a second time under another module name), run on the modules as symjit
imports them."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import symjit.kernels

MODULES = sorted(m.name for m in pkgutil.walk_packages(symjit.kernels.__path__, "symjit.kernels."))


def test_every_kernel_module_is_listed():
    assert HEAVY <= set(MODULES)
    assert {"symjit.kernels.cpu.conv", "symjit.kernels.cpu.conv_direct", "symjit.kernels.optim_steps",
            "symjit.kernels.cuda.optim"} <= set(MODULES)


# Modules whose doctests compile threaded kernels that their own test files compile too: with
# --exhaustive only (two test processes compiling the same kernels at once would double the cost).
HEAVY = {"symjit.kernels.cpu.conv_small", "symjit.kernels.cpu.conv_vec", "symjit.kernels.cpu.conv_pointwise",
         "symjit.kernels.cpu.conv_winograd"}


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.exhaustive) if m in HEAVY else m
                                  for m in MODULES])
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False, report=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} doctest examples failed"

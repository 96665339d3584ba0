"""Case tables per op family; ALL_CASES collects them (see tests/opcheck.py)."""
from __future__ import annotations

import importlib
import pkgutil

from ..opcheck import Case


def all_cases() -> list[Case]:
    cases: list[Case] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        cases += list(getattr(module, "CASES", []))
    return cases

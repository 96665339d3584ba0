"""Case tables per op family; ALL_CASES collects them (see tests/opcheck.py)."""
from __future__ import annotations

import importlib
import pkgutil

from ..opcheck import Case


def cases_by_family() -> dict[str, list[Case]]:
    """The case tables by family (the module that holds them), in name order."""
    out: dict[str, list[Case]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        out[info.name] = list(getattr(module, "CASES", []))
    return out


def all_cases() -> list[Case]:
    return [case for cases in cases_by_family().values() for case in cases]


"""Imports every op family module of this package so that their records register: every module
found in the package, in name order (composite ops import the families they expand to
themselves), none listed by hand; a new family is a new module here. Left out: the registry
itself, the lowering routines (``*_kernels``, loaded with their rules) and :data:`NOT_FAMILIES`."""
from __future__ import annotations

import sys

from ..discovery import import_submodules

NOT_FAMILIES = ("registry", "float32")
"""Modules of the package that register no operator and are not needed to use the registry (the
float32 error model is used by the tests)."""

FAMILIES = import_submodules(__package__, sys.modules[__package__].__path__, NOT_FAMILIES, ("_kernels",))
"""The modules imported, in order."""

"""Custom ops (records in :mod:`symjit.ops.custom`) run their Python code as host calls between
the compiled segments of a CPU program (``OpDef.extra['host']`` builds the call)."""
from __future__ import annotations

from ..rules import rule

rule("Custom", "cpu", host=True)
rule("_backward_Custom", "cpu", host=True)

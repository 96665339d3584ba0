"""The operator registry and its families (one module per family)."""
from . import _families  # noqa: F401  (every family module found in the package registers its ops)
from .registry import REQUIRED, Kind, OpDef, Param, RuleError, all_ops, find_op, get_op, register

__all__ = ["Kind", "OpDef", "Param", "REQUIRED", "RuleError", "register", "get_op", "find_op", "all_ops"]

"""The lowering layer: rules keyed by (op, target), the targets, and the source writers.

``rules.py`` holds the rule table (:func:`lookup`), ``target.py`` the :class:`Target` interface,
``writer.py``/``emit.py`` the source writers and helpers every lowering shares; ``cpu/`` and
``cuda/`` hold each target's :class:`Target` and its rules by op family, ``neutral.py`` the facts
that hold on every target. The compiler (:mod:`symjit.compiler`) reads only this interface.
"""
from __future__ import annotations

from ..discovery import import_submodules
from .rules import LOOP, Rule, lookup, rule, rules_of
from .target import LOADERS, Target, all_targets, as_target, get_target, register_target, target_names

__all__ = ["Rule", "rule", "lookup", "rules_of", "LOOP", "Target", "get_target", "register_target",
           "target_names", "all_targets", "as_target"]


def _load_rules() -> None:
    """Import every module of this package (none listed by hand): the target packages and the
    rule modules register their targets and rules."""
    import_submodules(__name__, __path__)


LOADERS.append(_load_rules)

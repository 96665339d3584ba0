"""Target-neutral rules: facts about an op that hold on every target.

broadcast_like's ``rhs`` only lends its shape: the loop generator never loads it (with
``lhs_axes``/``rhs_axes`` it need not even have the output's rank or sizes).
"""
from __future__ import annotations

from .rules import ANY, rule

rule("broadcast_like", ANY, shape_only=(1,))

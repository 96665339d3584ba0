"""Target-neutral rules: facts about an op that hold on every target.

broadcast_like's ``rhs`` only lends its shape: the loop generator never loads it (with
``lhs_axes``/``rhs_axes`` it need not even have the output's rank or sizes). Custom ops are host
calls on every target.
"""
from __future__ import annotations

from .rules import ANY, rule

rule("broadcast_like", ANY, shape_only=(1,))
# Custom ops run their Python code as host calls between the compiled segments of a program
# (``OpDef.extra['host']`` builds the call), on every target that can stop for host calls
rule("Custom", ANY, host=True)
rule("_backward_Custom", ANY, host=True)
# a symbolic while loop runs its condition and step programs from the host, step by step
rule("_while_loop", ANY, host=True)
rule("_backward_while_loop", ANY, host=True)

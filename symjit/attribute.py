"""``mx.attribute``: where MXNet 1.x keeps :class:`AttrScope` (the same class as ``mx.AttrScope``).

>>> import symjit as mx
>>> with mx.attribute.AttrScope(ctx_group='dev1'):
...     x = mx.sym.Variable('x')
>>> x.attr('ctx_group')
'dev1'
"""
from __future__ import annotations

from .symbol.naming import AttrScope

__all__ = ["AttrScope"]

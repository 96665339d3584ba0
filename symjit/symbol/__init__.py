"""``mx.sym`` / ``mx.symbol``: Variable, Group, load/load_json and one constructor per registered op."""
from __future__ import annotations

import types as _types

from .json_io import load, load_json
from .register import constructors as _constructors
from .symbol import Group, Symbol, Variable, var

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json"]

_internal = _types.ModuleType(__name__ + "._internal", "Operators whose names start with an underscore.")

for _name, _fn in _constructors().items():
    setattr(_internal, _name, _fn)
    if not _name.startswith("_"):
        globals()[_name] = _fn
        __all__.append(_name)
    else:
        globals()[_name] = _fn
del _name, _fn

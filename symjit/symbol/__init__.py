"""``mx.sym`` / ``mx.symbol``: Variable, Group, load/load_json, one constructor per registered op,
and the functions of :mod:`symjit.symbol.functions` (``zeros``, ``arange``, ``maximum``, ...)."""
from __future__ import annotations

import types as _types

from .register import constructors as _constructors
from .symbol import Group, Symbol, Variable, load, load_json, var

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

# Sub-namespaces, as MXNet generates them from operator names: mx.sym.contrib.<name> is the
# operator _contrib_<name>.
import sys as _sys  # noqa: E402

SUBSPACES = {"contrib": "_contrib_", "linalg": "_linalg_", "image": "_image_"}
for _space, _prefix in SUBSPACES.items():
    _module = _types.ModuleType(f"{__name__}.{_space}", f"mx.sym.{_space}: the operators {_prefix}<name>.")
    for _name, _fn in _constructors().items():
        if _name.startswith(_prefix):
            setattr(_module, _name[len(_prefix):], _fn)
    globals()[_space] = _sys.modules[_module.__name__] = _module
    __all__.append(_space)
del _space, _prefix, _module

from .. import contrib_functions as _cfun  # noqa: E402
from ..contrib_functions import adamw_for as _adamw  # noqa: E402
from ..contrib_functions import rand_zipfian_for as _zipf  # noqa: E402
from ..contrib_functions import uniform_for as _uniform  # noqa: E402
from . import functions as _functions  # noqa: E402  (after the constructors: it uses them)
from . import random  # noqa: E402,F401  (mx.sym.random)


def _sym_call(op: str, *inputs, out=None, name=None, **params):
    from .symbol import make_op_symbol
    return make_op_symbol(op, *inputs, name=name, **params)


contrib.rand_zipfian = _zipf(_sys.modules[__name__], random)  # noqa: F821  (contrib is built above)
contrib.uniform = _uniform(random)  # noqa: F821
from . import control_flow as _cf  # noqa: E402
from . import while_loop as _wl  # noqa: E402

contrib.foreach, contrib.while_loop, contrib.cond = _cf.foreach, _wl.while_loop, _cf.cond  # noqa: F821
contrib.boolean_mask = _cfun.boolean_mask_for(_sys.modules[__name__], True)  # noqa: F821
contrib.backward_index_copy = _cfun.backward_index_copy_for(_sys.modules[__name__])  # noqa: F821
contrib.backward_hawkesll = _cfun.backward_hawkesll_for(_sys.modules[__name__], _sym_call)  # noqa: F821
for _mp in (False, True):
    setattr(contrib, f"{'mp_' if _mp else ''}adamw_update",  # noqa: F821
            _adamw(_sys.modules[__name__], _sym_call, _mp))

for _name in _functions.__all__:
    globals()[_name] = getattr(_functions, _name)
    __all__.append(_name)
del _name

"""``mx.sym.random``: symbols drawing from the registered samplers (:mod:`symjit.ops.random_ops`),
with MXNet's signatures. Distribution parameters given as Symbols draw one distribution per
element (MXNet's ``_sample_*`` ops, :mod:`symjit.ops.sample_ops`).

>>> import symjit as mx
>>> mx.sym.random.uniform(-1, 1, shape=(2, 3)).infer_shape()[1]
[(2, 3)]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import DTypeError, MXNetError
from .symbol import Symbol, make_op_symbol

__all__ = ["randn", "multinomial", "shuffle", "distribution_functions"]


def _is_number(v: Any) -> bool:
    import numpy as np
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _draw(op: Any, params: dict, shape: Any, dtype: Any, kwargs: dict, where: str) -> Symbol:
    """``op``'s node with number parameters, ``_sample_<dist>``'s with Symbol parameters (the op's)."""
    from ..ops.registry import find_op
    for k, v in params.items():
        if not (_is_number(v) or isinstance(v, Symbol)):
            raise DTypeError(f"{where}: parameter '{k}' must be a number or a Symbol, got {type(v).__name__}")
    extra = {} if dtype is None else {"dtype": dtype}
    shape = () if shape is None else shape
    symbols = [k for k, v in params.items() if isinstance(v, Symbol)]
    if not symbols:
        return make_op_symbol(op.name, shape=shape, **params, **extra, **kwargs)
    sample = find_op(f"_sample_{op.extra['dist']}")     # one distribution per element
    if sample is None:
        raise MXNetError(f"{where}: the parameters must be numbers (there is no per-element sampler of "
                         f"{op.extra['dist']}), got Symbols {symbols}")
    numbers = [k for k in params if k not in symbols]
    if numbers:
        raise MXNetError(f"{where}: with Symbol parameters (one distribution per element) every "
                         f"parameter must be a Symbol; {numbers} are not")
    return make_op_symbol(sample.name, *params.values(), shape=shape, **extra, **kwargs)


def _make(name: str, op: Any) -> Callable[..., Symbol]:
    """``mx.sym.random.<name>`` of sampler record ``op``: MXNet's signature (the front end's
    parameters, then shape and dtype; ``data`` first for ``*_like``), ``**kwargs`` (name, attr)
    to the node."""
    from ..ops.random_ops import example_arguments, front_arguments, front_signature, op_params
    like = name.endswith("_like")
    where = f"random.{name}"
    sig = front_signature(op, () if like else ("shape", "dtype"))

    def fn(*args: Any, **kwargs: Any) -> Symbol:
        a = front_arguments(sig, args, kwargs, where)
        rest = a.pop("kwargs")
        if like:
            data = a.pop("data")
            return make_op_symbol(op.name, data, **a, **rest)
        shape, dtype = a.pop("shape"), a.pop("dtype")
        return _draw(op, op_params(op, a, where), shape, dtype, rest, where)

    fn.__name__ = fn.__qualname__ = name
    fn.__signature__ = sig   # type: ignore[attr-defined]
    per = "" if like else " (Symbol parameters: one distribution per element, ``_sample_*``)"
    call = (f">>> mx.sym.random.{name}(mx.sym.Variable('x')).infer_shape(x=(2, 3))[1]\n[(2, 3)]" if like else
            f">>> mx.sym.random.{name}({example_arguments(sig)}shape=(2,)).infer_shape()[1]\n[(2,)]")
    fn.__doc__ = f"{op.doc.strip()} A node of ``{op.name}``{per}.\n\n>>> import symjit as mx\n{call}\n"
    return fn


def distribution_functions() -> dict[str, Callable[..., Symbol]]:
    """``mx.sym.random``'s distribution functions, one per sampler record.

    >>> import symjit as mx
    >>> fns = distribution_functions()
    >>> fns['gamma'](2.0, shape=(4,)).infer_shape()[1]
    [(4,)]
    """
    from ..ops.random_ops import distributions
    return {name: _make(name, op) for name, op in distributions().items()}


def randn(*shape: int, loc: Any = 0.0, scale: Any = 1.0, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Normal samples of the given shape (positional dimensions).

    >>> import symjit as mx
    >>> mx.sym.random.randn(2, 3).infer_shape()[1]
    [(2, 3)]
    """
    return normal(loc, scale, shape or None, dtype, **kwargs)  # noqa: F821 (made below)


def multinomial(data: Symbol, shape: Any = None, get_prob: bool = False, dtype: Any = "int32",
                **kwargs: Any) -> Symbol:
    """Category indices drawn from the probabilities on ``data``'s last axis (``_sample_multinomial``)."""
    return make_op_symbol("_sample_multinomial", data, shape=() if shape is None else shape,
                          get_prob=get_prob, dtype=dtype, **kwargs)


def shuffle(data: Symbol, **kwargs: Any) -> Symbol:
    """``data`` with its rows (first axis) in a random order (``_shuffle``)."""
    return make_op_symbol("_shuffle", data, **kwargs)


_FUNCTIONS = distribution_functions()
globals().update(_FUNCTIONS)
__all__ += sorted(_FUNCTIONS)

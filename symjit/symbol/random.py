"""``mx.sym.random``: symbols drawing from the registered samplers (:mod:`symjit.ops.random_ops`),
with MXNet's signatures. Distribution parameters given as Symbols draw one distribution per
element (MXNet's ``_sample_*`` ops, :mod:`symjit.ops.sample_ops`).

>>> import symjit as mx
>>> mx.sym.random.uniform(-1, 1, shape=(2, 3)).infer_shape()[1]
[(2, 3)]
"""
from __future__ import annotations

from typing import Any

from ..base import MXNetError
from .symbol import Symbol, make_op_symbol

__all__ = ["uniform", "normal", "randn", "exponential", "gamma", "poisson", "negative_binomial",
           "generalized_negative_binomial", "randint", "uniform_like", "normal_like", "exponential_like",
           "gamma_like", "poisson_like", "negative_binomial_like", "generalized_negative_binomial_like"]


def _draw(dist: str, params: dict, shape: Any, dtype: Any, kwargs: dict) -> Symbol:
    symbols = [k for k, v in params.items() if isinstance(v, Symbol)]
    extra = {} if dtype is None else {"dtype": dtype}
    shape = () if shape is None else shape
    if symbols:            # one distribution per element: MXNet's _sample_<dist>
        numbers = [k for k in params if k not in symbols]
        if numbers or dist == "randint":
            raise MXNetError(f"random.{dist}: with Symbol parameters (one distribution per element) every "
                             f"parameter must be a Symbol; {numbers or list(params)} are not")
        return make_op_symbol(f"_sample_{dist}", *params.values(), shape=shape, **extra, **kwargs)
    return make_op_symbol(f"_random_{dist}", shape=shape, **params, **extra, **kwargs)


def uniform(low: Any = 0.0, high: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Samples from the uniform distribution on [low, high)."""
    return _draw("uniform", {"low": low, "high": high}, shape, dtype, kwargs)


def normal(loc: Any = 0.0, scale: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Samples from the normal distribution with mean ``loc`` and standard deviation ``scale``."""
    return _draw("normal", {"loc": loc, "scale": scale}, shape, dtype, kwargs)


def randn(*shape: int, loc: Any = 0.0, scale: Any = 1.0, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Normal samples of the given shape (positional dimensions)."""
    return normal(loc, scale, shape or None, dtype, **kwargs)


def exponential(scale: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Samples from the exponential distribution with mean ``scale`` (rate 1 / scale)."""
    lam = 1.0 / scale
    return _draw("exponential", {"lam": lam}, shape, dtype, kwargs)


def gamma(alpha: Any = 1.0, beta: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta``."""
    return _draw("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, kwargs)


def poisson(lam: Any = 1.0, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Samples from the Poisson distribution with mean ``lam``."""
    return _draw("poisson", {"lam": lam}, shape, dtype, kwargs)


def negative_binomial(k: Any = 1, p: Any = 1.0, shape: Any = None, dtype: Any = None,
                      **kwargs: Any) -> Symbol:
    """Failures before the k-th success, each trial succeeding with probability p."""
    return _draw("negative_binomial", {"k": k, "p": p}, shape, dtype, kwargs)


def generalized_negative_binomial(mu: Any = 1.0, alpha: Any = 1.0, shape: Any = None, dtype: Any = None,
                                  **kwargs: Any) -> Symbol:
    """Samples with mean mu and variance mu + alpha * mu**2."""
    return _draw("generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape, dtype, kwargs)


def randint(low: int, high: int, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Symbol:
    """Uniform integers in [low, high) (int32 by default)."""
    return _draw("randint", {"low": low, "high": high}, shape, dtype, kwargs)


def _like(dist: str, names: tuple[str, ...]):
    def fn(data: Symbol, *args: Any, **kwargs: Any) -> Symbol:
        params = dict(zip(names, args))
        params.update({k: kwargs.pop(k) for k in names if k in kwargs})
        return make_op_symbol(f"_random_{dist}_like", data, **params, **kwargs)
    fn.__name__ = fn.__qualname__ = f"{dist}_like"
    fn.__doc__ = f"Samples from the {dist} distribution shaped like ``data``."
    return fn


uniform_like = _like("uniform", ("low", "high"))
normal_like = _like("normal", ("loc", "scale"))
exponential_like = _like("exponential", ("lam",))
gamma_like = _like("gamma", ("alpha", "beta"))
poisson_like = _like("poisson", ("lam",))
negative_binomial_like = _like("negative_binomial", ("k", "p"))
generalized_negative_binomial_like = _like("generalized_negative_binomial", ("mu", "alpha"))


def multinomial(data: Symbol, shape: Any = None, get_prob: bool = False, dtype: Any = "int32",
                **kwargs: Any) -> Symbol:
    """Category indices drawn from the probabilities on ``data``'s last axis (``_sample_multinomial``)."""
    return make_op_symbol("_sample_multinomial", data, shape=() if shape is None else shape,
                          get_prob=get_prob, dtype=dtype, **kwargs)


def shuffle(data: Symbol, **kwargs: Any) -> Symbol:
    """``data`` with its rows (first axis) in a random order (``_shuffle``)."""
    return make_op_symbol("_shuffle", data, **kwargs)


__all__ += ["multinomial", "shuffle"]

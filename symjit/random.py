"""``mx.random`` (also ``mx.nd.random``): random arrays from one module-level numpy Generator.

``seed(s)`` reseeds that generator, so a seeded program draws the same numbers every run (but not
the numbers MXNet would draw: its generators differ). Distribution parameters may be numbers or
NDArrays; with NDArrays, each element gives one distribution and ``shape`` samples are drawn
from each (result shape ``param.shape + shape``), as MXNet 1.x does.

>>> import symjit as mx
>>> mx.random.seed(42)
>>> a = mx.random.uniform(-1, 1, shape=(2, 3))
>>> mx.random.seed(42)
>>> bool((mx.random.uniform(-1, 1, shape=(2, 3)) == a).asnumpy().all())
True
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import DTypeError, MXNetError, ParamError, np_dtype, shape_str
from .ndarray.creation import norm_shape, place
from .ndarray.ndarray import NDArray

__all__ = ["seed", "uniform", "normal", "randn", "randint", "shuffle", "multinomial", "exponential",
           "poisson",
           "next_seed"]

_rng = np.random.default_rng()


def seed(seed_state: int, ctx: Any = "all") -> None:
    """Reseed the generator behind every ``mx.random`` function and numba's generator used by
    compiled kernels (Dropout masks) on this thread (``ctx`` is accepted and ignored). Any int is a
    seed, negative ones too (as MXNet's C int seeds are); each seeds its own sequence.

    >>> import symjit as mx
    >>> mx.random.seed(1)
    >>> mx.random.seed(-7)
    """
    global _rng
    if isinstance(seed_state, bool) or not isinstance(seed_state, (int, np.integer)):
        raise ParamError(f"random.seed: seed_state must be an int, got {type(seed_state).__name__}")
    _rng = np.random.default_rng(int(seed_state) % 2 ** 64)   # numpy takes non-negative seeds
    from symjit.kernels.cpu.random import seed as seed_kernels  # Dropout masks in compiled code
    seed_kernels(int(seed_state) % 2 ** 32)


def next_seed() -> int:
    """A fresh 32-bit seed from the ``mx.random`` generator: GPU programs pass one to each Dropout
    kernel launch (its mask is a hash of the seed and the element index), so ``mx.random.seed``
    makes their masks reproducible.

    >>> seed(3); a = next_seed(); seed(3); a == next_seed()
    True
    """
    return int(_rng.integers(0, 2 ** 32))


def _param(x: Any, where: str, arg: str) -> tuple[np.ndarray, NDArray | None]:
    if isinstance(x, NDArray):
        return x._host().astype(np.float64), x
    if isinstance(x, (int, float, np.number)) and not isinstance(x, bool):
        return np.asarray(float(x)), None
    raise DTypeError(f"{where}: parameter '{arg}' must be a number or an NDArray, got {type(x).__name__}")


def _sample_draw(dist: str, params: dict[str, Any], shape: Any, dtype: Any, out: NDArray | None,
                 where: str) -> NDArray:
    """One distribution per element: the registered ``_sample_<dist>`` (compiled, on the
    parameters' device), given every parameter as an NDArray of one shape."""
    from .ndarray import dispatch
    given = [k for k, v in params.items() if not isinstance(v, NDArray)]
    if given:
        raise MXNetError(f"{where}: with NDArray parameters (one distribution per element) every "
                         f"parameter must be an NDArray; {given} are not")
    full: dict[str, Any] = {"shape": () if shape is None else norm_shape(shape, where)}
    if dtype is not None:
        full["dtype"] = np_dtype(dtype).name
    return dispatch.invoke(f"_sample_{dist}", list(params.values()), full,
                           [out] if out is not None else None, where)[0]


def _has_arrays(params: dict[str, Any]) -> bool:
    return any(isinstance(v, NDArray) for v in params.values())


def _draw(where: str, sampler: Any, params: dict[str, Any], shape: Any, dtype: Any, ctx: Any,
          out: NDArray | None, default_dtype: str = "float32") -> NDArray:
    if _has_arrays(params) and where != "random.randint":
        dist = where.split(".")[1]
        if dist == "exponential":          # MXNet's sampler takes the rate
            scale = params["scale"]
            params = {"lam": 1.0 / scale if isinstance(scale, NDArray) else scale}
        return _sample_draw(dist, params, shape, dtype, out, where)
    values = {k: _param(v, where, k) for k, v in params.items()}
    arrays = [nd for _, nd in values.values() if nd is not None]
    base = arrays[0].shape if arrays else ()
    for nd in arrays:
        if nd.shape != base:
            raise MXNetError(f"{where}: parameter arrays have different shapes {shape_str(base)} and "
                             f"{shape_str(nd.shape)}")
    if shape is None or shape == ():
        extra = () if arrays or out is not None else (1,)
    else:
        extra = norm_shape(shape, where)
    if out is not None and not arrays and shape is None:
        extra = out.shape
    full = tuple(base) + tuple(extra)
    if dtype is None:
        dtype = arrays[0].dtype if arrays else (out.dtype if out is not None else default_dtype)
    dt = np_dtype(dtype)
    args = {k: v.reshape(v.shape + (1,) * len(extra)) for k, (v, _) in values.items()}
    res = np.asarray(sampler(size=full or (1,), **args)).reshape(full or (1,))
    if ctx is None and arrays:
        ctx = arrays[0].context
    return place(res.astype(dt), ctx, where, out)


def uniform(low: Any = 0.0, high: Any = 1.0, shape: Any = None, dtype: Any = None, ctx: Any = None,
            out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """Samples from the uniform distribution on ``[low, high)``.

    >>> import symjit as mx
    >>> mx.random.uniform(shape=(2, 2)).shape
    (2, 2)
    """
    return _draw("random.uniform", lambda size, low, high: _rng.uniform(low, high, size),
                 {"low": low, "high": high}, shape, dtype, ctx, out)


def normal(loc: Any = 0.0, scale: Any = 1.0, shape: Any = None, dtype: Any = None, ctx: Any = None,
           out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """Samples from the normal distribution with mean ``loc`` and standard deviation ``scale``.

    >>> import symjit as mx
    >>> mx.random.normal(0, 1, shape=5).shape
    (5,)
    """
    if not isinstance(scale, NDArray) and float(scale) < 0:
        raise ParamError(f"random.normal: scale must be >= 0, got {scale}")
    return _draw("random.normal", lambda size, loc, scale: _rng.normal(loc, scale, size),
                 {"loc": loc, "scale": scale}, shape, dtype, ctx, out)


def randn(*shape: int, loc: float = 0.0, scale: float = 1.0, dtype: Any = None, ctx: Any = None,
          out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """Normal samples with the shape given positionally: ``randn(2, 3)``.

    >>> import symjit as mx
    >>> mx.random.randn(2, 3).shape
    (2, 3)
    """
    return normal(loc, scale, shape or None, dtype, ctx, out)


def exponential(scale: Any = 1.0, shape: Any = None, dtype: Any = None, ctx: Any = None,
                out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """Samples from the exponential distribution with mean ``scale``.

    >>> import symjit as mx
    >>> bool((mx.random.exponential(shape=(4,)) >= 0).asnumpy().all())
    True
    """
    return _draw("random.exponential", lambda size, scale: _rng.exponential(scale, size),
                 {"scale": scale}, shape, dtype, ctx, out)


def poisson(lam: Any = 1.0, shape: Any = None, dtype: Any = None, ctx: Any = None,
            out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """Samples from the Poisson distribution with rate ``lam`` (as floats unless ``dtype`` says).

    >>> import symjit as mx
    >>> mx.random.poisson(2.0, shape=(3,)).shape
    (3,)
    """
    return _draw("random.poisson", lambda size, lam: _rng.poisson(lam, size),
                 {"lam": lam}, shape, dtype, ctx, out)


def randint(low: int, high: int, shape: Any = None, dtype: Any = None, ctx: Any = None,
            out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """Integers drawn uniformly from ``[low, high)`` (dtype int32 by default).

    >>> import symjit as mx
    >>> mx.random.randint(0, 3, shape=(4,)).dtype
    <class 'numpy.int32'>
    """
    for arg, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ParamError(f"random.randint: '{arg}' must be an int, got {v!r}")
    if int(low) >= int(high):
        raise ParamError(f"random.randint: need low < high, got low={low}, high={high}")
    def sampler(size: tuple, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        return _rng.integers(low.astype(np.int64), high.astype(np.int64), size)
    return _draw("random.randint", sampler,
                 {"low": int(low), "high": int(high)}, shape, dtype, ctx, out, "int32")


def shuffle(data: NDArray, **kwargs: Any) -> NDArray:
    """A copy of ``data`` with its rows (first axis) in random order.

    >>> import symjit as mx
    >>> sorted(mx.random.shuffle(mx.nd.arange(4)).asnumpy().tolist())
    [0.0, 1.0, 2.0, 3.0]
    """
    from .ndarray import dispatch
    if not isinstance(data, NDArray):
        raise DTypeError(f"random.shuffle: data must be an NDArray, got {type(data).__name__}")
    out = kwargs.get("out")
    return dispatch.invoke("_shuffle", [data], {}, [out] if out is not None else None, "random.shuffle")[0]


def multinomial(data: NDArray, shape: Any = None, get_prob: bool = False, out: NDArray | None = None,
                dtype: Any = "int32", **kwargs: Any) -> Any:
    """Category indices drawn from the probabilities on ``data``'s last axis (``shape`` draws per
    distribution); with ``get_prob`` also their log-probabilities (the registered
    ``_sample_multinomial``).

    >>> import symjit as mx
    >>> mx.random.multinomial(mx.nd.array([[0.0, 1.0], [1.0, 0.0]]), shape=(3,)).asnumpy().tolist()
    [[1, 1, 1], [0, 0, 0]]
    """
    from .ndarray import dispatch
    if not isinstance(data, NDArray):
        raise DTypeError(f"random.multinomial: data must be an NDArray, got {type(data).__name__}")
    params = {"shape": () if shape is None else norm_shape(shape, "random.multinomial"),
              "get_prob": bool(get_prob), "dtype": np_dtype(dtype).name}
    outs = dispatch.invoke("_sample_multinomial", [data], params, None if out is None else
                           (list(out) if isinstance(out, (list, tuple)) else [out]), "random.multinomial")
    return outs if get_prob else outs[0]


def _registry_draw(dist: str, params: dict[str, Any], shape: Any, dtype: Any, ctx: Any, out: NDArray | None,
                   where: str) -> NDArray:
    """A draw by the registered sampler ``_random_<dist>`` (compiled, on ``ctx``): number params."""
    from .ndarray import dispatch
    if _has_arrays(params):
        return _sample_draw(dist, params, shape, dtype, out, where)
    full = {**params, "shape": () if shape is None else norm_shape(shape, where)}
    if dtype is not None:
        full["dtype"] = np_dtype(dtype).name
    return dispatch.invoke(f"_random_{dist}", [], full, [out] if out is not None else None, where,
                           ctx=ctx)[0]


def gamma(alpha: Any = 1.0, beta: Any = 1.0, shape: Any = None, dtype: Any = None, ctx: Any = None,
          out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta`` (the registered
    ``_random_gamma`` sampler).

    >>> import symjit as mx
    >>> bool((mx.random.gamma(2.0, 1.0, shape=(5,)) > 0).asnumpy().all())
    True
    """
    return _registry_draw("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, ctx, out, "random.gamma")


def negative_binomial(k: Any = 1, p: Any = 1.0, shape: Any = None, dtype: Any = None, ctx: Any = None,
                      out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """Failures before the k-th success of trials succeeding with probability ``p``.

    >>> import symjit as mx
    >>> mx.random.negative_binomial(2, 0.5, shape=(3,)).shape
    (3,)
    """
    return _registry_draw("negative_binomial", {"k": k, "p": p}, shape, dtype, ctx, out,
                          "random.negative_binomial")


def generalized_negative_binomial(mu: Any = 1.0, alpha: Any = 1.0, shape: Any = None, dtype: Any = None,
                                  ctx: Any = None, out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """Samples with mean ``mu`` and variance ``mu + alpha * mu**2``.

    >>> import symjit as mx
    >>> mx.random.generalized_negative_binomial(2.0, 0.5, shape=(3,)).shape
    (3,)
    """
    return _registry_draw("generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape, dtype, ctx, out,
                          "random.generalized_negative_binomial")


def _like(dist: str, names: tuple[str, ...]):
    def fn(data: NDArray, *args: Any, out: NDArray | None = None, **kwargs: Any) -> NDArray:
        from .ndarray import dispatch
        if not isinstance(data, NDArray):
            raise DTypeError(f"random.{dist}_like: data must be an NDArray, got {type(data).__name__}")
        params = dict(zip(names, args))
        params.update({k: kwargs[k] for k in names if k in kwargs})
        return dispatch.invoke(f"_random_{dist}_like", [data], params, [out] if out is not None else None,
                               f"random.{dist}_like")[0]
    fn.__name__ = fn.__qualname__ = f"{dist}_like"
    fn.__doc__ = (f"Samples from the {dist} distribution shaped (and typed) like ``data``, by the "
                  f"registered ``_random_{dist}_like`` sampler.")
    return fn


uniform_like = _like("uniform", ("low", "high"))
normal_like = _like("normal", ("loc", "scale"))
exponential_like = _like("exponential", ("lam",))
gamma_like = _like("gamma", ("alpha", "beta"))
poisson_like = _like("poisson", ("lam",))
negative_binomial_like = _like("negative_binomial", ("k", "p"))
generalized_negative_binomial_like = _like("generalized_negative_binomial", ("mu", "alpha"))
__all__ += ["gamma", "negative_binomial", "generalized_negative_binomial", "uniform_like", "normal_like",
            "exponential_like", "gamma_like", "poisson_like", "negative_binomial_like",
            "generalized_negative_binomial_like"]

"""``mx.random`` (also ``mx.nd.random``): random arrays drawn by the registered samplers.

Every draw runs a compiled sampler op (:mod:`symjit.ops.random_ops`, :mod:`symjit.ops.sample_ops`)
through the imperative path (:func:`symjit.ndarray.dispatch.invoke`), on the device ``ctx`` names.
Each kernel call takes one fresh seed from one stream, numba's generator of the calling thread,
which :func:`seed` seeds; every element is a function of that seed and its index. So the same seed
followed by the same calls gives the same numbers whichever way a draw is asked for
(``mx.random.uniform``, ``mx.nd.random.uniform``, ``mx.nd.random_uniform`` or a bound
``mx.sym.random.uniform``), and on every device as far as the device computes the sampler's
arithmetic alike (uniform draws are equal bit for bit). They are not MXNet's numbers: its
generators differ.

The distribution functions are made from the registry's sampler records (one function per
``_random_<name>`` record, :func:`distribution_functions`). Distribution parameters may be numbers
or NDArrays: numbers draw ``shape`` samples of one distribution (by ``_sample_<dist>`` on
one-element parameter arrays, which draws what ``_random_<dist>`` draws, one kernel for every
value); with NDArrays each element gives one distribution and ``shape`` samples are drawn from
each (result shape ``param.shape + shape``), as MXNet 1.x does.

>>> import symjit as mx
>>> mx.random.seed(42)
>>> a = mx.random.uniform(-1, 1, shape=(2, 3))
>>> mx.random.seed(42)
>>> bool((mx.nd.random_uniform(-1, 1, shape=(2, 3)) == a).asnumpy().all())
True
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .base import DTypeError, MXNetError, ParamError, ShapeError, np_dtype, shape_str
from .context import Context, current_context
from .ndarray import storage
from .ndarray.creation import norm_shape, place
from .ndarray.ndarray import NDArray
from .ops.registry import RuleError
from .ops.sample_ops import check_categories

__all__ = ["seed", "next_seed", "randn", "shuffle", "multinomial", "distribution_functions",
           "op_functions"]

_rng = np.random.default_rng()
"""The host generator of symjit's host-side draws (image augmenters, iterators' shuffles), seeded
by :func:`seed` too; the samplers never use it."""

_DRAW: list = []   # the compiled seed draw, made at first use (importing symjit imports no numba)


def seed(seed_state: int, ctx: Any = "all") -> None:
    """Seed the stream every sampler kernel takes its seeds from (numba's generator of the calling
    thread, which Dropout's CPU masks use too) and the host generator of symjit's host-side draws.
    Any int is a seed, negative ones too (as MXNet's C int seeds are); each seeds its own
    sequence. ``ctx`` ('all' or a device) is checked; symjit has one stream for every device, so
    seeding any device seeds it (MXNet keeps a generator per device).

    >>> import symjit as mx
    >>> mx.random.seed(1)
    >>> mx.random.seed(-7, ctx=mx.cpu())
    """
    global _rng
    if isinstance(seed_state, bool) or not isinstance(seed_state, (int, np.integer)):
        raise ParamError(f"random.seed: seed_state must be an int, got {type(seed_state).__name__}")
    if not (isinstance(ctx, str) and ctx == "all"):
        try:
            Context(ctx)
        except (MXNetError, TypeError):
            raise ParamError(f"random.seed: ctx must be 'all' or a device context, got {ctx!r}") from None
    _rng = np.random.default_rng(int(seed_state) % 2 ** 64)   # numpy takes non-negative seeds
    from symjit.kernels.cpu.random import seed as seed_kernels
    seed_kernels(int(seed_state) % 2 ** 32)


def next_seed() -> int:
    """The next seed of the samplers' stream, drawn on the host: the value a CPU sampler kernel
    would draw itself (numba's ``np.random.randint`` on the same generator). GPU programs pass
    one to each sampler and Dropout launch, so ``mx.random.seed`` makes them reproducible and a
    seeded GPU call draws what the same CPU call draws.

    >>> seed(3); a = next_seed(); seed(3); a == next_seed()
    True
    """
    if not _DRAW:
        import numba

        from .ops.random_ops import SEED_BOUND

        def draw() -> int:
            return np.random.randint(0, SEED_BOUND)
        _DRAW.append(numba.njit(nogil=True)(draw))
    return int(_DRAW[0]())


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _invoke(op: str, inputs: list, params: dict, out: Any, where: str, ctx: Any = None) -> NDArray:
    from .ndarray import dispatch
    return dispatch.invoke(op, inputs, params, None if out is None else [out], where, ctx=ctx)[0]


def _view(a: NDArray, shape: tuple) -> NDArray:
    """``a`` seen with ``shape`` (the same elements; no reshape codes)."""
    return NDArray(storage.reshape_view(a._data, shape), a.context)


def _check_types(values: dict, where: str) -> None:
    for k, v in values.items():
        if not (_is_number(v) or isinstance(v, NDArray)):
            raise DTypeError(f"{where}: parameter '{k}' must be a number or an NDArray, got "
                             f"{type(v).__name__}")


def _numbers(op: Any, values: dict, where: str) -> dict[str, float]:
    """The op's distribution parameters (numbers), checked by the op's own rules."""
    _check_types(values, where)
    try:
        parsed = op.parse_params(values)
    except ParamError as exc:
        raise ParamError(f"{where}: {str(exc).removeprefix(op.name + ': ')}") from None
    return {n: parsed[n] for n in op.extra["params"]}


def _per_element(op: Any, values: dict, shape: Any, dtype: Any, out: Any, where: str) -> NDArray:
    """NDArray parameters (the op's): one distribution per element by ``_sample_<dist>``."""
    from .ops.registry import find_op
    numbers = [k for k, v in values.items() if not isinstance(v, NDArray)]
    if numbers:
        raise MXNetError(f"{where}: with NDArray parameters (one distribution per element) every "
                         f"parameter must be an NDArray; {numbers} are not")
    sample = find_op(f"_sample_{op.extra['dist']}")
    if sample is None:
        raise DTypeError(f"{where}: the parameters must be numbers (there is no per-element sampler "
                         f"of {op.extra['dist']}), got NDArrays")
    params: dict[str, Any] = {"shape": () if shape is None else norm_shape(shape, where)}
    if dtype is not None:
        params["dtype"] = np_dtype(dtype).name
    return _invoke(sample.name, list(values.values()), params, out, where)


def _draw(op: Any, values: dict, shape: Any, dtype: Any, ctx: Any, out: Any, where: str) -> NDArray:
    """``shape`` samples of ``op``'s distribution with parameters ``values`` (the op's)."""
    from .ops.registry import find_op
    if out is not None and not isinstance(out, NDArray):
        raise DTypeError(f"{where}: out must be an NDArray, got {type(out).__name__}")
    if any(isinstance(v, NDArray) for v in values.values()):
        return _per_element(op, values, shape, dtype, out, where)
    params = _numbers(op, values, where)
    shape = norm_shape(shape, where) if shape not in (None, ()) else (
        tuple(out.shape) if out is not None else (1,))
    dtype = np_dtype(dtype) if dtype is not None else (
        np.dtype(out.dtype) if out is not None else np_dtype(op.param("dtype").default))
    ctx = ctx if ctx is not None else (out.context if out is not None else current_context())
    if out is not None and tuple(out.shape) != shape:
        raise ShapeError(f"{where}: out has shape {shape_str(out.shape)}, the draw shape {shape_str(shape)}")
    sample = find_op(f"_sample_{op.extra['dist']}")
    if sample is None:
        return _invoke(op.name, [], {**params, "shape": shape, "dtype": dtype.name}, out, where, ctx)
    # one distribution: the per-element sampler on one-element float64 parameters (its elements
    # are _random_<dist>'s, from the same seed; the values are data, so one kernel serves them all)
    arrays = [place(np.array([v], dtype=np.float64), ctx, where) for v in params.values()]
    full = (1, *shape)
    res = _invoke(sample.name, arrays, {"shape": shape, "dtype": dtype.name},
                  None if out is None else _view(out, full), where)
    return out if out is not None else _view(res, shape)


def _like(op: Any, values: dict, out: Any, where: str) -> NDArray:
    data = values.pop("data")
    if not isinstance(data, NDArray):
        raise DTypeError(f"{where}: data must be an NDArray, got {type(data).__name__}")
    return _invoke(op.name, [data], _numbers(op, values, where), out, where)


def _example(call: str, sig: Any) -> str:
    """A runnable example of a generated function."""
    from .ops.random_ops import example_arguments
    if call.endswith("_like"):
        return f">>> {call}(mx.nd.zeros((2, 3))).shape\n(2, 3)"
    return f">>> {call}({example_arguments(sig)}shape=(2,)).shape\n(2,)"


def _make(name: str, op: Any, own: bool) -> Callable[..., NDArray]:
    """The NDArray function ``name`` of sampler record ``op``: MXNet's ``mx.random.<name>`` (the
    front end's parameters, then shape, dtype, ctx, out), or with ``own`` the op's function
    ``mx.nd.random_<dist>`` (its own parameters, then shape, ctx, dtype, out, as MXNet orders them)."""
    from .ops.random_ops import front_arguments, front_signature, op_params
    like = name.endswith("_like")
    where = name if own else f"random.{name}"
    order = ("shape", "ctx", "dtype", "out") if own else ("shape", "dtype", "ctx", "out")   # as MXNet's
    sig = front_signature(op, ("out",) if like else order, own)

    def fn(*args: Any, **kwargs: Any) -> NDArray:
        a = front_arguments(sig, args, kwargs, where)
        extra = a.pop("kwargs")
        extra.pop("name", None)
        if extra:
            raise ParamError(f"{where}: unknown argument(s) {sorted(extra)}; it takes {sig}")
        out = a.pop("out")
        if like:
            return _like(op, a, out, where)
        shape, dtype, ctx = a.pop("shape"), a.pop("dtype"), a.pop("ctx")
        _check_types(a, where)
        return _draw(op, a if own else op_params(op, a, where), shape, dtype, ctx, out, where)

    fn.__name__ = fn.__qualname__ = name
    fn.__signature__ = sig   # type: ignore[attr-defined]
    what = op.doc.strip().rstrip(".")
    per = "" if like else "; NDArray parameters: one distribution per element"
    call = f"mx.nd.{name}" if own else f"mx.random.{name}"
    fn.__doc__ = (f"{what} (the registered ``{op.name}``{per}).\n\n"
                  f">>> import symjit as mx\n{_example(call, sig)}\n")
    return fn


def distribution_functions() -> dict[str, Callable[..., NDArray]]:
    """``mx.random``'s distribution functions, one per sampler record (``uniform``, ``gamma_like``, ...).

    >>> sorted(distribution_functions())[-2:]
    ['uniform', 'uniform_like']
    """
    from .ops.random_ops import distributions
    return {name: _make(name, op, False) for name, op in distributions().items()}


def op_functions() -> dict[str, Callable[..., NDArray]]:
    """``mx.nd.random_<dist>`` (and the aliases ``mx.nd.uniform``, ``mx.nd.normal``): each sampler op
    with its own parameters, drawing what ``mx.random.<dist>`` draws.

    >>> sorted(op_functions())[:2]
    ['normal', 'random_exponential']
    """
    from .ops.random_ops import distributions
    return {alias: _make(alias, op, True) for name, op in distributions().items() for alias in op.aliases}


def randn(*shape: int, loc: float = 0.0, scale: float = 1.0, dtype: Any = None, ctx: Any = None,
          out: NDArray | None = None, **kwargs: Any) -> NDArray:
    """Normal samples with the shape given positionally: ``randn(2, 3)``.

    >>> import symjit as mx
    >>> mx.random.randn(2, 3).shape
    (2, 3)
    """
    return normal(loc, scale, shape or None, dtype, ctx, out)  # noqa: F821 (made below)


def shuffle(data: NDArray, **kwargs: Any) -> NDArray:
    """A copy of ``data`` with its rows (first axis) in random order.

    >>> import symjit as mx
    >>> sorted(mx.random.shuffle(mx.nd.arange(4)).asnumpy().tolist())
    [0.0, 1.0, 2.0, 3.0]
    """
    if not isinstance(data, NDArray):
        raise DTypeError(f"random.shuffle: data must be an NDArray, got {type(data).__name__}")
    return _invoke("_shuffle", [data], {}, kwargs.get("out"), "random.shuffle")


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
    if data.ndim:   # before a float16 dtype is widened to float32 for the kernel
        try:
            check_categories(data.shape[-1], params["dtype"])
        except RuleError as exc:
            raise MXNetError(f"random.multinomial: {exc}") from None
    outs = dispatch.invoke("_sample_multinomial", [data], params, None if out is None else
                           (list(out) if isinstance(out, (list, tuple)) else [out]), "random.multinomial")
    return outs if get_prob else outs[0]


_FUNCTIONS = distribution_functions()
globals().update(_FUNCTIONS)
__all__ += sorted(_FUNCTIONS)

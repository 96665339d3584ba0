"""``mx.test_utils``: MXNet 1.x's helpers for testing operators and networks.

Comparisons (:func:`assert_almost_equal`, :func:`almost_equal`, :func:`same`), random data
(:func:`rand_ndarray`, :func:`random_arrays`, ``rand_shape_*``), symbolic checks
(:func:`check_symbolic_forward`, :func:`check_symbolic_backward`, :func:`check_numeric_gradient`),
cross-context checks (:func:`check_consistency`: cpu against gpu), data (:func:`get_mnist`,
:func:`get_mnist_iterator`) and contexts (:func:`default_context`).

Default tolerances follow the lower precision of the two arrays compared, as in MXNet 1.9:
rtol 1e-2 / 1e-4 / 1e-5 and atol 1e-1 / 1e-3 / 1e-20 for float16 / float32 / float64, exact
for integers.

>>> import numpy as np, symjit as mx
>>> x = mx.sym.Variable('x')
>>> out = check_symbolic_forward(2 * x, [np.ones((2, 2))], [2 * np.ones((2, 2))])
>>> check_numeric_gradient(mx.sym.tanh(x), [np.array([[0.1, -0.3], [0.5, 0.2]])])
"""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.random as rnd

import symjit as mx

from . import ndarray as nd
from . import symbol as sym_mod
from .base import MXNetError, ParamError, ShapeError, shape_str
from .context import Context
from .ndarray import array
from .testing_stats import *  # noqa: F403
from .testing_stats import __all__ as _stats_all
from .testing_support import *  # noqa: F403
from .testing_support import __all__ as _support_all
from .testing_support import _np, assert_almost_equal, default_context

__all__ = [
    "default_dtype", "assert_exception", "random_arrays",
    "rand_ndarray", "rand_sparse_ndarray", "rand_shape_2d", "rand_shape_3d", "rand_shape_nd",
    "simple_forward",
    "check_symbolic_forward", "check_symbolic_backward", "check_numeric_gradient", "numeric_grad",
    "check_consistency", "get_mnist", "get_mnist_iterator", "environment",
    *_stats_all, *_support_all,
    # the modules and names MXNet's test_utils hands out with ``from mxnet.test_utils import *``
    "os", "sys", "np", "rnd", "mx", "Context", "array",
]

_NUMERIC_EPS = {np.dtype(np.float16): 2.0 ** -6, np.dtype(np.float32): 2.0 ** -9,
                np.dtype(np.float64): 2.0 ** -14}
_CONSISTENCY_TOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-5}


# -- dtypes ------------------------------------------------------------------------------------------
def default_dtype() -> type:
    """The dtype of random test data: float32."""
    return np.float32


def assert_exception(f: Callable, exception_type: type, *args: Any, **kwargs: Any) -> None:
    """Raise ``AssertionError`` unless ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)!s} did not raise {exception_type.__name__}")


# -- random data ---------------------------------------------------------------------------------
def random_arrays(*shapes: Any) -> Any:
    """Standard-normal float32 numpy arrays of the given shapes (one array for one shape)."""
    arrays = [np.asarray(np.random.randn(*s) if s else np.random.randn(), dtype=default_dtype())
              for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def rand_shape_2d(dim0: int = 10, dim1: int = 10) -> tuple[int, int]:
    """A random 2-D shape with sizes in [1, dim0] and [1, dim1]."""
    return int(np.random.randint(1, dim0 + 1)), int(np.random.randint(1, dim1 + 1))


def rand_shape_3d(dim0: int = 10, dim1: int = 10, dim2: int = 10) -> tuple[int, int, int]:
    """A random 3-D shape with sizes in [1, dim_i]."""
    return rand_shape_2d(dim0, dim1) + (int(np.random.randint(1, dim2 + 1)),)


def rand_shape_nd(num_dim: int, dim: int = 10) -> tuple[int, ...]:
    """A random shape of ``num_dim`` dimensions with sizes in [1, dim]."""
    return tuple(int(d) for d in np.random.randint(1, dim + 1, size=num_dim))


def rand_sparse_ndarray(shape: Any, stype: str, density: float | None = None, dtype: Any = None,
                        ctx: Context | None = None, **kwargs: Any) -> tuple[nd.NDArray, tuple]:
    """A random sparse array of storage type ``stype`` (``'row_sparse'``: each row stored with
    probability ``density``; ``'csr'``: each element) of uniform values in [0, 1), and its
    components as numpy arrays ((data, indices) or (data, indices, indptr)). ``density``
    defaults to a random one.

    >>> arr, (data, indices) = rand_sparse_ndarray((4, 2), 'row_sparse', density=1.0)
    >>> arr.stype, indices.tolist()
    ('row_sparse', [0, 1, 2, 3])
    """
    density = rnd.rand() if density is None else float(density)
    dt = np.dtype(dtype or default_dtype())
    shape = tuple(int(d) for d in shape)
    if stype == "row_sparse":
        keep = rnd.rand(shape[0]) < density
        dense = np.zeros(shape, dt)
        dense[keep] = rnd.uniform(size=(int(keep.sum()), *shape[1:])) + 1e-3
    elif stype == "csr":
        if len(shape) != 2:
            raise ParamError(f"rand_sparse_ndarray: a csr matrix has two dimensions, got shape {shape}")
        dense = np.where(rnd.rand(*shape) < density, rnd.uniform(size=shape) + 1e-3, 0).astype(dt)
    else:
        raise ParamError(f"rand_sparse_ndarray: stype must be 'row_sparse' or 'csr', got {stype!r}")
    arr = nd.array(dense, ctx=ctx or default_context(), dtype=dt).tostype(stype)
    if stype == "row_sparse":
        return arr, (arr.data.asnumpy(), arr.indices.asnumpy())
    return arr, (arr.data.asnumpy(), arr.indices.asnumpy(), arr.indptr.asnumpy())


def rand_ndarray(shape: Any, stype: str = "default", density: float | None = None, dtype: Any = None,
                 modifier_func: Callable | None = None, shuffle_csr_indices: bool = False,
                 distribution: str | None = None, ctx: Context | None = None) -> nd.NDArray:
    """A dense NDArray of standard-normal values (``modifier_func`` applied to them when given),
    or a random sparse one (:func:`rand_sparse_ndarray`) for ``stype`` ``'row_sparse'``/``'csr'``.

    >>> rand_ndarray((2, 3), 'csr', density=0.5).stype
    'csr'
    """
    if stype != "default":
        return rand_sparse_ndarray(shape, stype, density, dtype, ctx)[0]
    values = random_arrays(tuple(shape))
    if modifier_func is not None:
        values = np.asarray(modifier_func(values))
    return nd.array(values, ctx=ctx or default_context(), dtype=dtype or default_dtype())


# -- symbolic checks -------------------------------------------------------------------------------
def _location(sym: Any, location: Any, ctx: Context, dtype: Any, where: str) -> dict[str, nd.NDArray]:
    names = sym.list_arguments()
    if isinstance(location, Mapping):
        unknown = sorted(set(location) - set(names))
        if unknown:
            raise ParamError(f"{where}: location names {unknown} are not arguments of the symbol {names}")
        missing = [n for n in names if n not in location]
        if missing:
            raise ParamError(f"{where}: location has no value for the arguments {missing}")
        items = [(n, location[n]) for n in names]
    elif isinstance(location, Sequence):
        if len(location) != len(names):
            raise ParamError(f"{where}: location has {len(location)} arrays for the {len(names)} "
                             f"arguments {names}")
        items = list(zip(names, location))
    else:
        raise ParamError(f"{where}: location must be a list or a dict of arrays, got "
                         f"{type(location).__name__}")
    return {n: _array(_np(v, where, f"location[{n!r}]"), ctx, dtype) for n, v in items}


def _array(values: np.ndarray, ctx: Context, dtype: Any) -> nd.NDArray:
    """``values`` as an NDArray of ``dtype``, or of its own dtype for ``dtype='asnumpy'``."""
    return nd.array(values, ctx=ctx, dtype=values.dtype if _same_dtype(dtype) else dtype)


def _same_dtype(dtype: Any) -> bool:
    return isinstance(dtype, str) and dtype == "asnumpy"


def _aux(sym: Any, aux_states: Any, ctx: Context, dtype: Any, where: str) -> dict[str, nd.NDArray] | None:
    names = sym.list_auxiliary_states()
    if aux_states is None:
        return None
    if isinstance(aux_states, Mapping):
        return {n: _array(_np(aux_states[n], where, n), ctx, dtype) for n in names}
    return {n: _array(_np(v, where, n), ctx, dtype) for n, v in zip(names, aux_states)}


def _by_name(values: Any, names: list[str], where: str, what: str) -> dict[str, Any]:
    if isinstance(values, Mapping):
        return dict(values)
    if not isinstance(values, Sequence) or isinstance(values, (str, bytes)):
        values = [values]
    if len(values) != len(names):
        raise ParamError(f"{where}: {len(values)} {what} for the {len(names)} names {names}")
    return dict(zip(names, values))


def check_symbolic_forward(sym: Any, location: Any, expected: Any, rtol: float | None = None,
                           atol: float | None = None, aux_states: Any = None, ctx: Context | None = None,
                           equal_nan: bool = False, dtype: Any = np.float32) -> list[np.ndarray]:
    """Bind ``sym`` on ``location`` (a list in ``list_arguments()`` order, or a dict), run forward
    and compare every output with ``expected`` (a list, or a dict by output name); the outputs.
    The arrays are made of ``dtype``, or each of its own dtype for ``dtype='asnumpy'``.

    >>> import symjit as mx
    >>> x = mx.sym.Variable('x')
    >>> check_symbolic_forward(x + 1, {'x': np.zeros(2)}, [np.ones(2)])[0].tolist()
    [1.0, 1.0]
    """
    where = "check_symbolic_forward"
    ctx = ctx or default_context()
    args = _location(sym, location, ctx, dtype, where)
    ex = sym.bind(ctx, args=args, aux_states=_aux(sym, aux_states, ctx, dtype, where), grad_req="null")
    outputs = [o.asnumpy() for o in ex.forward(is_train=False)]
    want = _by_name(expected, sym.list_outputs(), where, "expected arrays")
    for name, out in zip(sym.list_outputs(), outputs):
        if name in want:
            assert_almost_equal(out, want[name], rtol, atol, names=(name, f"EXPECTED_{name}"),
                                equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym: Any, location: Any, out_grads: Any, expected: Any, rtol: float | None = None,
                            atol: float | None = None, aux_states: Any = None, grad_req: Any = "write",
                            ctx: Context | None = None, grad_stypes: Any = None, equal_nan: bool = False,
                            dtype: Any = np.float32) -> dict[str, np.ndarray]:
    """Run forward (training mode) and backward with head gradients ``out_grads`` and compare the
    argument gradients with ``expected`` (a list in argument order, or a dict). With
    ``grad_req='add'`` the gradient arrays start from random values, which the comparison adds to
    ``expected``. A list of ``out_grads`` longer than the outputs gives the first ones their head
    gradients (the rest are not used, as by MXNet's backward). Returns the gradients by name.

    >>> import symjit as mx
    >>> x = mx.sym.Variable('x')
    >>> g = check_symbolic_backward(3 * x, [np.ones(2)], [np.ones(2)], {'x': 3 * np.ones(2)})
    >>> g['x'].tolist()
    [3.0, 3.0]
    """
    where = "check_symbolic_backward"
    if grad_stypes:
        raise MXNetError(f"{where}: grad_stypes {grad_stypes!r}: sparse gradients are not supported")
    ctx = ctx or default_context()
    names = sym.list_arguments()
    args = _location(sym, location, ctx, dtype, where)
    want = _by_name(expected, names, where, "expected gradients")
    reqs = grad_req if isinstance(grad_req, Mapping) else _by_name(
        [grad_req] * len(names) if isinstance(grad_req, str) else grad_req, names, where, "grad_reqs")
    start = {n: (np.random.normal(size=args[n].shape) if reqs[n] == "add" else np.zeros(args[n].shape))
             for n in names}
    grads = {n: nd.array(start[n], ctx=ctx, dtype=args[n].dtype if _same_dtype(dtype) else dtype)
             for n in names}
    ex = sym.bind(ctx, args=args, args_grad=grads, grad_req=reqs,
                  aux_states=_aux(sym, aux_states, ctx, dtype, where))
    ex.forward(is_train=True)
    outs = sym.list_outputs()
    listed = isinstance(out_grads, Sequence) and not isinstance(out_grads, (str, bytes))
    if listed and len(out_grads) > len(outs):
        out_grads = out_grads[:len(outs)]   # one head gradient per output, as MXNet's backward takes them
    heads = out_grads if isinstance(out_grads, Mapping) else _by_name(out_grads, outs, where, "out_grads")
    ex.backward([_array(_np(heads[n], where, f"out_grads[{n!r}]"), ctx, dtype) for n in sym.list_outputs()])
    got = {n: g.asnumpy() for n, g in grads.items()}
    for n, value in want.items():
        if reqs.get(n, "null") == "null":
            continue
        target = _np(value, where, f"expected[{n!r}]")
        if reqs[n] == "add":
            target = target + start[n].astype(got[n].dtype)
        assert_almost_equal(got[n], target, rtol, atol, names=(f"BACKWARD_{n}", f"EXPECTED_{n}"),
                            equal_nan=equal_nan)
    return got


def numeric_grad(executor: Any, location: dict[str, np.ndarray], aux_states: Any = None, eps: float = 1e-4,
                 use_forward_train: bool = True, dtype: Any = np.float32) -> dict[str, np.ndarray]:
    """Central differences ``(f(x + eps/2) - f(x - eps/2)) / eps`` of the sum of ``executor``'s
    outputs, for every element of every array in ``location`` (written into the executor). The two
    runs' outputs are subtracted element by element before they are summed (as MXNet does), so
    the elements a change does not reach add no rounding noise, and the two runs of a difference
    are on one tier (:mod:`symjit.compiler.tier`: a pair split by the program's compile is run
    again)."""
    tier_switches = getattr(executor, "_tier_switches", lambda: 0)
    for name, value in location.items():
        executor.arg_dict[name][:] = value
    grads = {}
    for name, value in location.items():
        flat = np.array(value, dtype=dtype).reshape(-1)
        grad = np.zeros(flat.size, dtype=np.float64)
        arr = executor.arg_dict[name]
        for i in range(flat.size):
            old = flat[i]
            for _ in range(2):   # a pair the interpreted tier's end split is run again, compiled
                switches = tier_switches()
                runs = []
                for sign in (0.5, -0.5):
                    flat[i] = old + sign * eps
                    arr[:] = flat.reshape(arr.shape)
                    runs.append([o.asnumpy() for o in executor.forward(is_train=use_forward_train)])
                if tier_switches() == switches:
                    break
            flat[i] = old
            grad[i] = sum(float((p - m).astype(np.float64).sum()) for p, m in zip(*runs)) / eps
        arr[:] = flat.reshape(arr.shape)
        grads[name] = grad.reshape(arr.shape)
    return grads


def check_numeric_gradient(sym: Any, location: Any, aux_states: Any = None, numeric_eps: float | None = None,
                           rtol: float | None = 1e-2, atol: float | None = None, grad_nodes: Any = None,
                           use_forward_train: bool = True, ctx: Context | None = None,
                           grad_stype_dict: Any = None, dtype: Any = np.float32) -> None:
    """Compare the symbolic gradient of ``sum(sym * P)`` (``P`` a fixed random projection in
    [0.1, 1.1), as MXNet does; the loss stays elementwise and :func:`numeric_grad` sums it) with its central
    finite differences, for the arguments in ``grad_nodes`` (a list, or a dict name -> grad_req;
    default every argument); ``AssertionError`` on a mismatch. ``numeric_eps=None`` is MXNet
    1.9's step for ``dtype`` (a power of two: 2**-6, 2**-9, 2**-14 for float16/32/64, so the
    perturbed inputs are exact); ``rtol=None`` is 1e-2."""
    where = "check_numeric_gradient"
    numeric_eps = _NUMERIC_EPS.get(np.dtype(dtype), 2.0 ** -9) if numeric_eps is None else numeric_eps
    rtol = 1e-2 if rtol is None else rtol
    if grad_stype_dict:
        raise MXNetError(f"{where}: grad_stype_dict {grad_stype_dict!r}: sparse gradients are not supported")
    ctx = ctx or default_context()
    names = sym.list_arguments()
    args = _location(sym, location, ctx, dtype, where)
    out_shapes = sym.infer_shape(**{n: a.shape for n, a in args.items()})[1]
    if out_shapes is None or len(out_shapes) != 1:
        raise ParamError(f"{where}: the symbol must have exactly one output, it has {sym.list_outputs()}")
    proj_name = "__random_proj"
    # weights in [0.1, 1.1) as MXNet's: no output's change cancels another's, so no gradient is
    # left as small as the finite differences' rounding
    proj = (np.random.rand(*out_shapes[0]) + 0.1).astype(dtype)
    loss = sym_mod.MakeLoss(sym * sym_mod.Variable(proj_name))   # elementwise: numeric_grad sums the changes
    nodes = (dict(grad_nodes) if isinstance(grad_nodes, Mapping) else
             {n: "write" for n in (grad_nodes if grad_nodes is not None else names)})
    unknown = sorted(set(nodes) - set(names))
    if unknown:
        raise ParamError(f"{where}: grad_nodes {unknown} are not arguments of the symbol {names}")
    all_args = dict(args, **{proj_name: nd.array(proj, ctx=ctx, dtype=dtype)})
    reqs = {n: nodes.get(n, "null") for n in all_args}
    grads = {n: nd.zeros(all_args[n].shape, ctx=ctx, dtype=dtype) for n in nodes}
    aux = _aux(sym, aux_states, ctx, dtype, where)
    ex = loss.bind(ctx, args={n: a.copy() for n, a in all_args.items()}, args_grad=grads, grad_req=reqs,
                   aux_states=aux)
    ex.forward(is_train=use_forward_train)
    ex.backward()
    symbolic = {n: g.asnumpy() for n, g in grads.items()}
    fd_ex = loss.bind(ctx, args={n: a.copy() for n, a in all_args.items()}, grad_req="null",
                      aux_states=None if aux is None else {n: a.copy() for n, a in aux.items()})
    numeric = numeric_grad(fd_ex, {n: args[n].asnumpy() for n in nodes}, eps=numeric_eps,
                           use_forward_train=use_forward_train, dtype=dtype)
    for n in nodes:
        if nodes[n] == "null":
            continue
        assert_almost_equal(numeric[n], symbolic[n], rtol, atol, names=(f"NUMERICAL_{n}", f"BACKWARD_{n}"))


def simple_forward(sym: Any, ctx: Context | None = None, is_train: bool = False, **inputs: Any) -> Any:
    """Bind ``sym`` on the named numpy ``inputs`` and return its output(s) as numpy."""
    ctx = ctx or default_context()
    args = {n: nd.array(v, ctx=ctx) for n, v in inputs.items()}
    outputs = [o.asnumpy() for o in sym.bind(ctx, args=args, grad_req="null").forward(is_train=is_train)]
    return outputs[0] if len(outputs) == 1 else outputs


def check_consistency(sym: Any, ctx_list: list[dict], scale: float = 1.0, grad_req: Any = "write",
                      arg_params: dict | None = None, aux_params: dict | None = None,
                      tol: Any = None, raise_on_err: bool = True, ground_truth: dict | None = None,
                      equal_nan: bool = False, use_uniform: bool = False,
                      rand_type: Any = np.float64) -> dict[str, np.ndarray]:
    """Run ``sym`` (or one symbol per entry) on every entry of ``ctx_list`` (dicts with ``'ctx'``,
    input shapes by name and an optional ``'type_dict'``) on the same random inputs, forward in
    training mode and backward with the outputs as head gradients, and compare every output and
    gradient with the highest-precision entry's (or ``ground_truth``). Returns the reference
    values by name: outputs under the first symbol's output names (outputs are compared by
    position), gradients under their argument names.

    >>> import symjit as mx
    >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3, name='fc')
    >>> ref = check_consistency(net, [{'ctx': mx.cpu(), 'data': (2, 4), 'type_dict': {'data': np.float64}},
    ...                               {'ctx': mx.cpu(), 'data': (2, 4), 'type_dict': {'data': np.float32}}])
    >>> sorted(ref)
    ['data', 'fc_bias', 'fc_output', 'fc_weight']
    """
    where = "check_consistency"
    if not ctx_list:
        raise ParamError(f"{where}: ctx_list is empty")
    syms = list(sym) if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    if len(syms) != len(ctx_list):
        raise ParamError(f"{where}: {len(syms)} symbols for {len(ctx_list)} contexts")
    tols = {**_CONSISTENCY_TOL, **({np.dtype(k): v for k, v in tol.items()} if isinstance(tol, Mapping)
                                   else {d: tol for d in _CONSISTENCY_TOL} if tol is not None else {})}
    execs = []
    for s, spec in zip(syms, ctx_list):
        spec = dict(spec)
        ctx, types = spec.pop("ctx"), spec.pop("type_dict", None)
        execs.append(s.simple_bind(ctx, grad_req=grad_req, type_dict=types, **spec))
    first = execs[0]
    rng = np.random.uniform if use_uniform else np.random.normal
    arg_params = dict(arg_params or {})
    for n, a in first.arg_dict.items():
        arg_params.setdefault(n, (rng(-scale, scale, a.shape) if use_uniform else rng(0, scale, a.shape))
                              .astype(rand_type))
    aux_params = dict(aux_params or {})
    for n, a in first.aux_dict.items():
        aux_params.setdefault(n, np.zeros(a.shape, dtype=rand_type))
    for ex in execs:
        for n, a in ex.arg_dict.items():
            a[:] = np.asarray(arg_params[n]).astype(a.dtype)
        for n, a in ex.aux_dict.items():
            a[:] = np.asarray(aux_params[n]).astype(a.dtype)
    precision = [max(np.dtype(a.dtype).itemsize for a in ex.arg_dict.values()) for ex in execs]
    ref = int(np.argmax(precision))
    results, out_names = [], syms[0].list_outputs()   # outputs compared by position
    for ex in execs:
        outs = ex.forward(is_train=True)
        ex.backward([o.copy() for o in outs])
        values = {n: o.asnumpy() for n, o in zip(out_names, outs)}
        values.update({n: g.asnumpy() for n, g in ex.grad_dict.items() if g is not None})
        results.append(values)
    truth = ground_truth if ground_truth is not None else results[ref]
    for i, values in enumerate(results):
        if ground_truth is None and i == ref:
            continue
        for name, value in values.items():
            t = tols.get(np.dtype(value.dtype), 0.0)
            try:
                assert_almost_equal(value, truth[name], rtol=t, atol=t, equal_nan=equal_nan,
                                    names=(f"ctx {i} ({ctx_list[i]['ctx']}) {name}", f"reference {name}"))
            except AssertionError:
                if raise_on_err:
                    raise
    return truth


# -- data ------------------------------------------------------------------------------------------
def get_mnist(path: str | None = None) -> dict[str, np.ndarray]:
    """MNIST as ``{'train_data', 'train_label', 'test_data', 'test_label'}`` (images float32 in
    [0, 1] of shape ``(N, 1, 28, 28)``), found as :func:`symjit.io.load_mnist` finds it."""
    from .io import load_mnist
    return load_mnist(path)


def get_mnist_iterator(batch_size: int, input_shape: tuple, num_parts: int = 1, part_index: int = 0,
                       path: str | None = None) -> tuple[Any, Any]:
    """``(train, val)`` ``NDArrayIter``s over MNIST with samples of ``input_shape`` (``(784,)``
    flat or ``(1, 28, 28)``); the training one reads part ``part_index`` of ``num_parts``."""
    from .io import NDArrayIter
    data = get_mnist(path)
    shape = tuple(input_shape)
    if int(np.prod(shape)) != 784:
        raise ShapeError(f"get_mnist_iterator: input_shape {shape_str(shape)} does not hold 784 pixels")
    train = NDArrayIter(data["train_data"].reshape((-1,) + shape), data["train_label"], batch_size,
                        shuffle=True, num_parts=num_parts, part_index=part_index)
    val = NDArrayIter(data["test_data"].reshape((-1,) + shape), data["test_label"], batch_size, num_parts=1)
    return train, val


@contextlib.contextmanager
def environment(*args: Any) -> Iterator[None]:
    """Set environment variables inside a ``with`` block (``environment('K', 'v')`` or
    ``environment({'K': 'v', 'J': None})``; ``None`` unsets), restoring them after."""
    changes = {args[0]: args[1]} if len(args) == 2 else dict(args[0]) if args else {}
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, str(v))
        yield
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)

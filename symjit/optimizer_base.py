"""The base class of the optimizers (:class:`Optimizer`: the registry, learning-rate and weight-decay
multipliers, update counts, the multi-precision and many-parameter update paths); the rules are in
:mod:`symjit.optimizer` (``mx.optimizer``), :mod:`symjit.optimizer_host` and
:mod:`symjit.optimizer_contrib`."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import lazy
from .base import DTypeError, MXNetError, ParamError, ShapeError, shape_str
from .ndarray import NDArray, dispatch, storage, zeros_like
from .ndarray.ndarray import wrap
from .ndarray.optim_ops import MultiUpdate, update_kernels
from .ndarray.sparse_array import is_sparse

__all__ = ["Optimizer", "SchedulerConflictError", "register", "create", "update_sparse", "dense_state_weight"]

_FLOATS = (np.dtype("float32"), np.dtype("float64"))


class SchedulerConflictError(MXNetError, UserWarning):
    """``set_learning_rate`` on an optimizer driven by an ``lr_scheduler`` (MXNet raises a UserWarning)."""


def _kernels(weight: NDArray) -> Any:
    """The compiled update kernels for the weight's device (imported on first use)."""
    return update_kernels(weight.context)


def _clip(value: float | None) -> float:
    """MXNet's ``clip_gradient``/``clip_weights``: None (or 0) means off, passed to kernels as -1."""
    return float(value) if value else -1.0


class Optimizer:
    """Base class of the update rules: learning rate, weight decay, multipliers and update counts.

    ``lr_mult``/``wd_mult`` come from ``set_lr_mult``/``set_wd_mult``, from the ``__lr_mult__`` and
    ``__wd_mult__`` attributes of ``sym``'s variables, or from ``param_dict`` entries' ``lr_mult``
    and ``wd_mult``. Names in ``param_idx2name`` that end neither in ``_weight`` nor ``_gamma`` get
    ``wd_mult = 0`` (no decay of biases and BatchNorm betas), as in MXNet 1.x.

    >>> import symjit as mx
    >>> opt = mx.optimizer.SGD(learning_rate=0.5, wd=0.1, param_idx2name={0: 'fc_weight', 1: 'fc_bias'})
    >>> opt._get_lr(0), opt._get_wd(0), opt._get_wd(1)
    (0.5, 0.1, 0.0)
    """

    opt_registry: dict[str, type] = {}

    def __init__(self, rescale_grad: float = 1.0, param_idx2name: dict | None = None, wd: float = 0.0,
                 clip_gradient: float | None = None, learning_rate: float | None = None,
                 lr_scheduler: Any = None, sym: Any = None, begin_num_update: int = 0,
                 multi_precision: bool = False, param_dict: dict | None = None):
        if param_idx2name is not None and not isinstance(param_idx2name, dict):
            raise ParamError(f"{type(self).__name__}: param_idx2name must be a dict of index to name, "
                             f"got {type(param_idx2name).__name__}")
        self.rescale_grad = float(rescale_grad)
        self.lr_scheduler = lr_scheduler
        if learning_rate is None and lr_scheduler is None:
            learning_rate = 0.01
        if lr_scheduler is not None and learning_rate is not None:
            base = getattr(lr_scheduler, "base_lr", None)
            if base is not None and base != learning_rate:
                warnings.warn(f"{type(self).__name__}: learning_rate={learning_rate} overrides the "
                              f"lr_scheduler's base_lr={base}", UserWarning, stacklevel=2)
            if hasattr(lr_scheduler, "base_lr"):
                lr_scheduler.base_lr = learning_rate
        self.lr = learning_rate
        self.wd = float(wd)
        self.clip_gradient = clip_gradient
        self.multi_precision = bool(multi_precision)
        self.begin_num_update = int(begin_num_update)
        self.num_update = int(begin_num_update)
        # update counts per device id (one Updater per device, as Gluon's Trainer keeps), so that
        # a parameter updated on two devices in one step counts one update, as in MXNet
        self._all_index_update_counts: dict[int, dict[Any, int]] = {0: {}}
        self._index_update_count: dict[Any, int] = self._all_index_update_counts[0]
        self.idx2name = dict(param_idx2name or {})
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = dict(param_dict or {})
        self.lr_mult: dict[Any, float] = {}
        self.wd_mult: dict[Any, float] = {}
        self.set_lr_mult({})
        self.set_wd_mult({})
        self._tables: dict[tuple, Any] = {}   # fused updates of index lists (_update_many)
        self._views: dict[Any, tuple] = {}    # index -> (arrays, their storages, flat views)

    # -- registry -----------------------------------------------------------------------------
    @staticmethod
    def register(klass: type) -> type:
        """Class decorator: make ``klass`` creatable by its lower-cased name."""
        if not isinstance(klass, type) or not issubclass(klass, Optimizer):
            raise ParamError(f"Optimizer.register: expected an Optimizer subclass, got {klass!r}")
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry and Optimizer.opt_registry[name] is not klass:
            warnings.warn(f"Optimizer.register: {name!r} is replaced by {klass.__module__}."
                          f"{klass.__name__}", UserWarning, stacklevel=2)
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs: Any) -> Optimizer:
        """An optimizer by registered name (case-insensitive), e.g. ``'sgd'`` or ``'Adam'``."""
        if not isinstance(name, str):
            raise ParamError(f"create_optimizer: name must be a str, got {type(name).__name__}")
        klass = Optimizer.opt_registry.get(name.lower())
        if klass is None:
            raise ParamError(f"create_optimizer: cannot find optimizer {name!r}; registered: "
                             f"{', '.join(sorted(Optimizer.opt_registry))}")
        return klass(**kwargs)

    # -- learning rate and multipliers --------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        """The current learning rate: the scheduler's value at ``num_update`` when one is set."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate (an error when an ``lr_scheduler`` drives it)."""
        if self.lr_scheduler is not None:
            raise SchedulerConflictError(f"{type(self).__name__}.set_learning_rate: the learning rate "
                                         "comes from lr_scheduler; change the scheduler instead")
        self.lr = lr

    def set_lr_multiplier(self, args_lr_mult: dict) -> None:
        """Deprecated alias of :meth:`set_lr_mult`."""
        self.set_lr_mult(args_lr_mult)

    def set_wd_multiplier(self, args_wd_mult: dict) -> None:
        """Deprecated alias of :meth:`set_wd_mult`."""
        self.set_wd_mult(args_wd_mult)

    def _sym_mults(self, key: str) -> dict[str, float]:
        if not self.sym_info:
            return {}
        attrs, arg_names = self.sym_info
        return {n: float(attrs[n][key]) for n in arg_names if key in attrs.get(n, {})}

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Per-parameter learning-rate multipliers (index or name to float); replaces earlier ones
        except those read from ``sym``'s ``__lr_mult__`` attributes."""
        self.lr_mult = {**self._sym_mults("__lr_mult__"), **dict(args_lr_mult)}

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Per-parameter weight-decay multipliers; names not ending in ``_weight``/``_gamma`` get 0."""
        mult: dict[Any, float] = {n: 0.0 for n in self.idx2name.values()
                                  if not (str(n).endswith("_weight") or str(n).endswith("_gamma"))}
        mult.update(self._sym_mults("__wd_mult__"))
        mult.update(dict(args_wd_mult))
        self.wd_mult = mult

    def _mult(self, index: Any, table: dict, attr: str) -> float:
        if index in self.param_dict:
            return float(getattr(self.param_dict[index], attr, 1.0))
        if index in table:
            return float(table[index])
        if index in self.idx2name:
            return float(table.get(self.idx2name[index], 1.0))
        return 1.0

    def _get_lr(self, index: Any) -> float:
        """The learning rate for ``index``: the current rate times its ``lr_mult``."""
        return self.learning_rate * self._mult(index, self.lr_mult, "lr_mult")

    def _get_wd(self, index: Any) -> float:
        """The weight decay for ``index``: ``wd`` times its ``wd_mult``."""
        return self.wd * self._mult(index, self.wd_mult, "wd_mult")

    def _set_current_context(self, device_id: int) -> None:
        """Count the next updates in device ``device_id``'s table (``num_update`` stays the maximum
        over every device's counts)."""
        self._index_update_count = self._all_index_update_counts.setdefault(int(device_id), {})

    def _update_count(self, index: Any) -> None:
        """Count one more update of ``index`` (and of ``num_update``, the maximum over indices)."""
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(self.num_update, count)

    # -- states and updates -------------------------------------------------------------------
    def create_state(self, index: Any, weight: NDArray) -> Any:
        """The auxiliary state of ``weight`` (None, an NDArray or a tuple of NDArrays)."""
        return None

    # Where a float16 weight's float32 master copy goes in its multi-precision state, as MXNet 1.x
    # orders it: first, ``(master, state)``, for most rules; SGD, NAG and LARS put it last.
    _master_first = True

    def create_state_multi_precision(self, index: Any, weight: NDArray) -> Any:
        """Like :meth:`create_state`; with ``multi_precision`` a float16 weight also gets a float32
        master copy: the state is ``(master, state)``, or ``(state, master)`` for SGD, NAG and LARS
        (MXNet 1.x's orders, so that states saved by either load in the other)."""
        if self.multi_precision and np.dtype(weight.dtype) == np.float16:
            master = weight.astype(np.float32)
            inner = self.create_state(index, master)
            return (master, inner) if self._master_first else (inner, master)
        return self.create_state(index, weight)

    def _plan(self, index: Any, weight: NDArray, state: Any) -> tuple[str, tuple, tuple[float, ...]]:
        """Count one update of ``index`` and return how to apply it: the update kernel's name
        (in ``symjit.kernels.*.optim``), the state arrays and the scalars, in the kernel's order.
        The built-in optimizers define it; :meth:`update` and the fused update of many indices
        both run what it returns."""
        raise NotImplementedError(f"{type(self).__name__}.update")

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        """Update ``weight`` (and ``state``) in place from ``grad``: one kernel call (queued by
        the lazy engine when it is on, :mod:`symjit.lazy`: the updates of a queue run as one
        fused call per kernel)."""
        if _has_sparse(weight, grad, state):
            update_sparse(self, index, weight, grad, state)
            return
        kernel, states, scalars = self._plan(index, weight, state)
        arrays = self._flat(index, weight, grad, *states)
        if lazy.ENGINE.update(self, index, kernel, (weight, grad, *states), scalars):
            return
        dispatch.settle()
        getattr(_kernels(weight), kernel)(*arrays, *scalars)

    def _fusable(self) -> bool:
        """Whether many indices may be updated by one kernel call per kernel (a built-in update
        rule, not one a subclass wrote with its own ``update``)."""
        cls = type(self)
        return (cls._plan is not Optimizer._plan and cls.update is Optimizer.update
                and cls.update_multi_precision is Optimizer.update_multi_precision)

    def _update_many(self, indices: list, weights: list, grads: list, states: list) -> None:
        """Update every ``indices[k]`` as :meth:`update_multi_precision` would, in that order
        (update counts, learning rates), with one kernel call for all parameters sharing a
        kernel, dtype and device (``ndarray.optim_ops.MultiUpdate``). float16 weights under
        ``multi_precision`` are updated one by one through their master copies."""
        groups: dict[tuple, list] = {}
        for idx, w, g, st in zip(indices, weights, grads, states):
            if self.multi_precision and np.dtype(w.dtype) == np.float16:
                self.update_multi_precision(idx, w, g, st)
                continue
            kernel, arrays, scalars = self._plan(idx, w, st)
            groups.setdefault((kernel, w._data.dtype, w.context), []).append(
                (idx, (w, g, *arrays), scalars))
        for (kernel, _, _), members in groups.items():
            self._run_group(kernel, members)

    def _run_queued(self, kernel: str, members: list) -> None:
        """The updates the lazy engine queued for ``kernel`` ((index, arrays, scalars) each, one
        dtype): one kernel call for one, :meth:`_run_group` for more."""
        if len(members) == 1:
            idx, (w, g, *sts), scalars = members[0]
            getattr(_kernels(w), kernel)(*self._flat(idx, w, g, *sts), *scalars)
            return
        self._run_group(kernel, members)

    def _run_group(self, kernel: str, members: list) -> None:
        """One kernel over ``members`` ((index, arrays, scalars) each), through a cached table."""
        key = (kernel, tuple(m[0] for m in members))
        rows = [m[1] for m in members]
        table = self._tables.get(key)
        if table is None or not table.same(rows):
            for idx, (w, g, *sts), _ in members:
                self._flat(idx, w, g, *sts)           # the per-index checks, with their errors
            table = MultiUpdate("multi_" + kernel, rows) if MultiUpdate.disjoint(rows) else None
            self._tables[key] = table
        dispatch.settle()
        if table is None:   # some parameters share memory: one call each, in order
            for idx, (w, g, *sts), scalars in members:
                getattr(_kernels(w), kernel)(*self._flat(idx, w, g, *sts), *scalars)
            return
        table(np.array([m[2] for m in members], np.float64))

    def update_multi_precision(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        """Like :meth:`update`; a float16 weight under ``multi_precision`` is updated through its
        float32 master copy and then rounded back. Lists of indices, weights, gradients and states
        (as MXNet's aggregated updates take them) update each in order."""
        if isinstance(index, (list, tuple)):
            given = (list(index), list(weight), list(grad), list(state))
            if len({len(x) for x in given}) != 1:
                raise ParamError(f"{type(self).__name__}.update_multi_precision: lists of different "
                                 f"lengths: {', '.join(str(len(x)) for x in given)} indices, weights, "
                                 "gradients and states")
            if self._fusable() and not _has_sparse(*given):
                self._update_many(*given)
            else:
                for args in zip(*given):
                    self.update_multi_precision(*args)
            return
        if self.multi_precision and np.dtype(weight.dtype) == np.float16:
            pair = tuple(state) if isinstance(state, (tuple, list)) and len(state) == 2 else None
            master, inner = (pair if self._master_first else pair[::-1]) if pair else (None, None)
            if not isinstance(master, NDArray):
                order = ("(float32 master weight, state)" if self._master_first
                         else "(state, float32 master weight)")
                raise ParamError(f"{type(self).__name__}.update_multi_precision (index {index!r}): "
                                 f"state must be {order} for a float16 weight")
            _check_array(self, index, "grad", grad, weight)
            grad32 = grad.astype(np.float32)
            self.update(index, master, grad32, inner)
            weight._write(Ellipsis, master._host(), "update_multi_precision")
            return
        self.update(index, weight, grad, state)

    def _zeros(self, weight: NDArray) -> NDArray:
        return zeros_like(weight)   # a zero-size weight's state too, whatever the shape semantics

    def _common(self, index: Any) -> tuple[float, float]:
        """Count the update; return (lr, wd) for ``index``."""
        self._update_count(index)
        return self._get_lr(index), self._get_wd(index)

    def _flat(self, index: Any, weight: NDArray, grad: NDArray, *states: Any) -> list[np.ndarray]:
        """Flat views of weight, grad and states, checked: same shape and a float32/float64 dtype.
        The views are kept per index and reused while the same arrays over the same storage come
        back (the checks hold for them), so a training loop's update pays the checks once."""
        given = (weight, grad, *states)
        known = self._views.get(index)
        if known is not None and len(known[0]) == len(given) and all(
                a is b and getattr(a, "_store", None) is d for a, b, d in zip(given, known[0], known[1])):
            return known[2]
        where = f"{type(self).__name__}.update (index {index!r})"
        if not isinstance(weight, NDArray):
            raise DTypeError(f"{where}: weight must be an NDArray, got {type(weight).__name__}")
        if np.dtype(weight.dtype) not in _FLOATS:
            hint = " (use multi_precision=True for float16)" if weight.dtype == np.float16 else ""
            raise DTypeError(f"{where}: weight dtype {np.dtype(weight.dtype).name} is not supported; "
                             f"expected float32 or float64{hint}")
        arrays = [_check_array(self, index, "weight", weight, weight),
                  _check_array(self, index, "grad", grad, weight)]
        arrays += [_check_array(self, index, f"state[{i}]", s, weight) for i, s in enumerate(states)]
        flat = [a.reshape(-1) for a in arrays]
        self._views[index] = (given, tuple(a._store for a in given), flat)
        return flat

    def _states(self, index: Any, state: Any, n: int) -> tuple:
        """``state`` as a tuple of ``n`` arrays (a clear error otherwise)."""
        got = state if isinstance(state, (tuple, list)) else (state,)
        if len(got) != n:
            raise ParamError(f"{type(self).__name__}.update (index {index!r}): expected a state of "
                             f"{n} array(s), got {type(state).__name__} of length {len(got)}")
        return tuple(got)


def _check_array(opt: Optimizer, index: Any, what: str, arr: Any, weight: NDArray) -> np.ndarray:
    """``arr``'s storage, checked against the weight's shape and dtype."""
    where = f"{type(opt).__name__}.update (index {index!r})"
    if not isinstance(arr, NDArray):
        raise DTypeError(f"{where}: {what} must be an NDArray, got {type(arr).__name__}")
    if arr.shape != weight.shape:
        raise ShapeError(f"{where}: {what} shape {shape_str(arr.shape)} does not match the weight's "
                         f"{shape_str(weight.shape)}")
    if np.dtype(arr.dtype) != np.dtype(weight.dtype):
        raise DTypeError(f"{where}: {what} dtype {np.dtype(arr.dtype).name} does not match the "
                         f"weight's {np.dtype(weight.dtype).name}")
    if arr.context != weight.context:
        raise MXNetError(f"{where}: {what} lives on {arr.context}, the weight on {weight.context}")
    data = arr._store      # its elements are not read here (a queued write may be pending)
    if not storage.is_contiguous(data):
        raise MXNetError(f"{where}: {what} must be a contiguous array")
    return data


register = Optimizer.register
create = Optimizer.create_optimizer


# -- sparse weights and gradients -------------------------------------------------------------------

def _take_rows(state: Any, rows: np.ndarray) -> Any:
    """``state`` (None, an NDArray or a tuple/list of them) cut down to the rows ``rows``."""
    if isinstance(state, NDArray):
        return wrap(np.ascontiguousarray(state.asnumpy()[rows]), state.context)
    if isinstance(state, (tuple, list)):
        return type(state)(_take_rows(s, rows) for s in state)
    return state


def _put_rows(state: Any, part: Any, rows: np.ndarray) -> None:
    """Write the rows ``part`` (:func:`_take_rows`'s result, updated) back into ``state``."""
    if isinstance(state, NDArray):
        dense = state.asnumpy()
        dense[rows] = part.asnumpy()
        state._write(Ellipsis, dense, "Optimizer.update")
    elif isinstance(state, (tuple, list)):
        for s, p in zip(state, part):
            _put_rows(s, p, rows)


def _has_sparse(*arrays: Any) -> bool:
    """Whether any of ``arrays`` (NDArrays, None, or tuples/lists of them) is a sparse array."""
    return any(_has_sparse(*a) if isinstance(a, (tuple, list)) else is_sparse(a) for a in arrays)


def _dense_states(state: Any) -> Any:
    """``state`` with each sparse array replaced by a dense copy (the update kernels write dense
    storage only)."""
    if is_sparse(state):
        return state.tostype("default")
    if isinstance(state, (tuple, list)):
        return type(state)(_dense_states(s) for s in state)
    return state


def _store_states(state: Any, dense: Any) -> None:
    """Write :func:`_dense_states`'s updated copies back into the sparse arrays of ``state``."""
    if isinstance(state, NDArray) and state is not dense:
        state._write(Ellipsis, dense.asnumpy(), "Optimizer.update")
    elif isinstance(state, (tuple, list)):
        for s, d in zip(state, dense):
            _store_states(s, d)


def dense_state_weight(weight: NDArray) -> NDArray:
    """The weight an optimizer's state is made for: a sparse weight's states are dense arrays."""
    return weight.tostype("default") if weight.stype != "default" else weight


def update_sparse(opt: Optimizer, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
    """One update where the weight or the gradient is sparse. With a row_sparse gradient and an
    optimizer whose ``lazy_update`` is on (MXNet's default for SGD, Adam, ...), or a row_sparse
    weight and an optimizer whose sparse update always is lazy (``sparse_rows``: FTRL and AdaGrad,
    as MXNet's ``ftrl_update`` and ``_sparse_adagrad_update`` document), only the rows the gradient
    stores are updated, their states too (MXNet's lazy update); otherwise the update is the dense
    one on the dense values. A sparse weight keeps its storage type."""
    if grad.shape != weight.shape:
        raise ShapeError(f"{type(opt).__name__}.update (index {index!r}): grad shape "
                         f"{shape_str(grad.shape)} does not match the weight's {shape_str(weight.shape)}")
    lazy = getattr(opt, "lazy_update", False) or (getattr(opt, "sparse_rows", False)
                                                   and weight.stype == "row_sparse")
    if grad.stype == "row_sparse" and lazy:
        rows = grad.indices.asnumpy()
        if rows.size == 0:
            opt._update_count(index)
            return
        part_w = _take_rows(weight, rows)
        part_s = _take_rows(state, rows)
        opt.update_multi_precision(index, part_w, grad.data.astype(part_w.dtype, copy=False), part_s)
        dense = weight.asnumpy()
        dense[rows] = part_w.asnumpy()
        weight._write(Ellipsis, dense, "Optimizer.update")
        _put_rows(state, part_s, rows)
        return
    dense_w, dense_s = dense_state_weight(weight), _dense_states(state)
    opt.update_multi_precision(index, dense_w, grad.tostype("default"), dense_s)
    _store_states(state, dense_s)
    if dense_w is not weight:
        weight._write(Ellipsis, dense_w.asnumpy(), "Optimizer.update")

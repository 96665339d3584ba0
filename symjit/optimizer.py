"""``mx.optimizer``: MXNet 1.x's weight-update rules (SGD, NAG, Adam, RMSProp, AdaGrad, AdaDelta).

Every ``update`` is one compiled kernel call that rewrites the weight and its state in place
(``symjit.kernels.cpu.optim``); gradients are rescaled by ``rescale_grad``, clipped to
``[-clip_gradient, clip_gradient]`` and weight-decayed by ``wd`` exactly as MXNet 1.x documents.

>>> import symjit as mx
>>> opt = mx.optimizer.create('sgd', learning_rate=0.1, momentum=0.9)
>>> updater = mx.optimizer.get_updater(opt)
>>> w = mx.nd.ones((2,))
>>> updater(0, mx.nd.ones((2,)), w)
>>> [round(v, 6) for v in w.asnumpy().tolist()]
[0.9, 0.9]
"""
from __future__ import annotations

import json
import math
import sys
import warnings
from typing import Any

import numpy as np

from .base import DTypeError, FormatError, MXNetError, ParamError, ShapeError, shape_str
from .context import cpu
from .ndarray import NDArray, load_frombuffer, save_tobuffer, storage, zeros
from .ndarray.ndarray import wrap
from .ndarray.optim_ops import MultiUpdate, update_kernels

__all__ = ["Optimizer", "SGD", "NAG", "Adam", "RMSProp", "AdaGrad", "AdaDelta", "Adamax", "Nadam", "Signum",
           "FTML", "Ftrl", "DCASGD", "SGLD", "LAMB", "LARS", "LBSGD", "Updater", "register", "create",
           "get_updater"]

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
        self._index_update_count: dict[Any, int] = {}
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
        """Update ``weight`` (and ``state``) in place from ``grad``: one kernel call."""
        kernel, states, scalars = self._plan(index, weight, state)
        arrays = self._flat(index, weight, grad, *states)
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
            if self._fusable():
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
        return zeros(weight.shape, weight.context, dtype=weight.dtype)

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
                a is b and getattr(a, "_data", None) is d for a, b, d in zip(given, known[0], known[1])):
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
        self._views[index] = (given, tuple(a._data for a in given), flat)
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
    data = arr._data
    if not storage.is_contiguous(data):
        raise MXNetError(f"{where}: {what} must be a contiguous array")
    return data


register = Optimizer.register
create = Optimizer.create_optimizer


@register
class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (MXNet's ``sgd_update``/``sgd_mom_update``):
    ``state = momentum * state + lr * (clip(rescale_grad * grad) + wd * weight); weight -= state``.

    The momentum state is stored negated, as MXNet's fused op keeps it (``weight += state``).

    >>> import symjit as mx
    >>> opt, w = mx.optimizer.SGD(learning_rate=0.5), mx.nd.ones((2,))
    >>> opt.update(0, w, mx.nd.ones((2,)), opt.create_state(0, w))
    >>> w.asnumpy().tolist()
    [0.5, 0.5]
    """

    _momentum_kernel = "sgd_mom_update"
    _master_first = False

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum = float(momentum)
        self.lazy_update = bool(lazy_update)

    def create_state(self, index: Any, weight: NDArray) -> NDArray | None:
        """The momentum buffer (zeros), or None without momentum."""
        return self._zeros(weight) if self.momentum != 0.0 else None

    def _plan(self, index: Any, weight: NDArray, state: Any) -> tuple[str, tuple, tuple[float, ...]]:
        lr, wd = self._common(index)
        clip = _clip(self.clip_gradient)
        if state is None:
            return "sgd_update", (), (lr, wd, self.rescale_grad, clip)
        return (self._momentum_kernel, self._states(index, state, 1),
                (lr, self.momentum, wd, self.rescale_grad, clip))


@register
class NAG(SGD):
    """Nesterov accelerated gradient, as MXNet 1.9.1's ``nag_mom_update`` computes it: with ``g =
    clip(rescale_grad * grad) + wd * weight``, ``state = momentum * state - lr * g; weight +=
    momentum * state - lr * g`` (plain SGD without momentum). For a constant learning rate the
    weights are those of the documented ``state = momentum * state + g; weight -= lr * (g +
    momentum * state)``; the state is ``-lr`` times that one.

    >>> import symjit as mx
    >>> opt, w = mx.optimizer.NAG(momentum=0.5, learning_rate=0.1), mx.nd.zeros((1,))
    >>> opt.update(0, w, mx.nd.ones((1,)), opt.create_state(0, w))
    >>> round(float(w.asnumpy()[0]), 6)
    -0.15
    """

    _momentum_kernel = "nag_mom_update"

    def __init__(self, momentum: float = 0.0, **kwargs: Any):
        super().__init__(momentum=momentum, **kwargs)


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba) with MXNet's bias correction folded into the step size:
    ``lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t)`` with ``t`` the index's update count, and
    ``g = clip(rescale_grad * grad + wd * weight)`` (weight decay before clipping, as MXNet 1.x).

    >>> import symjit as mx
    >>> opt, w = mx.optimizer.Adam(learning_rate=0.1), mx.nd.zeros((1,))
    >>> opt.update(0, w, mx.nd.ones((1,)), opt.create_state(0, w))
    >>> round(float(w.asnumpy()[0]), 5)
    -0.1
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.lazy_update = bool(lazy_update)

    def create_state(self, index: Any, weight: NDArray) -> tuple[NDArray, NDArray]:
        """``(mean, var)``, both zeros."""
        return self._zeros(weight), self._zeros(weight)

    def _plan(self, index: Any, weight: NDArray, state: Any) -> tuple[str, tuple, tuple[float, ...]]:
        lr, wd = self._common(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        return "adam_wdclip_update", self._states(index, state, 2), (
            lr, self.beta1, self.beta2, self.epsilon, wd, self.rescale_grad, _clip(self.clip_gradient))


@register
class RMSProp(Optimizer):
    """RMSProp: Tieleman & Hinton's (``centered=False``) or Graves's centered variant.

    With ``g = clip(rescale_grad * grad + wd * weight)``: ``n = (1-gamma1) g^2 + gamma1 n``, then
    ``weight -= lr g / sqrt(n + epsilon)``; centered also tracks ``a = (1-gamma1) g + gamma1 a`` and
    ``delta = gamma2 delta - lr g / sqrt(n - a^2 + epsilon); weight += delta``. ``clip_weights``
    clips the result to ``[-clip_weights, clip_weights]``.

    >>> import symjit as mx
    >>> opt, w = mx.optimizer.RMSProp(learning_rate=0.1, epsilon=0.0), mx.nd.zeros((1,))
    >>> opt.update(0, w, mx.nd.ones((1,)), opt.create_state(0, w))
    >>> round(float(w.asnumpy()[0]), 5)   # -0.1 / sqrt(0.1)
    -0.31623
    """

    def __init__(self, learning_rate: float = 0.001, gamma1: float = 0.9, gamma2: float = 0.9,
                 epsilon: float = 1e-8, centered: bool = False, clip_weights: float | None = None,
                 **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2, self.epsilon = float(gamma1), float(gamma2), float(epsilon)
        self.centered = bool(centered)
        self.clip_weights = clip_weights

    def create_state(self, index: Any, weight: NDArray) -> tuple:
        """``(n,)``, or ``(n, g, delta)`` when centered; all zeros."""
        return tuple(self._zeros(weight) for _ in range(3 if self.centered else 1))

    def _plan(self, index: Any, weight: NDArray, state: Any) -> tuple[str, tuple, tuple[float, ...]]:
        lr, wd = self._common(index)
        clip, cw = _clip(self.clip_gradient), _clip(self.clip_weights)
        if not self.centered:
            return "rmsprop_wdclip_update", self._states(index, state, 1), (
                lr, self.gamma1, self.epsilon, wd, self.rescale_grad, clip, cw)
        return "rmspropalex_update", self._states(index, state, 3), (
            lr, self.gamma1, self.gamma2, self.epsilon, wd, self.rescale_grad, clip, cw)


@register
class AdaGrad(Optimizer):
    """AdaGrad: with ``g = clip(rescale_grad * grad)``, ``history += g^2`` and
    ``weight -= lr * (g / sqrt(history + eps) + wd * weight)``.

    >>> import symjit as mx
    >>> opt, w = mx.optimizer.AdaGrad(learning_rate=0.1, eps=0.0), mx.nd.zeros((1,))
    >>> opt.update(0, w, mx.nd.array([2.0]), opt.create_state(0, w))
    >>> round(float(w.asnumpy()[0]), 6)
    -0.1
    """

    def __init__(self, eps: float = 1e-7, **kwargs: Any):
        super().__init__(**kwargs)
        self.float_stable_eps = float(eps)

    def create_state(self, index: Any, weight: NDArray) -> NDArray:
        """The squared-gradient history (zeros)."""
        return self._zeros(weight)

    def _plan(self, index: Any, weight: NDArray, state: Any) -> tuple[str, tuple, tuple[float, ...]]:
        lr, wd = self._common(index)
        return "adagrad_update", self._states(index, state, 1), (
            lr, self.float_stable_eps, wd, self.rescale_grad, _clip(self.clip_gradient))


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler): with ``g = clip(rescale_grad * grad)``, ``acc_g = rho acc_g + (1-rho) g^2``,
    ``delta = sqrt(acc_delta + eps) / sqrt(acc_g + eps) * g``, ``acc_delta = rho acc_delta +
    (1-rho) delta^2`` and ``weight -= delta + wd * weight``. The learning rate is not used.

    >>> import symjit as mx
    >>> opt, w = mx.optimizer.AdaDelta(rho=0.5, epsilon=1.0), mx.nd.zeros((1,))
    >>> opt.update(0, w, mx.nd.array([1.0]), opt.create_state(0, w))
    >>> round(float(w.asnumpy()[0]), 6)   # -sqrt(1) / sqrt(0.5 + 1)
    -0.816497
    """

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs: Any):
        super().__init__(**kwargs)
        self.rho, self.epsilon = float(rho), float(epsilon)

    def create_state(self, index: Any, weight: NDArray) -> tuple[NDArray, NDArray]:
        """``(acc_g, acc_delta)``, both zeros."""
        return self._zeros(weight), self._zeros(weight)

    def _plan(self, index: Any, weight: NDArray, state: Any) -> tuple[str, tuple, tuple[float, ...]]:
        _, wd = self._common(index)
        return "adadelta_update", self._states(index, state, 2), (
            self.rho, self.epsilon, wd, self.rescale_grad, _clip(self.clip_gradient))


# -- Updater: lazily created per-index states, saved in MXNet's NDArray list format ---------------

_META = "__symjit_optimizer_states__"
_FORMAT_VERSION = 2    # 1: float16 states of SGD, NAG and LARS as (master, state)
_MAX_DEPTH = 8
_SCALARS = (int, float, str, bool, type(None))
_TABLES = ("lr_mult", "wd_mult", "idx2name", "_index_update_count")


class Updater:
    """Calls ``optimizer.update`` for ``(index, grad, weight)``, creating each index's state on its
    first update and keeping it (``states``). Indices may also be given as lists.

    >>> import symjit as mx
    >>> upd = mx.optimizer.get_updater(mx.optimizer.Adam())
    >>> upd(3, mx.nd.ones((2,)), mx.nd.zeros((2,)))
    >>> sorted(upd.states), len(upd.states[3])
    ([3], 2)
    """

    def __init__(self, optimizer: Optimizer):
        if not isinstance(optimizer, Optimizer):
            raise ParamError(f"Updater: optimizer must be an Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        self.states: dict[Any, Any] = {}
        self.states_synced: dict[Any, bool] = {}

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        if isinstance(index, (list, tuple)):
            if not (isinstance(grad, (list, tuple)) and isinstance(weight, (list, tuple))
                    and len(grad) == len(index) == len(weight)):
                raise ParamError(f"Updater: {len(index)} indices need as many grads and weights")
            triples = list(zip(index, grad, weight))
        else:
            triples = [(index, grad, weight)]
        for idx, g, w in triples:
            if not isinstance(w, NDArray) or not isinstance(g, NDArray):
                raise DTypeError(f"Updater (index {idx!r}): grad and weight must be NDArrays, got "
                                 f"{type(g).__name__} and {type(w).__name__}")
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, w)
                self.states_synced[idx] = True
            elif not self.states_synced.get(idx, True):   # loaded by set_states: onto the weight's device
                self.states[idx] = self.sync_state_context(self.states[idx], w.context)
                self.states_synced[idx] = True
        opt = self.optimizer
        if len(triples) > 1 and opt._fusable():
            indices = [t[0] for t in triples]
            opt._update_many(indices, [t[2] for t in triples], [t[1] for t in triples],
                             [self.states[i] for i in indices])
            return
        for idx, g, w in triples:
            opt.update_multi_precision(idx, w, g, self.states[idx])

    def sync_state_context(self, state: Any, context: Any) -> Any:
        """``state`` (an NDArray, or a tuple/list of them, or None) on ``context``: states loaded
        by :meth:`set_states` are on the CPU until their weight's first update."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            return type(state)(self.sync_state_context(s, context) for s in state)
        return state

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states (and with ``dump_optimizer`` the optimizer's settings and update counts) as
        bytes in MXNet's NDArray list format; read back with :meth:`set_states`."""
        arrays: dict[str, NDArray] = {}
        entries = [[_json_index(idx, "get_states"), _flatten(s, arrays, 0)] for idx, s in self.states.items()]
        meta = {"version": _FORMAT_VERSION, "states": entries,
                "optimizer": _optimizer_json(self.optimizer) if dump_optimizer else None}
        raw = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8).copy()
        arrays[_META] = wrap(raw, cpu())
        return save_tobuffer(arrays)

    def set_states(self, states: bytes) -> None:
        """Load what :meth:`get_states` wrote, or what MXNet 1.x's ``get_states`` wrote (a pickle,
        read without unpickling: :mod:`symjit.optimizer_states`; MXNet's pickled optimizer in a
        ``dump_optimizer=True`` file is not read, the current optimizer keeps its settings)."""
        if not isinstance(states, (bytes, bytearray, memoryview)):
            raise ParamError(f"Updater.set_states: expected bytes, got {type(states).__name__}")
        from .optimizer_states import is_pickle, read_mxnet_states
        if is_pickle(bytes(states)):
            loaded, with_optimizer = read_mxnet_states(bytes(states))
            if with_optimizer:
                warnings.warn("Updater.set_states: MXNet's pickled optimizer is not read; the states "
                              f"load into the current {type(self.optimizer).__name__}", UserWarning,
                              stacklevel=2)
            self.states = loaded
            self.states_synced = dict.fromkeys(loaded, False)
            return
        try:
            arrays = load_frombuffer(bytes(states))
        except FormatError as exc:
            raise FormatError("Updater.set_states: not a symjit optimizer-state buffer (pickled "
                              f"MXNet states are never loaded): {exc}") from exc
        meta = _read_meta(arrays)
        loaded = {}
        for entry in meta["states"]:
            if not (isinstance(entry, list) and len(entry) == 2):
                raise FormatError(f"Updater.set_states: malformed state entry {entry!r:.80}")
            loaded[_json_index(entry[0], "set_states", FormatError)] = _unflatten(entry[1], arrays, 0)
        if meta.get("optimizer") is not None:
            self.optimizer = _optimizer_from_json(meta["optimizer"], self.optimizer)
        if meta["version"] == 1 and not self.optimizer._master_first:
            # version 1 kept every float16 weight's (master, state); SGD, NAG and LARS now keep
            # MXNet's (state, master), and their only two-array states are those
            loaded = {k: v[::-1] if isinstance(v, tuple) and len(v) == 2 else v for k, v in loaded.items()}
        self.states = loaded
        self.states_synced = dict.fromkeys(loaded, False)


def get_updater(optimizer: Optimizer) -> Updater:
    """An :class:`Updater` applying ``optimizer``.

    >>> import symjit as mx
    >>> w = mx.nd.ones((1,)); mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=1.0))(0, w, w)
    >>> w.asnumpy().tolist()
    [0.0]
    """
    return Updater(optimizer)


def _json_index(idx: Any, where: str, err: type = ParamError) -> int | str:
    if isinstance(idx, bool) or not isinstance(idx, (int, str)):
        raise err(f"Updater.{where}: parameter index {idx!r} must be an int or a str")
    return idx


def _flatten(state: Any, arrays: dict[str, NDArray], depth: int) -> Any:
    """A JSON tree of ``state``: None, an array key, or a list of trees (tuples)."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        key = f"s{len(arrays)}"
        arrays[key] = state
        return key
    if isinstance(state, (tuple, list)) and depth < _MAX_DEPTH:
        return [_flatten(s, arrays, depth + 1) for s in state]
    raise ParamError(f"Updater.get_states: a state of type {type(state).__name__} cannot be saved")


def _unflatten(tree: Any, arrays: dict, depth: int) -> Any:
    if tree is None:
        return None
    if isinstance(tree, str) and tree != _META and tree in arrays:
        return arrays[tree]
    if isinstance(tree, list) and depth < _MAX_DEPTH:
        return tuple(_unflatten(t, arrays, depth + 1) for t in tree)
    raise FormatError(f"Updater.set_states: malformed state {tree!r:.80} (unknown array or too deep)")


def _read_meta(arrays: Any) -> dict:
    if not isinstance(arrays, dict) or _META not in arrays:
        raise FormatError("Updater.set_states: the buffer has no optimizer-state metadata")
    raw = arrays[_META]._host()
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise FormatError(f"Updater.set_states: metadata must be 1-d uint8, got {raw.dtype} "
                          f"{shape_str(raw.shape)}")
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FormatError(f"Updater.set_states: unreadable metadata: {exc}") from exc
    if not (isinstance(meta, dict) and meta.get("version") in (1, _FORMAT_VERSION)
            and isinstance(meta.get("states"), list)):
        raise FormatError(f"Updater.set_states: unsupported metadata (version {meta.get('version')!r})"
                          if isinstance(meta, dict) else "Updater.set_states: metadata is not an object")
    return meta


def _optimizer_json(opt: Optimizer) -> dict:
    """The optimizer's plain settings and tables (the scheduler and symbol are not saved)."""
    attrs = {k: v for k, v in vars(opt).items() if isinstance(v, _SCALARS)}
    tables = {t: [[i, v] for i, v in getattr(opt, t).items()
                  if isinstance(i, (int, str)) and not isinstance(i, bool) and isinstance(v, _SCALARS)]
              for t in _TABLES}
    return {"class": type(opt).__name__.lower(), "attrs": attrs, "tables": tables}


def _compatible(old: Any, new: Any) -> bool:
    numbers = (int, float)
    if isinstance(old, bool) or isinstance(new, bool):
        return isinstance(old, bool) and isinstance(new, bool)
    return (old is None or new is None or type(old) is type(new)
            or (isinstance(old, numbers) and isinstance(new, numbers)))


def _optimizer_from_json(info: Any, current: Optimizer) -> Optimizer:
    """A copy of ``current`` (or a new optimizer of the saved class) with the saved settings."""
    if not (isinstance(info, dict) and isinstance(info.get("attrs"), dict)
            and isinstance(info.get("tables"), dict)):
        raise FormatError("Updater.set_states: malformed optimizer record")
    klass = Optimizer.opt_registry.get(str(info.get("class")))
    if klass is None:
        raise FormatError(f"Updater.set_states: unknown optimizer {info.get('class')!r:.40}")
    opt = _copy(current) if type(current) is klass else klass()
    for key, value in info["attrs"].items():
        if key in vars(opt) and isinstance(value, _SCALARS) and _compatible(getattr(opt, key), value):
            setattr(opt, key, value)
    for table in _TABLES:
        rows = info["tables"].get(table, [])
        if not isinstance(rows, list) or not all(
                isinstance(r, list) and len(r) == 2 and isinstance(r[0], (int, str))
                and isinstance(r[1], _SCALARS) for r in rows):
            raise FormatError(f"Updater.set_states: malformed optimizer table {table!r}")
        setattr(opt, table, {r[0]: r[1] for r in rows})
    return opt


def _copy(opt: Optimizer) -> Optimizer:
    new = object.__new__(type(opt))
    new.__dict__.update(vars(opt))
    return new


# the other rules (compiled kernels too), registered like the others
from . import optimizer_contrib as contrib  # noqa: E402, F401  (mx.optimizer.contrib)
from .optimizer_host import DCASGD, FTML, LAMB, LARS, LBSGD, SGLD, Adamax, Ftrl, Nadam, Signum  # noqa: E402, F401

sys.modules[__name__ + ".contrib"] = contrib

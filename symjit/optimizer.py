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

from . import optimizer_contrib as contrib  # noqa: F401  (mx.optimizer.contrib)
from .base import DTypeError, FormatError, ParamError, shape_str
from .context import cpu
from .ndarray import NDArray, load_frombuffer, save_tobuffer
from .ndarray.ndarray import wrap

# the base class and registry (mx.optimizer's names); the other rules (compiled kernels too)
# register like the ones below
from .optimizer_base import (  # noqa: F401
    Optimizer,
    SchedulerConflictError,
    _clip,
    create,
    dense_state_weight,
    register,
    update_sparse,
)
from .optimizer_host import DCASGD, FTML, LAMB, LARS, LBSGD, SGLD, Adamax, Ftrl, Nadam, Signum  # noqa: F401

__all__ = ["Optimizer", "SGD", "NAG", "Adam", "RMSProp", "AdaGrad", "AdaDelta", "Adamax", "Nadam", "Signum",
           "FTML", "Ftrl", "DCASGD", "SGLD", "LAMB", "LARS", "LBSGD", "Updater", "register", "create",
           "get_updater"]


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

    sparse_rows = True      # a row_sparse weight: only the gradient's rows (see update_sparse)

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
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, dense_state_weight(w))
                self.states_synced[idx] = True
            elif not self.states_synced.get(idx, True):   # loaded by set_states: onto the weight's device
                self.states[idx] = self.sync_state_context(self.states[idx], w.context)
                self.states_synced[idx] = True
        opt = self.optimizer
        opt._set_current_context(triples[0][2].context.device_id)
        if any(t[1].stype != "default" or t[2].stype != "default" for t in triples):
            for idx, g, w in triples:       # sparse weights or gradients: one at a time
                if g.stype != "default" or w.stype != "default":
                    update_sparse(opt, idx, w, g, self.states[idx])
                else:
                    opt.update_multi_precision(idx, w, g, self.states[idx])
            return
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
    # the saved counts (of the device last updated) become every device's
    opt._all_index_update_counts = {d: dict(opt._index_update_count)
                                    for d in getattr(current, "_all_index_update_counts", {0: None})}
    opt._index_update_count = next(iter(opt._all_index_update_counts.values()))
    return opt


def _copy(opt: Optimizer) -> Optimizer:
    new = object.__new__(type(opt))
    new.__dict__.update(vars(opt))
    return new


sys.modules[__name__ + ".contrib"] = contrib

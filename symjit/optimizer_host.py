"""The optimizers beyond SGD, NAG, Adam, RMSProp, AdaGrad and AdaDelta, with MXNet 1.x's rules.

All are compiled update kernels like those (``symjit.kernels.cpu.optim``/``cuda.optim``, the
per-element steps of ``symjit.kernels.optim_steps``, shared with the registered ``signum_update``/
``signsgd_update``, ``ftml_update`` and ``ftrl_update`` operators), so an ``Updater`` given many
indices updates all of them in one call per kernel. LAMB, LARS and LBSGD (with 'lars') scale a
parameter's step by norms over the whole parameter: their kernels take two passes over it (on a
GPU, a block per parameter). SGLD's noise is drawn on the host. All are registered in
``mx.optimizer`` with the others.

>>> import symjit as mx
>>> opt, w = mx.optimizer.Signum(learning_rate=0.1, momentum=0.0), mx.nd.ones((2,))
>>> opt.update(0, w, mx.nd.array([1.0, -1.0]), opt.create_state(0, w))
>>> [round(v, 5) for v in w.asnumpy().tolist()]
[0.9, 1.1]
"""
from __future__ import annotations

import math
from typing import Any

from .base import ParamError
from .ndarray import NDArray
from .optimizer_base import Optimizer, _clip, register

__all__ = ["Adamax", "Nadam", "Signum", "FTML", "Ftrl", "DCASGD", "SGLD", "LAMB", "LARS", "LBSGD"]


class _Fused(Optimizer):
    """A rule run by a compiled update kernel (``_plan``), so that an ``Updater`` given many
    indices updates them all in one call per kernel (:meth:`Optimizer._update_many`). Its state
    is ``n_states`` zero arrays shaped like the weight (None for none, the array itself for one)."""

    n_states = 0

    def create_state(self, index: Any, weight: NDArray) -> Any:
        states = tuple(self._zeros(weight) for _ in range(self.n_states))
        return None if not states else states[0] if len(states) == 1 else states

    def _scalars(self) -> tuple[float, float]:
        return self.rescale_grad, _clip(self.clip_gradient)

    def _scratch(self, store: dict, index: Any, weight: NDArray) -> NDArray:
        """``store[index]``: an array like ``weight`` kept across updates (not part of the state
        MXNet saves), made anew when the weight's shape, dtype or device changes."""
        buf = store.get(index)
        if buf is None or (buf.shape, buf.dtype, buf.context) != (weight.shape, weight.dtype, weight.context):
            buf = store[index] = self._zeros(weight)
        return buf


@register
class Adamax(_Fused):
    """AdaMax (Kingma & Ba, the infinity-norm Adam): ``m = b1 m + (1-b1) g; u = max(b2 u, |g|);
    w -= lr / (1 - b1^t) * m / u`` with ``g = clip(rescale grad + wd w)`` (weight decay before
    clipping, as MXNet)."""

    n_states = 2

    def __init__(self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2 = float(beta1), float(beta2)

    def _plan(self, index, weight, state):
        lr, wd = self._common(index)
        lr /= 1.0 - self.beta1 ** self._index_update_count[index]
        return "adamax_update", self._states(index, state, 2), (
            lr, self.beta1, self.beta2, wd, *self._scalars())


@register
class Nadam(_Fused):
    """Adam with Nesterov momentum (Dozat), MXNet's form with ``schedule_decay``: the momentum
    schedule ``m_schedule`` is the product over every update this optimizer made."""

    n_states = 2

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, schedule_decay: float = 0.004, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.schedule_decay, self.m_schedule = float(schedule_decay), 1.0

    def _plan(self, index, weight, state):
        lr, wd = self._common(index)
        t = self._index_update_count[index]
        mom_t = self.beta1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))
        mom_t1 = self.beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        self.m_schedule *= mom_t
        coef_g = (1.0 - mom_t) / (1.0 - self.m_schedule)
        coef_m = mom_t1 / (1.0 - self.m_schedule * mom_t1)
        return "nadam_update", self._states(index, state, 2), (
            lr, self.beta1, self.beta2, self.epsilon, wd, *self._scalars(), coef_g, coef_m,
            1.0 - self.beta2 ** t)


@register
class Signum(_Fused):
    """SignSGD / Signum (Bernstein et al.): with ``momentum``, ``mom = momentum mom - (1-momentum)
    (wd w + g); w = (1 - lr wd_lh) w + lr sign(mom)``; without, ``w = (1 - lr wd) w - lr sign(g)``
    (``g`` the rescaled, clipped gradient): the steps of ``signum_update``/``signsgd_update``."""

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum, self.wd_lh = float(momentum), float(wd_lh)

    def create_state(self, index, weight):
        return self._zeros(weight) if self.momentum != 0.0 else None

    def _plan(self, index, weight, state):
        lr, wd = self._common(index)
        if state is None:
            return "signsgd_update", (), (lr, wd, *self._scalars())
        return "signum_update", self._states(index, state, 1), (
            lr, self.momentum, wd, *self._scalars(), self.wd_lh)


@register
class FTML(_Fused):
    """Follow the Moving Leader (Zheng & Kwok), states ``(d, v, z)``: the step of ``ftml_update``."""

    n_states = 3

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8, **kwargs: Any):
        super().__init__(**kwargs)      # learning_rate: the Optimizer's default, 0.01, as MXNet 1.x
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)

    def _plan(self, index, weight, state):
        lr, wd = self._common(index)
        return "ftml_update", self._states(index, state, 3), (
            lr, self.beta1, self.beta2, self.epsilon, float(self._index_update_count[index]), wd,
            *self._scalars())


@register
class Ftrl(_Fused):
    """FTRL-Proximal (McMahan et al.), states ``(z, n)``: ``w = (sign(z) lamda1 - z) / ((beta +
    sqrt(n)) / lr + wd)`` where ``|z| > lamda1``, else 0 (the step of ``ftrl_update``)."""

    n_states = 2
    sparse_rows = True      # a row_sparse weight: only the gradient's rows (see update_sparse)

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1.0, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1, self.beta = float(lamda1), float(beta)

    def _plan(self, index, weight, state):
        lr, wd = self._common(index)
        return "ftrl_update", self._states(index, state, 2), (
            lr, self.lamda1, self.beta, wd, *self._scalars())


@register
class DCASGD(_Fused):
    """Delay-compensated async SGD (Zheng et al.), states ``(momentum or None, previous weight)``:
    ``mom = momentum mom - lr (g + wd w + lamda g^2 (w - w_prev)); w_prev = w; w += mom``."""

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum, self.lamda = float(momentum), float(lamda)

    def create_state(self, index, weight):
        mom = self._zeros(weight) if self.momentum != 0.0 else None
        return mom, weight.copy()

    def _plan(self, index, weight, state):
        lr, wd = self._common(index)
        if not (isinstance(state, (tuple, list)) and len(state) == 2):
            raise ParamError(f"DCASGD.update (index {index!r}): expected a state (momentum or None, "
                             f"previous weight), got {type(state).__name__}")
        mom, prev = state
        if mom is None:
            return "dcasgd_update", (prev,), (lr, self.lamda, wd, *self._scalars())
        return "dcasgd_mom_update", (mom, prev), (lr, self.momentum, self.lamda, wd, *self._scalars())


@register
class SGLD(_Fused):
    """Stochastic gradient Langevin dynamics: ``w += -lr/2 (g + wd w) + N(0, sqrt(lr))``. The noise
    comes from ``mx.random``'s generator (reproducible under ``mx.random.seed``), drawn on the host
    per parameter in update order into a buffer kept per index, which the kernel adds."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._noise: dict[Any, NDArray] = {}

    def _plan(self, index, weight, state):
        from . import random as _random
        lr, wd = self._common(index)
        noise = self._scratch(self._noise, index, weight)
        noise[:] = _random._rng.normal(0.0, math.sqrt(lr), size=weight.shape).astype(noise.dtype)
        return "sgld_update", (noise,), (lr, wd, *self._scalars())


@register
class LAMB(_Fused):
    """LAMB (You et al.), states ``(mean, var)``: Adam's direction ``r = m_hat / (sqrt(v_hat) + eps)
    + wd w`` of ``g = clip(rescale grad)``, then ``w -= lr (||w|| / ||r||) r`` (``||w||`` clamped to
    ``[lower_bound, upper_bound]`` when given; ratio 1 when a norm is 0): the rule of
    ``lamb_update_phase1`` and ``lamb_update_phase2`` in one kernel (norms summed in float64; ``r``
    goes through a scratch array kept per index, as phase 1's output does in MXNet)."""

    n_states = 2

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound: float | None = None, upper_bound: float | None = None,
                 bias_correction: bool = True, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bool(bias_correction)
        self._direction: dict[Any, NDArray] = {}

    def _plan(self, index, weight, state):
        lr, wd = self._common(index)
        t = self._index_update_count[index]
        inv1, inv2 = ((1.0 / (1.0 - self.beta1 ** t), 1.0 / (1.0 - self.beta2 ** t)) if self.bias_correction
                      else (1.0, 1.0))
        lower = -1.0 if self.lower_bound is None else float(self.lower_bound)
        upper = -1.0 if self.upper_bound is None else float(self.upper_bound)
        arrays = (*self._states(index, state, 2), self._scratch(self._direction, index, weight))
        return "lamb_update", arrays, (
            lr, self.beta1, self.beta2, self.epsilon, wd, *self._scalars(), inv1, inv2, lower, upper)


_NO_TRUST = ("gamma", "beta", "bias")


@register
class LARS(_Fused):
    """LARS (You et al.), MXNet 1.x's: SGD (with momentum) at a per-layer rate ``lr eta ||w|| /
    (||g|| + wd ||w|| + eps)``, ``||g||`` the norm of ``rescale_grad * grad`` (``lr`` where a norm
    is 0); parameters named ``*bias``, ``*gamma``, ``*beta`` keep ``lr``. With
    ``momentum_correction`` the momentum is scaled by the ratio of the current to the previous
    learning rate (1 unless a scheduler changes it), per update call as in MXNet's per-parameter
    path. ``lazy_update`` is accepted for MXNet's signature (all arrays here are dense)."""

    _master_first = False     # a float16 weight's state is (momentum, master), as MXNet's LARS

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, eta: float = 0.001, eps: float = 0.0,
                 momentum_correction: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum, self.eta, self.eps = float(momentum), float(eta), float(eps)
        self.lazy_update, self.momentum_correction = bool(lazy_update), bool(momentum_correction)
        self.cur_lr: float | None = None
        self.last_lr: float | None = None

    def create_state(self, index, weight):
        return self._zeros(weight) if self.momentum != 0.0 else None

    def _momentum(self) -> float:
        """The momentum of this update call (MXNet's ``cur_lr / last_lr`` correction)."""
        base = self.learning_rate
        self.last_lr = base if self.cur_lr is None else self.cur_lr
        self.cur_lr = base
        if self.momentum_correction and self.last_lr != 0:
            return self.momentum * (self.cur_lr / self.last_lr)
        return self.momentum

    def _plan(self, index, weight, state):
        lr, wd = self._common(index)
        momentum = self._momentum()
        trust = 0.0 if str(self.idx2name.get(index, index)).endswith(_NO_TRUST) else 1.0
        rescale, clip = self._scalars()
        if state is None:
            return "lars_update", (), (lr, self.eta, self.eps, wd, rescale, clip, trust)
        return "lars_mom_update", self._states(index, state, 1), (
            lr, momentum, self.eta, self.eps, wd, rescale, clip, trust)


@register
class LBSGD(_Fused):
    """Large-batch SGD: emulates a batch ``batch_scale`` times larger. Each index's gradients are
    summed over ``batch_scale`` consecutive updates (counted from ``begin_epoch *
    updates_per_epoch``); at every ``batch_scale``-th one their mean takes an SGD (momentum)
    step, the others leave the weight as it is. The step's learning rate is multiplied by a
    warmup factor rising from 1 to ``batch_scale`` over ``warmup_epochs * updates_per_epoch``
    updates (``warmup_strategy`` 'linear', 'power2' or 'sqrt'), or, with 'lars', by the layer's
    trust ratio ``sqrt(|w|^2 / (|g|^2 + wd |w|^2))`` clipped to [0.01, 100]. The summed gradient
    is a buffer kept per index; the learning rate is read before the update is counted, as in
    MXNet.

    >>> import symjit as mx
    >>> opt = mx.optimizer.LBSGD(learning_rate=0.1, batch_scale=2, warmup_epochs=0)   # lr x 2 at once
    >>> w = mx.nd.ones((1,))
    >>> for g in (1.0, 3.0):
    ...     opt.update(0, w, mx.nd.array([g]), opt.create_state(0, w))
    ...     print(round(float(w.asnumpy()[0]), 4))
    1.0
    0.6
    """

    _STRATEGIES = ("linear", "power2", "sqrt", "lars")

    def __init__(self, momentum: float = 0.0, multi_precision: bool = False, warmup_strategy: str = "linear",
                 warmup_epochs: int = 5, batch_scale: int = 1, updates_per_epoch: int = 32,
                 begin_epoch: int = 0, num_epochs: int = 60, **kwargs: Any):
        super().__init__(multi_precision=multi_precision, **kwargs)
        if warmup_strategy not in self._STRATEGIES:
            raise ParamError(f"LBSGD: warmup_strategy must be one of {list(self._STRATEGIES)}, "
                             f"got {warmup_strategy!r}")
        if int(batch_scale) < 1:
            raise ParamError(f"LBSGD: batch_scale must be >= 1, got {batch_scale}")
        self.momentum, self.warmup_strategy = float(momentum), warmup_strategy
        self.warmup_epochs, self.batch_scale = int(warmup_epochs), int(batch_scale)
        self.updates_per_epoch, self.num_epochs = int(updates_per_epoch), int(num_epochs)
        self.init_updates = int(begin_epoch) * self.updates_per_epoch
        self._sums: dict[Any, NDArray] = {}           # index -> the summed gradient
        self._counts: dict[Any, list] = {}            # index -> [updates counted, a new sum starts]

    def create_state(self, index, weight):
        return self._zeros(weight) if self.momentum != 0.0 else None

    def _warmup(self, count: int) -> float:
        ramp = self.warmup_epochs * self.updates_per_epoch
        top = float(self.batch_scale)
        if count >= ramp:
            return top
        if ramp <= 1:
            return 1.0
        frac = count / ramp
        return 1.0 + (top - 1.0) * {"linear": frac, "power2": frac * frac, "sqrt": math.sqrt(frac)}[
            self.warmup_strategy]

    def _plan(self, index, weight, state):
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        sums = self._scratch(self._sums, index, weight)
        count = self._counts.setdefault(index, [self.init_updates, True])
        count[0] += 1
        first, step = count[1], count[0] % self.batch_scale == 0
        count[1] = step                              # a step starts a new sum
        lars = self.warmup_strategy == "lars"
        if step and not lars:
            lr *= self._warmup(count[0])
        flags = (float(first), float(step), float(self.batch_scale), float(lars))
        if state is None:
            return "lbsgd_update", (sums,), (lr, wd, *self._scalars(), *flags)
        return "lbsgd_mom_update", (sums, *self._states(index, state, 1)), (
            lr, self.momentum, wd, *self._scalars(), *flags)

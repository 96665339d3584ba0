"""The optimizers beyond SGD, NAG, Adam, RMSProp, AdaGrad and AdaDelta, with MXNet 1.x's rules.

Adamax, Nadam, Signum, FTML, Ftrl and DCASGD are compiled update kernels like those
(``symjit.kernels.cpu.optim``/``cuda.optim``, per-element steps shared with the registered
``signum_update``/``signsgd_update``, ``ftml_update`` and ``ftrl_update`` operators), so an
``Updater`` given many indices updates all of them in one call per kernel. LAMB calls its
registered operators (``lamb_update_phase1``/``phase2``) per parameter; SGLD, LARS and LBSGD
compute with numpy on host copies of the weight and states (written back after each update), one
parameter at a time (``_fusable`` is false for them). All are registered in ``mx.optimizer`` with
the others.

>>> import symjit as mx
>>> opt, w = mx.optimizer.Signum(learning_rate=0.1, momentum=0.0), mx.nd.ones((2,))
>>> opt.update(0, w, mx.nd.array([1.0, -1.0]), opt.create_state(0, w))
>>> [round(v, 5) for v in w.asnumpy().tolist()]
[0.9, 1.1]
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import ndarray as nd
from .base import ParamError
from .ndarray import NDArray
from .optimizer import Optimizer, _clip, register

__all__ = ["Adamax", "Nadam", "Signum", "FTML", "Ftrl", "DCASGD", "SGLD", "LAMB", "LARS", "LBSGD"]


def _host(arr: NDArray) -> np.ndarray:
    return arr.asnumpy()


class _ZeroStates(Optimizer):
    """A rule whose state is ``n_states`` zero arrays shaped like the weight (None for none, the
    array itself for one)."""

    n_states = 0

    def create_state(self, index: Any, weight: NDArray) -> Any:
        states = tuple(self._zeros(weight) for _ in range(self.n_states))
        return None if not states else states[0] if len(states) == 1 else states


class HostRule(_ZeroStates):
    """An update rule computed on host copies: :meth:`step` changes ``w`` and the state arrays
    in place (numpy, the weight's dtype); :meth:`update` writes them back."""

    def _clipped(self, grad: np.ndarray, w: np.ndarray | None = None, wd: float = 0.0) -> np.ndarray:
        """``clip(rescale_grad * grad)``; with ``w``, ``clip(rescale_grad * grad + wd * w)`` (the
        rules that decay before clipping, as MXNet's Adam family)."""
        g = grad * grad.dtype.type(self.rescale_grad)
        if w is not None:
            g = g + wd * w
        return np.clip(g, -self.clip_gradient, self.clip_gradient) if self.clip_gradient else g

    def step(self, index: Any, t: int, lr: float, wd: float, w: np.ndarray, g: np.ndarray,
             states: list[np.ndarray]) -> None:
        raise NotImplementedError(f"{type(self).__name__}.step")

    def update(self, index: Any, weight: NDArray, grad: NDArray, state: Any) -> None:
        """Update ``weight`` and ``state`` in place from ``grad``."""
        lr, wd = self._common(index)
        arrays = () if state is None else tuple(state) if isinstance(state, (tuple, list)) else (state,)
        w, g = _host(weight), _host(grad)
        states = [_host(s) for s in arrays]
        with np.errstate(divide="ignore", invalid="ignore"):
            self.step(index, self._index_update_count[index], lr, wd, w, g, states)
        weight[:] = w
        for nd_state, new in zip(arrays, states):
            nd_state[:] = new


class _Fused(_ZeroStates):
    """A rule run by a compiled update kernel (``_plan``), so that an ``Updater`` given many
    indices updates them all in one call per kernel (:meth:`Optimizer._update_many`)."""

    def _scalars(self) -> tuple[float, float]:
        return self.rescale_grad, _clip(self.clip_gradient)


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

    def __init__(self, learning_rate: float = 0.0025, beta1: float = 0.6, beta2: float = 0.999,
                 epsilon: float = 1e-8, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
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
class SGLD(HostRule):
    """Stochastic gradient Langevin dynamics: ``w += -lr/2 (g + wd w) + N(0, sqrt(lr))``, the
    noise from ``mx.random``'s generator (reproducible under ``mx.random.seed``)."""

    def step(self, index, t, lr, wd, w, g, states):
        from . import random as _random
        g = self._clipped(g)
        noise = _random._rng.normal(0.0, math.sqrt(lr), size=w.shape).astype(w.dtype)
        w += -lr / 2.0 * (g + wd * w) + noise


@register
class LAMB(HostRule):
    """LAMB (You et al.), states ``(mean, var)``: Adam's direction ``r = m_hat / (sqrt(v_hat) + eps)
    + wd w``, then ``w -= lr (||w|| / ||r||) r`` (``||w||`` clamped to ``[lower_bound,
    upper_bound]`` when given; ratio 1 when a norm is 0)."""

    n_states = 2

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound: float | None = None, upper_bound: float | None = None,
                 bias_correction: bool = True, **kwargs: Any):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bool(bias_correction)

    def update(self, index, weight, grad, state):
        lr, wd = self._common(index)
        mean, var = state
        g = nd.lamb_update_phase1(weight, grad, mean, var, beta1=self.beta1, beta2=self.beta2,
                                  epsilon=self.epsilon, t=self._index_update_count[index],
                                  bias_correction=self.bias_correction, wd=wd, rescale_grad=self.rescale_grad,
                                  clip_gradient=_clip(self.clip_gradient))
        bound = {k: -1.0 if v is None else float(v)
                 for k, v in (("lower_bound", self.lower_bound), ("upper_bound", self.upper_bound))}
        nd.lamb_update_phase2(weight, g, nd.norm(weight), nd.norm(g), lr=lr, out=weight, **bound)


@register
class LARS(HostRule):
    """LARS (You et al.): SGD with momentum whose learning rate per layer is scaled by ``eta
    ||w|| / (||g|| + wd ||w|| + epsilon)`` (1 when a norm is 0); parameters named ``*bias``,
    ``*gamma``, ``*beta`` keep the plain learning rate."""

    def __init__(self, momentum: float = 0.0, eta: float = 0.001, epsilon: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.momentum, self.eta, self.epsilon = float(momentum), float(eta), float(epsilon)

    def create_state(self, index, weight):
        return self._zeros(weight) if self.momentum != 0.0 else None

    def step(self, index, t, lr, wd, w, g, states):
        g = self._clipped(g)
        name = self.idx2name.get(index, str(index))
        if not name.endswith(("bias", "gamma", "beta")):
            w_norm, g_norm = float(np.linalg.norm(w)), float(np.linalg.norm(g))
            trust = w_norm / (g_norm + wd * w_norm + self.epsilon) if w_norm > 0 and g_norm > 0 else 1.0
            lr = lr * self.eta * trust
        step = -lr * (g + wd * w)
        if states:
            mom = states[0]
            mom *= self.momentum
            mom += step
            step = mom
        w += step


@register
class LBSGD(HostRule):
    """Large-batch SGD: emulates a batch ``batch_scale`` times larger. Each index's gradients are
    summed over ``batch_scale`` consecutive updates (counted from ``begin_epoch *
    updates_per_epoch``); at every ``batch_scale``-th one their mean takes an SGD (momentum)
    step, the others leave the weight as it is. The step's learning rate is multiplied by a
    warmup factor rising from 1 to ``batch_scale`` over ``warmup_epochs * updates_per_epoch``
    updates (``warmup_strategy`` 'linear', 'power2' or 'sqrt'), or, with 'lars', by the layer's
    trust ratio ``sqrt(|w|^2 / (|g|^2 + wd |w|^2))`` clipped to [0.01, 100].

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
        self._cumulated: dict[Any, list] = {}      # index -> [summed gradient, updates counted]

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

    @staticmethod
    def _trust(w: np.ndarray, g: np.ndarray, wd: float) -> float:
        w2, g2 = float(np.sum(w.astype(np.float64) ** 2)), float(np.sum(g.astype(np.float64) ** 2))
        return min(max(math.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01), 100.0)

    def step(self, index, t, lr, wd, w, g, states):
        entry = self._cumulated.get(index)
        if entry is None:
            entry = self._cumulated[index] = [g.copy(), self.init_updates + 1]
        else:
            entry[0] = g.copy() if entry[0] is None else entry[0] + g
            entry[1] += 1
        if entry[1] % self.batch_scale:
            return
        mean = entry[0] / g.dtype.type(self.batch_scale)
        entry[0] = None
        scale = self._trust(w, mean, wd) if self.warmup_strategy == "lars" else self._warmup(entry[1])
        step = -(lr * scale) * (self._clipped(mean) + wd * w)
        if states:
            mom = states[0]
            mom *= self.momentum
            mom += step
            step = mom
        w += step

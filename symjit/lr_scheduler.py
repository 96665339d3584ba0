"""``mx.lr_scheduler``: learning-rate schedules, as in MXNet 1.x (warmup included).

A scheduler is called with the number of updates done so far and returns the learning rate.
Schedulers keep state (``FactorScheduler`` and ``MultiFactorScheduler`` decay ``base_lr`` in
place), so call them with non-decreasing ``num_update``, as the optimizer does. An optimizer
given ``learning_rate`` overwrites ``base_lr``; as in MXNet, the warmup target
(``warmup_final_lr``) and the start of Poly/Cosine decay (``base_lr_orig``) are fixed when the
scheduler is constructed.

>>> import symjit as mx
>>> s = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
>>> [s(n) for n in range(1, 8)]
[1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125]
"""
from __future__ import annotations

import logging
from math import cos, pi
from typing import Any

from .base import ParamError

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler", "CosineScheduler"]


def _int(value: Any, where: str, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(f"{where}: '{arg}' must be an int, got {value!r}")
    return value


def _num(value: Any, where: str, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParamError(f"{where}: '{arg}' must be a number, got {value!r}")
    return value


class LRScheduler:
    """Base class: holds ``base_lr`` and the warmup settings.

    During the first ``warmup_steps`` updates the rate is ``warmup_begin_lr`` ('constant') or
    rises linearly from ``warmup_begin_lr`` towards ``base_lr`` ('linear').

    >>> import symjit as mx
    >>> s = mx.lr_scheduler.LRScheduler(base_lr=0.1, warmup_steps=4)
    >>> [round(s.get_warmup_lr(n), 6) for n in range(4)]
    [0.0, 0.025, 0.05, 0.075]
    """

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        where = type(self).__name__
        self.base_lr = _num(base_lr, where, "base_lr")
        self.warmup_steps = _int(warmup_steps, where, "warmup_steps")
        self.warmup_final_lr = self.base_lr
        self.warmup_begin_lr = _num(warmup_begin_lr, where, "warmup_begin_lr")
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ParamError(f"{where}: base_lr ({base_lr}) must be >= warmup_begin_lr ({warmup_begin_lr})")
        if self.warmup_steps < 0:
            raise ParamError(f"{where}: 'warmup_steps' must be >= 0, got {warmup_steps}")
        if warmup_mode not in ("linear", "constant"):
            raise ParamError(f"{where}: 'warmup_mode' must be 'linear' or 'constant', got {warmup_mode!r}")
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The learning rate at update ``num_update`` (< ``warmup_steps``) of the warmup."""
        if not num_update < self.warmup_steps:
            raise ParamError(f"{type(self).__name__}.get_warmup_lr: num_update ({num_update}) must be "
                             f"< warmup_steps ({self.warmup_steps})")
        if self.warmup_mode == "linear":
            increase = (self.warmup_final_lr - self.warmup_begin_lr) * float(num_update) / self.warmup_steps
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update: int) -> float:
        """The learning rate after ``num_update`` updates (subclasses define it)."""
        raise NotImplementedError(f"{type(self).__name__}: __call__ must be overridden by a subclass")


class FactorScheduler(LRScheduler):
    """Multiplies the rate by ``factor`` every ``step`` updates, never below ``stop_factor_lr``:
    the rate changes when ``num_update`` exceeds ``k * step`` (so at ``step + 1``, ``2 step + 1``...).

    >>> import symjit as mx
    >>> s = mx.lr_scheduler.FactorScheduler(step=10, factor=0.1, base_lr=1.0)
    >>> s(10), round(s(11), 6), round(s(35), 6)
    (1.0, 0.1, 0.001)
    """

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        where = "FactorScheduler"
        if _num(step, where, "step") < 1:
            raise ParamError(f"{where}: 'step' must be >= 1, got {step}")
        if _num(factor, where, "factor") > 1.0:
            raise ParamError(f"{where}: 'factor' must be <= 1 so that the rate decreases, got {factor}")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = _num(stop_factor_lr, where, "stop_factor_lr")
        self.count = 0

    def __call__(self, num_update: int) -> float:
        """The learning rate after ``num_update`` updates."""
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:  # a loop: resuming can skip several steps
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                             num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiplies the rate by ``factor`` once ``num_update`` exceeds each entry of the
    increasing list ``step``.

    >>> import symjit as mx
    >>> s = mx.lr_scheduler.MultiFactorScheduler(step=[2, 4], factor=0.5, base_lr=1.0)
    >>> [s(n) for n in range(1, 7)]
    [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, step: list[int], factor: float = 1, base_lr: float = 0.01, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        where = "MultiFactorScheduler"
        if not isinstance(step, list) or not step:
            raise ParamError(f"{where}: 'step' must be a non-empty list of ints, got {step!r}")
        for i, s in enumerate(step):
            _num(s, where, f"step[{i}]")
            if i and s <= step[i - 1]:
                raise ParamError(f"{where}: 'step' must be an increasing list, got {step}")
            if s < 1:
                raise ParamError(f"{where}: every step must be >= 1, got {step}")
        if _num(factor, where, "factor") > 1.0:
            raise ParamError(f"{where}: 'factor' must be <= 1 so that the rate decreases, got {factor}")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        """The learning rate after ``num_update`` updates."""
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class _DecayScheduler(LRScheduler):
    """Shared setup of Poly/Cosine: decay from ``base_lr`` to ``final_lr`` over ``max_update``."""

    def __init__(self, max_update: int, base_lr: float, final_lr: float, warmup_steps: int,
                 warmup_begin_lr: float, warmup_mode: str):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        where = type(self).__name__
        if _int(max_update, where, "max_update") < 1:
            raise ParamError(f"{where}: 'max_update' must be >= 1, got {max_update}")
        if max_update <= warmup_steps:
            raise ParamError(f"{where}: 'max_update' ({max_update}) must be > warmup_steps ({warmup_steps})")
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = _num(final_lr, where, "final_lr")
        self.max_steps = self.max_update - self.warmup_steps

    def _fraction(self, num_update: int) -> float:
        return float(num_update - self.warmup_steps) / float(self.max_steps)


class PolyScheduler(_DecayScheduler):
    """``final_lr + (base_lr - final_lr) * (1 - t / T) ** pwr`` with ``t`` the updates after
    warmup and ``T = max_update - warmup_steps``; constant after ``max_update``.

    >>> import symjit as mx
    >>> s = mx.lr_scheduler.PolyScheduler(max_update=4, base_lr=1.0, pwr=2)
    >>> [s(n) for n in range(6)]
    [1.0, 0.5625, 0.25, 0.0625, 0.0, 0.0]
    """

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.power = _num(pwr, "PolyScheduler", "pwr")

    def __call__(self, num_update: int) -> float:
        """The learning rate after ``num_update`` updates."""
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                pow(1 - self._fraction(num_update), self.power)
        return self.base_lr


class CosineScheduler(_DecayScheduler):
    """``final_lr + (base_lr - final_lr) * (1 + cos(pi * t / T)) / 2`` with ``t`` the updates
    after warmup and ``T = max_update - warmup_steps``; constant after ``max_update``.

    >>> import symjit as mx
    >>> s = mx.lr_scheduler.CosineScheduler(max_update=2, base_lr=1.0)
    >>> [round(s(n), 6) for n in range(4)]
    [1.0, 0.5, 0.0, 0.0]
    """

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)

    def __call__(self, num_update: int) -> float:
        """The learning rate after ``num_update`` updates."""
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                (1 + cos(pi * self._fraction(num_update))) / 2
        return self.base_lr

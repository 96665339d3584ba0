"""Tests of mx.lr_scheduler: step-by-step learning-rate sequences against hand-computed values."""
import math

import pytest

import symjit as mx
from symjit.base import MXNetError


def seq(sched, updates):
    return [sched(n) for n in updates]


def test_base_class_must_be_subclassed():
    with pytest.raises(NotImplementedError):
        mx.lr_scheduler.LRScheduler()(1)


def test_factor_scheduler_decays_after_each_step():
    s = mx.lr_scheduler.FactorScheduler(step=3, factor=0.5, base_lr=0.8)
    # decays when num_update > count + step: at 4, 7, 10, ...
    expected = [0.8, 0.8, 0.8, 0.8, 0.4, 0.4, 0.4, 0.2, 0.2, 0.2, 0.1]
    assert seq(s, range(0, 11)) == pytest.approx(expected)
    assert s.count == 9


def test_factor_scheduler_skips_several_steps_at_once():
    s = mx.lr_scheduler.FactorScheduler(step=10, factor=0.1, base_lr=1.0)
    assert s(35) == pytest.approx(1e-3)  # 3 decays: counts 10, 20, 30
    assert s.count == 30
    assert s(40) == pytest.approx(1e-3)
    assert s(41) == pytest.approx(1e-4)


def test_factor_scheduler_stops_at_stop_factor_lr():
    s = mx.lr_scheduler.FactorScheduler(step=1, factor=0.1, stop_factor_lr=0.005, base_lr=1.0)
    assert seq(s, range(1, 7)) == pytest.approx([1.0, 0.1, 0.01, 0.005, 0.005, 0.005])


def test_factor_scheduler_default_factor_keeps_lr():
    s = mx.lr_scheduler.FactorScheduler(step=2)
    assert seq(s, range(1, 10)) == [0.01] * 9


def test_factor_scheduler_base_lr_set_later_like_optimizer():
    s = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)
    s.base_lr = 0.2  # what Optimizer(learning_rate=0.2, lr_scheduler=s) does
    assert seq(s, [1, 2, 3, 5]) == pytest.approx([0.2, 0.2, 0.1, 0.05])


def test_factor_scheduler_linear_warmup():
    s = mx.lr_scheduler.FactorScheduler(step=5, factor=0.5, base_lr=1.0, warmup_steps=4,
                                        warmup_begin_lr=0.2)
    # warmup: 0.2 + (1.0 - 0.2) * n / 4 for n < 4, then the factor schedule counted from 0
    expected = [0.2, 0.4, 0.6, 0.8, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25]
    assert seq(s, range(0, 12)) == pytest.approx(expected)


def test_constant_warmup():
    s = mx.lr_scheduler.FactorScheduler(step=100, base_lr=0.5, warmup_steps=3, warmup_begin_lr=0.1,
                                        warmup_mode="constant")
    assert seq(s, range(0, 5)) == pytest.approx([0.1, 0.1, 0.1, 0.5, 0.5])


def test_multifactor_scheduler():
    s = mx.lr_scheduler.MultiFactorScheduler(step=[3, 5, 6], factor=0.1, base_lr=2.0)
    expected = [2.0, 2.0, 2.0, 2.0, 0.2, 0.2, 0.02, 0.002, 0.002, 0.002]
    assert seq(s, range(0, 10)) == pytest.approx(expected)
    assert s.cur_step_ind == 3 and s.count == 6


def test_multifactor_scheduler_jump_and_warmup():
    s = mx.lr_scheduler.MultiFactorScheduler(step=[2, 4], factor=0.5, base_lr=1.0)
    assert s(10) == pytest.approx(0.25)
    w = mx.lr_scheduler.MultiFactorScheduler(step=[4], factor=0.5, base_lr=1.0, warmup_steps=2)
    assert seq(w, range(0, 7)) == pytest.approx([0.0, 0.5, 1.0, 1.0, 1.0, 0.5, 0.5])


def test_poly_scheduler():
    s = mx.lr_scheduler.PolyScheduler(max_update=4, base_lr=2.0, pwr=2, final_lr=0.4)
    # 0.4 + 1.6 * (1 - n/4)**2
    expected = [2.0, 0.4 + 1.6 * 0.5625, 0.4 + 1.6 * 0.25, 0.4 + 1.6 * 0.0625, 0.4, 0.4, 0.4]
    assert seq(s, range(0, 7)) == pytest.approx(expected)


def test_poly_scheduler_with_warmup():
    s = mx.lr_scheduler.PolyScheduler(max_update=6, base_lr=1.0, pwr=1, warmup_steps=2)
    # warmup 0, 0.5; then 1 - (n - 2) / 4
    assert seq(s, range(0, 8)) == pytest.approx([0.0, 0.5, 1.0, 0.75, 0.5, 0.25, 0.0, 0.0])


def test_cosine_scheduler():
    s = mx.lr_scheduler.CosineScheduler(max_update=4, base_lr=1.0, final_lr=0.2)
    expected = [0.2 + 0.8 * (1 + math.cos(math.pi * n / 4)) / 2 for n in range(5)] + [0.2]
    assert seq(s, range(0, 6)) == pytest.approx(expected)
    assert expected[2] == pytest.approx(0.6)


def test_cosine_scheduler_with_warmup():
    s = mx.lr_scheduler.CosineScheduler(max_update=4, base_lr=1.0, warmup_steps=2, warmup_begin_lr=0.5)
    assert seq(s, range(0, 6)) == pytest.approx([0.5, 0.75, 1.0, 0.5, 0.0, 0.0])


@pytest.mark.parametrize("make,match", [
    (lambda: mx.lr_scheduler.FactorScheduler(step=0), "step"),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, factor=1.5), "factor"),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[3, 2]), "increasing"),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[0, 2]), "step"),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=5), "list"),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[2], factor=2), "factor"),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, base_lr=0.1, warmup_begin_lr=0.2), "warmup_begin_lr"),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, warmup_steps=-1), "warmup_steps"),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, warmup_steps=1.5), "warmup_steps"),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, warmup_mode="cubic"), "warmup_mode"),
    (lambda: mx.lr_scheduler.PolyScheduler(max_update=0), "max_update"),
    (lambda: mx.lr_scheduler.CosineScheduler(max_update=3, warmup_steps=3), "max_update"),
])
def test_bad_parameters(make, match):
    with pytest.raises(MXNetError, match=match) as err:
        make()
    assert isinstance(err.value, ValueError)

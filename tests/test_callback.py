"""mx.callback: log lines (caplog + regex), a fake clock for Speedometer, checkpoints in tmp_path."""
from __future__ import annotations

import logging
import re

import numpy as np
import pytest

import symjit as mx
from symjit import callback as cb_module
from symjit.base import ParamError

P = mx.callback.BatchEndParam


class FakeClock:
    """A settable replacement for time.time."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(cb_module.time, "time", fake)
    return fake


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records]


def _acc_metric(correct: int, total: int) -> mx.metric.Accuracy:
    m = mx.metric.Accuracy()
    label = np.zeros(total)
    pred = np.zeros((total, 2))
    pred[correct:, 1] = 1.0  # the first `correct` rows predict class 0
    m.update([label], [pred])
    return m


SPEED_RE = re.compile(r"^Epoch\[(\d+)\] Batch \[(\d+)\]\tSpeed: (\d+\.\d{2}) samples/sec"
                      r"((?:\t[^=\t]+=-?\d+\.\d{6})*)$")


def test_batch_end_param_fields() -> None:
    p = P(epoch=1, nbatch=2, eval_metric=None, locals={"a": 1})
    assert (p.epoch, p.nbatch, p.eval_metric, p.locals) == (1, 2, None, {"a": 1})


def test_speedometer_logs_speed_and_metric(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    metric = _acc_metric(3, 4)
    speedo = mx.callback.Speedometer(batch_size=32, frequent=10)
    speedo(P(0, 0, metric, None))                 # starts the clock at t=1000
    for n in range(1, 10):
        clock.now += 0.1
        speedo(P(0, n, metric, None))              # not a multiple of 10: nothing logged
    assert _messages(caplog) == []
    clock.now = 1004.0
    speedo(P(0, 10, metric, None))                 # 10 batches * 32 samples in 4 s = 80/s
    (msg,) = _messages(caplog)
    m = SPEED_RE.match(msg)
    assert m, msg
    assert m.group(1) == "0" and m.group(2) == "10" and m.group(3) == "80.00"
    assert m.group(4) == "\taccuracy=0.750000"
    assert msg == "Epoch[0] Batch [10]\tSpeed: 80.00 samples/sec\taccuracy=0.750000"
    # auto_reset: local statistics cleared, global kept
    assert metric.num_inst == 0 and metric.global_num_inst == 4

    clock.now = 1005.0                               # next window: 320 samples in 1 s
    speedo(P(0, 20, metric, None))
    assert _messages(caplog)[-1].startswith("Epoch[0] Batch [20]\tSpeed: 320.00 samples/sec\taccuracy=nan")


def test_speedometer_no_auto_reset_and_composite(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    metric = mx.metric.CompositeEvalMetric([_acc_metric(1, 2), mx.metric.Loss()])
    metric.metrics[1].update(None, [np.array([2.0, 4.0])])
    speedo = mx.callback.Speedometer(batch_size=5, frequent=2, auto_reset=False)
    speedo(P(3, 0, metric, None))
    clock.now += 0.5
    speedo(P(3, 2, metric, None))
    (msg,) = _messages(caplog)
    assert msg == "Epoch[3] Batch [2]\tSpeed: 20.00 samples/sec\taccuracy=0.500000\tloss=3.000000"
    assert SPEED_RE.match(msg)
    assert metric.metrics[0].num_inst == 2  # not reset


def test_speedometer_without_metric_and_new_epoch(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    speedo = mx.callback.Speedometer(batch_size=2, frequent=1)
    speedo(P(0, 0, None, None))
    clock.now += 1.0
    speedo(P(0, 1, None, None))
    assert _messages(caplog) == ["Iter[0] Batch [1]\tSpeed: 2.00 samples/sec"]
    speedo(P(1, 0, None, None))  # batch count went down: a new epoch restarts the clock, no log
    assert len(caplog.records) == 1
    speedo(P(1, 1, None, None))  # no time elapsed on the fake clock
    assert _messages(caplog)[-1] == "Iter[1] Batch [1]\tSpeed: inf samples/sec"


@pytest.mark.parametrize("kwargs", [{"batch_size": 0}, {"batch_size": 4, "frequent": 0},
                                    {"batch_size": 2.5}])
def test_speedometer_bad_args(kwargs: dict) -> None:
    with pytest.raises(ParamError, match="Speedometer"):
        mx.callback.Speedometer(**kwargs)


def test_log_train_metric(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    metric = _acc_metric(1, 4)
    cb = mx.callback.log_train_metric(3, auto_reset=True)
    cb(P(2, 2, metric, None))
    assert _messages(caplog) == []
    cb(P(2, 3, metric, None))
    assert _messages(caplog) == ["Iter[2] Batch[3] Train-accuracy=0.250000"]
    assert metric.num_inst == 0


def test_progress_bar(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    bar = mx.callback.ProgressBar(total=3, length=6)
    bar(P(0, 1, None, None))
    bar(P(0, 3, None, None))
    assert _messages(caplog) == ["[==----] 34%\r", "[======] 100%\r"]
    with pytest.raises(ParamError, match="ProgressBar"):
        mx.callback.ProgressBar(total=0)


def test_log_validation_metrics(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    metric = mx.metric.CompositeEvalMetric([_acc_metric(2, 4), _acc_metric(4, 4)])
    mx.callback.LogValidationMetricsCallback()(P(5, 0, metric, None))
    assert _messages(caplog) == ["Epoch[5] Validation-accuracy=0.500000",
                                 "Epoch[5] Validation-accuracy=1.000000"]


def _net() -> mx.sym.Symbol:
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data=data, name="fc1", num_hidden=3)
    return mx.sym.Activation(fc, act_type="relu", name="relu1")


def test_do_checkpoint_period_and_roundtrip(tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    prefix = str(tmp_path / "model")
    net = _net()
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    args = {"fc1_weight": mx.nd.array(w), "fc1_bias": mx.nd.array([1.0, -2.0, 3.5])}
    aux = {"bn_moving_mean": mx.nd.array([0.5, 0.25])}
    cb = mx.callback.do_checkpoint(prefix, period=2)
    for epoch in range(5):
        cb(epoch, net, args, aux)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["model-0002.params", "model-0004.params", "model-symbol.json"]
    assert any('Saved checkpoint to "' in m and m.endswith('model-0004.params"') for m in _messages(caplog))

    loaded = mx.nd.load(prefix + "-0004.params")
    assert sorted(loaded) == ["arg:fc1_bias", "arg:fc1_weight", "aux:bn_moving_mean"]
    np.testing.assert_array_equal(loaded["arg:fc1_weight"].asnumpy(), w)
    np.testing.assert_array_equal(loaded["arg:fc1_bias"].asnumpy(), np.array([1.0, -2.0, 3.5], np.float32))
    np.testing.assert_array_equal(loaded["aux:bn_moving_mean"].asnumpy(), np.array([0.5, 0.25], np.float32))
    sym = mx.sym.load(prefix + "-symbol.json")
    assert sym.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert sym.tojson() == net.tojson()


def test_do_checkpoint_period_one_and_zero(tmp_path) -> None:
    cb = mx.callback.do_checkpoint(str(tmp_path / "p"), period=0)  # clamped to 1, as MXNet
    cb(0, None, {"w": mx.nd.ones((2,))}, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p-0001.params"]  # no symbol given


def test_save_checkpoint_helper_accepts_numpy(tmp_path) -> None:
    prefix = str(tmp_path / "n")
    mx.callback.save_checkpoint(prefix, 12, _net(), {"w": np.array([1.0, 2.0], np.float32)}, None)
    loaded = mx.nd.load(prefix + "-0012.params")
    np.testing.assert_array_equal(loaded["arg:w"].asnumpy(), np.array([1.0, 2.0], np.float32))
    with pytest.raises(ParamError, match="'bad'"):
        mx.callback.save_checkpoint(prefix, 1, None, {"bad": object()}, {})


def test_module_checkpoint_calls_module() -> None:
    calls = []

    class FakeModule:
        def save_checkpoint(self, prefix, epoch, save_optimizer_states):
            calls.append((prefix, epoch, save_optimizer_states))

    cb = mx.callback.module_checkpoint(FakeModule(), "pre", period=3, save_optimizer_states=True)
    for epoch in range(6):
        cb(epoch)
    assert calls == [("pre", 3, True), ("pre", 6, True)]

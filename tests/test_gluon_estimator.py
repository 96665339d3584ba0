"""mx.gluon.contrib.estimator: an Estimator's training is the hand-written Gluon loop (same
parameters, bit for bit), the events reach the handlers in MXNet's order and counts, training
stops after the right number of epochs or batches (StoppingHandler, EarlyStoppingHandler, a
handler's True), checkpoints hold the parameters and trainer states and a resumed training ends
where an uninterrupted one does, logs go through the ``logging`` module, and bad arguments are
clear errors. One small network shape throughout, so that its programs compile once."""
import logging
import os
import warnings

import numpy as np
import pytest

import symjit as mx
from symjit import autograd, gluon
from symjit.gluon.contrib.estimator import (
    BatchBegin,
    BatchEnd,
    BatchProcessor,
    CheckpointHandler,
    EarlyStoppingHandler,
    EpochBegin,
    EpochEnd,
    Estimator,
    GradientUpdateHandler,
    LoggingHandler,
    MetricHandler,
    StoppingHandler,
    TrainBegin,
    TrainEnd,
    ValidationHandler,
)

N, IN, OUT, BATCH = 12, 3, 2, 4          # 3 batches per epoch


def _data(seed=0):
    rs = np.random.RandomState(seed)
    x = rs.uniform(-1, 1, (N, IN)).astype(np.float32)
    y = (x @ rs.uniform(-1, 1, (IN, OUT))).astype(np.float32)
    return gluon.data.DataLoader(gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y)), batch_size=BATCH)


def _net(seed=1):
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(OUT, in_units=IN))
    mx.random.seed(seed)
    net.initialize(mx.init.Xavier())
    return net


def _trainer(net, lr=0.1, momentum=0.9):
    return gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr, "momentum": momentum})


def _estimator(net=None, lr=0.1, **kwargs):
    net = net if net is not None else _net()
    est = Estimator(net, gluon.loss.L2Loss(), trainer=_trainer(net, lr), **kwargs)
    est.logger.setLevel(logging.WARNING)
    return est


def _params(net):
    """The parameters' values by name within the network (the network's own prefix left out)."""
    return {k[len(net.prefix):]: v.data().asnumpy().copy() for k, v in net.collect_params().items()}


def _mean_loss(net, loader):
    loss = gluon.loss.L2Loss()
    values = [loss(net(x), y).asnumpy() for x, y in loader]
    return float(np.concatenate(values).mean())


def test_fit_is_the_hand_written_loop_bit_for_bit_and_reduces_the_loss():
    loader = _data()
    est = _estimator()
    before = _mean_loss(est.net, loader)
    est.fit(loader, epochs=3)
    ref = _net()
    trainer, loss = _trainer(ref), gluon.loss.L2Loss()
    for _ in range(3):
        for x, y in loader:
            with autograd.record():
                out = loss(ref(x), y)
            out.backward()
            trainer.step(x.shape[0])
    got, want = _params(est.net), _params(ref)
    assert got.keys() == want.keys()
    for k in got:
        assert np.array_equal(got[k], want[k]), k
    assert _mean_loss(est.net, loader) < 0.5 * before
    name, value = est.train_metrics[0].get()      # the default metric: the last epoch's mean loss
    assert name == "training l2loss" and 0 < value < before


class _Events(TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd):
    def __init__(self, stop_at_batch=None):
        self.log, self.stop_at_batch, self.batches = [], stop_at_batch, 0

    def train_begin(self, estimator, *args, **kwargs):
        self.log.append("train_begin")

    def epoch_begin(self, estimator, *args, **kwargs):
        self.log.append("epoch_begin")

    def batch_begin(self, estimator, *args, **kwargs):
        self.log.append("batch_begin")

    def batch_end(self, estimator, *args, **kwargs):
        assert {"batch", "pred", "label", "loss"} <= set(kwargs)
        self.batches += 1
        self.log.append("batch_end")
        return self.batches == self.stop_at_batch

    def epoch_end(self, estimator, *args, **kwargs):
        self.log.append("epoch_end")
        return self.batches == self.stop_at_batch

    def train_end(self, estimator, *args, **kwargs):
        self.log.append("train_end")


def test_events_in_order_and_training_by_batches_stops_mid_epoch():
    est, events = _estimator(), _Events()
    est.fit(_data(), batches=4, event_handlers=[events])
    batch = ["batch_begin", "batch_end"]
    assert events.log == ["train_begin", "epoch_begin", *batch * 3, "epoch_end", "epoch_begin", *batch,
                          "epoch_end", "train_end"]
    events = _Events(stop_at_batch=2)   # True from batch_end ends the epoch, from epoch_end the training
    est.fit(_data(), epochs=5, event_handlers=events)
    assert events.log.count("batch_end") == 2 and events.log.count("epoch_end") == 1
    events = _Events(stop_at_batch=5)   # the second epoch ends early; epoch_end says go on
    events.epoch_end = lambda estimator: events.log.append("epoch_end")
    est.fit(_data(), epochs=3, event_handlers=events)
    assert events.log.count("batch_end") == 3 + 2 + 3 and events.log.count("epoch_end") == 3


def test_default_handlers_sorted_by_priority_and_foreign_metrics_refused():
    est = _estimator()
    est.max_epoch, est.max_batch = 1, None
    early = EarlyStoppingHandler(monitor=est.train_metrics[0])
    handlers = est._prepare_default_handlers(val_data=_data(), event_handlers=[early])
    assert [type(h) for h in handlers] == [GradientUpdateHandler, MetricHandler, ValidationHandler,
                                           EarlyStoppingHandler, StoppingHandler, LoggingHandler]
    starts, *_, ends = est._categorize_handlers(handlers)
    assert {type(h) for h in starts} == {ValidationHandler, EarlyStoppingHandler, StoppingHandler,
                                         LoggingHandler}
    assert {type(h) for h in ends} == {EarlyStoppingHandler, LoggingHandler}
    with pytest.raises(ValueError, match="none of the estimator's metrics"):
        est.fit(_data(), epochs=1, event_handlers=[LoggingHandler(metrics=[mx.metric.MSE()])])


def test_validation_metrics_are_the_validation_loss():
    loader = _data(seed=3)
    est = _estimator(val_loss=gluon.loss.L1Loss())
    est.fit(_data(), val_data=loader, epochs=1)
    name, value = est.val_metrics[0].get()
    assert name == "validation l2loss"             # the metric's name follows the training loss
    l1 = gluon.loss.L1Loss()
    want = np.concatenate([l1(est.net(x), y).asnumpy() for x, y in loader]).mean()
    assert value == pytest.approx(float(want), rel=1e-6)


def test_early_stopping_stops_at_the_epoch_without_improvement():
    est = _estimator(lr=0.0)                 # a constant loss: no epoch after the first improves
    early, events = EarlyStoppingHandler(est.train_metrics[0], patience=2, mode="min"), _Events()
    est.fit(_data(), epochs=10, event_handlers=[early, events])
    assert events.log.count("epoch_end") == 3 and early.stopped_epoch == 2 and early.current_epoch == 3
    est = _estimator(lr=0.05)                # a decreasing loss never stops early
    early = EarlyStoppingHandler(est.train_metrics[0], mode="min")
    est.fit(_data(), epochs=4, event_handlers=[early])
    assert early.current_epoch == 4 and not early.stop_training
    est = _estimator(lr=0.05)                # a baseline out of reach: stops after `patience` epochs
    early = EarlyStoppingHandler(est.train_metrics[0], mode="min", baseline=-1.0, patience=1)
    est.fit(_data(), epochs=4, event_handlers=[early])
    assert early.current_epoch == 1 and early.stopped_epoch == 0


def _files(folder):
    return sorted(os.listdir(folder))


def test_checkpoints_round_trip_and_resume_ends_where_an_uninterrupted_training_does(tmp_path):
    whole = _estimator()
    whole.fit(_data(), epochs=3)

    est = _estimator()
    saver = CheckpointHandler(str(tmp_path), model_prefix="m", max_checkpoints=1)
    est.fit(_data(), epochs=2, event_handlers=[saver])
    assert _files(tmp_path) == ["m-epoch1batch6.params", "m-epoch1batch6.states"]
    loaded = _net(seed=7)
    loaded.load_parameters(str(tmp_path / "m-epoch1batch6.params"))
    for k, v in _params(loaded).items():
        assert np.array_equal(v, _params(est.net)[k])

    resumed = _estimator(net=_net(seed=7))       # other weights, fresh momentum: all from the files
    saver = CheckpointHandler(str(tmp_path), model_prefix="m", max_checkpoints=1, resume_from_checkpoint=True)
    resumed.fit(_data(), epochs=3, event_handlers=[saver])
    assert resumed.max_epoch == 1
    assert _files(tmp_path) == ["m-epoch2batch9.params", "m-epoch2batch9.states"]
    for k, v in _params(resumed.net).items():
        assert np.array_equal(v, _params(whole.net)[k]), k
    with pytest.raises(ValueError, match="already reached"):
        _estimator().fit(_data(), epochs=3, event_handlers=[CheckpointHandler(
            str(tmp_path), model_prefix="m", resume_from_checkpoint=True)])


def test_checkpoints_by_batches_keep_the_newest_and_the_best(tmp_path):
    est = _estimator()
    est.net.hybridize()
    saver = CheckpointHandler(str(tmp_path), model_prefix="b", monitor=est.train_metrics[0], save_best=True,
                              mode="min", epoch_period=None, batch_period=2, max_checkpoints=2)
    est.fit(_data(), batches=7, event_handlers=[saver])
    assert saver.current_batch == 7 and saver.current_epoch == 3
    assert _files(tmp_path) == ["b-best.params", "b-best.states", "b-epoch1batch3.params",
                                "b-epoch1batch3.states", "b-epoch1batch5.params", "b-epoch1batch5.states",
                                "b-symbol.json"]
    assert mx.sym.load(str(tmp_path / "b-symbol.json")).list_arguments()[0] == "data"
    with pytest.raises(ValueError, match="save_best=True needs a monitor"):
        CheckpointHandler(str(tmp_path), save_best=True)


def test_logs_go_through_the_logging_module():
    est = _estimator()
    est.logger.setLevel(logging.INFO)
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    est.logger.addHandler(Keep())
    est.fit(_data(), epochs=2, event_handlers=[LoggingHandler(log_interval=2, metrics=est.train_metrics)])
    batch_lines = [r for r in records if r.startswith("[Epoch") and "[Batch" in r]
    assert [line[:18] for line in batch_lines] == ["[Epoch 0][Batch 0]", "[Epoch 0][Batch 2]",
                                                   "[Epoch 1][Batch 0]", "[Epoch 1][Batch 2]"]
    assert "[Samples 12] time/interval:" in batch_lines[1] and "training l2loss:" in batch_lines[1]
    assert records[0].startswith("Training begin: using optimizer SGD")
    assert records[-1].startswith("Train finished") and "with 2 epochs" in records[-1]


def test_a_batch_processor_replaces_the_step():
    class Halved(BatchProcessor):
        def __init__(self):
            self.calls = 0

        def fit_batch(self, estimator, train_batch, batch_axis=0):
            self.calls += 1
            data, label = train_batch
            return super().fit_batch(estimator, (data, label * 0.5), batch_axis)

    processor = Halved()
    est = _estimator(batch_processor=processor)
    est.fit(_data(), batches=2)
    assert processor.calls == 2
    with pytest.raises(ValueError, match="fit_batch"):
        _estimator(batch_processor=object())


def test_bad_arguments_are_clear_errors():
    net = _net()
    with pytest.raises(ValueError, match="loss must be a gluon.loss.Loss"):
        Estimator(net, "l2")
    with pytest.raises(ValueError, match="trainer must be a gluon.Trainer"):
        Estimator(net, gluon.loss.L2Loss(), trainer="sgd")
    with pytest.raises(ValueError, match="context must be a Context"):
        Estimator(net, gluon.loss.L2Loss(), trainer=_trainer(net), context="cpu")
    with pytest.raises(ValueError, match="metrics must be"):
        Estimator(net, gluon.loss.L2Loss(), train_metrics="acc", trainer=_trainer(net))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = Estimator(net, gluon.loss.L2Loss(), initializer=mx.init.One())
    messages = " ".join(str(w.message) for w in caught)
    assert "Network already fully initialized" in messages and "No trainer specified" in messages
    with pytest.raises(ValueError, match="DataLoader"):
        est.fit(mx.io.NDArrayIter(mx.nd.ones((4, 3)), batch_size=2), epochs=1)
    with pytest.raises(ValueError, match="exactly one of epochs and batches"):
        est.fit(_data(), epochs=1, batches=2)
    with pytest.raises(ValueError, match="log_interval"):
        LoggingHandler(log_interval="batch")


def test_two_contexts_train_as_one():
    weights = []
    for ctx in ([mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]):
        net = gluon.nn.Dense(OUT, in_units=IN)
        net.initialize(mx.init.One(), ctx=ctx)
        est = Estimator(net, gluon.loss.L2Loss(), trainer=_trainer(net), context=ctx)
        est.logger.setLevel(logging.WARNING)
        est.fit(_data(), epochs=2)
        assert est.context == ctx
        weights.append([p.data(ctx[-1]).asnumpy() for p in net.collect_params().values()])
    for one, two in zip(*weights):
        np.testing.assert_allclose(one, two, rtol=1e-5, atol=1e-6)

"""The estimator's :class:`CheckpointHandler`: the network's symbol after the first batch (for a
hybridized network), its parameters and the trainer's states every ``epoch_period`` epochs or
``batch_period`` batches, the best ones by a monitored metric, and the resumption of a training
from the newest checkpoint of a folder.

Files are ``<model_dir>/<model_prefix>-epoch<E>batch<B>.params`` (``Block.save_parameters``,
MXNet's ``.params`` format) with a ``.states`` file beside it (``Trainer.save_states``),
``<model_prefix>-best.params``/``.states`` and ``<model_prefix>-symbol.json``. ``E`` is the
epoch's index; ``B`` is, for a save at an epoch's end, the number of batches trained so far, and
for a save after a batch, that batch's index (both counted over the whole training, a resumed one
included).

>>> import tempfile
>>> handler = CheckpointHandler(tempfile.mkdtemp(), model_prefix='net', batch_period=2, epoch_period=None)
>>> handler.max_checkpoints
5
"""
from __future__ import annotations

import os
import re
import warnings
from typing import Any

from ....metric import EvalMetric
from ._events import BatchEnd, EpochEnd, TrainBegin, _improved, _improvement

__all__ = ["CheckpointHandler"]


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Save the model during training (see the module's description for the files).

    ``monitor``: the metric (one of the estimator's) that ``save_best`` compares, with ``mode``
    'min', 'max' or 'auto' (greater is better for accuracies, F1, MCC and correlations); ``verbose``
    1 logs each save; ``max_checkpoints``: how many periodic checkpoints are kept (the oldest
    removed first; the best is not counted); ``resume_from_checkpoint``: at the training's
    beginning, load the newest checkpoint of ``model_dir`` with this prefix and train only the
    remaining epochs (or batches), which requires saving by the kind of period the training
    counts (``epoch_period`` for ``fit(epochs=)``, ``batch_period`` for ``fit(batches=)``).

    >>> import symjit as mx, tempfile
    >>> CheckpointHandler(tempfile.mkdtemp(), monitor=mx.metric.Accuracy(), save_best=True).direction
    'greater'
    """

    def __init__(self, model_dir: str, model_prefix: str = "model", monitor: EvalMetric | None = None,
                 verbose: int = 0, save_best: bool = False, mode: str = "auto",  # noqa: FBT001, FBT002
                 epoch_period: int | None = 1, batch_period: int | None = None, max_checkpoints: int = 5,
                 resume_from_checkpoint: bool = False):  # noqa: FBT001, FBT002
        if save_best and not isinstance(monitor, EvalMetric):
            raise ValueError("CheckpointHandler: save_best=True needs a monitor, one of the metric objects "
                             f"of estimator.train_metrics or estimator.val_metrics; got {monitor!r}")
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.monitor = monitor
        self.verbose = verbose
        self.save_best = save_best
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.direction = _improvement(mode, monitor, "CheckpointHandler") if save_best else None
        self.current_batch = 0
        self.current_epoch = 0
        self.trained_epoch = -1
        self.trained_batch = -1
        self.saved_checkpoints: list[str] = []
        self.best = self._start()

    def _start(self) -> float:
        return float("-inf") if self.direction == "greater" else float("inf")

    def _path(self, name: str) -> str:
        return os.path.join(self.model_dir, name)

    # -- events -----------------------------------------------------------------------------------
    def train_begin(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Reset the counters and the best value; resume from the newest checkpoint if asked."""
        self.current_epoch = 0
        self.current_batch = 0
        self.trained_epoch = self.trained_batch = -1
        self.best = self._start()
        if self.resume_from_checkpoint:
            by_batches = bool(estimator.max_batch)
            if (by_batches and (not self.batch_period or self.epoch_period)) or \
                    (not by_batches and (not self.epoch_period or self.batch_period)):
                kind = "batch_period (and epoch_period=None)" if by_batches else \
                    "epoch_period (and batch_period=None)"
                raise ValueError(f"CheckpointHandler: resume_from_checkpoint with a training counted in "
                                 f"{'batches' if by_batches else 'epochs'} needs checkpoints saved by {kind}")
            self._resume(estimator)

    def batch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """After the first batch save the symbol; every ``batch_period`` batches a checkpoint."""
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator: Any, *args: Any, **kwargs: Any) -> None:
        """Every ``epoch_period`` epochs save a checkpoint."""
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    # -- saving -----------------------------------------------------------------------------------
    def _numbers(self, estimator: Any) -> tuple[int, int]:
        epoch, batch = self.current_epoch, self.current_batch
        if self.trained_epoch >= 0:          # resumed: continue the numbering of the checkpoint
            epoch += self.trained_epoch + 1
            batch += self.trained_batch + (0 if estimator.max_epoch else 1)
        return epoch, batch

    def _save_checkpoint(self, estimator: Any) -> None:
        epoch, batch = self._numbers(estimator)
        prefix = f"{self.model_prefix}-epoch{epoch}batch{batch}"
        self._save_params_and_trainer(estimator, prefix)
        self.saved_checkpoints.append(prefix)
        while len(self.saved_checkpoints) > max(self.max_checkpoints, 0):
            old = self.saved_checkpoints.pop(0)
            for ext in (".params", ".states"):
                if os.path.isfile(self._path(old + ext)):
                    os.remove(self._path(old + ext))
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained %d batches, saved the model in %s "
                                  "with prefix %s", self.current_epoch, self.current_batch + 1,
                                  self.model_dir, prefix)
        if self.save_best:
            self._save_if_best(estimator)

    def _save_if_best(self, estimator: Any) -> None:
        name, value = self.monitor.get()
        if value != value:      # NaN: the metric was never updated
            warnings.warn(f"CheckpointHandler: not saving the best model because {name} was not updated; "
                          "monitor one of the metric objects of estimator.train_metrics or "
                          "estimator.val_metrics", RuntimeWarning, stacklevel=3)
            return
        if not _improved(self.direction, value, self.best):
            if self.verbose > 0:
                estimator.logger.info("[Epoch %d] CheckpointHandler: %s did not improve from %0.5f, "
                                      "the best model is kept", self.current_epoch, name, self.best)
            return
        prefix = self.model_prefix + "-best"
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f to %0.5f, saved the "
                                  "best model in %s with prefix %s", self.current_epoch, name, self.best,
                                  value, self.model_dir, prefix)
        self.best = value

    def _save_symbol(self, estimator: Any) -> None:
        path = self._path(self.model_prefix + "-symbol.json")
        graph = getattr(estimator.net, "_cached_graph", None)
        if graph:
            graph[1].save(path)
        else:
            estimator.logger.info("CheckpointHandler: the model's symbol is not saved as %s: only a "
                                  "hybridized HybridBlock (net.hybridize()) has one", path)

    def _save_params_and_trainer(self, estimator: Any, prefix: str) -> None:
        estimator.net.save_parameters(self._path(prefix + ".params"))
        estimator.trainer.save_states(self._path(prefix + ".states"))

    # -- resuming ---------------------------------------------------------------------------------
    def _checkpoints(self) -> list[tuple[int, int]]:
        """The (epoch, batch) numbers of this prefix's checkpoints in ``model_dir``, in order."""
        pattern = re.compile(re.escape(self.model_prefix) + r"-epoch(\d+)batch(\d+)\.params")
        found = [pattern.fullmatch(f) for f in os.listdir(self.model_dir)]
        return sorted((int(m.group(1)), int(m.group(2))) for m in found if m)

    def _resume(self, estimator: Any) -> None:
        found = self._checkpoints()
        if not found:
            count = f"{estimator.max_batch} batches" if estimator.max_batch else \
                f"{estimator.max_epoch} epochs"
            estimator.logger.info("CheckpointHandler: no checkpoint found, training from scratch for %s",
                                  count)
            return
        epoch = found[-1][0]
        batch = max(b for e, b in found if e == epoch)
        by_epochs = bool(estimator.max_epoch)
        kind, plural, done, limit = ("epoch", "epochs", epoch, estimator.max_epoch) if by_epochs else \
            ("batch", "batches", batch, estimator.max_batch)
        if done >= limit - 1:
            raise ValueError(f"CheckpointHandler: the checkpoint of {kind} {done} already reached the "
                             f"{limit} {plural} to train; pass resume_from_checkpoint=False to train from "
                             "scratch")
        left = limit - done - 1
        if by_epochs:
            estimator.max_epoch = left
        else:
            estimator.max_batch = left
        remaining = f"{left} {plural}"
        prefix = f"{self.model_prefix}-epoch{epoch}batch{batch}"
        params, states = self._path(prefix + ".params"), self._path(prefix + ".states")
        if not os.path.isfile(states):
            raise ValueError(f"CheckpointHandler: cannot resume from {params}: its trainer states {states} "
                             "are missing")
        estimator.net.load_parameters(params, ctx=estimator.context)
        estimator.trainer.load_states(states)
        self.trained_epoch, self.trained_batch = epoch, batch
        self.saved_checkpoints = [f"{self.model_prefix}-epoch{e}batch{b}" for e, b in found]
        estimator.logger.warning("CheckpointHandler: resumed from epoch %d batch %d, training %s more",
                                 epoch, batch, remaining)

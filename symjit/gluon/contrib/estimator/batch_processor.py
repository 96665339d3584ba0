"""The estimator's :class:`BatchProcessor`: what happens to one batch in training
(``fit_batch``) and in evaluation (``evaluate_batch``). Subclass it and pass an instance as
``Estimator(batch_processor=...)`` to train a model another way (several outputs, a custom
forward) while keeping the estimator's loop and event handlers.

>>> import symjit as mx
>>> from symjit import gluon
>>> net = gluon.nn.Dense(1, in_units=2); net.initialize(mx.init.One())
>>> class Est:
...     context = [mx.cpu()]; val_net = net; val_loss = gluon.loss.L2Loss()
>>> data, label, pred, loss = BatchProcessor().evaluate_batch(Est(), (mx.nd.ones((3, 2)), mx.nd.ones((3, 1))))
>>> pred[0].asnumpy().ravel().tolist(), loss[0].asnumpy().tolist()
([2.0, 2.0, 2.0], [0.5, 0.5, 0.5])
"""
from __future__ import annotations

from typing import Any

from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor:
    """Runs one batch: ``batch[0]`` (data) and ``batch[1]`` (label) split along ``batch_axis``
    over the estimator's contexts (:func:`~symjit.gluon.utils.split_and_load`), the network and
    the loss on each part. Both methods return ``(data, label, pred, loss)``, lists with one
    array per context.

    >>> import symjit as mx
    >>> batch = (mx.nd.ones((4, 2)), mx.nd.zeros((4,)))
    >>> data, label = BatchProcessor()._get_data_and_label(batch, [mx.cpu()])
    >>> data[0].shape, label[0].shape
    ((4, 2), (4,))
    """

    def _get_data_and_label(self, batch: Any, ctx: Any, batch_axis: int = 0) -> tuple[list, list]:
        if not isinstance(batch, (list, tuple)) or len(batch) < 2:
            raise ValueError("BatchProcessor: a batch must be a (data, label) pair from the DataLoader, got "
                             f"{type(batch).__name__}")
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator: Any, val_batch: Any, batch_axis: int = 0) -> tuple[list, ...]:
        """Predictions of ``estimator.val_net`` and losses of ``estimator.val_loss`` on a
        validation batch (nothing recorded)."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator: Any, train_batch: Any, batch_axis: int = 0) -> tuple[list, ...]:
        """Forward ``estimator.net`` and ``estimator.loss`` on a training batch under
        ``autograd.record()``, then backward each context's loss (the parameters' gradients are
        written; the :class:`GradientUpdateHandler` applies them)."""
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for part in loss:
            part.backward()
        return data, label, pred, loss

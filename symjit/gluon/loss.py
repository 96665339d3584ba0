"""``mx.gluon.loss``: losses as HybridBlocks, ``loss(pred, label, sample_weight=None)``, each the
mean over all axes but ``batch_axis`` of an elementwise loss scaled by ``weight`` (and by
``sample_weight``, broadcast), as MXNet 1.9.1 defines them.

>>> import symjit as mx
>>> mx.gluon.loss.L2Loss()(mx.nd.array([[1.0, 3.0]]), mx.nd.array([[0.0, 1.0]])).asnumpy().tolist()
[1.25]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ndarray import NDArray
from .block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "HuberLoss", "HingeLoss",
           "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss", "CosineEmbeddingLoss",
           "CTCLoss", "SDMLLoss"]


def _weighted(F: Any, loss: Any, weight: float | None, sample_weight: Any) -> Any:  # noqa: N803
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, (int, float, np.number)):
            raise TypeError(f"loss weight must be a number, got {type(weight).__name__}")
        loss = loss * weight
    return loss


def _like(F: Any, x: Any, y: Any) -> Any:  # noqa: N803
    """``x`` reshaped as ``y``."""
    return x.reshape(y.shape) if isinstance(x, NDArray) else F.reshape_like(x, y)


class Loss(HybridBlock):
    """The base of the losses: ``weight`` scales the loss, ``batch_axis`` is kept by the mean."""

    def __init__(self, weight: float | None, batch_axis: int, **kwargs: Any):
        super().__init__(**kwargs)
        self._weight, self._batch_axis = weight, batch_axis

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def _mean(self, F: Any, loss: Any) -> Any:  # noqa: N803
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class L2Loss(Loss):
    """``weight / 2 * (pred - label) ** 2``."""

    def __init__(self, weight: float = 1.0, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:  # noqa: N803
        loss = F.square(_like(F, label, pred) - pred)
        return self._mean(F, _weighted(F, loss, self._weight / 2, sample_weight))


class L1Loss(Loss):
    """``weight * |pred - label|``."""

    def __init__(self, weight: float | None = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:  # noqa: N803
        loss = F.abs(_like(F, label, pred) - pred)
        return self._mean(F, _weighted(F, loss, self._weight, sample_weight))


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of ``sigmoid(pred)`` (or of ``pred`` itself with ``from_sigmoid``)
    against labels in [0, 1]; ``pos_weight`` scales the positive term."""

    def __init__(self, from_sigmoid: bool = False, weight: float | None = None, batch_axis: int = 0,  # noqa: FBT001, FBT002
                 **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None,  # noqa: N803
                       pos_weight: Any = None) -> Any:
        label = _like(F, label, pred)
        if not self._from_sigmoid:
            softplus = F.Activation(-F.abs(pred), act_type="softrelu")   # log(1 + exp(-|pred|))
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus
            else:
                scale = F.broadcast_mul(pos_weight - 1, label) + 1
                loss = pred - pred * label + scale * (softplus + F.relu(-pred))
        else:
            eps = 1e-12
            pos = F.log(pred + eps) * label
            if pos_weight is not None:
                pos = F.broadcast_mul(pos, pos_weight)
            loss = -(pos + F.log(1.0 - pred + eps) * (1.0 - label))
        return self._mean(F, _weighted(F, loss, self._weight, sample_weight))


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of ``log_softmax(pred)`` over ``axis`` (``from_logits``: ``pred`` is that
    already) against class indices (``sparse_label``) or distributions."""

    def __init__(self, axis: int = -1, sparse_label: bool = True, from_logits: bool = False,  # noqa: FBT001, FBT002
                 weight: float | None = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis, self._sparse_label, self._from_logits = axis, sparse_label, from_logits

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:  # noqa: N803
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.expand_dims(F.pick(pred, label, axis=self._axis), axis=self._axis)
        else:
            loss = -F.sum(pred * _like(F, label, pred), axis=self._axis, keepdims=True)
        return self._mean(F, _weighted(F, loss, self._weight, sample_weight))


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """``label * (log(label) - pred)`` with ``pred`` log-probabilities (``from_logits``; else
    ``log_softmax(pred)`` over ``axis``)."""

    def __init__(self, from_logits: bool = True, axis: int = -1, weight: float | None = None,  # noqa: FBT001, FBT002
                 batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits, self._axis = from_logits, axis

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:  # noqa: N803
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        return self._mean(F, _weighted(F, loss, self._weight, sample_weight))


class HuberLoss(Loss):
    """``|d| - rho / 2`` where ``|d| > rho``, ``d ** 2 / (2 rho)`` below (``d = pred - label``)."""

    def __init__(self, rho: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:  # noqa: N803
        d = F.abs(_like(F, label, pred) - pred)
        loss = F.where(d > self._rho, d - 0.5 * self._rho, (0.5 / self._rho) * F.square(d))
        return self._mean(F, _weighted(F, loss, self._weight, sample_weight))


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` for labels in {-1, 1}."""

    def __init__(self, margin: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def _hinge(self, F: Any, pred: Any, label: Any) -> Any:  # noqa: N803
        return F.relu(self._margin - pred * _like(F, label, pred))

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:  # noqa: N803
        return self._mean(F, _weighted(F, self._hinge(F, pred, label), self._weight, sample_weight))


class SquaredHingeLoss(HingeLoss):
    """``max(0, margin - pred * label) ** 2``."""

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:  # noqa: N803
        loss = F.square(self._hinge(F, pred, label))
        return self._mean(F, _weighted(F, loss, self._weight, sample_weight))


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))``, labels ``'signed'`` ({-1, 1}) or ``'binary'`` ({0, 1})."""

    def __init__(self, weight: float | None = None, batch_axis: int = 0, label_format: str = "signed",
                 **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise ValueError(f"label_format can only be signed or binary, received {label_format}.")
        self._label_format = label_format

    def hybrid_forward(self, F: Any, pred: Any, label: Any, sample_weight: Any = None) -> Any:  # noqa: N803
        label = _like(F, label, pred)
        if self._label_format == "binary":
            label = 2 * label - 1
        loss = F.Activation(-pred * label, act_type="softrelu")
        return self._mean(F, _weighted(F, loss, self._weight, sample_weight))


class TripletLoss(Loss):
    """``max(0, |pred - positive|^2 - |pred - negative|^2 + margin)`` per sample."""

    def __init__(self, margin: float = 1, weight: float | None = None, batch_axis: int = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, pred: Any, positive: Any, negative: Any,  # noqa: N803
                       sample_weight: Any = None) -> Any:
        positive, negative = _like(F, positive, pred), _like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred), axis=self._batch_axis,
                     exclude=True)
        return _weighted(F, F.relu(loss + self._margin), self._weight, sample_weight)


class PoissonNLLLoss(Loss):
    """Negative log-likelihood of ``target`` under a Poisson distribution of mean ``exp(pred)``
    (``from_logits``) or ``pred``; the mean over every element."""

    def __init__(self, weight: float | None = None, from_logits: bool = True, batch_axis: int = 0,  # noqa: FBT001, FBT002
                 compute_full: bool = False, **kwargs: Any):  # noqa: FBT001, FBT002
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits, self._compute_full = from_logits, compute_full

    def hybrid_forward(self, F: Any, pred: Any, target: Any, sample_weight: Any = None,  # noqa: N803
                       epsilon: float = 1e-08) -> Any:
        target = _like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * target * np.pi)
            loss = loss + stirling * (target > 1)
        return F.mean(_weighted(F, loss, self._weight, sample_weight))


class CosineEmbeddingLoss(Loss):
    """``1 - cos(input1, input2)`` for label 1, ``max(0, cos - margin)`` for label -1."""

    def __init__(self, weight: float | None = None, batch_axis: int = 0, margin: float = 0, **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F: Any, input1: Any, input2: Any, label: Any,  # noqa: N803
                       sample_weight: Any = None) -> Any:
        input1 = _like(F, input1, input2)
        dot = F.sum(input1 * input2, axis=-1)
        norms = F.sqrt(F.sum(F.square(input1), axis=-1)) * F.sqrt(F.sum(F.square(input2), axis=-1))
        cos = dot / F.maximum(norms, 1e-12)
        label = label.reshape((-1,))
        loss = F.where(label == 1, 1 - cos, F.relu(cos - self._margin))
        return _weighted(F, loss, self._weight, sample_weight)


class CTCLoss(Loss):
    """Connectionist temporal classification loss per sequence over the ``CTCLoss`` operator:
    ``pred`` unnormalized scores in ``layout`` ``'NTC'`` or ``'TNC'`` whose last channel is the
    blank, ``label`` class indices in ``label_layout`` ``'NT'`` or ``'TN'`` padded with -1;
    ``pred_lengths`` and ``label_lengths`` (shape ``(batch,)``) give each sequence's frames and
    label length when they differ. The loss has shape ``(batch,)``.

    >>> import symjit as mx
    >>> loss = mx.gluon.loss.CTCLoss()(mx.nd.zeros((1, 2, 3)), mx.nd.array([[0, -1]]))
    >>> round(float(loss.asnumpy()[0]), 4)                  # -log(3 / 9): 3 paths of 9 emit 'a'
    1.0986
    """

    def __init__(self, layout: str = "NTC", label_layout: str = "NT", weight: float | None = None,
                 **kwargs: Any):
        if layout not in ("NTC", "TNC"):
            raise ValueError(f"CTCLoss: layout must be 'NTC' or 'TNC', got {layout!r}")
        if label_layout not in ("NT", "TN"):
            raise ValueError(f"CTCLoss: label_layout must be 'NT' or 'TN', got {label_layout!r}")
        self._layout, self._label_layout = layout, label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F: Any, pred: Any, label: Any, pred_lengths: Any = None,  # noqa: N803
                       label_lengths: Any = None, sample_weight: Any = None) -> Any:
        if self._layout == "NTC":
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        lengths = [x for x in (pred_lengths, label_lengths) if x is not None]
        loss = F.CTCLoss(pred, label, *lengths, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _weighted(F, loss, self._weight, sample_weight)


class SDMLLoss(Loss):
    """Smoothed deep metric learning loss (Bonadiman et al., 2019) of two aligned batches of
    vectors ``x1``, ``x2`` (shape ``(batch, dim)``): row ``i`` of ``x2`` is the positive of row
    ``i`` of ``x1`` and the other rows its negatives. Per row, the KL divergence of the softmax of
    the negative squared distances to every row of ``x2`` from the smoothed labels
    (``1 - smoothing_parameter`` on the positive, the rest spread over the negatives), averaged
    over the batch's columns and scaled by ``weight``; the loss has shape ``(batch,)``.

    >>> import symjit as mx
    >>> x = mx.nd.array([[0.0, 0.0], [3.0, 0.0]])
    >>> loss = mx.gluon.loss.SDMLLoss(smoothing_parameter=0.0)(x, x)   # exp(-9) off the diagonal
    >>> [round(v, 5) for v in loss.asnumpy().tolist()]
    [6e-05, 6e-05]
    """

    def __init__(self, smoothing_parameter: float = 0.3, weight: float | None = 1.0, batch_axis: int = 0,
                 **kwargs: Any):
        super().__init__(weight, batch_axis, **kwargs)
        self.smoothing_parameter = smoothing_parameter

    def hybrid_forward(self, F: Any, x1: Any, x2: Any) -> Any:  # noqa: N803
        if isinstance(x1, NDArray) and (x1.ndim != 2 or x1.shape != x2.shape or x1.shape[0] < 2):
            raise ValueError(f"SDMLLoss: x1 and x2 must be batches of vectors of one shape (batch >= 2, "
                             f"dim), got {x1.shape} and {x2.shape}")
        diff = F.broadcast_sub(F.expand_dims(x1, axis=1), F.expand_dims(x2, axis=0))
        log_p = F.log_softmax(-F.sum(F.square(diff), axis=2), axis=1)
        ones = F.ones_like(F.sum(x1, axis=1))                    # (batch,)
        gold = F.diag(ones)                                       # the positives: the diagonal
        s = self.smoothing_parameter
        labels = gold * (1 - s) + F.broadcast_div((1 - gold) * s, F.sum(ones) - 1)
        loss = labels * (F.log(labels + 1e-12) - log_p)
        return self._mean(F, _weighted(F, loss, self._weight, None))

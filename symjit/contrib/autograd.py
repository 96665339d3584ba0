"""``mx.contrib.autograd``: MXNet's first, experimental autograd interface, over :mod:`symjit.autograd`.

Here training and recording go together: :func:`train_section` records in training mode,
:func:`test_section` neither records nor trains. :func:`grad_and_loss` and :func:`grad` turn a
function of NDArrays into one that also returns its gradients with respect to its arguments.

>>> import symjit as mx
>>> from symjit.contrib import autograd as cag
>>> df = cag.grad(lambda x: x * x)
>>> df(mx.nd.array([3.0]))[0].asnumpy().tolist()
[6.0]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import autograd as _ag
from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray.creation import zeros

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section", "mark_variables",
           "backward", "compute_gradient", "grad_and_loss", "grad"]

mark_variables = _ag.mark_variables


def set_is_training(is_train: bool) -> bool:  # noqa: FBT001 - MXNet's signature
    """Turn recording and training mode on or off together; return the previous state.

    >>> from symjit.contrib import autograd as cag
    >>> cag.set_is_training(True), cag.set_is_training(False)
    (False, True)
    """
    prev = _ag.is_training()
    _ag.set_recording(bool(is_train))
    _ag.set_training(bool(is_train))
    return prev


class TrainingStateScope:
    """A scope that sets recording and training to ``enter_state`` and restores them after.

    >>> from symjit.contrib import autograd as cag
    >>> with cag.TrainingStateScope(True):
    ...     cag._ag.is_recording()
    True
    """

    def __init__(self, enter_state: bool) -> None:  # noqa: FBT001
        self._enter_state = bool(enter_state)
        self._prev: tuple[bool, bool] | None = None

    def __enter__(self) -> None:
        self._prev = (_ag.is_recording(), _ag.is_training())
        _ag.set_recording(self._enter_state)
        _ag.set_training(self._enter_state)

    def __exit__(self, *exc: Any) -> None:
        if self._prev is not None:
            _ag.set_recording(self._prev[0])
            _ag.set_training(self._prev[1])


def train_section() -> TrainingStateScope:
    """A scope that records in training mode.

    >>> import symjit as mx
    >>> from symjit.contrib import autograd as cag
    >>> with cag.train_section():
    ...     mx.autograd.is_recording(), mx.autograd.is_training()
    (True, True)
    """
    return TrainingStateScope(True)


def test_section() -> TrainingStateScope:
    """A scope (inside :func:`train_section`) that neither records nor trains.

    >>> import symjit as mx
    >>> from symjit.contrib import autograd as cag
    >>> with cag.train_section(), cag.test_section():
    ...     mx.autograd.is_recording()
    False
    """
    return TrainingStateScope(False)


def backward(outputs: Any, out_grads: Any = None, retain_graph: bool = False) -> None:  # noqa: FBT001, FBT002
    """The gradients of ``outputs`` into the marked variables (see :func:`symjit.autograd.backward`).

    >>> import symjit as mx
    >>> from symjit.contrib import autograd as cag
    >>> x, dx = mx.nd.array([2.0]), mx.nd.zeros((1,))
    >>> cag.mark_variables([x], [dx])
    >>> with cag.train_section():
    ...     y = x * x
    >>> cag.backward([y]); dx.asnumpy().tolist()
    [4.0]
    """
    _ag.backward(outputs, out_grads, retain_graph)


def compute_gradient(outputs: Any) -> None:
    """:func:`backward` with ones as the head gradients."""
    backward(outputs)


def grad_and_loss(func: Callable, argnum: int | list[int] | None = None) -> Callable:
    """``func`` made to return ``(gradients, outputs)``: the gradients of its outputs with
    respect to its arguments (those at ``argnum`` when given, which must be NDArrays).

    >>> import symjit as mx
    >>> from symjit.contrib import autograd as cag
    >>> grads, out = cag.grad_and_loss(lambda a, b: a * b)(mx.nd.array([2.0]), mx.nd.array([5.0]))
    >>> [g.asnumpy().tolist() for g in grads], out.asnumpy().tolist()
    ([[5.0], [2.0]], [10.0])
    """
    def wrapped(*args: Any) -> tuple[list[NDArray], Any]:
        picks = range(len(args)) if argnum is None else [argnum] if isinstance(argnum, int) else argnum
        variables = [args[i] for i in picks]
        for i, v in zip(picks, variables):
            if not isinstance(v, NDArray):
                raise MXNetError(f"contrib.autograd.grad_and_loss: argument {i} must be an NDArray to "
                                 f"be differentiated, got {type(v).__name__}")
        grads = [zeros(v.shape, ctx=v.context, dtype=v.dtype) for v in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func: Callable, argnum: int | list[int] | None = None) -> Callable:
    """``func`` made to return the gradients of its outputs with respect to its arguments (see
    :func:`grad_and_loss`).

    >>> import symjit as mx
    >>> from symjit.contrib import autograd as cag
    >>> cag.grad(lambda x: mx.nd.exp(x) * 0 + x * 3)(mx.nd.array([1.0]))[0].asnumpy().tolist()
    [3.0]
    """
    both = grad_and_loss(func, argnum)

    def wrapped(*args: Any) -> list[NDArray]:
        return both(*args)[0]
    return wrapped

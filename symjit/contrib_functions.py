"""Python-level functions of ``mx.sym.contrib`` and ``mx.nd.contrib`` (MXNet defines these in
Python, not as operators), written once for both namespaces over the registered operators:
``rand_zipfian``, ``uniform``, ``adamw_update`` and ``mp_adamw_update``; on NDArrays only (as in
MXNet) ``multi_adamw_update``, ``multi_mp_adamw_update``, ``multi_lamb_update`` and
``multi_mp_lamb_update``.

>>> import symjit as mx
>>> mx.random.seed(0)
>>> samples, true_count, sampled_count = mx.nd.contrib.rand_zipfian(mx.nd.array([3]), 4, 5)
>>> samples.dtype, samples.shape, round(float(true_count.asnumpy()[0]), 6)   # log(5/4) / log(6) * 4
(<class 'numpy.int64'>, (4,), 0.498155)
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["rand_zipfian_for", "uniform_for", "adamw_for", "multi_adamw_for", "multi_lamb_for",
           "boolean_mask_for", "backward_index_copy_for", "backward_hawkesll_for"]


def rand_zipfian_for(ns: Any, random: Any):
    """``rand_zipfian`` over the namespace ``ns`` (``mx.nd`` or ``mx.sym``) and its ``random``."""
    def rand_zipfian(true_classes: Any, num_sampled: int, range_max: int, ctx: Any = None) -> tuple:
        """``num_sampled`` classes in [0, range_max) drawn from the log-uniform (Zipfian)
        distribution ``P(c) = log((c + 2) / (c + 1)) / log(range_max + 1)`` (int64), and the
        expected counts of the true and the sampled classes (``P(c) * num_sampled``, float64), as
        sampled softmax needs them."""
        log_range = math.log(range_max + 1)
        extra = {} if ctx is None else {"ctx": ctx}
        u = random.uniform(0, log_range, shape=(num_sampled,), dtype="float64", **extra)
        classes = ns.Cast(ns.floor(ns.exp(u) - 1.0) % range_max, dtype="int64")

        def expected(c: Any) -> Any:
            c = ns.Cast(c, dtype="float64")
            return ns.log((c + 2.0) / (c + 1.0)) / log_range * num_sampled
        return classes, expected(true_classes), expected(classes)
    return rand_zipfian


def uniform_for(random: Any):
    """``contrib.uniform``: the namespace's ``random.uniform``."""
    def uniform(*args: Any, **kwargs: Any) -> Any:
        """Samples from the uniform distribution on [low, high) (``random.uniform``)."""
        return random.uniform(*args, **kwargs)
    return uniform


# --- the optimizer updates MXNet wraps in Python (over the registered _adamw_update, ...) -------------
def _rescale(ns: Any, value: Any, like: Any) -> Any:
    """``rescale_grad`` as an array of one element (MXNet takes a number or an array)."""
    if isinstance(value, (int, float)):
        if hasattr(like, "context"):
            return ns.full((1,), float(value), ctx=like.context, dtype=like.dtype)
        return ns.full(shape=(1,), val=float(value))
    return value


def adamw_for(ns: Any, call: Any, mp: bool):
    """``contrib.adamw_update`` (``mp``: ``mp_adamw_update``) over ``call(op, *inputs, out=, name=,
    **params)`` of the namespace ``ns``."""
    op = "_mp_adamw_update" if mp else "_adamw_update"

    def adamw_update(weight: Any, grad: Any, mean: Any, var: Any, *rest: Any, lr: float, eta: float,
                     out: Any = None, name: str | None = None, **kwargs: Any) -> Any:
        """AdamW: ``weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight)`` with Adam's
        moments of ``clip(rescale_grad * grad)``; ``rescale_grad`` (a number or an array of one
        element; nan, inf or 0 skips the step) follows the states (and ``weight32``)."""
        *w32, rescale_grad = rest
        if len(w32) != int(mp):
            raise TypeError(f"{'mp_' if mp else ''}adamw_update: expected weight, grad, mean, var"
                            f"{', weight32' if mp else ''}, rescale_grad")
        scale = _rescale(ns, rescale_grad, weight)
        return call(op, weight, grad, scale, mean, var, *w32, out=out, name=name, lr=lr, eta=eta, **kwargs)
    adamw_update.__name__ = f"{'mp_' if mp else ''}adamw_update"
    return adamw_update


def multi_adamw_for(ns: Any, call: Any, mp: bool):
    """``contrib.multi_adamw_update`` / ``multi_mp_adamw_update``: lists of arrays per weight."""
    op = "_multi_mp_adamw_update" if mp else "_multi_adamw_update"

    def multi_adamw_update(weights: list, grads: list, mean: list, var: list, *rest: Any, lrs: Any, wds: Any,
                           etas: Any, out: Any = None, name: str | None = None, size: int = 0,
                           **kwargs: Any) -> Any:
        """AdamW of every weight in one call (lists of weights, grads, means, vars (, weights32), then
        ``rescale_grad``); ``lrs``, ``wds``, ``etas`` one per weight."""
        *w32, rescale_grad = rest
        lists = [weights, grads, mean, var] + ([w32[0]] if mp else [])
        inputs = [a for group in zip(*lists) for a in group]
        return call(op, *inputs, _rescale(ns, rescale_grad, weights[0]), out=out, name=name,
                    num_weights=size or len(weights), lrs=tuple(lrs), wds=tuple(wds), etas=tuple(etas),
                    **kwargs)
    multi_adamw_update.__name__ = f"multi_{'mp_' if mp else ''}adamw_update"
    return multi_adamw_update


def multi_lamb_for(nd: Any, mp: bool):
    """``contrib.multi_lamb_update`` / ``multi_mp_lamb_update`` on NDArrays: per tensor, the
    registered ``lamb_update_phase1``, the two norms and ``lamb_update_phase2`` (what MXNet's fused
    kernel computes)."""
    def multi_lamb_update(weights: list, grads: list, mean: list, var: list, *rest: Any, step_count: Any,
                          lrs: Any, wds: Any, out: Any = None, num_tensors: int = 0,
                          rescale_grad: float = 1.0, lower_bound: float = -1.0, upper_bound: float = -1.0,
                          clip_gradient: float = -1.0,
                          bias_correction: bool = True, **kwargs: Any) -> list:
        """LAMB of every tensor: ``g = m_hat / (sqrt(v_hat) + epsilon) + wd * w``, then ``w -= lr *
        (||w|| / ||g||) * g`` (``||w||`` clamped to the bounds that are >= 0); ``step_count``, ``lrs``
        and ``wds`` one per tensor, ``out`` the list of arrays to write (default: new arrays)."""
        n = num_tensors or len(weights)
        w32 = rest[0] if mp else [None] * n
        outs = list(out) if out is not None else [None] * n
        p1 = {"rescale_grad": rescale_grad, "clip_gradient": clip_gradient,
              "bias_correction": bias_correction, **kwargs}
        results = []
        for j in range(n):
            master = [w32[j]] if mp else []
            g = (nd.mp_lamb_update_phase1 if mp else nd.lamb_update_phase1)(
                weights[j], grads[j], mean[j], var[j], *master, t=int(step_count[j]), wd=float(wds[j]), **p1)
            r1, r2 = nd.norm(master[0] if mp else weights[j]), nd.norm(g)
            results.append((nd.mp_lamb_update_phase2 if mp else nd.lamb_update_phase2)(
                weights[j], g, r1, r2, *master, lr=float(lrs[j]), lower_bound=lower_bound,
                upper_bound=upper_bound, out=outs[j]))
        return results
    multi_lamb_update.__name__ = f"multi_{'mp_' if mp else ''}lamb_update"
    return multi_lamb_update


# --- boolean_mask, backward_index_copy -------------------------------------------------------------
def boolean_mask_for(ns: Any, symbolic: bool):
    """``contrib.boolean_mask(data, index, axis=0)``: the slices of ``data`` along ``axis`` where
    the 1-D ``index`` is non-zero. Its output shape depends on ``index``'s values, so it runs on
    NDArrays only (the positions are read on the host, then the registered ``take`` gathers); in a
    symbol it is a clear error (``DataDependentShape``), since symjit binds static shapes."""
    def boolean_mask(data: Any, index: Any, axis: int = 0, out: Any = None, name: str | None = None) -> Any:
        """The slices of ``data`` along ``axis`` where ``index`` is non-zero (NDArrays only)."""
        from .base import DataDependentShape, MXNetError, shape_str
        if symbolic:
            raise DataDependentShape("contrib.boolean_mask: its output shape depends on the values of "
                                     "'index', and symjit binds symbols with static shapes; call "
                                     "mx.nd.contrib.boolean_mask on NDArrays instead")
        import numpy as np
        mask = index.asnumpy()
        ax = axis + data.ndim if axis < 0 else axis
        if mask.ndim != 1 or not 0 <= ax < data.ndim or mask.shape[0] != data.shape[ax]:
            raise MXNetError(f"contrib.boolean_mask: index must be 1-D with data.shape[{axis}] elements; "
                             f"data {shape_str(data.shape)}, index {shape_str(mask.shape)}")
        positions = ns.array(np.flatnonzero(mask), ctx=data.context, dtype="int64")
        return ns.take(data, positions, axis=ax, out=out)
    return boolean_mask


def backward_index_copy_for(ns: Any):
    """``contrib.backward_index_copy(out_grad, old_tensor, index_vector, new_tensor)``: the gradients
    of ``index_copy`` (``old_tensor``'s: ``out_grad`` with the copied rows zeroed; ``new_tensor``'s:
    the copied rows of ``out_grad``). MXNet 1.9.1 lists this internal op without inputs; symjit
    gives it the inputs of the forward op, after the head gradient (its choice)."""
    def backward_index_copy(out_grad: Any, old_tensor: Any, index_vector: Any, new_tensor: Any,
                            name: str | None = None, **kwargs: Any) -> list:
        """[gradient of old_tensor, gradient of new_tensor] of index_copy for ``out_grad``."""
        grad_old = ns.contrib.index_copy(out_grad, index_vector, ns.zeros_like(new_tensor))
        return [grad_old, ns.take(out_grad, index_vector, axis=0)]
    return backward_index_copy


def backward_hawkesll_for(ns: Any, call: Any):
    """``contrib.backward_hawkesll(ograd_ll, ograd_states, lda, alpha, beta, state, lags, marks,
    valid_length, max_time)``: hawkesll's gradients ``[lda, alpha, beta, state]`` for the head
    gradients of its two outputs. MXNet 1.9.1 lists this internal op without inputs; symjit gives
    it the head gradients, then the forward op's inputs (its choice)."""
    def backward_hawkesll(ograd_ll: Any, ograd_states: Any, lda: Any, alpha: Any, beta: Any, state: Any,
                          lags: Any, marks: Any, valid_length: Any, max_time: Any,
                          name: str | None = None) -> list:
        """[gradient of lda, alpha, beta, state] of hawkesll."""
        g = call("_backward_hawkesll", ograd_ll, ograd_states, lda, alpha, beta, state, lags, marks,
                 valid_length, max_time, name=name)
        return [g[0], ns.sum(g[1], axis=0), ns.sum(g[2], axis=0), g[3]]
    return backward_hawkesll

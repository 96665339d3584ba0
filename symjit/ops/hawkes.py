"""``contrib.hawkesll``: the log likelihood of univariate Hawkes processes (MXNet 1.9.1's operator):
for each sample, K independent processes with background intensity ``lda`` (N, K), branching
ratio ``alpha`` (K,) and decay ``beta`` (K,), observed as ``valid_length`` points with inter-arrival
times ``lags`` (N, T) and marks (process ids) ``marks`` (N, T) over ``(0, max_time]``, starting from
the memory ``state`` (N, K). Outputs the log likelihood (N,) and the memory at ``max_time`` (N, K).
Equal to MXNet 1.9.1's outputs.

Gradients reach ``lda``, ``alpha``, ``beta`` and ``state`` from both outputs' head gradients (the
exact derivative). MXNet 1.9.1 propagates only the log likelihood's head gradient and gives
``state`` none; for a loss on the log likelihood alone the gradients of lda, alpha and beta are the
same. ``contrib.backward_hawkesll`` returns these gradients directly. The per-sample routines:
:mod:`symjit.ops.hawkes_kernels`.

>>> import symjit as mx
>>> ll, s = mx.nd.contrib.hawkesll(mx.nd.array([[1.0]]), mx.nd.array([0.5]), mx.nd.array([1.0]),
...                                mx.nd.zeros((1, 1)), mx.nd.array([[1.0]]), mx.nd.zeros((1, 1)),
...                                mx.nd.array([1.0]), mx.nd.array([2.0]))
>>> round(float(ll.asnumpy()[0]), 6), round(float(s.asnumpy()[0, 0]), 6)   # log 1 - 2 - 0.5 (1 - e^-1)
(-2.31606, 0.367879)
"""
from __future__ import annotations

from .registry import Kind, OpDef, RuleError, register
from .rules import need_float, shape_str

__all__: list[str] = []

_ARGS = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")


def _shape(p: dict, ins: list, aux: list):
    lda, lags = ins[0], ins[4]
    if lda is None or lags is None:
        return list(ins), [None, None], []
    if len(lda) != 2 or len(lags) != 2 or lags[0] != lda[0]:
        raise RuleError(f"lda must be (N, K) and lags (N, T), got lda {shape_str(lda)}, "
                        f"lags {shape_str(lags)}")
    n, k = lda
    want = [(n, k), (k,), (k,), (n, k), lags, lags, (n,), (n,)]
    for name, got, exp in zip(_ARGS, ins, want):
        if got is not None and tuple(got) != exp:
            raise RuleError(f"input '{name}' must have shape {shape_str(exp)}, got {shape_str(got)}")
    return want, [(n,), (n, k)], []


def _dtype(p: dict, ins: list, aux: list):
    dt = next((d for d in ins[:5] if d is not None), None)
    if dt is not None:
        need_float(dt, "lda")
    out = [dt] * 5 + [ins[5] if ins[5] is not None else dt] + [ins[6] or dt, ins[7] or dt]
    return out, [dt, dt], []


def _grad(b, node, ograds):
    ll, state = node.outputs
    heads = [g if g is not None else b.add1("zeros_like", v) for g, v in zip(ograds, (ll, state))]
    g_lda, g_alpha, g_beta, g_state = b.add("_backward_hawkesll", heads + list(node.inputs), params={})
    return [g_lda, b.add1("sum", g_alpha, axis=0), b.add1("sum", g_beta, axis=0), g_state,
            None, None, None, None]


register(OpDef(
    name="_contrib_hawkesll", arguments=_ARGS, outputs=("output", "states"), shape=_shape, dtype=_dtype,
    kind=Kind.OPAQUE, grad=_grad, hint="hawkesll", extra={"family": "hawkes"},
    doc="Log likelihood of univariate Hawkes processes with exponential kernels (per sample), and the "
        "processes' memory at max_time."))
register(OpDef(
    name="_backward_hawkesll", arguments=("ograd_ll", "ograd_states") + _ARGS,
    outputs=("lda_grad", "alpha_grad_per_sample", "beta_grad_per_sample", "state_grad"),
    shape=lambda p, ins, aux: (list(ins), [ins[2]] * 4, []),
    dtype=lambda p, ins, aux: (list(ins), [ins[2]] * 4, []),
    kind=Kind.OPAQUE, extra={"backward_of": "_contrib_hawkesll", "family": "hawkes"},
    doc="hawkesll's gradients per sample (alpha's and beta's are summed over the samples by the caller)."))

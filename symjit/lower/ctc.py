"""Target-neutral lowering of CTCLoss (:mod:`symjit.ops.ctc`): the target's loop runs over the
sequences of the batch (one CPU iteration or CUDA thread each) and calls
:func:`~symjit.ops.ctc.ctc_sequence`, whose log-softmax and forward/backward variables live in
planned workspace; bad labels or lengths stop the program with an error naming the op.

>>> import symjit as mx
>>> loss = mx.nd.CTCLoss(mx.nd.zeros((3, 2, 4)), mx.nd.array([[1, 2], [3, 0]]))
>>> loss.shape
(2,)
"""
from __future__ import annotations

import numpy as np

from ..ops.ctc import ctc_sequence
from .rules import ANY, rule

__all__: list[str] = []


def _ctc(k, node, ins, outs) -> None:
    p = node.params
    t_len, n, kk = k.info[ins[0]].shape
    lab_len = k.info[ins[1]].shape[1]
    first = p["blank_label"] == "first"
    rest = list(ins[2:])
    # an unused length argument gets the (N,) loss array: never read, but typed like the lengths
    dlen = rest.pop(0) if p["use_data_lengths"] else outs[0]
    llen = rest.pop(0) if p["use_label_lengths"] else outs[0]
    lp, alpha, beta = k.workspace
    target = k.target
    idx = target.open_loop(k, [str(n)])
    code = k.tmp("code")
    k.line(f"{code} = {k.module.body(ctc_sequence)}({ins[0]}, {ins[1]}, {dlen}, {llen}, {outs[0]}, "
           f"{outs[1]}, "
           f"{lp}.reshape({n}, {t_len}, {kk}), {alpha}.reshape({n}, {t_len}, {2 * lab_len + 1}), "
           f"{beta}.reshape({n}, {t_len}, {2 * lab_len + 1}), {idx[0]}, {t_len}, {kk}, {lab_len}, "
           f"{0 if first else kk - 1}, {0 if first else -1}, {bool(p['use_data_lengths'])}, "
           f"{bool(p['use_label_lengths'])})")
    target.emit_check(k, f"{code} == 1", f"{node.op.name} '{node.name}': a label is outside the alphabet "
                      f"[0, {kk}) or is the blank ({0 if first else kk - 1})")
    target.emit_check(k, f"{code} == 2", f"{node.op.name} '{node.name}': a data length is outside [0, "
                      f"{t_len}] or a label length outside [0, {lab_len}]")
    target.close_loop(k, idx)


def _scratch(node, ins, outs):
    t_len, n, kk = ins[0].shape
    s = 2 * ins[1].shape[1] + 1
    dt = np.dtype(ins[0].dtype)
    return [((n * t_len * kk,), dt), ((n * t_len * s,), dt), ((n * t_len * s,), dt)]


rule("CTCLoss", ANY, _ctc, workspace=_scratch)

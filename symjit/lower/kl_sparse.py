"""Target-neutral lowering of IdentityAttachKLSparseReg (:mod:`symjit.ops.kl_sparse`): a copy loop
(nothing when the output shares the input's buffer), and in training one iteration per channel
that averages it over every other axis and updates the running mean ``moving_avg``.

>>> import numpy as np, symjit as mx
>>> x = mx.sym.IdentityAttachKLSparseReg(mx.sym.var('data'), momentum=0.5, name='kl')
>>> ex = x.bind(mx.cpu(), {'data': mx.nd.array([[0.2, 0.4], [0.4, 0.8]])},
...             aux_states={'kl_moving_avg': mx.nd.array([0.1, 0.2])})
>>> _ = ex.forward(is_train=True)
>>> [round(v, 6) for v in ex.aux_dict['kl_moving_avg'].asnumpy().tolist()]
[0.2, 0.4]
"""
from __future__ import annotations

from ..ops.rules import prod
from .rules import ANY, rule

__all__: list[str] = []


def _emit(k, node, ins, outs) -> None:
    x, avg = ins
    shape = k.info[x].shape
    target = k.target
    fx, fo = k.tmp("f"), k.tmp("f")
    k.line(f"{fx} = {x}.reshape(-1)")
    k.line(f"{fo} = {outs[0]}.reshape(-1)")
    idx = target.open_loop(k, [str(prod(shape))])
    k.line(f"{fo}[{idx[0]}] = {fx}[{idx[0]}]")
    target.close_loop(k, idx)
    if not node.train:
        return
    n, c, rest = shape[0], shape[1], prod(shape[2:])
    mom = float(node.params["momentum"])
    idx = target.open_loop(k, [str(c)])
    acc, i, j = k.tmp("acc"), k.tmp("i"), k.tmp("j")
    k.line(f"{acc} = 0.0")
    k.line(f"for {i} in range({n}):")
    k.line(f"    for {j} in range({rest}):")
    k.line(f"        {acc} += {fx}[({i} * {c} + {idx[0]}) * {rest} + {j}]")
    k.line(f"{avg}[{idx[0]}] = {mom!r} * {avg}[{idx[0]}] + {1.0 - mom!r} * ({acc} / {n * rest})")
    target.close_loop(k, idx)


rule("IdentityAttachKLSparseReg", ANY, _emit, inplace=((0, 0),))

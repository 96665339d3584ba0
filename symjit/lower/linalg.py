"""Target-neutral lowering of the linalg factorisations (:mod:`symjit.ops.linalg_factor`): the
target's loop runs over the matrices of the batch (one CPU iteration or one CUDA thread each) and
calls the per-matrix routine of :mod:`symjit.ops.linalg_kernels` (wrapped per target like the
scalar bodies) on 3-D (batch, rows, columns) views. Scratch is planned workspace. ``potrf`` stops
the program with an error naming the op when a matrix is not positive definite, ``inverse`` when
one is singular.

>>> import symjit as mx
>>> x = mx.sym.Variable('x')
>>> ex = mx.sym.linalg.det(x).simple_bind(mx.cpu(), x=(2, 2, 2))
>>> ex.forward(x=mx.nd.array([[[1, 2], [3, 4]], [[2, 0], [0, 3]]]))[0].asnumpy().round(5).tolist()
[-2.0, 6.0]
"""
from __future__ import annotations

import numpy as np

from ..ops import linalg_kernels as lk
from ..ops.rules import prod
from .emit import literal
from .rules import ANY, rule

__all__: list[str] = []


def _view(k, arr: str, rows: int, cols: int) -> str:
    shape = k.info[arr].shape
    batch = prod(shape) // (rows * cols) if rows * cols else 0
    v = k.tmp("v")
    k.line(f"{v} = {arr}.reshape({batch}, {rows}, {cols})")
    return v


def _vec(k, arr: str, length: int) -> str:
    batch = prod(k.info[arr].shape) // length if length else 0
    v = k.tmp("v")
    k.line(f"{v} = {arr}.reshape({batch}, {length})")
    return v


def _loop(k, like: str, rows: int, cols: int):
    """Open the loop over the matrices of ``like``; returns (target, loop indices, batch index)."""
    target = k.target
    batch = prod(k.info[like].shape) // (rows * cols)
    idx = target.open_loop(k, [str(batch)])
    return target, idx, idx[0]


def _sq(k, arr: str) -> int:
    return k.info[arr].shape[-1]


def potrf(k, node, ins, outs) -> None:
    n = _sq(k, ins[0])
    a, out = _view(k, ins[0], n, n), _view(k, outs[0], n, n)
    target, idx, z = _loop(k, ins[0], n, n)
    k.line(f"{k.module.body(lk.cholesky)}({a}, {out}, {z}, {n}, {bool(node.params['lower'])})")
    j = k.tmp("j")
    k.line(f"for {j} in range({n}):")
    k.indent += 1
    target.emit_check(k, f"not ({out}[{z}, {j}, {j}] > 0)",
                      f"{node.op.name} '{node.name}': a {n}x{n} matrix of A is not positive definite")
    k.indent -= 1
    target.close_loop(k, idx)


def trsm(k, node, ins, outs) -> None:
    p = node.params
    m, n = k.info[ins[1]].shape[-2:]
    na = _sq(k, ins[0])
    a, b, out = _view(k, ins[0], na, na), _view(k, ins[1], m, n), _view(k, outs[0], m, n)
    target, idx, z = _loop(k, ins[1], m, n)
    alpha = literal(float(p["alpha"]), k.info[outs[0]].dtype)
    k.line(f"{k.module.body(lk.triangular_solve)}({a}, {b}, {out}, {z}, {m}, {n}, {bool(p['transpose'])}, "
           f"{bool(p['rightside'])}, {bool(p['lower'])}, {alpha})")
    target.close_loop(k, idx)


def inverse(k, node, ins, outs) -> None:
    n = _sq(k, ins[0])
    a, out, w = _view(k, ins[0], n, n), _view(k, outs[0], n, n), _view(k, k.workspace[0], n, n)
    target, idx, z = _loop(k, ins[0], n, n)
    k.line(f"{k.module.body(lk.gauss_jordan_inverse)}({a}, {out}, {w}, {z}, {n})")
    i = k.tmp("i")
    k.line(f"for {i} in range({n * n}):")
    k.indent += 1
    cell = f"{out}[{z}, {i} // {n}, {i} % {n}]"
    target.emit_check(k, f"not (abs({cell}) < math.inf)",
                      f"{node.op.name} '{node.name}': a {n}x{n} matrix of A is singular")
    k.indent -= 1
    target.close_loop(k, idx)


def det(k, node, ins, outs) -> None:
    n = _sq(k, ins[0])
    a, w = _view(k, ins[0], n, n), _view(k, k.workspace[0], n, n)
    if node.op.name.endswith("slogdet"):
        sign, logabs = (_vec(k, o, 1) for o in outs)
    else:
        sign, logabs = _vec(k, outs[0], 1), _vec(k, k.workspace[1], 1)
    target, idx, z = _loop(k, ins[0], n, n)
    k.line(f"{k.module.body(lk.lu_slogdet)}({a}, {w}, {z}, {n}, {sign}[{z}], {logabs}[{z}], 0)")
    if not node.op.name.endswith("slogdet"):
        k.line(f"{sign}[{z}, 0] = {sign}[{z}, 0] * math.exp({logabs}[{z}, 0])")
    target.close_loop(k, idx)


def trian(k, node, ins, outs) -> None:
    p = node.params
    extract = node.op.name.endswith("extracttrian")
    mat, vec = (ins[0], outs[0]) if extract else (outs[0], ins[0])
    n = _sq(k, mat)
    length = k.info[vec].shape[-1]
    mv, vv = _view(k, mat, n, n), _vec(k, vec, length)
    target, idx, z = _loop(k, mat, n, n)
    k.line(f"{k.module.body(lk.triangle_copy)}({mv}, {vv}, {z}, {n}, {int(p['offset'])}, "
           f"{bool(p['lower'])}, {extract})")
    target.close_loop(k, idx)


def gelqf(k, node, ins, outs) -> None:
    m, n = k.info[ins[0]].shape[-2:]
    a, q = _view(k, ins[0], m, n), _view(k, outs[0], m, n)
    lo = _view(k, outs[1], m, m)
    w, v = (_view(k, s, m, n) for s in k.workspace)
    target, idx, z = _loop(k, ins[0], m, n)
    k.line(f"{k.module.body(lk.householder_lq)}({a}, {q}, {lo}, {w}, {v}, {z}, {m}, {n})")
    target.close_loop(k, idx)


def syevd(k, node, ins, outs) -> None:
    n = _sq(k, ins[0])
    a, u = _view(k, ins[0], n, n), _view(k, outs[0], n, n)
    lam = _vec(k, outs[1], n)
    w, vec = (_view(k, s, n, n) for s in k.workspace)
    target, idx, z = _loop(k, ins[0], n, n)
    k.line(f"{k.module.body(lk.jacobi_eigh)}({a}, {u}, {lam}, {w}, {vec}, {z}, {n})")
    target.close_loop(k, idx)


def _like_input(count: int, extra_scalar: bool = False):
    """``count`` scratch buffers shaped like input 0 (plus one value per matrix for det)."""
    def workspace(node, ins, outs):
        dt = np.dtype(ins[0].dtype)
        bufs = [(tuple(ins[0].shape), dt)] * count
        if extra_scalar:
            bufs.append((tuple(outs[0].shape), dt))
        return bufs
    return workspace


rule("_linalg_potrf", ANY, potrf)
rule("_linalg_trsm", ANY, trsm)
rule("_linalg_inverse", ANY, inverse, workspace=_like_input(1))
rule("_linalg_det", ANY, det, workspace=_like_input(1, extra_scalar=True))
rule("_linalg_slogdet", ANY, det, workspace=_like_input(1))
rule("_linalg_extracttrian", ANY, trian)
rule("_linalg_maketrian", ANY, trian)
rule("_linalg_gelqf", ANY, gelqf, workspace=_like_input(2))
rule("_linalg_syevd", ANY, syevd, workspace=_like_input(2))

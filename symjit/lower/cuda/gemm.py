"""CUDA lowering of the matrix products and convolutions as tiled GEMMs in shared memory, the
group's epilogue fused into the store: FullyConnected, dot (at least one operand of rank 2 or
more), and Convolution (one group; 1-D or 2-D) forward, data gradient and weight gradient by
implicit GEMM.

The output, seen as an (M, N) matrix, is cut into T x T tiles (T = :func:`symjit.kernels.cuda
.gemm_tile`: 16 on a GPU, 2 on the simulator); one block of T*T threads computes a tile, blocks
striding over the tiles. For each step of T along the contraction K, the block stages a T x T tile
of each operand in shared memory (zeros past the edges and where the operand has no element),
synchronises, and every thread accumulates its element's T products from shared memory; so each
operand element is read from global memory once per tile row or column instead of once per output
element. An operand is described by how element (outer index, k) is loaded, which may gather: a
convolution's input patch element ``x[n, c, oh * s - p + kh * d, ...]`` (im2col without the
column buffer), or for the data gradient the head gradient at the output position that covers the
input pixel (zero where none does). Consecutive threads walk the operand's contiguous axis when
loading. Threads whose element lies past the matrix edge load and synchronise with the others and
store nothing; the element a thread owns is then the rule's element expression, on which the shared
loop generator composes the group's elementwise consumers (bias, activation) and stores.

Grouped convolutions, vector dot products and batch_dot keep the target-neutral per-element rules
(:mod:`symjit.lower.accumulate`, :mod:`symjit.lower.window`), and so do products too big for numba's
simulator to run tiled (:func:`symjit.kernels.cuda.tiled`: its barriers cost a round of Python
threads each); on a GPU every other product is tiled.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...kernels.cuda import TILE, gemm_tile, tiled
from ...ops.deconv import conv_view
from ...ops.rules import prod, window_params
from ..accumulate import dot_elements, fc_elements, matrix_view
from ..emit import decode_flat
from ..rules import rule
from ..window import conv_data_elements, conv_elements, conv_weight_elements, with_bias
from . import CUDATarget

# (k, outer index, contraction index) -> (element source, extra validity condition or "")
Load = Callable[..., tuple[str, str]]


@dataclass
class Operand:
    """How a GEMM operand's element (outer index, contraction index) is read: ``load`` emits what
    it needs and returns the element's source and a condition for it to exist (a padded pixel
    does not); ``outer_fast`` when consecutive addresses follow the outer index (rows of A,
    columns of B), else the contraction index."""

    load: Load
    outer_fast: bool


def tiled_gemm(k, dtype, m: str, n: str, kk: str, static_mn: tuple[int, int], a: Operand, b: Operand,
               out_index: Callable[..., list[str]], bias: str | None = None):
    """Make the kernel's loop the tiled GEMM ``out[i, j] = sum_q A[i, q] * B[q, j]`` over
    ``m`` x ``n`` outputs and ``kk`` contraction steps (sources); ``out_index(k, i, j)`` emits and
    returns the output's index of matrix element (i, j). Returns the element expression (the
    thread's sum, plus ``bias[j]``)."""
    t, sdt = gemm_tile(), f"numba.{dtype.name}"
    k.block_kind = "tile"
    names: dict[str, str] = {}

    def stage(k, op: Operand, tile: str, base: str, extent: str, k0: str, ty: str, tx: str) -> None:
        # the tile holds [outer, contraction]; the fast thread index walks the contiguous axis
        o_loc, q_loc = (tx, ty) if op.outer_fast else (ty, tx)
        o, q = k.tmp("o"), k.tmp("q")
        k.line(f"{o} = {base} + {o_loc}")
        k.line(f"{q} = {k0} + {q_loc}")
        value, cond = op.load(k, o, q)
        ok = f"{o} < {extent} and {q} < {names['kk']}" + (f" and {cond}" if cond else "")
        k.line(f"{tile}[{o_loc}, {q_loc}] = {value} if {ok} else {sdt}(0)")

    def open_loop(k, dims: list[str]) -> list[str]:
        tiles_n = f"(({n}) + {t - 1}) // {t}"
        k.per_block = (f"(({m}) + {t - 1}) // {t} * ({tiles_n})",
                       -(-static_mn[0] // TILE) * -(-static_mn[1] // TILE))
        mm, nn, kq, tn = k.tmp("m"), k.tmp("n"), k.tmp("kk"), k.tmp("tn")
        ty, tx, sa, sb = k.tmp("ty"), k.tmp("tx"), k.tmp("sa"), k.tmp("sb")
        names["kk"] = kq
        k.line(f"{mm} = {m}")
        k.line(f"{nn} = {n}")
        k.line(f"{kq} = {kk}")
        k.line(f"{tn} = ({nn} + {t - 1}) // {t}")
        k.line(f"{ty} = cuda.threadIdx.x // {t}")
        k.line(f"{tx} = cuda.threadIdx.x % {t}")
        # [outer, contraction] tiles; a padded row keeps a tile's column off one shared-memory bank
        k.line(f"{sa} = cuda.shared.array(({t}, {t + 1}), {sdt})")
        k.line(f"{sb} = cuda.shared.array(({t}, {t + 1}), {sdt})")
        tile, ib, jb, acc, k0, s = (k.tmp(p) for p in ("tile", "ib", "jb", "acc", "k0", "s"))
        k.line(f"for {tile} in range(cuda.blockIdx.x, (({mm} + {t - 1}) // {t}) * {tn}, cuda.gridDim.x):")
        k.indent += 1
        k.line(f"{ib} = ({tile} // {tn}) * {t}")
        k.line(f"{jb} = ({tile} % {tn}) * {t}")
        k.line(f"{acc} = {sdt}(0)")
        k.line(f"for {k0} in range(0, {kq}, {t}):")
        k.indent += 1
        stage(k, a, sa, ib, mm, k0, ty, tx)
        stage(k, b, sb, jb, nn, k0, ty, tx)
        k.line("cuda.syncthreads()")
        k.line(f"for {s} in range({t}):")
        k.line(f"    {acc} += {sa}[{ty}, {s}] * {sb}[{tx}, {s}]")
        k.line("cuda.syncthreads()")
        k.indent -= 1
        i, j = k.tmp("i"), k.tmp("j")
        k.line(f"{i} = {ib} + {ty}")
        k.line(f"{j} = {jb} + {tx}")
        k.line(f"if {i} < {mm} and {j} < {nn}:")
        k.indent += 1
        names.update(acc=acc, j=j)
        return out_index(k, i, j)

    def close_loop(k, idx: list[str]) -> None:
        k.indent -= 2

    k.loop = (open_loop, close_loop)
    return lambda idx: names["acc"] if bias is None else f"{names['acc']} + {bias}[{names['j']}]"


def _size(shape, axes) -> int:
    return prod(shape[d] for d in axes)


def _static_mn(k, out: str, row_axes: int) -> tuple[int, int]:
    shape = k.info[out].shape
    return _size(shape, range(row_axes)), _size(shape, range(row_axes, len(shape)))


def _rows_cols(k, out: str, row_axes: int):
    """(M, N sources, static (M, N), out_index) of an output whose first ``row_axes`` axes are
    the rows."""
    shape = k.info[out].shape
    nd = len(shape)
    rows = [f"{out}.shape[{d}]" for d in range(row_axes)]
    cols = [f"{out}.shape[{d}]" for d in range(row_axes, nd)]

    def out_index(k, i, j):
        return (decode_flat(k, i, rows) if rows else []) + (decode_flat(k, j, cols) if cols else [])
    return (" * ".join(rows) or "1", " * ".join(cols) or "1",
            (_size(shape, range(row_axes)), _size(shape, range(row_axes, nd))), out_index)


def _matrix(arr: str, transposed: bool) -> Operand:
    """A 2-D view read as (outer, contraction): ``arr[o, q]``, or ``arr[q, o]`` when transposed."""
    if transposed:
        return Operand(lambda k, o, q: (f"{arr}[{q}, {o}]", ""), True)
    return Operand(lambda k, o, q: (f"{arr}[{o}, {q}]", ""), False)


def _small_enough(k, static_mn: tuple[int, int], extent: int) -> bool:
    return tiled(static_mn[0] * static_mn[1] * extent)


def fc_tiled(k, node, ins, outs):
    x, w, out = ins[0], ins[1], outs[0]
    rows = 1 if node.params["flatten"] else len(k.info[out].shape) - 1
    if not _small_enough(k, _static_mn(k, out, rows), k.info[w].shape[1]):
        return fc_elements(k, node, ins, outs)
    flat = node.params["flatten"]
    x2 = matrix_view(k, x, 1 if flat else len(k.info[x].shape) - 1)
    m, n, static, out_index = _rows_cols(k, out, 1 if flat else len(k.info[out].shape) - 1)
    bias = None if node.params["no_bias"] else ins[2]
    return tiled_gemm(k, k.info[x].dtype, m, n, f"{w}.shape[1]", static, _matrix(x2, False),
                      _matrix(w, False), out_index, bias)


def dot_tiled(k, node, ins, outs):
    lhs, rhs, out = ins[0], ins[1], outs[0]
    nl, nr = len(k.info[lhs].shape), len(k.info[rhs].shape)
    if nl == 1 and nr == 1:
        return dot_elements(k, node, ins, outs)   # a single sum: no tile to share
    ta, tb = node.params["transpose_a"], node.params["transpose_b"]
    shape = k.info[lhs].shape
    extent = shape[0] if ta else shape[-1]
    if not _small_enough(k, _static_mn(k, out, nl - 1), extent):
        return dot_elements(k, node, ins, outs)
    a = matrix_view(k, lhs, 1 if ta else nl - 1)
    b = matrix_view(k, rhs, nr - 1 if tb else 1)
    m, n, static, out_index = _rows_cols(k, out, nl - 1)
    # B is (K x N), read as (column, contraction): transposed unless tb
    return tiled_gemm(k, k.info[lhs].dtype, m, n, f"{a}.shape[{0 if ta else 1}]", static,
                      _matrix(a, ta), _matrix(b, not tb), out_index)


# --- convolution by implicit GEMM ---------------------------------------------------------------


@dataclass
class _Geometry:
    nsp: int
    kern: list[int]
    stride: tuple
    dilate: tuple
    pad: tuple


def _geometry(k, node, x: str) -> _Geometry:
    p = node.params
    nsp = len(k.info[x].shape) - 2
    stride, dilate, pad = window_params(p, nsp)
    return _Geometry(nsp, list(p["kernel"]), stride, dilate, pad)


def _tileable(k, node, x: str, out: str, extent: int) -> bool:
    """One group, NCW or NCHW, and (on the simulator) a small enough product: ``out``'s size
    times the contraction's ``extent``."""
    if node.params["num_group"] != 1 or len(k.info[x].shape) not in (3, 4):
        return False
    return tiled(_size(k.info[out].shape, range(len(k.info[out].shape))) * extent)


def _spatial(arr: str, nsp: int) -> list[str]:
    return [f"{arr}.shape[{2 + d}]" for d in range(nsp)]


def _input_pos(k, g: _Geometry, opos: list[str], kpos: list[str], x: str) -> tuple[list[str], str]:
    """Input pixel of output position ``opos`` and kernel offset ``kpos``, and its in-bounds test."""
    pos = [k.tmp("p") for _ in opos]
    for d, p in enumerate(pos):
        k.line(f"{p} = {opos[d]} * {g.stride[d]} - {g.pad[d]} + {kpos[d]} * {g.dilate[d]}")
    return pos, " and ".join(f"0 <= {p} < {x}.shape[{2 + d}]" for d, p in enumerate(pos))


def conv_tiled(k, node, ins, outs):
    """out[n, f, o...] = sum over (c, kk...) of x[n, c, o * s - p + kk * d] * w[f, c, kk]:
    rows (n, o...), columns f, contraction (c, kk...)."""
    x, w, out = ins[0], ins[1], outs[0]
    ws = k.info[w].shape
    if not _tileable(k, node, x, out, _size(ws, range(1, len(ws)))):
        return conv_elements(k, node, ins, outs)
    g = _geometry(k, node, x)
    osp = _spatial(out, g.nsp)
    ksp = [str(v) for v in g.kern]

    def load_x(k, o, q):
        n_, *op = decode_flat(k, o, [f"{out}.shape[0]", *osp])
        c, *kp = decode_flat(k, q, [f"{w}.shape[1]", *ksp])
        pos, inside = _input_pos(k, g, op, kp, x)
        return f"{x}[{n_}, {c}, {', '.join(pos)}]", inside

    wv = k.tmp("w")
    k.line(f"{wv} = {w}.reshape({w}.shape[0], {w}.size // {w}.shape[0])")

    def out_index(k, i, j):
        n_, *op = decode_flat(k, i, [f"{out}.shape[0]", *osp])
        return [n_, j, *op]

    shape = k.info[out].shape
    static = (shape[0] * _size(shape, range(2, len(shape))), shape[1])
    bias = None if node.params["no_bias"] else ins[2]
    return tiled_gemm(k, k.info[x].dtype, f"{out}.shape[0] * {' * '.join(osp)}", f"{out}.shape[1]",
                      f"{wv}.shape[1]", static, Operand(load_x, True),
                      Operand(lambda k, o, q: (f"{wv}[{o}, {q}]", ""), False), out_index, bias)


def conv_data_tiled(k, node, ins, outs):
    """dx[n, c, i...] = sum over (f, kk...) of dout[n, f, o...] * w[f, c, kk], o the output
    position whose window puts offset kk on i (none when i + p - kk * d is not a multiple of s or
    falls outside): rows (n, i...), columns c, contraction (f, kk...)."""
    dout, w, dx = ins[0], ins[2], outs[0]
    ws = k.info[w].shape
    if not _tileable(k, node, dx, dx, ws[0] * _size(ws, range(2, len(ws)))):
        return conv_data_elements(k, node, ins, outs)
    g = _geometry(k, node, dx)
    isp, osp = _spatial(dx, g.nsp), _spatial(dout, g.nsp)
    ksp = [str(v) for v in g.kern]

    def load_dout(k, o, q):
        n_, *ip = decode_flat(k, o, [f"{dx}.shape[0]", *isp])
        f, *kp = decode_flat(k, q, [f"{w}.shape[0]", *ksp])
        num, op = [k.tmp("t") for _ in ip], [k.tmp("o") for _ in ip]
        for d in range(g.nsp):
            k.line(f"{num[d]} = {ip[d]} + {g.pad[d]} - {kp[d]} * {g.dilate[d]}")
            k.line(f"{op[d]} = {num[d]} // {g.stride[d]}")
        ok = " and ".join(f"{num[d]} % {g.stride[d]} == 0 and 0 <= {op[d]} < {osp[d]}"
                          for d in range(g.nsp))
        return f"{dout}[{n_}, {f}, {', '.join(op)}]", ok

    def load_w(k, o, q):   # column c, contraction (f, kk...)
        f, *kp = decode_flat(k, q, [f"{w}.shape[0]", *ksp])
        return f"{w}[{f}, {o}, {', '.join(kp)}]", ""

    def out_index(k, i, j):
        n_, *ip = decode_flat(k, i, [f"{dx}.shape[0]", *isp])
        return [n_, j, *ip]

    shape = k.info[dx].shape
    static = (shape[0] * _size(shape, range(2, len(shape))), shape[1])
    contraction = f"{w}.shape[0] * {' * '.join(ksp)}"
    return tiled_gemm(k, k.info[dout].dtype, f"{dx}.shape[0] * {' * '.join(isp)}", f"{dx}.shape[1]",
                      contraction, static, Operand(load_dout, True), Operand(load_w, False), out_index)


def conv_weight_tiled(k, node, ins, outs):
    """dw[f, c, kk...] = sum over (n, o...) of dout[n, f, o...] * x[n, c, o * s - p + kk * d]:
    rows f, columns (c, kk...), contraction (n, o...)."""
    dout, x, dw = ins[0], ins[1], outs[0]
    ds = k.info[dout].shape
    if not _tileable(k, node, x, dw, ds[0] * _size(ds, range(2, len(ds)))):
        return conv_weight_elements(k, node, ins, outs)
    g = _geometry(k, node, x)
    osp = _spatial(dout, g.nsp)
    ksp = [str(v) for v in g.kern]

    def load_dout(k, o, q):   # row f, contraction (n, o...)
        n_, *op = decode_flat(k, q, [f"{dout}.shape[0]", *osp])
        return f"{dout}[{n_}, {o}, {', '.join(op)}]", ""

    def load_x(k, o, q):      # column (c, kk...), contraction (n, o...)
        c, *kp = decode_flat(k, o, [f"{dw}.shape[1]", *ksp])
        n_, *op = decode_flat(k, q, [f"{dout}.shape[0]", *osp])
        pos, inside = _input_pos(k, g, op, kp, x)
        return f"{x}[{n_}, {c}, {', '.join(pos)}]", inside

    def out_index(k, i, j):
        c, *kp = decode_flat(k, j, [f"{dw}.shape[1]", *ksp])
        return [i, c, *kp]

    shape = k.info[dw].shape
    static = (shape[0], _size(shape, range(1, len(shape))))
    return tiled_gemm(k, k.info[x].dtype, f"{dw}.shape[0]", f"{dw}.size // {dw}.shape[0]",
                      f"{dout}.shape[0] * {' * '.join(osp)}", static, Operand(load_dout, False),
                      Operand(load_x, False), out_index)


rule("FullyConnected", CUDATarget, fc_tiled, epilogue=True, gathers=True)
rule("dot", CUDATarget, dot_tiled, epilogue=True, gathers=True)
rule("Convolution", CUDATarget, conv_tiled, epilogue=True, gathers=True)
rule("_backward_Convolution_data", CUDATarget, conv_data_tiled)


def deconv_tiled(k, node, ins, outs):
    """Deconvolution: the tiled data gradient of the convolution it is the adjoint of, plus the bias
    in the tile's epilogue."""
    view = conv_view(node, k.info[ins[0]].shape)
    return with_bias(conv_data_tiled(k, view, [ins[0], outs[0], ins[1]], outs), node, ins)


rule("Deconvolution", CUDATarget, deconv_tiled)
rule("_backward_Convolution_weight", CUDATarget, conv_weight_tiled)

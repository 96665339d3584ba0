"""Direct convolution at stride 1 in register-blocked SIMD tiles (float32): forward and gradients.

im2col + GEMM copies each input element ``KH*KW`` times and hands BLAS a matrix shaped by the
layer; oneDNN-style direct convolution instead keeps a tile of outputs in registers and reads the
input where it lies. With :mod:`symjit.kernels.cpu.simd`'s vectors that tile is ``MR`` filters x
``NR`` outputs (6 x 64 = 24 ``zmm`` accumulators on AVX-512, 6 x 16 on AVX2): for every channel and
tap it loads ``NR`` consecutive inputs (``NR / 16`` vectors) and multiplies them by each of the
``MR`` filters' weights (a broadcast load folded into the multiply-add), one fused multiply-add per
accumulator.

Consecutive outputs read consecutive inputs only at stride 1, and only if the row ends and the
padding do not get in the way. So a block of ``nb`` images is copied once per call into a padded
buffer where rows and images follow each other with their padding shared (:func:`vec_layout`):
per channel, image ``n``'s row ``ih`` starts at ``(n * (H + ph) + ih + ph) * (W + pw) + pw``, and
the ``pw`` zeros between two rows are the right padding of one and the left of the next (likewise
``ph`` zero rows between images). Output ``(n, oh, ow)`` is then flat position ``o = (n * (H + ph)
+ oh) * (W + pw) + ow``, and tap ``(kh, kw)`` reads input position ``o + kh*dh*(W + pw) + kw*dw``
for every ``o``: the whole block is one long row of outputs, cut into tiles of ``NR``. Positions
with ``ow >= OW`` or ``oh >= OH`` are computed and dropped (``pw / (W + pw)`` of a row: 2% at
56 x 56, 12% at 7 x 7); the last run's tile has as many vectors as reach the last position. The
tiles go to an output buffer ``(F rounded up to MR, positions)``, and a last pass copies its valid
positions to the NCHW output. The weight is read where it lies, through its strides (the last
filter block's rows past ``F`` repeat filter ``F - 1``, into output rows that are dropped): packing
it per call had cost as much as the tiles on ResNet's 7 x 7 layer at batch 2.

The data gradient of such a convolution is one too (:func:`conv2d_backward_data_vec_parts`):
``dx = conv(dout, w')`` with ``w'[c, f] = w[f, c]`` rotated by 180 degrees and padding ``d*(K-1) -
pad``. The weight gradient (:func:`conv2d_backward_weight_vec_parts`) pads the input the same
way, writes the output gradient at its outputs' flat positions (zeros between) and sums ``dout[f, o]
* x[c, o + tap]`` over all positions ``o`` in tiles of vector partial sums. All three split their
tiles over the host's threads in parts, meeting at a barrier between phases
(:mod:`symjit.kernels.cpu._parallel`).
The compiler picks these kernels per shape (:func:`~symjit.kernels.cpu.conv_shapes.prefers_vec`;
figures in ``docs/performance.md``, "Direct convolution in SIMD tiles").

>>> import numpy as np
>>> from symjit.kernels.cpu.conv import check_conv2d, conv2d_cols_shape
>>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
>>> w = np.ones((1, 1, 3, 3), np.float32)
>>> out = np.empty((1, 1, 2, 2), np.float32)
>>> geometry = ((1, 1), (0, 0), (1, 1), 1)
>>> cols = np.empty(conv2d_cols_shape("forward_vec", x.shape, w.shape, out.shape, 1), np.float32)
>>> check_conv2d("forward_vec", x, w, out, cols, *geometry)
>>> from symjit.parts import whole_call
>>> conv2d_forward_vec_parts(x, w, out, cols, *geometry, *whole_call())
>>> out[0, 0]
array([[45., 54.],
       [81., 90.]], dtype=float32)
"""
from __future__ import annotations

import numba
import numpy as np

from symjit.jitext import install

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from ._parallel import part_range
from .conv_shapes import vec_images_per_block, vec_layout, vec_packed_length, vec_packs_weights, vec_tile
from .simd import LANES, vadd, vbcast, vload, vmuladd, vstore, vsum, vzero
from .spin import barrier

__all__ = ["conv2d_forward_vec_parts", "conv2d_forward_vec_flat_parts",
           "conv2d_backward_data_vec_parts",
           "conv2d_backward_weight_vec_parts", "tile_gemm", "MR", "NR"]

_jit = njit(cache=True, nogil=True, error_model="numpy")
install()   # the layout helpers (conv_shapes) are called by the kernels below

MR, _NV = vec_tile() if vec_tile()[0] else (6, 4)
"""Filters per tile (``MR``) and vectors of outputs per tile: 6 x 4 with AVX-512 (32 vector
registers), 6 x 1 with AVX2 (16); ``conv_shapes.vec_tile`` (without either the compiler does not
pick these kernels, which then compile the AVX-512 tile only for the tests)."""
NR = LANES * _NV


_TILE_ARGS = "x, xo, cs, rs, dw, w, wo, wrs, wcs, wkh, wkw, rows, out, oo, os, c0, c1, kh_, kw_, first"


def _tile_source(mr: int, nv: int, name: str, packed: bool = False) -> str:
    """Source of the ``mr x 16*nv`` tile over channels ``c0 .. c1``: ``out[oo + r*os + j] (+)= sum
    over (c, kh, kw) of w[wo + min(r, rows-1)*wrs + c*wcs + kh*wkh + kw*wkw] * x[xo + c*cs + kh*rs +
    kw*dw + j]``, written when ``first``, else added to the partial sums in ``out``. The block's
    sum starts from 0 in registers and meets ``out`` once, at the end: summed over blocks of
    channels (:data:`TAPS_PER_BLOCK` taps, :data:`DEPTH_BLOCK` in :func:`tile_gemm`), a float32
    result's rounding error grows with the block length plus the block count rather than with the
    whole sum's length (as BLAS's blocks of the inner dimension do). ``packed``: row ``r``'s weight
    is ``w[wo + r + c*wcs + kh*wkh + kw*wkw]`` instead (a packed weight, ``wrs`` and ``rows`` unused:
    one address and constant offsets, :func:`_pack_weight`)."""
    acc = [[f"a{r}_{j}" for j in range(nv)] for r in range(mr)]
    lines = [f"def {name}({_TILE_ARGS}):"]
    lines += [f"    o{r} = {r}" if packed else f"    o{r} = min({r}, rows - 1) * wrs" for r in range(mr)]
    lines += [f"    {a} = vzero()" for row in acc for a in row]
    lines += ["    for c in range(c0, c1):",
              "        for kh in range(kh_):",
              "            p = xo + c * cs + kh * rs",
              "            q = wo + c * wcs + kh * wkh",
              "            for kw in range(kw_):"]
    lines += [f"                x{j} = vload(x, p + kw * dw + {LANES * j})" for j in range(nv)]
    for r in range(mr):
        lines.append(f"                s = vbcast(w, q + o{r})")
        lines += [f"                {acc[r][j]} = vmuladd({acc[r][j]}, x{j}, s)" for j in range(nv)]
    lines.append("                q += wkw")
    lines += ["    if first:"]
    lines += [f"        vstore(out, oo + {r} * os + {LANES * j}, {acc[r][j]})"
              for r in range(mr) for j in range(nv)]
    lines += ["    else:"]
    lines += [f"        vstore(out, oo + {r} * os + {LANES * j}, "
              f"vadd(vload(out, oo + {r} * os + {LANES * j}), {acc[r][j]}))"
              for r in range(mr) for j in range(nv)]
    return "\n".join(lines)


def _tiles_source(mr: int, nv: int, packed: bool = False) -> str:
    """Tiles of 1 to ``nv`` vectors and ``tile(n, ...)``, which calls the one of ``n`` vectors."""
    parts = [_tile_source(mr, n, f"tile{n}", packed) for n in range(1, nv + 1)]
    lines = [f"def tile(n, {_TILE_ARGS}):"]
    for n in range(nv, 1, -1):
        lines += [f"    {'if' if n == nv else 'elif'} n == {n}:", f"        tile{n}({_TILE_ARGS})"]
    lines += ["    else:" if nv > 1 else "    if True:", f"        tile1({_TILE_ARGS})"]
    return "\n\n".join(parts + ["\n".join(lines)])


def _compile_tile(source: str, name: str):
    """The function ``name`` that the generated ``source`` defines over :mod:`.simd`'s intrinsics, as
    a numba function inlined into its caller."""
    scope = {"vbcast": vbcast, "vzero": vzero, "vload": vload, "vstore": vstore, "vadd": vadd,
             "vmuladd": vmuladd, "vsum": vsum}
    exec(compile(source, f"<conv_vec {name}>", "exec"), scope)   # our own text
    for key in [k for k in scope if k.startswith(name) and k != name]:
        scope[key] = numba.njit(inline="always", nogil=True)(scope[key])
    return numba.njit(inline="always", nogil=True)(scope[name])


_tile = _compile_tile(_tiles_source(MR, _NV), "tile")
PACKED = vec_packs_weights()
"""Whether the convolutions' tiles read the weight packed (AVX2's tile, ``conv_shapes.vec_packs_weights``:
the scratch ends with :func:`~symjit.kernels.cpu.conv_shapes.vec_packed_length` elements for it);
:func:`tile_gemm` reads its operand in place on every host."""
_conv_tile = _compile_tile(_tiles_source(MR, _NV, True), "tile") if PACKED else _tile


DEPTH_BLOCK = 256
"""The inner dimension of :func:`tile_gemm` in blocks of this many terms, each summed from 0 in
registers and then added to the output (see :func:`_tile_source`): 4608-term sums (ResNet's
512-channel 3x3 layers through im2col) had 4-5x the rounding error of a direct convolution's."""


@_jit
def tile_gemm(a, ao, ars, acs, b, bo, bs, rows, cols, depth, out, oo, os, first):
    """The tile as a GEMM (a one-tap window): ``out[oo + r*os + j] (+)= sum over c < depth of
    a[ao + r*ars + c*acs] * b[bo + c*bs + j]`` for ``r < rows``, ``j < cols``, in ``MR x NR`` tiles
    (``a`` read in place through its strides; used by :mod:`~symjit.kernels.cpu.conv_small` and
    :mod:`~symjit.kernels.cpu.conv_pointwise`).

    With ``first`` (``out`` overwritten), a last block of rows or of columns shorter than a tile is
    the tile that ends at ``rows`` (``cols``), recomputing rows (columns) of the block before with
    the same result: ``out`` needs no room past them when ``rows >= MR`` and ``cols >= 16``. Else
    (``out`` added to, or fewer rows than a tile) the last block's rows past ``rows`` repeat row
    ``rows - 1`` into ``MR`` rows of ``out``, and without ``first`` ``cols`` must be a whole number
    of 16-lane vectors."""
    full = cols // LANES * LANES
    for r0 in range(0, rows, MR):
        r = min(r0, rows - MR) if first and rows >= MR else r0
        ar, orow = ao + r * ars, oo + r * os
        for j0 in range(0, full, NR):
            nv = min(_NV, (full - j0) // LANES)
            for d0 in range(0, depth, DEPTH_BLOCK):
                _tile(nv, b, bo + j0, bs, 0, 0, a, ar, ars, acs, 0, 0, rows - r, out, orow + j0, os, d0,
                      min(depth, d0 + DEPTH_BLOCK), 1, 1, first and d0 == 0)
        if full < cols:
            for d0 in range(0, depth, DEPTH_BLOCK):
                _tile(1, b, bo + cols - LANES, bs, 0, 0, a, ar, ars, acs, 0, 0, rows - r, out,
                      orow + cols - LANES, os, d0, min(depth, d0 + DEPTH_BLOCK), 1, 1, first and d0 == 0)


@_jit
def _pad_block(x, n0, nbb, xp, cs, ph, pw, part, nparts):
    """Write the padded buffer ``xp`` of images ``n0 .. n0+nbb`` of ``x`` whole, the channels of part
    ``part`` of ``nparts``: per image ``ph`` zero rows, then each row as ``pw`` zeros and its ``W``
    values; zeros from the last image's end to the channel's end (the bottom padding, and what the
    last tiles read past it)."""
    c_, h_, w_ = x.shape[1], x.shape[2], x.shape[3]
    wr = w_ + pw
    c0, c1 = part_range(part, nparts, c_)
    for c in range(c0, c1):
        row = c * cs
        for n in range(nbb):
            xp[row:row + ph * wr] = 0.0
            row += ph * wr
            for ih in range(h_):
                xp[row:row + pw] = 0.0
                for iw in range(w_):
                    xp[row + pw + iw] = x[n0 + n, c, ih, iw]
                row += wr
        xp[row:(c + 1) * cs] = 0.0


TAPS_PER_BLOCK = 144
"""Channels per pass over a run of tiles: as many as make about this many taps (16 channels of a
3x3 window), so that a run's input rows and those channels' weights stay in L1 and L2 while every
filter block of the run reads them. With the first tiles (4 x 6), passing over all channels at once
ran 0.94-0.99x of this (``docs/performance.md``, "Direct convolution in SIMD tiles")."""


RUN_POSITIONS = 256
"""Positions per group of runs: a task of :func:`_tiles` takes this many consecutive positions (4
runs of 4 x 16) and a share of the filter blocks, and each filter block passes over all its runs
while that block's weights for a channel block are in L1. With one run per task, a weight bigger
than L2 (ResNet's 7 x 7 layer: 9.4 MB) was read from memory once per run; with 256 positions ResNet's
14 x 14 and 7 x 7 layers ran 1.05-1.16x faster and its 56 x 56 ones at least as fast (batch 2 and
32; ``docs/performance.md``, "SIMD tiles: the weight read in place")."""


@_jit
def _tiles(xp, cs, wr, dh, dw, w, wo, fstride, wrs, wcs, wkh, wkw, f_, sc, os, c_, kh_, kw_, positions,
           part, nparts):
    """Every ``MR x NR`` tile of the block's product over ``positions`` outputs (the last run's of
    as many vectors as reach ``positions``), ``f_`` filters of weight ``w``, filter block ``fb``'s
    weights from ``wo + fb*fstride`` (in place: filter ``f`` at ``wo + f*wrs + c*wcs + kh*wkh +
    kw*wkw``; packed, :data:`PACKED`: row ``r`` of the block at ``... + r + c*wcs + ...``). The
    parts take groups of :data:`RUN_POSITIONS` positions and, when there are fewer than 16 groups,
    a share of the filter blocks; each group passes over the channels in blocks of
    :data:`TAPS_PER_BLOCK` taps, every filter block of the share adding that block's products to
    its partial sums run by run."""
    nq = (positions + NR - 1) // NR
    rg = max(1, RUN_POSITIONS // NR)
    nr = (nq + rg - 1) // rg
    nf = (f_ + MR - 1) // MR
    groups = min(nf, max(1, (16 + nr - 1) // nr))
    per_group = (nf + groups - 1) // groups
    cb = max(1, TAPS_PER_BLOCK // (kh_ * kw_))
    t0, t1 = part_range(part, nparts, nr * groups)
    for t in range(t0, t1):
        qg, g = t // groups, t % groups
        for c0 in range(0, c_, cb):
            c1 = min(c_, c0 + cb)
            for fb in range(g * per_group, min(nf, (g + 1) * per_group)):
                for q in range(qg * rg, min(nq, (qg + 1) * rg)):
                    n = min(_NV, (positions - q * NR + LANES - 1) // LANES)
                    _conv_tile(n, xp, q * NR, cs, dh * wr, dw, w, wo + fb * fstride, wrs, wcs, wkh, wkw,
                               f_ - fb * MR, sc, fb * MR * os + q * NR, os, c0, c1, kh_, kw_, c0 == 0)


@_jit
def _unpad_block(sc, os, out, n0, nbb, rows, wr, part, nparts):
    """``out[n0 + n, f, oh, ow] = sc[f * os + (n * rows + oh) * wr + ow]`` (the valid positions)."""
    f_, oh_, ow_ = out.shape[1], out.shape[2], out.shape[3]
    t0, t1 = part_range(part, nparts, nbb * f_)
    for t in range(t0, t1):
        n, f = t // f_, t % f_
        for oh in range(oh_):
            base = f * os + (n * rows + oh) * wr
            for ow in range(ow_):
                out[n0 + n, f, oh, ow] = sc[base + ow]


@_jit
def _pack_weight(w, wo, wrs, wcs, wkh, wkw, f_, c_, kh_, kw_, wp, part, nparts):
    """``wp[((fb*C + c)*KH*KW + kh*KW + kw)*MR + r] = w[wo + f*wrs + c*wcs + kh*wkh + kw*wkw]`` with
    ``f = min(fb*MR + r, F - 1)``: each block of ``MR`` filters' weights per channel and tap side by
    side (the last block's rows past ``F`` repeat filter ``F - 1``, into output rows that are
    dropped); part ``part`` of ``nparts`` packs its share of the filter blocks."""
    kk = kh_ * kw_
    fb0, fb1 = part_range(part, nparts, (f_ + MR - 1) // MR)
    for fb in range(fb0, fb1):
        for r in range(MR):
            src = wo + min(fb * MR + r, f_ - 1) * wrs
            for c in range(c_):
                dst = (fb * c_ + c) * kk * MR + r
                for kh in range(kh_):
                    for kw in range(kw_):
                        wp[dst + (kh * kw_ + kw) * MR] = w[src + c * wcs + kh * wkh + kw * wkw]


@_jit
def _vec_conv(x, w, out, cols, pad, dilate, flip, unpad, part, nparts, sync):
    """``out = conv(x, w')`` at stride 1 over blocks of images, ``w' = w`` or, with ``flip``,
    ``w'[c, f, kh, kw] = w[f, c, KH-1-kh, KW-1-kw]`` (read in place: the tiles take the weight's
    strides). Without ``unpad`` (one block only) ``out`` is not written: the result stays in the
    scratch (:func:`conv2d_forward_vec_flat_parts`). Part ``part`` of ``nparts`` runs its share of
    each phase (pad, tiles, unpad), the parts meeting at a barrier after each."""
    n_, c_, h_, w_ = x.shape
    f_ = out.shape[1]
    kh_, kw_ = w.shape[2], w.shape[3]
    ph, pw = pad[0], pad[1]
    kk = kh_ * kw_
    packed = vec_packed_length(c_, f_, kk, MR) if PACKED else 0
    cf = cols[0][:cols.shape[1] - packed]     # the packed weight at the scratch's end
    nb = vec_images_per_block(cf.shape[0], n_, c_, f_, h_, w_, kh_, kw_, ph, pw, dilate[0], dilate[1])
    if not unpad and nb < n_:
        raise ValueError("conv2d_forward_vec_flat_parts: the scratch does not hold the whole batch")
    cs, os, _ = vec_layout(nb, c_, f_, h_, w_, kh_, kw_, ph, pw, dilate[0], dilate[1])
    xp = cf[:c_ * cs]
    sc = cf[c_ * cs:]
    wf = w.ravel()
    if flip:
        wo, wrs, wcs, wkh, wkw = kk - 1, kk, w.shape[1] * kk, -kw_, -1
    else:
        wo, wrs, wcs, wkh, wkw = 0, c_ * kk, kk, kw_, 1
    tw, two, tfs, twcs, twkh, twkw = wf, wo, MR * wrs, wcs, wkh, wkw
    if PACKED:
        tw = cols[0][cols.shape[1] - packed:]
        _pack_weight(wf, wo, wrs, wcs, wkh, wkw, f_, c_, kh_, kw_, tw, part, nparts)   # before the barrier
        two, tfs, twcs, twkh, twkw = 0, c_ * kk * MR, kk * MR, kw_ * MR, MR
    rows, wr = h_ + ph, w_ + pw
    for n0 in range(0, n_, nb):
        nbb = min(nb, n_ - n0)
        _pad_block(x, n0, nbb, xp, cs, ph, pw, part, nparts)
        if not barrier(sync, nparts):
            return
        _tiles(xp, cs, wr, dilate[0], dilate[1], tw, two, tfs, wrs, twcs, twkh, twkw, f_, sc, os, c_, kh_,
               kw_, nbb * rows * wr, part, nparts)
        if not barrier(sync, nparts):
            return
        if unpad:
            _unpad_block(sc, os, out, n0, nbb, rows, wr, part, nparts)
            if not barrier(sync, nparts):
                return


@_jit
def conv2d_forward_vec_parts(x, w, out, cols, stride, pad, dilate, groups, part, nparts, sync):
    """``out = conv(x, w)`` for float32 at stride 1, one group, ``pad <= dilate * (K - 1)`` per axis
    (``stride`` and ``groups`` are kept for the kernels' common signature); part ``part`` of
    ``nparts`` (:mod:`symjit.parts`)."""
    _vec_conv(x, w, out, cols, pad, dilate, False, True, part, nparts, sync)


@_jit
def conv2d_forward_vec_flat_parts(x, w, out, cols, stride, pad, dilate, groups, part, nparts, sync):
    """:func:`conv2d_forward_vec_parts`'s convolution with the whole batch in one block (the
    scratch must hold it: ``conv_shapes.vec_images_per_block`` of its length is the batch), its
    result left where the tiles wrote it: ``out[n, f, oh, ow]`` (not written) is ``cols[0, C*cs +
    f*os + (n*(H + ph) + oh)*(W + pw) + ow]`` with ``cs, os = conv_shapes.vec_layout(N, ...)[:2]``.
    The compiled program's epilogue loop reads it from there (the copy to NCHW, bias and the fused
    elementwise ops in one pass)."""
    _vec_conv(x, w, out, cols, pad, dilate, False, False, part, nparts, sync)


@_jit
def conv2d_backward_data_vec_parts(dout, w, dx, cols, stride, pad, dilate, groups, part, nparts, sync):
    """Data gradient ``dx`` (overwritten) of :func:`conv2d_forward_vec_parts`'s convolution: the
    convolution of ``dout`` with ``w`` transposed and rotated, padded by ``dilate * (K - 1) - pad``."""
    kh_, kw_ = w.shape[2], w.shape[3]
    _vec_conv(dout, w, dx, cols, (dilate[0] * (kh_ - 1) - pad[0], dilate[1] * (kw_ - 1) - pad[1]),
              dilate, True, True, part, nparts, sync)


# ---------------------------------------------------------------------------------------------
# Weight gradient: dw[f, c, kh, kw] = sum over positions o of dout[f, o] * x[c, o + kh*rs + kw].

WF, WC, WT = 4, 2, 3
"""The weight gradient's tile: 4 filters x 2 channels x 3 taps of one window row, 24 vectors of
partial sums over 16 positions each (``vmuladd`` of an output-gradient vector and an input
vector), added up (``vsum``) once the tile has run over the block's positions."""


def _weight_tile_source() -> str:
    """Source of the weight gradient's tile over one chunk of ``n`` positions: partial sums ``p[r,
    c, j] (+)= sum over o < n of d[do + r*ds + o] * x[xo + c*cs + o + j]`` (from 0 when ``first``,
    else from ``pv[pi:]``); kept in ``pv`` after the chunk, or, after the ``last`` one, added up
    into ``dw[f0 + r, c0 + c, kh, kw0 + j]`` for the taps, filters and channels inside the weight."""
    acc = [[[f"a{r}_{c}_{j}" for j in range(WT)] for c in range(WC)] for r in range(WF)]
    flat = [a for r in acc for c in r for a in c]
    lines = ["def wtile(d, do, ds, x, xo, cs, n, pv, pi, first, last, dw, f0, c0, kh, kw0):",
             "    if first:"]
    lines += [f"        {a} = vzero()" for a in flat]
    lines += ["    else:"]
    lines += [f"        {a} = vload(pv, pi + {16 * i})" for i, a in enumerate(flat)]
    lines += ["    for o in range(0, n, 16):"]
    lines += [f"        d{r} = vload(d, do + {r} * ds + o)" for r in range(WF)]
    for c in range(WC):
        lines += [f"        x{c}_{j} = vload(x, xo + {c} * cs + o + {j})" for j in range(WT)]
        lines += [f"        {acc[r][c][j]} = vmuladd({acc[r][c][j]}, d{r}, x{c}_{j})"
                  for r in range(WF) for j in range(WT)]
    lines += ["    if not last:"]
    lines += [f"        vstore(pv, pi + {16 * i}, {a})" for i, a in enumerate(flat)]
    lines += ["        return",
              "    f_, c_, kw_ = dw.shape[0], dw.shape[1], dw.shape[3]"]
    for r in range(WF):
        for c in range(WC):
            lines.append(f"    if f0 + {r} < f_ and c0 + {c} < c_:")
            for j in range(WT):
                lines.append(f"        if kw0 + {j} < kw_:")
                lines.append(f"            dw[f0 + {r}, c0 + {c}, kh, kw0 + {j}] += vsum({acc[r][c][j]})")
    return "\n".join(lines)


_weight_tile = _compile_tile(_weight_tile_source(), "wtile")


@_jit
def _pad_dout(dout, n0, nbb, dp, os, rows, wr, part, nparts):
    """Write the output gradient of images ``n0 .. n0+nbb`` into rows of ``os`` positions (``dp``,
    this part's share of the filters), zero where no output is: the flat positions of
    :func:`_vec_conv`'s outputs, so that a sum over all of them is the sum over the outputs."""
    f_, oh_, ow_ = dout.shape[1], dout.shape[2], dout.shape[3]
    f0, f1 = part_range(part, nparts, f_)
    for f in range(f0, f1):
        base = f * os
        dp[base:base + os] = 0.0
        for n in range(nbb):
            for oh in range(oh_):
                p = base + (n * rows + oh) * wr
                for ow in range(ow_):
                    dp[p + ow] = dout[n0 + n, f, oh, ow]


WEIGHT_CHUNK = 1024
"""Positions per chunk of the weight gradient's tiles: every window row's tile passes over one
chunk (its 4 output-gradient rows and 2 input rows, 16 and ~9 KiB) while it is in L1, keeping its
partial sums in memory between chunks. Unchunked, the tiles streamed their rows from L2 and ran
0.6-0.95x of im2col's and Winograd's weight gradients; chunks of 256 to 2048 positions all ran
1.1-1.6x of them on ResNet's 56 x 56 and Inception's 35 x 35 layers, 1024 the most evenly."""


@_jit
def _weight_tiles(dp, os, xp, cs, wr, dw, kh_, kw_, positions, part, nparts):
    """Every weight-gradient tile of a block, the parts taking (filter block, channel pair) items,
    each going over the positions chunk by chunk (keeping partial sums between chunks only where
    there are several: small planes make many small items)."""
    f_, c_ = dw.shape[0], dw.shape[1]
    nf, nc = (f_ + WF - 1) // WF, (c_ + WC - 1) // WC
    n = (positions + LANES - 1) // LANES * LANES
    groups = (kw_ + WT - 1) // WT
    per_tile = WF * WC * WT * LANES
    unused = np.empty(0, np.float32)
    t0, t1 = part_range(part, nparts, nf * nc)
    for t in range(t0, t1):
        fb, cb = t // nc, t % nc
        pv = np.empty(kh_ * groups * per_tile, np.float32) if n > WEIGHT_CHUNK else unused
        for o0 in range(0, n, WEIGHT_CHUNK):
            m = min(WEIGHT_CHUNK, n - o0)
            for kh in range(kh_):
                for g in range(groups):
                    _weight_tile(dp, fb * WF * os + o0, os, xp, cb * WC * cs + kh * wr + g * WT + o0, cs, m,
                                 pv, (kh * groups + g) * per_tile, o0 == 0, o0 + m == n, dw,
                                 fb * WF, cb * WC, kh, g * WT)


@_jit
def conv2d_backward_weight_vec_parts(dout, x, dw, cols, stride, pad, dilate, groups, part, nparts, sync):
    """Weight gradient ``dw`` (overwritten) of :func:`conv2d_forward_vec_parts`'s convolution:
    per block of images, the input padded as for the forward and the output gradient written at
    its outputs' flat positions (zeros between), then 4 x 2 x 3 tiles of ``dw`` summed over all
    positions (:data:`WF`)."""
    n_, c_, h_, w_ = x.shape
    f_, kh_, kw_ = dw.shape[0], dw.shape[2], dw.shape[3]
    ph, pw = pad[0], pad[1]
    cf = cols[0]
    nb = vec_images_per_block(cf.shape[0], n_, c_, f_, h_, w_, kh_, kw_, ph, pw, 1, 1, True)
    cs, os, _ = vec_layout(nb, c_, f_, h_, w_, kh_, kw_, ph, pw, 1, 1, True)
    cp = c_ + c_ % 2
    xp = cf[:cp * cs]
    dp = cf[cp * cs:]
    fp = (f_ + WF - 1) // WF * WF
    if part == 0:   # the other parts see these after the first barrier
        xp[c_ * cs:cp * cs] = 0.0     # the channel that pads an odd count to pairs
        dp[f_ * os:fp * os] = 0.0     # the filters that pad the count to fours
        dw[:] = 0.0
    rows, wr = h_ + ph, w_ + pw
    for n0 in range(0, n_, nb):
        nbb = min(nb, n_ - n0)
        _pad_block(x, n0, nbb, xp, cs, ph, pw, part, nparts)
        _pad_dout(dout, n0, nbb, dp, os, rows, wr, part, nparts)
        if not barrier(sync, nparts):
            return
        _weight_tiles(dp, os, xp, cs, wr, dw, kh_, kw_, nbb * rows * wr, part, nparts)
        if not barrier(sync, nparts):
            return

"""3x3 convolutions by Winograd's minimal filtering F(2x2, 3x3): forward and data gradient.

A 3x3 window at stride 1 (no dilation, one group) computes each 2 x 2 block of outputs from a 4 x 4
tile of the (zero-padded) input in 16 products instead of 36. With ``B``, ``G``, ``A`` the
transforms of Lavin and Gray (2015) (below), per tile ``t`` and position ``xi`` of the 4 x 4
transformed tile:

* weight: ``U[xi] (F, C) = (G g G^T)[xi]`` for each filter's 3 x 3 window ``g = w[f, c]``;
* input: ``V[xi] (C, T) = (B^T d B)[xi]`` for each channel's 4 x 4 tile ``d`` (tiles 2 apart);
* one GEMM per position: ``M[xi] (F, T) = U[xi] @ V[xi]`` (16 GEMMs of depth ``C``);
* output: each 2 x 2 block is ``A^T m A`` of its 4 x 4 ``m``.

The GEMMs do 16 / 36 of im2col's multiply-adds (4 per output and channel instead of 9); the
transforms are a few additions per element. The 16 rows of a transform are stored a skewed stride
apart (:func:`_skew`): a plain power-of-two-like stride put all 16 streams in one cache set and
made the input transform 8x slower on ResNet's 56 x 56 layers. Tiles run over a block of images
(as many as the scratch holds, the last block shorter); the weight transform is made once per call.
The transforms split their rows or planes over the host's threads in parts (from ``SPLIT_MIN``
elements; the 16 GEMMs run in one part, on BLAS's threads, the other parts waiting at a barrier):
serial, they had taken 40% of ResNet-18's 7 x 7 layers at batch 32.

The data gradient of such a convolution is one too (:func:`conv2d_backward_data_winograd_parts`):
``dx = conv(dout, w')`` with ``w'[c, f] = w[f, c]`` rotated by 180 degrees and padding ``2 - pad``.
The compiler picks these kernels per shape (:func:`~symjit.kernels.cpu.conv_shapes.prefers_winograd`;
figures in ``docs/performance.md``). Results agree with im2col + GEMM to a few float32 ulps of the
output's magnitude (the transforms add and subtract before the products).

>>> import numpy as np
>>> from symjit.kernels.cpu.conv import check_conv2d, conv2d_cols_shape
>>> x = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)
>>> w = np.ones((1, 1, 3, 3))
>>> out = np.empty((1, 1, 2, 2))
>>> geometry = ((1, 1), (0, 0), (1, 1), 1)
>>> cols = np.empty(conv2d_cols_shape("forward_winograd", x.shape, w.shape, out.shape, 1))
>>> check_conv2d("forward_winograd", x, w, out, cols, *geometry)
>>> from symjit.parts import whole_call
>>> conv2d_forward_winograd_parts(x, w, out, cols, *geometry, *whole_call())
>>> out[0, 0]
array([[45., 54.],
       [81., 90.]])
"""
from __future__ import annotations

import numpy as np
from numba import uint64 as _u

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit
from ._parallel import SPLIT_MIN, part_range
from .blas import xgemm
from .conv_shapes import winograd_images_per_block, winograd_skew, winograd_sums
from .spin import barrier
from .sum_blocks import blocks_of, finish, fold, rows_of

__all__ = ["conv2d_forward_winograd_parts", "conv2d_backward_data_winograd_parts",
           "conv2d_backward_weight_winograd_parts"]

_jit = njit(cache=True, nogil=True, error_model="numpy")


@_jit
def _share(part, nparts, items, elems):
    """The run of a transform's ``items`` (rows or planes) that part ``part`` of ``nparts`` takes:
    an even share, or all of them in part 0 when they touch fewer than ``SPLIT_MIN`` elements (less
    than a second core's worth of work)."""
    if elems < SPLIT_MIN:
        return (0, items) if part == 0 else (0, 0)
    return part_range(part, nparts, items)


@_jit
def _weight_transform(w, u, flip, part, nparts):
    """``u[xi * S + f*C + c] = (G g G^T)[xi]`` (``S = len(u) // 16``) for ``g = w[f, c]``, or, with
    ``flip``, for ``g = w[c, f]`` rotated by 180 degrees (the data gradient's weight, ``(C, F)`` from
    ``w``'s ``(F, C)``). Computed in float64; this part's share of the rows."""
    rows = w.shape[1] if flip else w.shape[0]
    r0, r1 = _share(part, nparts, rows, w.size)
    _weight_transform_rows(w, u, flip, r0, r1)


@_jit
def _weight_transform_rows(w, u, flip, r0, r1):
    """:func:`_weight_transform` of rows ``r0 .. r1``."""
    a_, b_ = w.shape[0], w.shape[1]
    cols = a_ if flip else b_
    stride = u.shape[0] // 16
    wf = w.reshape(-1)
    t = np.empty(12, np.float64)
    for r in range(r0, r1):
        for q in range(cols):
            o = (q * b_ + r) * 9 if flip else (r * b_ + q) * 9
            for j in range(3):
                if flip:   # g[i, j] = w[q, r, 2 - i, 2 - j]
                    g0, g1, g2 = wf[_u(o + 8 - j)], wf[_u(o + 5 - j)], wf[_u(o + 2 - j)]
                else:
                    g0, g1, g2 = wf[_u(o + j)], wf[_u(o + 3 + j)], wf[_u(o + 6 + j)]
                t[j] = g0                         # G g: rows of the 4 x 3
                t[3 + j] = 0.5 * (g0 + g1 + g2)
                t[6 + j] = 0.5 * (g0 - g1 + g2)
                t[9 + j] = g2
            b = r * cols + q
            for i in range(4):                    # (G g) G^T
                x0, x1, x2 = t[3 * i], t[3 * i + 1], t[3 * i + 2]
                u[_u((4 * i) * stride + b)] = x0
                u[_u((4 * i + 1) * stride + b)] = 0.5 * (x0 + x1 + x2)
                u[_u((4 * i + 2) * stride + b)] = 0.5 * (x0 - x1 + x2)
                u[_u((4 * i + 3) * stride + b)] = x2


@_jit
def _tile_rows(xf, plane, h_, w_, r0, pw, rows):
    """The 4 input rows ``r0 .. r0+3`` of one plane, zero-padded: ``rows[i, q] = x[r0 + i, q - pw]``."""
    for i in range(4):
        r = r0 + i
        row = rows[i]
        if 0 <= r < h_:
            s = plane + r * w_
            for q in range(row.shape[0]):
                col = q - pw
                row[q] = xf[_u(s + col)] if 0 <= col < w_ else 0
        else:
            row[:] = 0


@_jit
def _input_transform(x, n0, nb, v, th_, tw_, ph, pw, part, nparts):
    """``v[xi * S + c*T + t] = (B^T d B)[xi]`` for the 4 x 4 tile ``d`` at ``(2 ty - ph, 2 tx - pw)``
    of image ``n0 + m``, ``t = (m*TH + ty)*TW + tx``, ``T = nb*TH*TW``, ``S = len(v) // 16``; the
    planes ``(m, c)`` of this part's share."""
    planes = nb * x.shape[1]
    q0, q1 = _share(part, nparts, planes, planes * x.shape[2] * x.shape[3])
    _input_transform_planes(x, n0, nb, v, th_, tw_, ph, pw, q0, q1)


@_jit
def _input_transform_planes(x, n0, nb, v, th_, tw_, ph, pw, q0, q1):
    """:func:`_input_transform` of planes ``q0 .. q1`` (plane ``q``: image ``n0 + q // C``, channel
    ``q % C``)."""
    c_, h_, w_ = x.shape[1], x.shape[2], x.shape[3]
    tiles = nb * th_ * tw_
    s = v.shape[0] // 16
    xf = x.reshape(-1)
    rows = np.empty((4, 2 * tw_ + 2), x.dtype)
    r0_, r1_, r2_, r3_ = rows[0], rows[1], rows[2], rows[3]
    for pq in range(q0, q1):
        m, c = pq // c_, pq % c_
        plane = ((n0 + m) * c_ + c) * h_ * w_
        for ty in range(th_):
            _tile_rows(xf, plane, h_, w_, 2 * ty - ph, pw, rows)
            base = c * tiles + (m * th_ + ty) * tw_
            for tx in range(tw_):
                q = 2 * tx
                d00, d01, d02, d03 = r0_[q], r0_[q + 1], r0_[q + 2], r0_[q + 3]
                d10, d11, d12, d13 = r1_[q], r1_[q + 1], r1_[q + 2], r1_[q + 3]
                d20, d21, d22, d23 = r2_[q], r2_[q + 1], r2_[q + 2], r2_[q + 3]
                d30, d31, d32, d33 = r3_[q], r3_[q + 1], r3_[q + 2], r3_[q + 3]
                # B^T d, then (.) B
                e00, e01, e02, e03 = d00 - d20, d01 - d21, d02 - d22, d03 - d23
                e10, e11, e12, e13 = d10 + d20, d11 + d21, d12 + d22, d13 + d23
                e20, e21, e22, e23 = d20 - d10, d21 - d11, d22 - d12, d23 - d13
                e30, e31, e32, e33 = d10 - d30, d11 - d31, d12 - d32, d13 - d33
                b = _u(base + tx)
                v[b] = e00 - e02
                v[_u(s) + b] = e01 + e02
                v[_u(2 * s) + b] = e02 - e01
                v[_u(3 * s) + b] = e01 - e03
                v[_u(4 * s) + b] = e10 - e12
                v[_u(5 * s) + b] = e11 + e12
                v[_u(6 * s) + b] = e12 - e11
                v[_u(7 * s) + b] = e11 - e13
                v[_u(8 * s) + b] = e20 - e22
                v[_u(9 * s) + b] = e21 + e22
                v[_u(10 * s) + b] = e22 - e21
                v[_u(11 * s) + b] = e21 - e23
                v[_u(12 * s) + b] = e30 - e32
                v[_u(13 * s) + b] = e31 + e32
                v[_u(14 * s) + b] = e32 - e31
                v[_u(15 * s) + b] = e31 - e33


@_jit
def _output_transform(mm, out, n0, nb, th_, tw_, part, nparts):
    """``out[n0 + m, f]``'s 2 x 2 blocks ``A^T m A`` from ``mm[xi * S + f*T + t]`` (see
    :func:`_input_transform`), cut to the output's width and height; the planes ``(m, f)`` of this
    part's share."""
    planes = nb * out.shape[1]
    q0, q1 = _share(part, nparts, planes, planes * out.shape[2] * out.shape[3])
    _output_transform_planes(mm, out, n0, nb, th_, tw_, q0, q1)


@_jit
def _output_transform_planes(mm, out, n0, nb, th_, tw_, q0, q1):
    """:func:`_output_transform` of planes ``q0 .. q1`` (image ``n0 + q // F``, filter ``q % F``);
    the blocks' rows go through a buffer ``(2, 2*TW)``."""
    f_, oh_, ow_ = out.shape[1], out.shape[2], out.shape[3]
    tiles = nb * th_ * tw_
    s = mm.shape[0] // 16
    of = out.reshape(-1)
    orow = np.empty((2, 2 * tw_), out.dtype)
    o0, o1 = orow[0], orow[1]
    for pq in range(q0, q1):
        m, f = pq // f_, pq % f_
        plane = ((n0 + m) * f_ + f) * oh_ * ow_
        for ty in range(th_):
            base = f * tiles + (m * th_ + ty) * tw_
            for tx in range(tw_):
                b = _u(base + tx)
                m00, m01 = mm[b], mm[_u(s) + b]
                m02, m03 = mm[_u(2 * s) + b], mm[_u(3 * s) + b]
                m10, m11 = mm[_u(4 * s) + b], mm[_u(5 * s) + b]
                m12, m13 = mm[_u(6 * s) + b], mm[_u(7 * s) + b]
                m20, m21 = mm[_u(8 * s) + b], mm[_u(9 * s) + b]
                m22, m23 = mm[_u(10 * s) + b], mm[_u(11 * s) + b]
                m30, m31 = mm[_u(12 * s) + b], mm[_u(13 * s) + b]
                m32, m33 = mm[_u(14 * s) + b], mm[_u(15 * s) + b]
                t00, t01, t02, t03 = m00 + m10 + m20, m01 + m11 + m21, m02 + m12 + m22, m03 + m13 + m23
                t10, t11, t12, t13 = m10 - m20 - m30, m11 - m21 - m31, m12 - m22 - m32, m13 - m23 - m33
                o0[2 * tx] = t00 + t01 + t02
                o0[2 * tx + 1] = t01 - t02 - t03
                o1[2 * tx] = t10 + t11 + t12
                o1[2 * tx + 1] = t11 - t12 - t13
            d = plane + 2 * ty * ow_
            for q in range(ow_):
                of[_u(d + q)] = o0[q]
            if 2 * ty + 1 < oh_:
                for q in range(ow_):
                    of[_u(d + ow_ + q)] = o1[q]


@_jit
def _block_buffers(rest, c_in, c_out, tiles):
    """A block's transformed input ``(16, c_in, tiles)`` and product ``(16, c_out, tiles)`` from the
    scratch after the weight's, with their skewed strides: ``(v, sv, mm, sm)`` (see
    :func:`~symjit.kernels.cpu.conv_shapes.winograd_length`)."""
    sv, sm = winograd_skew(c_in * tiles), winograd_skew(c_out * tiles)
    return rest[:16 * sv], sv, rest[16 * sv:16 * (sv + sm)], sm


@_jit
def _winograd(x, w, out, cols, pad, flip, part, nparts, sync):
    """``out = conv(x, w')``: ``w' = w`` (forward), or the flipped, transposed ``w`` (``flip``). Part
    ``part`` of ``nparts`` runs its share of the transforms; part 0 runs the 16 GEMMs (on BLAS's
    threads) while the others wait at a barrier without spinning."""
    n_, c_ = x.shape[0], x.shape[1]
    f_, oh_, ow_ = out.shape[1], out.shape[2], out.shape[3]
    th_, tw_ = (oh_ + 1) // 2, (ow_ + 1) // 2
    cf = cols[0]
    nb = winograd_images_per_block(cf.shape[0], n_, c_, f_, th_ * tw_)
    su = winograd_skew(f_ * c_)
    u = cf[:16 * su]
    _weight_transform(w, u, flip, part, nparts)
    rest = cf[16 * su:]
    for n0 in range(0, n_, nb):
        nbb = min(nb, n_ - n0)
        tiles = nbb * th_ * tw_
        v, sv, mm, sm = _block_buffers(rest, c_, f_, tiles)
        _input_transform(x, n0, nbb, v, th_, tw_, pad[0], pad[1], part, nparts)
        if not barrier(sync, nparts):
            return
        if part == 0:
            for xi in range(16):
                xgemm(0, 0, f_, tiles, c_, 1.0, u, xi * su, c_, v, xi * sv, tiles, 0.0, mm, xi * sm, tiles)
        if not barrier(sync, nparts, 0):
            return
        _output_transform(mm, out, n0, nbb, th_, tw_, part, nparts)
        if not barrier(sync, nparts):
            return


@_jit
def conv2d_forward_winograd_parts(x, w, out, cols, stride, pad, dilate, groups, part, nparts, sync):
    """``out = conv(x, w)`` for a 3x3 ``w`` at stride 1, no dilation, one group (``stride``,
    ``dilate`` and ``groups`` are kept for the kernels' common signature); part ``part`` of
    ``nparts`` (:mod:`symjit.parts`)."""
    _winograd(x, w, out, cols, pad, False, part, nparts, sync)


@_jit
def conv2d_backward_data_winograd_parts(dout, w, dx, cols, stride, pad, dilate, groups, part, nparts, sync):
    """Data gradient ``dx`` (overwritten) of :func:`conv2d_forward_winograd_parts`'s convolution: the
    convolution of ``dout`` with ``w`` transposed and rotated, padded by ``2 - pad`` (pad <= 2)."""
    _winograd(dout, w, dx, cols, (2 - pad[0], 2 - pad[1]), True, part, nparts, sync)


@_jit
def _dout_transform(dout, n0, nb, mm, th_, tw_, part, nparts):
    """``mm[xi * S + f*T + t] = (A dY A^T)[xi]`` for the 2 x 2 block ``dY`` of ``dout[n0 + m, f]`` at
    ``(2 ty, 2 tx)`` (zero past the output's edges), ``t`` and ``S`` as in :func:`_input_transform`;
    the planes ``(m, f)`` of this part's share."""
    planes = nb * dout.shape[1]
    lo, hi = _share(part, nparts, planes, planes * dout.shape[2] * dout.shape[3])
    _dout_transform_planes(dout, n0, nb, mm, th_, tw_, lo, hi)


@_jit
def _dout_transform_planes(dout, n0, nb, mm, th_, tw_, lo, hi):
    """:func:`_dout_transform` of planes ``lo .. hi`` (image ``n0 + q // F``, filter ``q % F``)."""
    f_, oh_, ow_ = dout.shape[1], dout.shape[2], dout.shape[3]
    tiles = nb * th_ * tw_
    s = mm.shape[0] // 16
    df = dout.reshape(-1)
    orow = np.empty((2, 2 * tw_), dout.dtype)
    r0_, r1_ = orow[0], orow[1]
    for pq in range(lo, hi):
        m, f = pq // f_, pq % f_
        plane = ((n0 + m) * f_ + f) * oh_ * ow_
        for ty in range(th_):
            for i in range(2):
                y, row = 2 * ty + i, orow[i]
                row[ow_:] = 0
                if y < oh_:
                    for q in range(ow_):
                        row[q] = df[_u(plane + y * ow_ + q)]
                else:
                    row[:] = 0
            base = f * tiles + (m * th_ + ty) * tw_
            for tx in range(tw_):
                a, b, c, d = r0_[2 * tx], r0_[2 * tx + 1], r1_[2 * tx], r1_[2 * tx + 1]
                p0, q0, p1, q1 = a, b, a + c, b + d       # A dY: rows (p, q)
                p2, q2, p3, q3 = a - c, b - d, -c, -d
                k = _u(base + tx)
                mm[k] = p0
                mm[_u(s) + k] = p0 + q0                     # (.) A^T: (p, p + q, p - q, -q)
                mm[_u(2 * s) + k] = p0 - q0
                mm[_u(3 * s) + k] = -q0
                mm[_u(4 * s) + k] = p1
                mm[_u(5 * s) + k] = p1 + q1
                mm[_u(6 * s) + k] = p1 - q1
                mm[_u(7 * s) + k] = -q1
                mm[_u(8 * s) + k] = p2
                mm[_u(9 * s) + k] = p2 + q2
                mm[_u(10 * s) + k] = p2 - q2
                mm[_u(11 * s) + k] = -q2
                mm[_u(12 * s) + k] = p3
                mm[_u(13 * s) + k] = p3 + q3
                mm[_u(14 * s) + k] = p3 - q3
                mm[_u(15 * s) + k] = -q3


@_jit
def _weight_untransform(du, dw, part, nparts):
    """``dw[f, c] = G^T X G`` for the 4 x 4 ``X[xi] = du[xi * S + f*C + c]`` (in float64); the
    filters of this part's share."""
    f0, f1 = _share(part, nparts, dw.shape[0], dw.size)
    _weight_untransform_rows(du, dw, f0, f1)


@_jit
def _weight_untransform_rows(du, dw, f0, f1):
    """:func:`_weight_untransform` of filters ``f0 .. f1``."""
    c_ = dw.shape[1]
    s = du.shape[0] // 16
    x = np.empty(16, np.float64)
    y = np.empty(12, np.float64)
    for f in range(f0, f1):
        for c in range(c_):
            b = f * c_ + c
            for xi in range(16):
                x[xi] = du[_u(xi * s + b)]
            for j in range(4):   # G^T X: 3 x 4
                y[j] = x[j] + 0.5 * (x[4 + j] + x[8 + j])
                y[4 + j] = 0.5 * (x[4 + j] - x[8 + j])
                y[8 + j] = 0.5 * (x[4 + j] + x[8 + j]) + x[12 + j]
            for i in range(3):   # (.) G: 3 x 3
                y0, y1, y2, y3 = y[4 * i], y[4 * i + 1], y[4 * i + 2], y[4 * i + 3]
                dw[f, c, i, 0] = y0 + 0.5 * (y1 + y2)
                dw[f, c, i, 1] = 0.5 * (y1 - y2)
                dw[f, c, i, 2] = 0.5 * (y1 + y2) + y3


@_jit
def _weight_sums(mm, sm, v, sv, tiles, sums, su, c_, f_, since, folded):
    """A block's 16 products ``mm[xi] (F, T) @ v[xi].T`` added into ``sums`` (the transformed weight
    gradient ``(16, F, C)``, ``su`` apart, and its compensated sum: :mod:`.sum_blocks`), in blocks
    of filters (:func:`~.sum_blocks.rows_of`) each through the blocks of tiles; returns ``(since,
    folded)`` for the next block."""
    parts = blocks_of(tiles, f_ * c_, v.itemsize)
    step = rows_of(f_, c_)
    s, f = since, folded
    for xi in range(16):
        for r0 in range(0, f_, step):
            r1 = min(f_, r0 + step)
            lo, hi = xi * su + r0 * c_, xi * su + r1 * c_
            s, f = since, folded
            for i in range(parts):
                t0, t1 = i * tiles // parts, (i + 1) * tiles // parts
                xgemm(0, 1, r1 - r0, c_, t1 - t0, 1.0, mm, xi * sm + r0 * tiles + t0, tiles, v, xi * sv + t0,
                      tiles, 0.0 if s == 0 else 1.0, sums, lo, c_)
                s, f = fold(sums, 16 * su, lo, hi, s, f)
    return s, f


@_jit
def conv2d_backward_weight_winograd_parts(dout, x, dw, cols, stride, pad, dilate, groups, part, nparts, sync):
    """Weight gradient ``dw`` (overwritten) of :func:`conv2d_forward_winograd_parts`'s convolution:
    ``dw[f, c] = G^T (sum over tiles of (A dY A^T) * (B^T d B)) G``, the sum over tiles as 16 GEMMs
    ``(F, T) @ (T, C)`` per block of tiles (at most 64 in float32 where the weight is large), their
    products summed as :mod:`.sum_blocks` says (the compensated sum after the transformed weight
    gradient in ``cols``: :func:`~symjit.kernels.cpu.conv_shapes.winograd_sums`). The transforms
    in parts, the GEMMs and sums in part 0 (as :func:`_winograd`)."""
    n_, c_ = x.shape[0], x.shape[1]
    f_, oh_, ow_ = dout.shape[1], dout.shape[2], dout.shape[3]
    th_, tw_ = (oh_ + 1) // 2, (ow_ + 1) // 2
    cf = cols[0]
    su = winograd_skew(f_ * c_)
    extra = winograd_sums(n_, c_, f_, th_ * tw_)
    nb = winograd_images_per_block(cf.shape[0] - extra, n_, c_, f_, th_ * tw_)
    sums = cf[:16 * su + extra]
    rest = cf[16 * su + extra:]
    since, folded = 0, 0
    for n0 in range(0, n_, nb):
        nbb = min(nb, n_ - n0)
        tiles = nbb * th_ * tw_
        v, sv, mm, sm = _block_buffers(rest, c_, f_, tiles)
        _input_transform(x, n0, nbb, v, th_, tw_, pad[0], pad[1], part, nparts)
        _dout_transform(dout, n0, nbb, mm, th_, tw_, part, nparts)
        if not barrier(sync, nparts):
            return
        if part == 0:
            since, folded = _weight_sums(mm, sm, v, sv, tiles, sums, su, c_, f_, since, folded)
        if not barrier(sync, nparts, 0):
            return
    if part == 0:
        finish(sums, 16 * su, since, folded)
    if not barrier(sync, nparts, 0):
        return
    _weight_untransform(sums[:16 * su], dw, part, nparts)

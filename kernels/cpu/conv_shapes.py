"""Convolution sizes, scratch lengths and kernel choices: plain Python, no numba.

The compiler's lowering asks these questions per shape while it generates code (which kernel a
convolution runs, how large its ``cols`` scratch is), and a process running ahead-of-time
compiled programs (``symjit.compiler.aot``) binds without importing numba, so they live apart
from the kernels. The scratch-length functions are also called by the kernels of
:mod:`symjit.kernels.cpu.conv` on runtime shapes (marked :func:`symjit.jitext.jitable`): one rule
for the scratch size. :mod:`~symjit.kernels.cpu.conv` and :mod:`~symjit.kernels.cpu.conv_direct`
re-export them.
"""
from __future__ import annotations

import functools

from symjit.jitext import jitable

from .errors import KernelArgError

__all__ = [
    "KINDS", "CONV_SCRATCH_MAX", "CONV_BLOCK_CACHE", "CONV_BLOCK_WIDE", "CONV_BLOCK_PER_FILTER",
    "POINTWISE_MIN_PIXELS", "ROWS_MIN_PIXELS", "conv2d_block_elems", "conv2d_output_size",
    "conv2d_cols_length",
    "conv2d_scratch_length", "conv2d_images_per_block", "SUM_BLOCK", "SUM_GROUP", "SUM_ROWS",
    "SUM_GEMM_MIN",
    "sum_block", "sum_length", "conv2d_forward_rows", "conv2d_cols_shape",
    "is_depthwise", "is_pointwise", "winograd_skew", "winograd_tiles", "winograd_length",
    "winograd_images_per_block", "winograd_sums",
    "is_winograd", "prefers_winograd", "WINOGRAD_MIN_CHANNELS", "WINOGRAD_MIN_TILES", "WINOGRAD_WIDE_PLANE",
    "WINOGRAD_SCRATCH_MIN", "VEC_BLOCK_IMAGES",
    "vec_tile", "vec_layout", "vec_images_per_block", "vec_packs_weights", "vec_packed_length",
    "vec_packed_scratch",
    "is_vec", "prefers_vec", "VEC_MIN_PLANE",
    "VEC_WIDE_VECTORS", "VEC_NARROW_MAX_CHANNELS",
    "VEC_MIN_FILTERS", "VEC_MIN_PLANE_WEIGHT", "VEC_MIN_COVER", "VEC_MIN_MACS", "VEC_SMALL_MAX_POSITIONS",
    "SMALL_CHUNKS", "small_layout",
    "small_rows", "small_rows_plan", "small_rows_layout", "SMALL_ROWS_COLS",
]

KINDS = ("forward", "forward_cnhw", "backward_data", "backward_weight", "forward_winograd",
         "backward_data_winograd", "backward_weight_winograd", "forward_vec", "backward_data_vec",
         "backward_weight_vec", "forward_small", "backward_data_small", "backward_weight_small",
         "forward_rows_small", "backward_weight_rows_small")

CONV_SCRATCH_MAX = 1 << 23
"""Cap on any kernel's ``cols`` scratch, in elements (32 MiB in float32)."""

CONV_BLOCK_CACHE = 1 << 16
"""Block budget, in ``cols`` elements (256 KiB in float32), of a convolution with fewer than
:data:`CONV_BLOCK_WIDE` filters per group: its GEMMs do little work per ``cols`` element, so blocks
that stay in the L2 cache from im2col to GEMM win (LeNet's conv1, 20 filters: 1.7 ms for forward and
both gradients at one or two images per block, 3.0 ms at the whole batch of 64)."""

CONV_BLOCK_WIDE = 32
CONV_BLOCK_PER_FILTER = 12 * 1024
"""Block budget per filter of a group, in ``cols`` elements, of the other convolutions: wide GEMMs
(BLAS's threads pay off) while LeNet's inference plan, scratch included, stays under 4 MB (conv2,
50 filters: 17 images per block, within 5% of its fastest, 32)."""


def conv2d_block_elems(w_shape: tuple[int, ...], groups: int, kind: str = "",
                       x_shape: tuple[int, ...] | None = None,
                       out_shape: tuple[int, ...] | None = None) -> int:
    """The ``max_elems`` the compiler gives a convolution's kernels (per shape, at compile time):
    :data:`CONV_BLOCK_CACHE` below :data:`CONV_BLOCK_WIDE` filters per group, else
    ``filters per group * CONV_BLOCK_PER_FILTER``, at most :data:`CONV_SCRATCH_MAX`; for Winograd's
    kernels (``kind`` ending in ``_winograd``) at least :data:`WINOGRAD_SCRATCH_MIN`; for the tile
    kernels (``_vec``, given the data and output shapes) at least the scratch of
    :data:`VEC_BLOCK_IMAGES` images (or the batch). Figures in ``docs/performance.md`` ("LeNet:
    convolution blocks per shape", "Blocks of images for the tiles").

    >>> conv2d_block_elems((20, 1, 5, 5), 1), conv2d_block_elems((50, 20, 5, 5), 1)
    (65536, 614400)
    >>> x = (32, 64, 56, 56)
    >>> vec = conv2d_block_elems((64, 64, 3, 3), 1, "forward_vec", x, x)
    >>> vec_images_per_block(vec, 32, 64, 64, 56, 56, 3, 3, 1, 1, 1, 1), conv2d_block_elems((64, 64, 3, 3), 1)
    (4, 786432)
    """
    fg = w_shape[0] // groups
    budget = CONV_BLOCK_CACHE if fg < CONV_BLOCK_WIDE else min(CONV_SCRATCH_MAX, fg * CONV_BLOCK_PER_FILTER)
    if kind.endswith("_winograd"):
        return max(budget, WINOGRAD_SCRATCH_MIN)
    if kind.endswith("_vec") and x_shape is not None and out_shape is not None:
        k = min(x_shape[0], VEC_BLOCK_IMAGES)
        least = conv2d_cols_shape(kind, (k, *x_shape[1:]), w_shape, (k, *out_shape[1:]), groups,
                                  CONV_SCRATCH_MAX)[1]
        return max(budget, least)
    return budget


# ---------------------------------------------------------------------------------------------
# Sizes: shared by Python callers and generated kernels.


def conv2d_output_size(hw: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int],
                       pad: tuple[int, int], dilate: tuple[int, int]) -> tuple[int, int]:
    """Output height and width of a convolution: ``(H + 2p - d(k-1) - 1) // s + 1`` per axis.

    >>> conv2d_output_size((28, 28), (5, 5), (1, 1), (0, 0), (1, 1))
    (24, 24)
    """
    out = []
    for x, k, s, p, d in zip(hw, kernel, stride, pad, dilate):
        span = d * (k - 1) + 1
        out.append((x + 2 * p - span) // s + 1 if x + 2 * p >= span else 0)
    return out[0], out[1]


@jitable
def _block_images(n, per_image, max_elems):
    """Images per block: all ``n`` when they fit in ``max_elems``, else as many as fit (at least one)."""
    return min(n, max(1, max_elems // per_image))


@jitable
def conv2d_cols_length(n, k, f, p, fixed, blocked, max_elems):
    """Length of a ``cols`` scratch row: ``(k + f) * B * p + fixed``, plus ``blocked`` when ``B < n``.

    ``n`` images, ``k = C*KH*KW``, ``f`` filters, ``p = OH*OW``; ``B`` (images per block) is ``n``
    when the block part fits in ``max_elems``, else as many as fit (at least one). ``fixed`` and
    ``blocked`` are the kind's additional space (see :func:`conv2d_cols_shape`).

    >>> int(conv2d_cols_length(64, 500, 50, 64, 0, 0, 1 << 23))
    2252800
    """
    per_image = (k + f) * p
    nb = _block_images(n, per_image, max_elems)
    return per_image * nb + fixed + (blocked if nb < n else 0)


_FORWARD_CNHW, _BACKWARD_WEIGHT = KINDS.index("forward_cnhw"), KINDS.index("backward_weight")

# ---------------------------------------------------------------------------------------------
# Weight gradients through BLAS: the sum over positions in blocks (:mod:`.sum_blocks`).

SUM_BLOCK = 64
"""Positions (or Winograd tiles) per float32 GEMM of a weight gradient: BLAS sums each output's
products over its inner dimension in one float32 chain, whose rounding error grows with its
length (392 positions, ResNet-50's 1x1 layers at batch 2: 4.1x a direct convolution's error;
blocks of 64: 1.1x; ``docs/performance.md``, "Float32 accuracy: weight gradients in blocks")."""
SUM_GROUP = 16
"""Blocks that BLAS adds into the float32 product (``beta = 1``) before it goes into the
compensated sum: a chain of at most 16 partial sums, and one pass over the product per 16 GEMMs."""
SUM_ROWS = 1 << 16
"""Elements of a weight gradient's product per GEMM (256 KiB in float32): a larger product is
computed in blocks of rows, each through all its blocks of positions while it stays in the L2
cache (ResNet-18's 512-channel Winograd weight gradient at batch 32 ran 15% slower with whole
1 MiB products, each read and written again by every block's GEMM)."""
SUM_GEMM_MIN = 1 << 21
"""Multiply-adds that a block's GEMM does at least: a weight of few elements takes longer blocks
(ResNet-50's 64 -> 256 1x1 layer, 16384 elements: 128 positions; LeNet's conv1, 500: 4194; a
depthwise group, 9: the whole batch), so that the calls stay few (each costs a few us) and BLAS
packs rows of at least 512 bytes (that 1x1 layer's weight gradient took 15% longer than one GEMM
in blocks of 64, 7-10% in blocks of 128)."""


@jitable
def sum_block(outputs):
    """Positions per GEMM of a weight gradient whose GEMMs have ``outputs`` elements each:
    :data:`SUM_BLOCK`, more where the GEMM would do fewer than :data:`SUM_GEMM_MIN` multiply-adds.

    >>> int(sum_block(1024 * 256)), int(sum_block(256 * 64)), int(sum_block(25 * 20))
    (64, 128, 4194)
    """
    return max(SUM_BLOCK, SUM_GEMM_MIN // max(1, outputs))


@jitable
def sum_length(outputs, per_gemm, positions):
    """Scratch of a weight gradient's sum: its float32 product (``outputs`` elements), and where
    the ``positions`` take more than :data:`SUM_GROUP` blocks (GEMMs of ``per_gemm`` outputs, see
    :func:`sum_block`), the compensated sum and its compensation after it.

    >>> int(sum_length(100, 100, 64)), int(sum_length(100, 100, 1 << 20))
    (100, 300)
    """
    return outputs * (3 if positions > SUM_GROUP * sum_block(per_gemm) else 1)



@jitable
def conv2d_scratch_length(kind, n, k, f, kg, p, max_elems):
    """Length of the ``cols`` row of the kernel ``KINDS[kind]`` over blocks of whole images (the
    rule for the scratch size; :func:`conv2d_cols_shape` takes the ``'forward'`` kernel's blocks
    of output rows instead when :func:`conv2d_forward_rows` asks for them).

    ``n`` images, ``k = C*KH*KW``, ``f`` filters, ``kg = C/groups*KH*KW``, ``p = OH*OW``. Beyond its
    block of im2col + output, the weight gradient needs its transposed ``(K/groups, F)`` product
    (and its compensated sum over many positions, :func:`sum_length`), and
    :func:`conv2d_forward_cnhw` the whole filter-major output when the batch is cut into blocks.
    Python callers use :func:`conv2d_cols_shape`; generated kernels call this on runtime shapes.

    >>> int(conv2d_scratch_length(KINDS.index("backward_weight"), 64, 500, 50, 500, 64, 1 << 23))
    2327800
    """
    fixed = sum_length(f * kg, f * kg * kg // k, n * p) if kind == _BACKWARD_WEIGHT else 0
    blocked = f * n * p if kind == _FORWARD_CNHW else 0
    return conv2d_cols_length(n, k, f, p, fixed, blocked, max_elems)


def conv2d_images_per_block(x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                            out_shape: tuple[int, ...], max_elems: int = CONV_SCRATCH_MAX) -> int:
    """Images per block of the kernels whose scratch is ``conv2d_cols_shape(..., max_elems)``.

    >>> conv2d_images_per_block((64, 20, 12, 12), (50, 20, 5, 5), (64, 50, 8, 8), 1 << 20)
    29
    >>> conv2d_images_per_block((64, 20, 12, 12), (50, 20, 5, 5), (64, 50, 8, 8))
    64
    """
    k = x_shape[1] * w_shape[2] * w_shape[3]
    return int(_block_images(x_shape[0], (k + w_shape[0]) * out_shape[2] * out_shape[3], max_elems))


ROWS_MIN_PIXELS = 4096
"""The smallest output plane (``OH*OW``) whose forward takes blocks of output rows when one image
does not fit its block (:func:`conv2d_forward_rows`). Measured on 2 cores, rows against whole
images: Inception v3's 147 x 147 stem layers 1.42x and 1.47x, its 71 x 71 one 1.14x, ResNet's 7x7
stem (112 x 112) 1.18x, a 224 x 224 VGG layer 1.27x; but ResNet's 56 x 56 3x3 layers 0.86-0.93x
and Inception's 35 x 35 5x5 one 0.86x, whose GEMMs over whole images are the faster."""


def conv2d_forward_rows(k: int, f: int, oh: int, ow: int, max_elems: int) -> int:
    """Output rows per block of :func:`conv2d_forward`: when one image's im2col block alone, ``(k +
    f) * oh * ow`` elements, exceeds ``max_elems`` and the plane has at least
    :data:`ROWS_MIN_PIXELS` outputs, as many rows of ``ow`` outputs as fit (at least one), so the
    block stays in the cache from im2col to GEMM; ``oh`` (whole images) otherwise. ``max_elems=0``
    asks for the least any scratch holds: one row.

    >>> conv2d_forward_rows(288, 32, 147, 147, 32 * 12 * 1024), conv2d_forward_rows(500, 50, 8, 8, 0)
    (8, 1)
    >>> conv2d_forward_rows(500, 50, 8, 8, 1 << 23), conv2d_forward_rows(576, 64, 56, 56, 64 * 12 * 1024)
    (8, 56)
    """
    per_row = (k + f) * ow
    if per_row * oh <= max_elems or (0 < max_elems and oh * ow < ROWS_MIN_PIXELS):
        return oh
    return max(1, min(oh, max_elems // per_row))


def conv2d_cols_shape(kind: str, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                      out_shape: tuple[int, ...], groups: int,
                      max_elems: int = CONV_SCRATCH_MAX) -> tuple[int, int]:
    """Shape ``(1, length)`` of the ``cols`` scratch of a ``kind`` kernel.

    ``kind`` is one of ``'forward'``, ``'forward_cnhw'``, ``'backward_data'``,
    ``'backward_weight'``. The row holds the im2col matrix and the filter-major output (or output
    gradient) of a block of images (the whole batch when it fits in ``max_elems`` elements); see
    the module docstring. Serial and ``*_parallel`` kernels take the same scratch. The
    ``'forward'`` kernel, when one image does not fit, takes blocks of output rows
    (:func:`conv2d_forward_rows`) instead.

    >>> conv2d_cols_shape("forward", (64, 1, 28, 28), (20, 1, 5, 5), (64, 20, 24, 24), 1)
    (1, 1658880)
    >>> conv2d_cols_shape("backward_weight", (64, 1, 28, 28), (20, 1, 5, 5), (64, 20, 24, 24), 1,
    ...                   max_elems=45 * 576 * 8)
    (1, 207860)
    """
    if kind not in KINDS:
        raise KernelArgError(f"conv2d_cols_shape: kind must be one of {KINDS}, got {kind!r}")
    n, c = x_shape[0], x_shape[1]
    f, cg, kh, kw = w_shape
    p = out_shape[2] * out_shape[3]
    if kind.endswith("_winograd"):   # the data gradient's convolution maps dout (F) to dx (C)
        data = kind == "backward_data_winograd"
        c_in, c_out, plane = (f, c, x_shape[2:]) if data else (c, f, out_shape[2:])
        tiles = winograd_tiles(plane[0], plane[1])
        # as many images as fit in max_elems with the weight transform (at least one); the weight
        # gradient's compensated sum after them
        sums = winograd_sums(n, c_in, c_out, tiles) if kind == "backward_weight_winograd" else 0
        return 1, int(winograd_length(winograd_images_per_block(max_elems, n, c_in, c_out, tiles), c_in,
                                      c_out, tiles) + sums)
    if kind in ("forward_rows_small", "backward_weight_rows_small"):   # every part at once
        rows, _, parts = small_rows_plan(n, c * kh * kw, out_shape[2], out_shape[3])
        return 1, int(parts * small_rows_layout(kind == "forward_rows_small", c * kh * kw, f, rows,
                                                out_shape[3]))
    if kind.endswith("_small"):   # every part of the batch at once, whatever max_elems says
        index = ("forward_small", "backward_data_small", "backward_weight_small").index(kind)
        return 1, int(min(n, SMALL_CHUNKS) * small_layout(index, c, f, kh, kw, p))
    if kind.endswith("_vec"):   # the data gradient's convolution maps dout (F) to dx (C)
        # no dilation (is_vec): pad = (OH - H + KH - 1) / 2 per axis
        ph, pw = (out_shape[2] - x_shape[2] + kh - 1) // 2, (out_shape[3] - x_shape[3] + kw - 1) // 2
        c_in, c_out, plane = (c, f, x_shape[2:])
        if kind == "backward_weight_vec":
            nb = vec_images_per_block(max_elems, n, c, f, *plane, kh, kw, ph, pw, 1, 1, True)
            return 1, int(vec_layout(nb, c, f, *plane, kh, kw, ph, pw, 1, 1, True)[2])
        if kind == "backward_data_vec":
            c_in, c_out, plane, ph, pw = f, c, out_shape[2:], kh - 1 - ph, kw - 1 - pw
        packed = vec_packed_scratch(c_in, c_out, kh * kw)
        nb = vec_images_per_block(max(0, max_elems - packed), n, c_in, c_out, *plane, kh, kw, ph, pw, 1, 1)
        return 1, int(vec_layout(nb, c_in, c_out, *plane, kh, kw, ph, pw, 1, 1)[2] + packed)
    if kind == "forward":
        rows = conv2d_forward_rows(c * kh * kw, f, out_shape[2], out_shape[3], max_elems)
        if rows < out_shape[2]:
            return 1, (c * kh * kw + f) * rows * out_shape[3]
    return 1, int(conv2d_scratch_length(KINDS.index(kind), n, c * kh * kw, f, cg * kh * kw, p, max_elems))



# ---------------------------------------------------------------------------------------------
# Which forward kernel a convolution runs.


def is_depthwise(x_shape: tuple[int, ...], w_shape: tuple[int, ...], groups: int) -> bool:
    """Whether a convolution is depthwise: one group per input channel (one input channel per
    filter), the filters a multiple of the channels.

    >>> is_depthwise((2, 32, 8, 8), (32, 1, 3, 3), 32), is_depthwise((2, 32, 8, 8), (64, 32, 1, 1), 1)
    (True, False)
    """
    return groups > 1 and groups == x_shape[1] and w_shape[1] == 1 and w_shape[0] % groups == 0


POINTWISE_MIN_PIXELS = 512
"""The smallest image (``H*W``) whose 1x1 convolution runs :func:`conv2d_forward_1x1`: below it the
per-image GEMMs are thinner than one whole-batch GEMM after a copy (32 images of 14x14, 576 -> 96
channels: 12.7 ms against 8.2 ms; 28x28: 3.7 ms against 4.1 ms; ``docs/performance.md``)."""


def is_pointwise(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride, pad) -> bool:
    """Whether a convolution runs :func:`conv2d_forward_1x1`: a 1x1 window at stride 1 without
    padding (its im2col would be a copy of the input) over images of at least
    :data:`POINTWISE_MIN_PIXELS` pixels.

    >>> is_pointwise((2, 32, 56, 56), (64, 32, 1, 1), (1, 1), (0, 0))
    True
    >>> w = (64, 32, 1, 1)
    >>> is_pointwise((2, 32, 56, 56), w, (2, 2), (0, 0)), is_pointwise((2, 32, 7, 7), w, (1, 1), (0, 0))
    (False, False)
    """
    return (tuple(w_shape[2:]) == (1, 1) and tuple(stride) == (1, 1) and tuple(pad) == (0, 0)
            and x_shape[2] * x_shape[3] >= POINTWISE_MIN_PIXELS)


# ---------------------------------------------------------------------------------------------
# Winograd F(2x2, 3x3) (:mod:`symjit.kernels.cpu.conv_winograd`).


@jitable
def winograd_skew(n):
    """A row stride of at least ``n`` elements that is an odd multiple of 16: the 16 rows of a
    Winograd transform then start in different cache sets (64-byte lines in float32).

    >>> int(winograd_skew(64 * 784)), int(winograd_skew(5))
    (50192, 16)
    """
    m = (n + 15) // 16
    return 16 * (m + 1 - m % 2)


def winograd_tiles(oh: int, ow: int) -> int:
    """The 2 x 2 output tiles of one ``oh x ow`` plane (the last row and column may be cut).

    >>> winograd_tiles(56, 56), winograd_tiles(7, 7)
    (784, 16)
    """
    return ((oh + 1) // 2) * ((ow + 1) // 2)


@jitable
def winograd_length(nb, c_in, c_out, tiles):
    """Scratch elements of a Winograd convolution over blocks of ``nb`` images of ``tiles`` 2 x 2
    output tiles each: the transformed weight ``(16, c_out, c_in)``, input ``(16, c_in, nb*tiles)``
    and product ``(16, c_out, nb*tiles)``, each a skewed stride per position."""
    return 16 * (winograd_skew(c_out * c_in) + winograd_skew(c_in * nb * tiles)
                 + winograd_skew(c_out * nb * tiles))


@jitable
def winograd_sums(n, c_in, c_out, tiles):
    """Scratch elements a Winograd weight gradient over ``n`` images takes beyond
    :func:`winograd_length`: its compensated sum and compensation where the tiles take more than
    :data:`SUM_GROUP` GEMMs (:func:`sum_length`), else none.

    >>> int(winograd_sums(2, 128, 128, 196)), int(winograd_sums(32, 128, 128, 196))
    (0, 524800)
    """
    u = 16 * winograd_skew(c_out * c_in)
    return sum_length(u, c_out * c_in, n * tiles) - u


@jitable
def winograd_images_per_block(length, n, c_in, c_out, tiles):
    """The most images (at most ``n``, at least 1) whose Winograd blocks fit ``length`` elements."""
    nb = n
    while nb > 1 and winograd_length(nb, c_in, c_out, tiles) > length:
        nb -= 1
    return nb


def is_winograd(w_shape: tuple[int, ...], stride, pad, dilate, groups: int) -> bool:
    """Whether the Winograd kernels compute this convolution: a 3x3 window at stride 1, no dilation,
    one group, padding at most 2 (the data gradient pads by ``2 - pad``).

    >>> w = (64, 64, 3, 3)
    >>> is_winograd(w, (1, 1), (1, 1), (1, 1), 1), is_winograd(w, (2, 2), (1, 1), (1, 1), 1)
    (True, False)
    """
    return (tuple(w_shape[2:]) == (3, 3) and tuple(stride) == (1, 1) and tuple(dilate) == (1, 1)
            and groups == 1 and max(pad) <= 2)


WINOGRAD_MIN_CHANNELS = 96
WINOGRAD_MIN_TILES = 96
WINOGRAD_WIDE_PLANE = 784
"""Which convolutions the compiler gives the Winograd kernels (:func:`prefers_winograd`). Their
16 GEMMs are ``(out channels x in channels) @ (in channels x tiles)``: they beat im2col's when both
channel counts are at least :data:`WINOGRAD_MIN_CHANNELS` (measured at batch 2 against im2col:
ResNet's 128- and 256-channel layers 1.19x and 1.24x forward, 1.05x and 1.12x data gradient;
Inception's 96 -> 96 1.12x and 1.03x; weight gradients at batch 32 1.15-1.61x), and lose where one
is 64 (Inception's 64 -> 96 forward 1.00x, its data gradient 0.75x, weight gradient 0.89x;
SqueezeNet's 64 -> 256 0.92x and 0.66x), except for a forward of 64 -> 64 channels over planes of
at least :data:`WINOGRAD_WIDE_PLANE` output tiles (ResNet's 56 x 56 layers: 1.08-1.13x; their
gradients 0.96-1.01x). Below :data:`WINOGRAD_MIN_TILES` 2 x 2 output tiles in the batch the weight
transform (16 x the weight) is shared by too few of them (ResNet's 7 x 7 layers at batch 2: 0.66x;
at batch 32, 1.24x, 1.33x and 1.31x). ``docs/performance.md`` has the figures."""


def prefers_winograd(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_shape: tuple[int, ...],
                     stride, pad, dilate, groups: int, gradient: bool = False) -> bool:
    """Whether a convolution's forward (or, with ``gradient``, its data and weight gradients) runs
    the Winograd kernel.

    >>> geo = ((1, 1), (1, 1), (1, 1), 1)
    >>> prefers_winograd((2, 128, 28, 28), (128, 128, 3, 3), (2, 128, 28, 28), *geo)
    True
    >>> s1 = ((2, 64, 56, 56), (64, 64, 3, 3), (2, 64, 56, 56))
    >>> prefers_winograd(*s1, *geo), prefers_winograd(*s1, *geo, gradient=True)
    (True, False)
    >>> prefers_winograd((2, 512, 7, 7), (512, 512, 3, 3), (2, 512, 7, 7), *geo)
    False
    """
    plane = winograd_tiles(out_shape[2], out_shape[3])
    if not is_winograd(w_shape, stride, pad, dilate, groups) or out_shape[0] * plane < WINOGRAD_MIN_TILES:
        return False
    narrow = min(x_shape[1], w_shape[0])
    return narrow >= WINOGRAD_MIN_CHANNELS or (
        not gradient and narrow >= 64 and x_shape[1] == w_shape[0] and plane >= WINOGRAD_WIDE_PLANE)


# ---------------------------------------------------------------------------------------------
# Direct convolution in SIMD tiles (:mod:`symjit.kernels.cpu.conv_vec`).

VEC_MR_MAX = 8
VEC_NR_MAX = 96
"""Bounds of :func:`vec_tile` (filters, outputs per tile), which size the scratch on any host."""


@functools.lru_cache(maxsize=1)
def vec_tile() -> tuple[int, int]:
    """The host's tile of :mod:`~symjit.kernels.cpu.conv_vec`: ``(filters, 16-lane vectors of outputs)``,
    ``(6, 4)`` with AVX-512 (24 of its 32 vector registers hold sums, 4 the inputs), ``(6, 1)`` with
    AVX2 and FMA (12 of 16), ``(0, 0)`` without them (the kernels are then not chosen:
    :func:`prefers_vec`). On a Sapphire Rapids Xeon, with the weights' broadcast loads folded into
    the multiply-adds, 6 x 4 and 8 x 3 ran a channel block from L1 at 165-175 GFLOP/s on one core
    (its peak: 175) and 4 x 6 at 118-136: each of a tile's input vectors is an unaligned load that
    mostly straddles two cache lines, and 4 x 6 makes 6 of them per 24 multiply-adds. In whole
    layers 6 x 4 and 8 x 3 ran within noise of each other and up to 1.2x faster than 4 x 6; 6 x 4
    pads the filters to fewer rows. Tiles that need more than the 32 registers spill (4 x 7: half
    speed)."""
    import llvmlite.binding as llvm
    feats = llvm.get_host_cpu_features()
    if feats.get("avx512f", False):
        return 6, 4
    if feats.get("avx2", False) and feats.get("fma", False):
        return 6, 1
    return 0, 0


@jitable
def vec_layout(nb, c_in, c_out, h, w, kh, kw, ph, pw, dh, dw, weight=False):
    """Scratch of a tile convolution over ``nb`` images ``(c_in, h, w)`` to ``c_out`` channels:
    ``(padded input length per channel, output positions per filter row, total)``, for any tile up
    to ``VEC_MR_MAX x VEC_NR_MAX``. Images and rows follow each other
    in the padded input with ``ph`` rows and ``pw`` columns of zeros shared between them; taps read up
    to ``(kh-1)*dh`` rows and ``(kw-1)*dw`` columns past the last tile's positions. With ``weight``
    (the weight gradient's): the output gradient in the output rows, one more
    channel, and ``VEC_TAPS_SLACK`` elements at the end (its tiles read taps in threes).

    >>> [int(v) for v in vec_layout(2, 64, 64, 56, 56, 3, 3, 1, 1, 1, 1)]
    [6644, 6528, 888704]
    >>> [int(v) for v in vec_layout(2, 64, 64, 56, 56, 3, 3, 1, 1, 1, 1, True)]
    [6644, 6528, 895364]
    """
    fp = c_out + VEC_MR_MAX - 1
    positions = nb * (h + ph) * (w + pw)
    os = (positions + VEC_NR_MAX - 1) // VEC_NR_MAX * VEC_NR_MAX
    cs = os + (kh - 1) * dh * (w + pw) + (kw - 1) * dw
    if weight:
        return cs, os, (c_in + 1) * cs + fp * os + VEC_TAPS_SLACK
    return cs, os, c_in * cs + fp * os


def vec_packs_weights(tile: tuple[int, int] | None = None) -> bool:
    """Whether the convolution tiles of a host whose tile is ``tile`` (default: this host's) read
    a copy of the weight packed per block of filters (:func:`vec_packed_length`) rather than the
    weight in place: AVX2's narrow tile (fewer than :data:`VEC_WIDE_VECTORS` vectors of outputs).
    Its inner loop, reading six filter rows in place, kept six row addresses that with its loop
    counters outnumber the 16 general registers, and ran 1.4-1.6x slower than on the packed copy,
    whose rows lie side by side behind one address (``docs/performance.md``, "AVX2 tiles on a
    packed weight"). AVX-512's tile does four times the work per pass and reads the weight in
    place, so no copy is made there.

    >>> vec_packs_weights((6, 1)), vec_packs_weights((6, 4)), vec_packs_weights((0, 0))
    (True, False, False)
    """
    tile = vec_tile() if tile is None else tile
    return tile[0] > 0 and tile[1] < VEC_WIDE_VECTORS


@jitable
def vec_packed_length(c_in, c_out, kk, mr):
    """Elements of the packed weight of :func:`vec_packs_weights`: per block of ``mr`` filters (the
    last one's rows past ``c_out`` repeating its last filter), per input channel and tap, the
    block's ``mr`` weights side by side.

    >>> int(vec_packed_length(64, 64, 9, 6))
    38016
    """
    return (c_out + mr - 1) // mr * mr * c_in * kk


def vec_packed_scratch(c_in: int, c_out: int, kk: int) -> int:
    """Elements at the end of a tile forward's (or data gradient's) scratch that hold its packed
    weight on this host: :func:`vec_packed_length` where :func:`vec_packs_weights`, else 0."""
    return int(vec_packed_length(c_in, c_out, kk, vec_tile()[0])) if vec_packs_weights() else 0


VEC_TAPS_SLACK = 16

VEC_BLOCK_IMAGES = 4
"""The fewest images (the batch if smaller) per block that the compiler gives the tile kernels
(:func:`conv2d_block_elems`): every block costs each of its three passes (padding, tiles, the copy
out) a wake-up of the threads and leaves them an uneven share of its last tiles. With the budget's
one image per block, ResNet's 56 x 56 layers ran their forward, data and weight gradients at
batch 32 1.1-1.2x slower than with 4 to 10 images; a fixed minimum of 2^22 elements instead put
LeNet's batch of 64 in one block that no longer fit L2, and its training loop ran 0.8-0.9x
(``docs/performance.md``, "Blocks of images for the tiles")."""


@jitable
def vec_images_per_block(length, n, c_in, c_out, h, w, kh, kw, ph, pw, dh, dw, weight=False):
    """The most images (at most ``n``, at least 1) whose tile-convolution scratch fits ``length``."""
    nb = n
    while nb > 1 and vec_layout(nb, c_in, c_out, h, w, kh, kw, ph, pw, dh, dw, weight)[2] > length:
        nb -= 1
    return nb


def is_vec(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride, pad, dilate, groups: int,
           dtype, host: bool = True) -> bool:
    """Whether :mod:`~symjit.kernels.cpu.conv_vec` can compute this convolution (and its data
    gradient): float32, stride 1, no dilation, one group, ``pad <= K - 1`` per axis, on a host with
    a tile (:func:`vec_tile`; ``host=False`` leaves the host out).

    >>> w = (64, 64, 3, 3)
    >>> is_vec((2, 64, 56, 56), w, (1, 1), (1, 1), (1, 1), 1, "float32") == (vec_tile()[0] > 0)
    True
    >>> is_vec((2, 64, 56, 56), w, (1, 1), (1, 1), (1, 1), 1, "float64")
    False
    """
    import numpy as np
    return (np.dtype(dtype) == np.float32 and tuple(stride) == (1, 1) and tuple(dilate) == (1, 1)
            and groups == 1 and pad[0] <= w_shape[2] - 1 and pad[1] <= w_shape[3] - 1
            and (not host or vec_tile()[0] > 0))


WINOGRAD_SCRATCH_MIN = 1 << 24
"""The least block budget, in elements (64 MiB in float32), that the compiler gives the Winograd
kernels (:func:`conv2d_block_elems`): the whole batch of 32 in one block on ResNet's 14 x 14 and
7 x 7 layers (20 images at 28 x 28), so that each of the 16 GEMMs has 32 images' tiles rather
than 5 to 7 images' (the block budget's: the weight transform alone takes 4 Mi elements of it at
512 channels). ResNet-18's training step at batch 32 ran 1.05-1.08x faster (``bench_rule_ab.py
resnet18 --batch 32 --train --set WINOGRAD_SCRATCH_MIN=0``; ``docs/performance.md``); 2^25 was
within noise of 2^24."""


VEC_MIN_PLANE = 784
VEC_MIN_PLANE_WEIGHT = 1200
VEC_MIN_FILTERS = 16
"""Which convolutions the compiler gives the tile kernels (:func:`prefers_vec`): those
:func:`is_vec` takes whose output plane (``OH*OW``; the data gradient's: ``H*W``) has at least
:data:`VEC_MIN_PLANE` positions and that make at least :data:`VEC_MIN_FILTERS` output channels
(the data gradient's are the input channels); for the weight gradient, input planes of at least
:data:`VEC_MIN_PLANE_WEIGHT` positions and windows at least 3 wide (ResNet's 28 x 28 layer's
weight gradient ran 0.75-1.04x, Inception's 35 x 35 ones 1.1-1.25x, the 56 x 56 and bigger ones
1.06-1.8x). Measured on 2 cores against the faster of im2col +
GEMM and Winograd (``docs/performance.md``, "Direct convolution in SIMD tiles"), forward and data
gradient, batch 2 and 32: ResNet's 56 x 56 3x3 layers 1.3-1.7x, its 28 x 28 ones 1.0-1.25x,
Inception's 147 x 147 stem layers 1.35-2.5x, its 35 x 35 ones 1.2-2.1x, SqueezeNet's 55 x 55 16 ->
64 expansions 1.0-2.1x; into 3 channels (VGG's data gradient at its 3-channel input) 0.8x. 1x1
windows keep their GEMM (Inception's 17 x 17 768 -> 192 layer: tiles 0.8x forward and data
gradient, 0.3x weight gradient)."""

VEC_WIDE_VECTORS = 4
VEC_NARROW_MAX_CHANNELS = 64
"""AVX2's tile (:func:`vec_tile`: fewer than :data:`VEC_WIDE_VECTORS` vectors of outputs, one
16-lane vector held as two 8-lane registers; its weight packed, :func:`vec_packs_weights`) takes
forwards and data gradients whose convolution (``C -> F`` forward, ``F -> C`` for the data
gradient) has at most :data:`VEC_NARROW_MAX_CHANNELS` input channels, besides the rules above,
and no weight gradient. Measured on a 2-core AMD EPYC (Zen 4, AVX-512 hidden), batch 2, against
the faster of im2col + GEMM and Winograd (``benchmarks/bench_conv_vec.py``; ``docs/performance.md``,
"AVX2 tiles on a packed weight"): forwards of at most 64 input channels won or tied (SqueezeNet's
16 -> 64 expansion 1.44x, Inception's 32-channel 149 x 149 and 147 x 147 layers 1.35x and 1.09x,
its 5 x 5 layer 1.28x, its 64 -> 96 1.08x, VGG's 3-channel input 1.24x, ResNet's 64 -> 64 and
SqueezeNet's 32 -> 128 1.00-1.04x), those of 80 channels or more lost (0.52-0.98x); the data
gradients of at most 64 channels won or tied (Inception's 32-channel layers 1.22x and 1.48x,
ResNet's and SqueezeNet's 64-channel ones 1.00x), those of 96 or more lost (0.35-0.94x); the
weight gradients lost everywhere (0.10-0.59x: their 4 x 2 x 3 tile of 24 vectors spills AVX2's 16
registers). Before the weight was packed, AVX2's tile took only forwards of at most 31 channels
or 5 x 5 windows (it lost on ResNet's 3 x 3 layers at 0.48-0.59x)."""

VEC_MIN_COVER = 4
"""The tile kernels run over the flat positions of the padded input plane (the weight gradient
over all of them, the forward over its output rows' full width), so their work grows with the
input plane while a convolution's multiply-adds grow with its output plane: :func:`prefers_vec`
gives them only convolutions whose output plane is at least 1 / :data:`VEC_MIN_COVER` of the
padded input plane (LeNet's 5 x 5 window over 12 x 12: 0.44). In tiles, the weight gradient of
a window as big as its image (224 x 224 over 224 x 224, one output position) would do 50176 times
its multiply-adds."""

VEC_MIN_MACS = 64_000_000
VEC_SMALL_MAX_POSITIONS = 1024
"""Forwards over smaller planes (:func:`prefers_vec`): the tiles also take those of at least
:data:`VEC_MIN_MACS` multiply-adds into at least :data:`VEC_MIN_FILTERS` channels, unless
:func:`prefers_winograd` picks Winograd for them and the batch has more than
:data:`VEC_SMALL_MAX_POSITIONS` output positions (``N*OH*OW``). Against the faster of im2col and
Winograd: at batch 2 ResNet's 14 x 14 and 7 x 7 layers ran 1.2x and 1.2-1.7x, Inception's 17 x 17
1x7 and 7x1 ones 1.1x, its 8 x 8 ones 1.1-1.2x; at batch 32 Inception's 17 x 17 and 8 x 8 1x3 ones
1.0-1.5x and 1.2x, SqueezeNet's 13 x 13 ones 1.3x, LeNet's second layer 1.5x, but Winograd's
ResNet 14 x 14 and Inception 8 x 8 ones 0.95x and 0.84x. Smaller layers lose in a net what they
win alone: a tile kernel that starts right after a GEMM shares a core with OpenBLAS's thread, which
spins for ~0.4 ms after each GEMM (``symjit.threads.idle_settings``), so SqueezeNet at batch 2,
whose 13 x 13 and 27 x 27 layers (28-54 M multiply-adds) won 1.1-1.3x alone, ran 0.9x with them.
Their data gradients stay with im2col: 0.75-1.07x at batch 2."""


def prefers_vec(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_shape: tuple[int, ...],
                stride, pad, dilate, groups: int, dtype, gradient: bool | str = False,
                tile: tuple[int, int] | None = None) -> bool:
    """Whether a convolution's forward (or, with ``gradient``, its data gradient; with ``gradient=
    'weight'`` its weight gradient) runs the tile kernel of :mod:`~symjit.kernels.cpu.conv_vec` on a
    host whose tile is ``tile`` (default: this host's, :func:`vec_tile`). The weight gradient's
    tiles take a window row's taps in threes, so it asks for ``KW >= 3``. AVX2's narrow tile takes
    layers of fewer channels, and no weight gradient (:data:`VEC_NARROW_MAX_CHANNELS`).

    >>> geo, avx512, avx2 = ((1, 1), (1, 1), (1, 1), 1), (6, 4), (6, 1)
    >>> s1 = ((2, 64, 56, 56), (64, 64, 3, 3), (2, 64, 56, 56))
    >>> [prefers_vec(*s1, *geo, "float32", grad, tile=avx512) for grad in (False, True)]
    [True, True]
    >>> s3 = ((2, 256, 14, 14), (256, 256, 3, 3), (2, 256, 14, 14))
    >>> [prefers_vec(*s3, *geo, "float32", grad, tile=avx512) for grad in (False, True)]
    [True, False]
    >>> prefers_vec((32, 256, 14, 14), (256, 256, 3, 3), (32, 256, 14, 14), *geo, "float32", tile=avx512)
    False
    >>> s2 = ((2, 128, 28, 28), (128, 128, 3, 3), (2, 128, 28, 28))
    >>> [prefers_vec(*s, *geo, "float32", grad, tile=avx2) for s in (s1, s2) for grad in (False, True)]
    [True, True, False, False]
    >>> prefers_vec(*s1, *geo, "float32", "weight", tile=avx2)
    False
    """
    tile = vec_tile() if tile is None else tile
    if tile[0] == 0 or not is_vec(x_shape, w_shape, stride, pad, dilate, groups, dtype, host=False):
        return False
    if tile[1] < VEC_WIDE_VECTORS and (gradient == "weight" or VEC_NARROW_MAX_CHANNELS
                                       < (w_shape[0] if gradient else x_shape[1])):
        return False
    padded = (x_shape[2] + 2 * pad[0]) * (x_shape[3] + 2 * pad[1])
    if out_shape[2] * out_shape[3] * VEC_MIN_COVER < padded:
        return False
    if gradient == "weight":
        return x_shape[2] * x_shape[3] >= VEC_MIN_PLANE_WEIGHT and w_shape[3] >= 3
    plane, channels = (x_shape, x_shape[1]) if gradient else (out_shape, w_shape[0])
    if channels < VEC_MIN_FILTERS or w_shape[2] * w_shape[3] == 1:
        return False
    if plane[2] * plane[3] >= VEC_MIN_PLANE:
        return True
    if gradient:    # smaller planes: forwards only
        return False
    positions = out_shape[0] * out_shape[2] * out_shape[3]
    macs = positions * w_shape[0] * w_shape[1] * w_shape[2] * w_shape[3]
    return macs >= VEC_MIN_MACS and (
        positions <= VEC_SMALL_MAX_POSITIONS
        or not prefers_winograd(x_shape, w_shape, out_shape, stride, pad, dilate, groups))


# ---------------------------------------------------------------------------------------------
# Small planes: per-image im2col and register-tile GEMMs (:mod:`symjit.kernels.cpu.conv_small`).

SMALL_CHUNKS = 4
"""Parts the batch is cut into by the small-plane kernels: each part (a thread's work item) has
its own slice of the scratch and, for the weight gradient, its own partial sum of ``dw``."""



@jitable
def small_layout(kind_index, c, f, kh, kw, p):
    """Scratch elements of one part of a small-plane kernel (``kind_index``: 0 forward, 1 data
    gradient, 2 weight gradient) for images of ``c`` channels, ``f`` filters, a ``kh x kw`` window
    and ``p`` output positions: the image's columns ``(K, P)`` and the tiles' output (rows padded by
    :data:`VEC_MR_MAX`); the weight gradient's also the output gradient transposed ``(P, F16)`` and
    its partial sum ``(K + 8, F16)``, ``F16`` the filters rounded up to 16.

    >>> [int(small_layout(i, 20, 50, 5, 5, 64)) for i in range(3)]
    [35712, 32512, 68608]
    """
    k = c * kh * kw
    if kind_index == 0:
        return k * p + (f + VEC_MR_MAX) * p
    if kind_index == 1:
        return (k + VEC_MR_MAX) * p
    f16 = (f + 15) // 16 * 16
    return k * p + p * f16 + (k + VEC_MR_MAX) * f16


SMALL_ROWS_COLS = 1 << 17
"""The most im2col elements of one chunk of output rows in the row-chunk forward
(:func:`small_rows`; 512 KiB in float32, a quarter of this Xeon's L2)."""


@jitable
def small_rows(k, oh, ow):
    """Output rows per chunk of ``conv_small.conv2d_forward_rows_small_parallel`` for ``K = k``
    and ``oh x ow`` outputs: as many as keep a chunk's columns ``(K, rows*OW)`` within
    :data:`SMALL_ROWS_COLS`, at least one, at most ``oh``.

    >>> int(small_rows(147, 112, 112)), int(small_rows(27, 149, 149)), int(small_rows(10 ** 6, 4, 20))
    (7, 32, 1)
    """
    return max(1, min(oh, SMALL_ROWS_COLS // (k * ow)))


@jitable
def small_rows_plan(n, k, oh, ow):
    """``(rows per chunk, chunks per image, parts)`` of the row-chunk kernels over ``n`` images:
    :func:`small_rows`, and the ``n * chunks`` work items cut into at most :data:`SMALL_CHUNKS`
    parts (each with its slice of the scratch, :func:`small_rows_layout`).

    >>> tuple(int(v) for v in small_rows_plan(2, 147, 112, 112))
    (7, 16, 4)
    """
    rows = small_rows(k, oh, ow)
    chunks = (oh + rows - 1) // rows
    return rows, chunks, min(n * chunks, SMALL_CHUNKS)


@jitable
def small_rows_layout(forward, k, f, rows, ow):
    """Scratch elements of one part of the row-chunk kernels: a chunk's columns ``(K, rows*OW)``;
    the weight gradient's also the chunk's output gradient transposed ``(rows*OW, F16)`` and the
    part's ``dw.T`` sum ``(K + 8, F16)``, ``F16`` the filters rounded up to 16.

    >>> int(small_rows_layout(True, 147, 64, 7, 112)), int(small_rows_layout(False, 147, 64, 7, 112))
    (115248, 175344)
    """
    pc = rows * ow
    if forward:
        return k * pc
    f16 = (f + 15) // 16 * 16
    return k * pc + pc * f16 + (k + VEC_MR_MAX) * f16

"""Which convolutions the small-plane kernels (:mod:`~symjit.kernels.cpu.conv_small`) and the 1x1
register tiles (:mod:`~symjit.kernels.cpu.conv_pointwise`) take: plain Python, no numba, asked by
the lowering per shape (``symjit/lower/cpu/nn.py``) after :mod:`.conv_shapes`' Winograd and
direct-tile rules. Their scratch layouts, which the kernels compute too, stay in
:mod:`.conv_shapes`.
"""
from __future__ import annotations

from .conv_shapes import VEC_MIN_FILTERS, vec_tile

__all__ = [
    "SMALL_MAX_COLS", "SMALL_MIN_WEIGHT_DEPTH", "SMALL_ROWS_MIN_COLS", "SMALL_WIDE_COLS",
    "SMALL_WIDE_S1_COLS", "POINTWISE_TILES_MIN_PIXELS", "is_small", "prefers_small",
    "prefers_small_rows", "prefers_small_wide", "is_pointwise_tiles", "prefers_pointwise_tiles",
]

SMALL_MAX_COLS = 1 << 16
"""The most im2col elements of one image (``C*KH*KW * OH*OW``; 256 KiB in float32) for which the
small-plane kernels are chosen: an image's columns stay in L2 from im2col to the tiles."""

SMALL_MIN_WEIGHT_DEPTH = 64
"""The smallest ``C*KH*KW`` whose weight gradient runs the small-plane kernel (:func:`prefers_small`):
LeNet's conv1 (25) ran 0.83 ms there against im2col's 0.55, its conv2 (500) 1.47 against 1.83."""

SMALL_ROWS_MIN_COLS = 1 << 18
"""The fewest im2col elements of one image for which a strided forward runs in chunks of output
rows (:func:`prefers_small_rows`, which the compiler asks before :func:`prefers_small`); below it
the per-image kernel takes it. From 2^18 up to 2^19 (ResNet's 56 -> 28 layer, SqueezeNet's and
MobileNet's stems) the chunks ran 1.06-1.8x faster than the per-image kernel at batch 2 and 32
(``docs/performance.md``, "Blocks of images for the tiles")."""


def prefers_small_rows(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_shape: tuple[int, ...],
                       stride, groups: int, dtype) -> bool:
    """Whether a strided forward whose image's columns exceed :data:`SMALL_ROWS_MIN_COLS` (the
    stems of ResNet, Inception, SqueezeNet and MobileNet, ResNet's 56 -> 28 layer) runs in chunks
    of output rows (``conv_small.conv2d_forward_rows_small_parallel``) rather than per image or by
    im2col + BLAS: what :func:`is_small` takes, at least :data:`VEC_MIN_FILTERS` filters and output
    rows of at least 16 positions.

    >>> prefers_small_rows((2, 3, 224, 224), (64, 3, 7, 7), (2, 64, 112, 112), (2, 2), 1,
    ...                    "float32") == (vec_tile()[0] > 0)
    True
    >>> prefers_small_rows((2, 64, 56, 56), (128, 64, 3, 3), (2, 128, 28, 28), (2, 2), 1,
    ...                    "float32") == (vec_tile()[0] > 0)
    True
    >>> prefers_small_rows((2, 128, 28, 28), (256, 128, 3, 3), (2, 256, 14, 14), (2, 2), 1, "float32")
    False
    """
    k = w_shape[1] * w_shape[2] * w_shape[3]
    p = out_shape[2] * out_shape[3]
    return (tuple(stride) != (1, 1) and w_shape[0] >= VEC_MIN_FILTERS and out_shape[3] >= 16
            and k * p > SMALL_ROWS_MIN_COLS and is_small(x_shape, w_shape, out_shape, groups, dtype))


def is_small(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_shape: tuple[int, ...],
             groups: int, dtype) -> bool:
    """Whether :mod:`~symjit.kernels.cpu.conv_small` can compute this convolution: float32, one
    group, output planes of at least one 16-lane vector (``OH*OW >= 16``), on a host with a tile
    (:func:`vec_tile`). Any stride, padding and dilation (im2col's).

    >>> is_small((64, 20, 12, 12), (50, 20, 5, 5), (64, 50, 8, 8), 1, "float32") == (vec_tile()[0] > 0)
    True
    >>> is_small((64, 20, 12, 12), (50, 20, 5, 5), (64, 50, 8, 8), 2, "float32")
    False
    """
    import numpy as np
    return (np.dtype(dtype) == np.float32 and groups == 1 and out_shape[2] * out_shape[3] >= 16
            and vec_tile()[0] > 0)


def prefers_small(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_shape: tuple[int, ...],
                  stride, groups: int, dtype, gradient: bool | str = False) -> bool:
    """Whether a convolution's forward (or, with ``gradient``, its data gradient; with ``gradient=
    'weight'`` its weight gradient) runs the small-plane kernels: those :func:`is_small` takes with
    at least :data:`VEC_MIN_FILTERS` filters, and either

    * small planes: an image's columns (``K*P``, ``K = C*KH*KW``, ``P = OH*OW``) within
      :data:`SMALL_MAX_COLS` and more than one tap (a 1x1 layer at stride 1 is
      :func:`prefers_pointwise_tiles`'), which beat the direct tiles and im2col + BLAS there
      (LeNet); or
    * strided layers (which neither the direct tiles nor Winograd take) whose image's columns fit
      :data:`SMALL_WIDE_COLS` and whose output planes have at least 64 positions (forwards of
      batches of at most 4 images: any), where im2col + BLAS's one GEMM over the batch won
      (ResNet's 7 x 7 outputs at batch 32); weight gradients of planes under 256 positions only
      from batches of 8 images (at batch 2, ResNet's 14 x 14 outputs ran 0.5-0.65x there).

    The weight gradient transposes each image's output gradient (``F x P`` scalar copies, against
    ``F x P x K`` multiply-adds), so it also asks for ``K >=`` :data:`SMALL_MIN_WEIGHT_DEPTH`.
    Figures in ``docs/performance.md`` ("Register tiles as GEMMs: small planes, strided and 1x1
    layers").

    >>> s1 = ((1, 1), 1, "float32")
    >>> prefers_small((64, 20, 12, 12), (50, 20, 5, 5), (64, 50, 8, 8), *s1) == (vec_tile()[0] > 0)
    True
    >>> prefers_small((2, 512, 7, 7), (512, 512, 3, 3), (2, 512, 7, 7), *s1)
    False
    >>> prefers_small((64, 1, 28, 28), (20, 1, 5, 5), (64, 20, 24, 24), *s1, "weight")
    False
    >>> s2 = ((2, 2), 1, "float32")
    >>> prefers_small((32, 64, 56, 56), (128, 64, 3, 3), (32, 128, 28, 28), *s2, True) == (vec_tile()[0] > 0)
    True
    >>> prefers_small((32, 256, 14, 14), (512, 256, 3, 3), (32, 512, 7, 7), *s2)
    False
    """
    k = w_shape[1] * w_shape[2] * w_shape[3]
    p = out_shape[2] * out_shape[3]
    if not is_small(x_shape, w_shape, out_shape, groups, dtype) or w_shape[0] < VEC_MIN_FILTERS:
        return False
    if gradient == "weight" and k < SMALL_MIN_WEIGHT_DEPTH:
        return False
    if tuple(stride) == (1, 1):
        return w_shape[2] * w_shape[3] > 1 and k * p <= SMALL_MAX_COLS
    if gradient == "weight":    # a small batch's parts have too little to sum over a small plane
        return k * p <= SMALL_WIDE_COLS and p >= 64 and (p >= 256 or x_shape[0] >= 8)
    return k * p <= SMALL_WIDE_COLS and (p >= 64 or (not gradient and x_shape[0] <= 4))

SMALL_WIDE_COLS = 1 << 19
"""The most im2col elements of one image (2 MiB in float32, this Xeon's L2) for which a strided
layer runs the small-plane kernels (:func:`prefers_small`): ResNet's 3x3 stride-2 layer from 64
channels at 56 x 56 (451,584 elements) ran 1.07-1.46x faster there than im2col + BLAS, forward
and both gradients, at batch 2 and 32; its stem (1.8 M) ran 0.76x."""

SMALL_WIDE_S1_COLS = 1 << 19
"""The most im2col elements of one image for which a stride-1 forward the tiles and Winograd leave
runs the small-plane kernel (:func:`prefers_small_wide`)."""

SMALL_WIDE_S1_MIN_POSITIONS = 64
"""The fewest output positions of a stride-1 forward the small-plane kernel takes
(:func:`prefers_small_wide`): its tiles cover a plane in vectors of 16 positions, so a 7 x 7 plane
computes 64 for 49. ResNet's 512-channel 3x3 layers over 7 x 7 ran 0.72-0.78x of im2col + BLAS
there, at batch 2 on an AVX2 host; Inception's 8 x 8 one (64 positions) 1.12-1.20x faster
(``docs/performance.md``, "oneDNN beside symjit's convolutions")."""


def prefers_small_wide(x_shape: tuple[int, ...], w_shape: tuple[int, ...], out_shape: tuple[int, ...],
                       stride, groups: int, dtype) -> bool:
    """Whether a stride-1 forward that neither the direct tiles nor Winograd take (the compiler
    asks after them) runs the small-plane kernel rather than im2col + BLAS: more than one tap, at
    least :data:`VEC_MIN_FILTERS` filters, an image's columns within :data:`SMALL_WIDE_S1_COLS`,
    and output planes of at least :data:`SMALL_WIDE_S1_MIN_POSITIONS` positions. SqueezeNet's 3x3
    layers at batch 2 (32 to 64 channels over 27 x 27 and 13 x 13) ran 1.2-1.45x faster there than
    im2col + BLAS ("Wider small planes" in ``docs/performance.md``).

    >>> prefers_small_wide((2, 32, 27, 27), (128, 32, 3, 3), (2, 128, 27, 27), (1, 1), 1,
    ...                    "float32") == (vec_tile()[0] > 0)
    True
    >>> prefers_small_wide((2, 64, 112, 112), (64, 64, 3, 3), (2, 64, 112, 112), (1, 1), 1, "float32")
    False
    >>> prefers_small_wide((2, 512, 7, 7), (512, 512, 3, 3), (2, 512, 7, 7), (1, 1), 1, "float32")
    False
    """
    k = w_shape[1] * w_shape[2] * w_shape[3]
    p = out_shape[2] * out_shape[3]
    return (tuple(stride) == (1, 1) and w_shape[2] * w_shape[3] > 1 and w_shape[0] >= VEC_MIN_FILTERS
            and is_small(x_shape, w_shape, out_shape, groups, dtype) and k * p <= SMALL_WIDE_S1_COLS
            and p >= SMALL_WIDE_S1_MIN_POSITIONS)


# ---------------------------------------------------------------------------------------------
# 1x1 layers in register tiles (:mod:`symjit.kernels.cpu.conv_pointwise`).


def is_pointwise_tiles(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride, pad, dilate,
                       groups: int, dtype) -> bool:
    """Whether :mod:`~symjit.kernels.cpu.conv_pointwise` can compute this convolution: float32, a
    1x1 window at stride 1 without padding, one group, at least 6 filters (a tile's rows) and 16
    pixels (a vector), on a host with a tile (:func:`vec_tile`).

    >>> is_pointwise_tiles((2, 64, 56, 56), (256, 64, 1, 1), (1, 1), (0, 0), (1, 1), 1, "float32") == (
    ...     vec_tile()[0] > 0)
    True
    >>> is_pointwise_tiles((2, 64, 56, 56), (256, 64, 1, 1), (2, 2), (0, 0), (1, 1), 1, "float32")
    False
    """
    import numpy as np
    return (np.dtype(dtype) == np.float32 and tuple(w_shape[2:]) == (1, 1) and tuple(stride) == (1, 1)
            and tuple(pad) == (0, 0) and groups == 1 and w_shape[0] >= 6
            and x_shape[2] * x_shape[3] >= 16 and vec_tile()[0] > 0)


def prefers_pointwise_tiles(x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride, pad, dilate,
                            groups: int, dtype) -> bool:
    """Whether a 1x1 convolution's forward runs :mod:`~symjit.kernels.cpu.conv_pointwise`'s tiles:
    those :func:`is_pointwise_tiles` takes with at least :data:`VEC_MIN_FILTERS` filters and
    :data:`POINTWISE_TILES_MIN_PIXELS` pixels (figures in ``docs/performance.md``, "Register
    tiles as GEMMs: small planes, strided and 1x1 layers").

    >>> geo = ((1, 1), (0, 0), (1, 1), 1, "float32")
    >>> prefers_pointwise_tiles((2, 64, 56, 56), (256, 64, 1, 1), *geo) == (vec_tile()[0] > 0)
    True
    >>> prefers_pointwise_tiles((2, 512, 7, 7), (2048, 512, 1, 1), *geo)
    False
    """
    return (is_pointwise_tiles(x_shape, w_shape, stride, pad, dilate, groups, dtype)
            and w_shape[0] >= VEC_MIN_FILTERS and x_shape[2] * x_shape[3] >= POINTWISE_TILES_MIN_PIXELS)

POINTWISE_TILES_MIN_PIXELS = 64
"""The smallest image whose 1x1 layer runs the tiles: ResNet-50's 7 x 7 layers (49 pixels: the
last of four vectors of positions recomputes 15 of the third's) ran 0.75-1.0x of BLAS's GEMM at
batch 2 and 32; 8 x 8 ones 1.5x, 14 x 14 ones 1.1-1.3x."""

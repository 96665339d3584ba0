"""The kernel choices and scratch sizes of the GEMMs that run on numba's threads
(:mod:`symjit.kernels.cpu.gemm_tiles`), without numba (the lowering asks them; a process running
ahead-of-time modules never loads numba)."""
from __future__ import annotations

from .conv_shapes import vec_tile

__all__ = ["GEMM_TILES", "GEMM_TILES_MIN_MACS", "prefers_gemm_tiles", "gemm_nt_scratch"]

GEMM_TILES = 1
"""1: the FullyConnected and 2-D ``dot`` GEMMs of a program with convolutions (the nodes the
compiler marks ``gemm='threads'``) run as :mod:`~symjit.kernels.cpu.gemm_tiles`' register tiles on
numba's threads where :func:`prefers_gemm_tiles`; 0: BLAS's everywhere (``bench_rule_ab.py
--set symjit.kernels.cpu.gemm_shapes.GEMM_TILES=0`` compares)."""

GEMM_TILES_MIN_MACS = 1 << 18
"""The fewest multiply-adds of a GEMM the tiles take: OpenBLAS runs smaller ones in the calling
thread (its own threading threshold, ``GEMM_MULTITHREAD_THRESHOLD`` x 65536), so they wake no
thread of its pool, and they stay BLAS's (a program of only such GEMMs keeps its ahead-of-time
entries, which cannot hold threaded kernels)."""


def prefers_gemm_tiles(kind: str, m: int, k: int, n: int, dtype) -> bool:
    """Whether ``gemm_<kind>`` (``'nn'``: ``a @ b``, ``'tn'``: ``a.T @ b``, ``'nt'``: ``a @ b.T``) of an
    ``(m, k)`` by ``(k, n)`` product runs as tiles in a program whose GEMMs are placed on numba's
    threads: float32 with a host tile (:func:`vec_tile`), and the product the tile computes (``nt``:
    ``out.T``, ``n`` by ``m``) has at least a tile's rows and 16 columns, so that its last tiles end
    at the last row and column, and :data:`GEMM_TILES_MIN_MACS` multiply-adds.

    >>> ok = vec_tile()[0] > 0
    >>> f32 = "float32"
    >>> prefers_gemm_tiles("nt", 64, 800, 500, f32) == ok, prefers_gemm_tiles("nt", 2, 512, 1000, f32)
    (True, False)
    >>> prefers_gemm_tiles("nn", 64, 500, 10, "float32"), prefers_gemm_tiles("tn", 64, 800, 500, "float64")
    (False, False)
    >>> prefers_gemm_tiles("nn", 8, 16, 16, "float32")
    False
    """
    mr = vec_tile()[0]
    rows, cols = (n, m) if kind == "nt" else (m, n)
    return (GEMM_TILES == 1 and mr > 0 and str(dtype) == "float32" and m * k * n >= GEMM_TILES_MIN_MACS
            and rows >= mr and cols >= 16)


def gemm_nt_scratch(m: int, k: int, n: int) -> int:
    """Scratch elements of ``gemm_nt_tiles_parallel`` for ``a (m, k)`` and ``b (n, k)``: ``a.T``
    and ``out.T``.

    >>> gemm_nt_scratch(64, 800, 500)
    83200
    """
    return k * m + n * m

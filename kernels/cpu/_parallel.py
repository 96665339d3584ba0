"""What the kernels that run in parts share: how a part finds its share of the work, and the size
from which the compiler calls them.

Memory-bound kernels (BatchNorm, pooling, the convolution bias gradient) run their channels,
planes or filters on both cores: on a 2-core Intel Xeon of ours one core reads ~6 GB/s, two read
~12 GB/s, and these kernels ran 1.6-2x faster on two threads (``docs/performance.md``, "Two
cores for BatchNorm and max pooling"); the convolutions split their images, tiles or transforms.

Such a kernel is serial code named ``*_parts`` that takes ``part, nparts, sync`` last and does
part ``part``'s share of the work (:func:`part_range`); the host runs its ``nparts`` parts at the
same time on its own threads (:mod:`symjit.parts`), as many as :mod:`symjit.threads`' policy gives
BLAS. A kernel with phases (pad, tiles, unpad) has its parts meet at a barrier on ``sync`` between
them (:func:`~symjit.kernels.cpu.spin.barrier`); a phase one part runs alone (Winograd's BLAS
GEMMs) is an ``if part == 0`` between two barriers. A kernel's result does not depend on
``nparts``: work is cut into the same slices (at most :data:`PARTS`) whatever the count, so
``(0, 1)`` (:func:`symjit.parts.whole_call`) computes exactly what the parts do. Being serial,
these kernels compile in a third of the time numba's ``parallel=True`` forms took, and the
ahead-of-time compiler (pycc, :mod:`symjit.compiler.aot`) compiles them into entries.
"""
from __future__ import annotations

from symjit.threads import SPLIT_MIN

from . import _cache_stamp  # noqa: F401  (numba's cache keyed by the package, before the decorators)
from ._jit import njit

__all__ = ["part_range", "SPLIT_MIN", "PARTS"]

PARTS = 32
"""Slices a kernel in parts cuts its planes or items into at most (the parts take even runs of
them; the slices, not the parts, fix a partial sum's order)."""


@njit(cache=True, nogil=True)
def part_range(t, parts, n):
    """Items ``[start, stop)`` of part ``t`` when ``n`` items are cut into ``parts`` even runs."""
    return t * n // parts, (t + 1) * n // parts

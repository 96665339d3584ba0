"""Which kernels run on threads: the name suffix of a hand-written kernel's form in parts when
its input is big enough (:mod:`symjit.kernels.cpu._parallel`, run by :mod:`symjit.parts`); the
GEMMs of a convolution net put beside its convolutions as register tiles in parts
(:func:`place_gemms`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from ...threads import SPLIT_MIN
from ..writer import PARTS_SUFFIX

GEMM_OPS = ("FullyConnected", "dot")
CONV_OPS = ("Convolution", "Deconvolution")


def threaded(k, arr: str) -> str:
    """``"_parts"`` when the array named ``arr`` holds at least ``SPLIT_MIN`` elements (its kernel
    then runs its channels or planes in parts on the host's threads, :mod:`symjit.parts`, as many
    as the policy of :mod:`symjit.threads` gives BLAS), else ``""``."""
    return PARTS_SUFFIX if math.prod(k.info[arr].shape) >= SPLIT_MIN else ""


def place_gemms(g: Any) -> Any:
    """Mark every GEMM op (:data:`GEMM_OPS`) of a graph (:class:`~symjit.compiler.graph.Graph`)
    with a convolution (:data:`CONV_OPS`) ``gemm='threads'`` (the CPU target's
    :meth:`~symjit.lower.target.Target.schedule`): the convolutions run in parts on the host's
    threads, so its GEMMs should run there too rather than wake a second pool (BLAS's), whose idle
    threads spin on the cores the next convolution needs. The CPU lowering then picks
    :mod:`symjit.kernels.cpu.gemm_tiles` where the shapes allow.
    """
    if not any(op.op.name in CONV_OPS for op in g.ops):
        return g
    ops = [dataclasses.replace(op, gemm="threads") if op.op.name in GEMM_OPS else op for op in g.ops]
    return dataclasses.replace(g, ops=ops)

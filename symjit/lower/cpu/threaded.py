"""Which kernels run threaded: the name suffix of a hand-written kernel's threaded form when its
input is big enough (:mod:`symjit.kernels.cpu._parallel`), and the CPU's module writer, which
notes a kernel calling one as it is written (:attr:`~symjit.lower.writer.KernelWriter.threaded`);
the GEMMs of a convolution net put on numba's threads beside its convolutions (:func:`place_gemms`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from ...threads import SPLIT_MIN
from ..writer import ModuleWriter

SUFFIX = "_parallel"
GEMM_OPS = ("FullyConnected", "dot")
CONV_OPS = ("Convolution", "Deconvolution")


def threaded(k, arr: str) -> str:
    """``"_parallel"`` when the array named ``arr`` holds at least ``SPLIT_MIN`` elements (its
    kernel then splits channels or planes over the threads the policy of :mod:`symjit.threads`
    gives numba), else ``""``."""
    return SUFFIX if math.prod(k.info[arr].shape) >= SPLIT_MIN else ""


class CPUModuleWriter(ModuleWriter):
    """The CPU's module writer: importing a threaded building block (a ``*_parallel`` function)
    marks the module (``calls_threaded``). Every CPU kernel is written into a module of its own,
    so the mark is its kernel's (:attr:`~symjit.lower.writer.KernelWriter.threaded`): what an
    ahead-of-time module cannot hold.

    >>> w = CPUModuleWriter("@numba.njit", "numba.njit")
    >>> _ = w.imp("symjit.kernels.cpu.pool", "max_pool2d_forward"); w.calls_threaded
    False
    >>> _ = w.imp("symjit.kernels.cpu.pool", "max_pool2d_forward_parallel"); w.calls_threaded
    True
    """

    def imp(self, module: str, name: str) -> str:
        if name.endswith(SUFFIX):
            self.calls_threaded = True
        return super().imp(module, name)


def place_gemms(g: Any) -> Any:
    """Mark every GEMM op (:data:`GEMM_OPS`) of a graph (:class:`~symjit.compiler.graph.Graph`)
    with a convolution (:data:`CONV_OPS`) ``gemm='threads'`` (the CPU target's
    :meth:`~symjit.lower.target.Target.schedule`): the convolutions run on numba's threads, so its
    GEMMs should run there too rather than wake a second pool (BLAS's), whose idle threads spin on
    the cores the next convolution needs. The CPU lowering then picks
    :mod:`symjit.kernels.cpu.gemm_tiles` where the shapes allow.
    """
    if not any(op.op.name in CONV_OPS for op in g.ops):
        return g
    ops = [dataclasses.replace(op, gemm="threads") if op.op.name in GEMM_OPS else op for op in g.ops]
    return dataclasses.replace(g, ops=ops)

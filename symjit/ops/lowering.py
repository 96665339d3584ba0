"""Helpers op lowerings share (see the ``lower`` slot in registry.py).

A lowering emits Numba source through a KernelWriter; these helpers keep the common patterns
(2-D views, calling a building block from ``symjit.kernels``) short and identical everywhere.
"""
from __future__ import annotations

__all__ = ["KCPU", "call", "view2d", "rows_view", "elem_index"]

KCPU = "symjit.kernels.cpu"


def call(k, module: str, fn: str, *args: object) -> None:
    """Emit ``module.fn(*args)`` (module relative to ``symjit.kernels.cpu``)."""
    alias = k.imp(f"{KCPU}.{module}", fn)
    k.line(f"{alias}({', '.join(str(a) for a in args)})")


def view2d(k, arr: str, first: str = "0") -> str:
    """A local 2-D view of ``arr``: (shape[0], rest) when ``first='0'``, (rest, shape[-1]) when
    ``first='-1'``."""
    name = k.tmp("v")
    if first == "0":
        k.line(f"{name} = {arr}.reshape({arr}.shape[0], -1)")
    else:
        k.line(f"{name} = {arr}.reshape(-1, {arr}.shape[-1])")
    return name


def rows_view(k, arr: str) -> str:
    """A 2-D (rows, last axis) view."""
    return view2d(k, arr, "-1")


def elem_index(idx: list[str]) -> str:
    return ", ".join(idx)

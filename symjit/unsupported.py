"""MXNet 1.9.1 names symjit leaves out on purpose, each a clear error instead of a missing name.

Sparse *symbols* (``mx.sym.sparse``, ``mx.sym.cast_storage``: graphs over CSR and row_sparse
arrays) and the graph operators that only exist for sparse inputs, and quantization (int8
inference) are outside symjit's scope: symjit compiles dense float graphs (sparse NDArrays are
supported imperatively: :mod:`symjit.ndarray.sparse`). Their names exist in ``mx.sym``/``mx.nd``
(and ``.contrib``) as functions that raise :class:`MXNetError` naming the function and the reason;
``mx.sym.sparse.<name>`` raises the same error on access. The top-level modules symjit does not
have yet (``mx.np``, ``mx.npx``, also named ``mx.numpy`` and ``mx.numpy_extension``) raise such an error too
(:data:`PLANNED`, through ``symjit.__getattr__``). They can be
imported (``import mxnet.numpy``, ``from mxnet import np``), so that a program importing
them at the top still runs what does not use them: the imported module is a placeholder whose
every attribute raises the same error.

>>> import symjit as mx
>>> try:
...     mx.nd.contrib.quantize_v2(mx.nd.ones((2,)))
... except mx.MXNetError as exc:
...     print(str(exc).split(':')[0])
mx.nd.contrib.quantize_v2
"""
from __future__ import annotations

import importlib.machinery
import sys
import types
from collections.abc import Callable
from typing import Any

from .base import MXNetError

__all__ = ["SPARSE", "SPARSE_SYMBOL", "QUANTIZATION", "PLANNED", "install", "planned", "UnsupportedName",
           "PlannedModule"]

_SPARSE_WHY = ("sparse storage in symbols (CSR and row_sparse graph inputs) is not supported by symjit, "
               "which compiles dense graphs; sparse NDArrays are (mx.nd.sparse)")
_QUANT_WHY = "quantization (int8 graphs) is not supported by symjit, which compiles float graphs"

# namespace suffix ("" for mx.sym / mx.nd) -> names
SPARSE_SYMBOL: dict[str, tuple[str, ...]] = {"": ("cast_storage",)}   # mx.sym only (mx.nd has them)
SPARSE: dict[str, tuple[str, ...]] = {
    "contrib": ("SparseEmbedding", "getnnz", "edge_id", "dgl_adjacency",
                "dgl_csr_neighbor_non_uniform_sample",
                "dgl_csr_neighbor_uniform_sample", "dgl_graph_compact", "dgl_subgraph"),
    "_internal": ("_square_sum",),   # the row_sparse square sum (sum(square(x)) on dense arrays)
}
QUANTIZATION: dict[str, tuple[str, ...]] = {
    "contrib": ("quantize", "quantize_asym", "quantize_v2", "dequantize", "requantize", "calibrate_entropy",
                "quantized_act", "quantized_batch_norm", "quantized_concat", "quantized_conv",
                "quantized_elemwise_add", "quantized_elemwise_mul", "quantized_embedding",
                "quantized_flatten",
                "quantized_fully_connected", "quantized_pooling", "quantized_rnn"),
}


_CLASSIC = "symjit implements MXNet's classic symbolic API (mx.sym, mx.nd, mx.mod.Module, ...)"
# top-level modules of MXNet 1.9.1 symjit does not have yet -> what to say about them
PLANNED: dict[str, str] = {
    "np": f"{_CLASSIC}; for arrays use mx.nd (the NumPy-compatible mx.np and mx.npx are not there yet)",
    "npx": f"{_CLASSIC}; for arrays use mx.nd (the NumPy-compatible mx.np and mx.npx are not there yet)",
    "numpy": f"{_CLASSIC}; for arrays use mx.nd (mx.numpy, also named mx.np, is not there yet)",
    "numpy_extension": f"{_CLASSIC}; for arrays use mx.nd (mx.numpy_extension, also named mx.npx, is not "
                       "there yet)",
}


class UnsupportedName(MXNetError, AttributeError):
    """Raised on access to ``mx.sym.sparse.<name>`` / ``mx.nd.sparse.<name>`` and to the modules of
    :data:`PLANNED` (an AttributeError too, so ``hasattr`` stays False)."""


def planned(name: str) -> UnsupportedName:
    """The error for ``mx.<name>``, a module of :data:`PLANNED`.

    >>> str(planned("npx")).split(":")[0]
    'mx.npx is not supported by symjit yet'
    """
    return UnsupportedName(f"mx.{name} is not supported by symjit yet: {PLANNED[name]}")


class PlannedModule(types.ModuleType):
    """What ``import symjit.<name>`` gives for a module of :data:`PLANNED`: every attribute access
    raises :func:`planned`'s error.

    >>> import importlib
    >>> npx = importlib.import_module("symjit.npx")
    >>> try:
    ...     npx.relu
    ... except MXNetError as exc:
    ...     print(str(exc).split(':')[0])
    mx.npx is not supported by symjit yet
    """

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise planned(self.__name__.rpartition(".")[2])


def _install_planned(package: types.ModuleType) -> None:
    """Register a :class:`PlannedModule` as ``<package>.<name>`` for each module of :data:`PLANNED`
    that the package does not have as a real module."""
    for name in PLANNED:
        full = f"{package.__name__}.{name}"
        if full in sys.modules or importlib.machinery.PathFinder.find_spec(name, package.__path__):
            continue
        sys.modules[full] = PlannedModule(full, f"mx.{name}: not supported by symjit yet ({PLANNED[name]}).")


def _stub(where: str, why: str) -> Callable[..., Any]:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise MXNetError(f"{where}: {why}")
    fn.__name__ = fn.__qualname__ = where.rsplit(".", 1)[-1]
    fn.__doc__ = f"Not supported: {why}."
    return fn


def _sparse_namespace(name: str) -> types.ModuleType:
    module = types.ModuleType(name, f"{name}: {_SPARSE_WHY}.")

    def getattr_(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise UnsupportedName(f"{name.replace('symjit.symbol', 'mx.sym').replace('symjit.ndarray', 'mx.nd')}."
                              f"{attr}: {_SPARSE_WHY}")
    module.__getattr__ = getattr_   # type: ignore[attr-defined]
    return module


def install(sym: types.ModuleType, nd: types.ModuleType) -> None:
    """Give ``mx.sym`` and ``mx.nd`` (and their ``contrib``) the out-of-scope names as functions
    raising a clear error, and ``mx.sym`` a ``sparse`` sub-namespace that raises on every name
    (``mx.nd.sparse`` is :mod:`symjit.ndarray.sparse`); make the modules
    of :data:`PLANNED` importable placeholders."""
    for short, root in (("mx.sym", sym), ("mx.nd", nd)):
        tables = [(SPARSE, _SPARSE_WHY), (QUANTIZATION, _QUANT_WHY)]
        if root is sym:
            tables.append((SPARSE_SYMBOL, _SPARSE_WHY))
        for table, why in tables:
            for space, names in table.items():
                target = getattr(root, space) if space else root
                for n in names:
                    if not hasattr(target, n):
                        setattr(target, n, _stub(f"{short}.{space + '.' if space else ''}{n}", why))
        if not hasattr(root, "sparse"):     # mx.nd.sparse is real; mx.sym.sparse is not
            sparse = _sparse_namespace(f"{root.__name__}.sparse")
            root.sparse = sparse
            sys.modules[sparse.__name__] = sparse
    _install_planned(sys.modules[sym.__name__.rpartition(".")[0]])

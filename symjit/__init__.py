"""symjit: MXNet 1.x's symbolic API, compiled to fused Numba kernels at bind time.

>>> import symjit as mx
>>> net = mx.sym.FullyConnected(data=mx.sym.Variable('data'), name='fc1', num_hidden=10)
>>> net.infer_shape(data=(100, 100))[0]
[(100, 100), (10, 100), (10,)]
"""
import os as _os
import sys as _sys

from . import dist, logs, threads  # noqa: F401 - logs: the ``symjit`` logger's fallback handler

# In an MPI job, each worker's share of the cores (see symjit.dist); it takes effect for the
# libraries not loaded yet (Numba here; BLAS when numpy was not imported before symjit).
_os.environ.update(dist.thread_settings())
_os.environ.update(threads.idle_settings())   # before OpenMP and scipy's OpenBLAS load
from . import (  # noqa: E402
    autograd,
    cached_op,
    callback,
    executor,
    fluent,
    imperative,
    imperative_functions,
    initializer,
    io,
    kvstore,
    lazy,
    lr_scheduler,
    metric,
    model,
    module,
    monitor,
    name,
    ndarray,
    operator,
    optimizer,
    profiler,
    random,
    symbol,
    unsupported,
    viz,
)
from ._version import __symjit_version__, __version__  # noqa: F401
from .base import MXNetError
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from .ndarray import waitall
from .symbol.naming import AttrScope

sym = symbol
nd = ndarray
imperative.install_nd_functions(ndarray)   # mx.nd.FullyConnected, ...: the registry's other ops
imperative_functions.install(ndarray)      # mx.nd.split_v2, histogram, reset_arrays, Custom
cached_op.install(ndarray)                 # mx.nd.CachedOp: a symbol called on NDArrays
fluent.install(symbol.Symbol, symbol)      # x.sum(), x.reshape(...), ...: MXNet's fluent methods
fluent.install(ndarray.NDArray, ndarray)
unsupported.install(symbol, ndarray)       # sparse storage and quantization: clear errors
init = initializer
mon = monitor
kv = kvstore
mod = module
visualization = viz   # MXNet's full name of mx.viz, one module (``import symjit.visualization`` too)
_sys.modules[f"{__name__}.visualization"] = viz

# Submodules most programs never touch are imported at first use (``mx.image``, ``mx.rnn``, ...),
# which keeps ``import symjit`` short; ``from symjit import rnn`` and ``import symjit.rnn`` work as usual.
_LAZY = ("attribute", "contrib", "engine", "gluon", "image", "libinfo", "onnx", "recordio", "rnn", "runtime",
         "test_utils", "util")
# MXNet's top-level names of its ``mx.util`` functions (NumPy semantics: never on in symjit)
_UTIL = ("is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array", "np_array",
         "use_np_array", "use_np")


def __getattr__(name: str):
    if name == "img":                 # MXNet's short name of mx.image
        name = "image"
    if name in _LAZY:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name in _UTIL:
        from . import util
        return getattr(util, name)
    if name in unsupported.PLANNED:   # mx.np, mx.npx: a clear error
        raise unsupported.planned(name)
    raise AttributeError(f"module 'symjit' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY) | set(_UTIL))


__all__ = ["MXNetError", "Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus",
           "symbol", "sym", "name", "AttrScope",
           "ndarray", "nd", "random", "waitall", "io", "initializer", "init", "lr_scheduler",
           "callback", "metric", "monitor", "mon", "operator", "optimizer", "kvstore", "kv", "viz",
           "model", "module", "mod", "imperative", "executor", "lazy",
           "autograd", "test_utils", "dist", "recordio", "image", "profiler",
           "rnn", "onnx", "gluon", "visualization", "runtime", "libinfo", "engine", "util"]

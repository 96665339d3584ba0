"""``mx.runtime``: which of MXNet's build features symjit has, under MXNet 1.9.1's names.

MXNet reports what its native library was compiled with; symjit has no native library, so each
feature says what symjit really does in this process:

- ``CUDA``: numba-cuda is installed and a GPU is usable, or numba's CUDA simulator is on
  (``NUMBA_ENABLE_CUDASIM=1``): ``mx.gpu(0)`` works exactly when this is True.
- ``CPU_SSE`` ... ``CPU_AVX2``, ``SSE``: the processor has the instructions. Kernels are compiled
  by LLVM for the processor they run on (numba's default), so what it has is used.
- ``OPENMP``: numba's OpenMP threading layer runs the threaded kernels (the layer numba chose, or
  before its first parallel kernel the layer it can choose).
- ``BLAS_OPEN``/``BLAS_MKL``/``BLAS_ATLAS``/``BLAS_APPLE``: the BLAS of scipy, whose GEMM the
  compiled kernels call.
- ``OPENCV``: OpenCV is installed (``mx.image``, ``ImageRecordIter``); ``DIST_KVSTORE``: mpi4py is
  installed (``dist_sync``/``dist_async``); ``PROFILER``: always (``mx.profiler``).
- Everything else is False: cuDNN, NCCL, TensorRT, oneDNN (``MKLDNN``), LAPACK (linear algebra
  runs symjit's own kernels), ``CUDA_RTC`` (no ``mx.rtc``), ``F16C`` (float16 is converted by
  numpy), jemalloc, Caffe, C++14, 64-bit tensor sizes (not verified), the signal handler, debug
  builds and TVM operators.

>>> import symjit as mx
>>> features = mx.runtime.Features()
>>> features.is_enabled('MKLDNN'), features['PROFILER'].enabled
(False, True)
>>> mx.runtime.Features().is_enabled('NO_SUCH_FEATURE')  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
symjit.runtime.FeatureError: runtime.Features: feature 'NO_SUCH_FEATURE' is unknown; known features: CUDA, ...
"""
from __future__ import annotations

import importlib.util
import os
import sys
from collections import OrderedDict

from .base import MXNetError
from .context import num_gpus

__all__ = ["Feature", "Features", "FeatureError", "feature_list", "FEATURE_NAMES"]

# MXNet 1.9.1's feature names, in its order
FEATURE_NAMES = (
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT",
    "CPU_SSE", "CPU_SSE2", "CPU_SSE3", "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2",
    "OPENMP", "SSE", "F16C", "JEMALLOC",
    "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV",
    "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG",
    "TVM_OP",
)
# LLVM's names of the processor features behind the CPU_* entries
_CPU_FLAGS = {"CPU_SSE": "sse", "CPU_SSE2": "sse2", "CPU_SSE3": "sse3", "CPU_SSE4_1": "sse4.1",
              "CPU_SSE4_2": "sse4.2", "CPU_SSE4A": "sse4a", "CPU_AVX": "avx", "CPU_AVX2": "avx2",
              "SSE": "sse"}
# a word in scipy's BLAS name -> the entry it enables
_BLAS_KINDS = {"openblas": "BLAS_OPEN", "mkl": "BLAS_MKL", "atlas": "BLAS_ATLAS", "accelerate": "BLAS_APPLE"}


class FeatureError(MXNetError, RuntimeError):
    """A feature name MXNet does not know (a RuntimeError, as MXNet raises)."""


class Feature:
    """One feature: its ``name`` and whether it is ``enabled``.

    >>> Feature('CUDA', False)
    ✖ CUDA
    """

    def __init__(self, name: str, enabled: bool):
        self._name, self._enabled = name, bool(enabled)

    @property
    def name(self) -> str:
        """The feature's name (MXNet's spelling, upper case)."""
        return self._name

    @property
    def enabled(self) -> bool:
        """Whether symjit has the feature in this process."""
        return self._enabled

    def __repr__(self) -> str:
        return f"{'✔' if self._enabled else '✖'} {self._name}"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _cpu_flags() -> set[str]:
    """The processor features LLVM (and so numba) compiles for."""
    try:
        from llvmlite import binding
        return {name for name, on in binding.get_host_cpu_features().items() if on}
    except Exception:  # noqa: BLE001 - an unknown processor has no feature to report
        return set()


def _blas_name() -> str:
    try:
        from scipy.__config__ import CONFIG
        return str(CONFIG["Build Dependencies"]["blas"]["name"]).lower()
    except (ImportError, KeyError, TypeError, AttributeError):
        return ""


def _openmp() -> bool:
    """Whether numba's threaded kernels run (or can run) on its OpenMP layer."""
    numba = sys.modules.get("numba")
    if numba is not None:
        try:
            return numba.threading_layer() == "omp"
        except ValueError:   # no parallel kernel has run yet: the layer is not chosen
            pass
    layer = os.environ.get("NUMBA_THREADING_LAYER", "default").lower()
    return layer in ("default", "omp", "safe", "forksafe") and _installed("numba.np.ufunc.omppool")


def _detect() -> dict[str, bool]:
    flags = _cpu_flags()
    found = dict.fromkeys(FEATURE_NAMES, False)
    found.update({name: flag in flags for name, flag in _CPU_FLAGS.items()})
    blas = _blas_name()
    found.update({entry: word in blas for word, entry in _BLAS_KINDS.items()})
    found.update(CUDA=num_gpus() > 0, OPENMP=_openmp(), OPENCV=_installed("cv2"),
                 DIST_KVSTORE=_installed("mpi4py"), PROFILER=True)
    return found


def feature_list() -> list[Feature]:
    """Every feature, in MXNet's order, with what symjit has in this process.

    >>> [f.name for f in feature_list()][:3]
    ['CUDA', 'CUDNN', 'NCCL']
    """
    return [Feature(name, on) for name, on in _detect().items()]


class Features(OrderedDict):
    """The features by name (``Features()['CUDA'].enabled``), as MXNet's ``mx.runtime.Features``.

    >>> 'OPENCV' in Features() and 'CUDA' in Features()
    True
    """

    def __init__(self) -> None:
        super().__init__((f.name, f) for f in feature_list())

    def __repr__(self) -> str:
        return repr(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether a feature is enabled; an unknown name (case does not matter) raises
        :class:`FeatureError`, a RuntimeError, as MXNet does.

        >>> Features().is_enabled('cudnn')
        False
        """
        name = str(feature_name).upper()
        if name not in self:
            raise FeatureError(f"runtime.Features: feature {name!r} is unknown; known features: "
                               f"{', '.join(self)}")
        return self[name].enabled

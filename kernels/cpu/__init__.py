"""Numba CPU kernels: GEMM epilogues, convolution, pooling, softmax, normalisation, reductions.

Every kernel is a ``numba.njit(cache=True, nogil=True)`` function that writes into preallocated,
C-contiguous float32/float64 arrays and trusts its caller for shapes (Numba does no bounds
checks); each module has ``check_*`` functions that validate shapes and dtypes first.
Import the modules directly (``from symjit.kernels.cpu import conv``); this package imports none.
"""

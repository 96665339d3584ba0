"""Hand-written compute kernels that generated code calls (installed as ``symjit.kernels``).

``symjit.kernels.cpu`` holds Numba CPU kernels; ``symjit.kernels.cuda`` is reserved for GPU ones.
Each kernel writes into output (and scratch) arrays that its caller allocates and validates.
"""

"""Hand-written compute kernels that generated code calls (installed as ``symjit.kernels``).

``symjit.kernels.cpu`` holds the Numba CPU kernels, ``symjit.kernels.cuda`` the CUDA ones (launch
shapes, block reductions, the fill and copy kernels, the data-check error flag, optimizer kernels).
Each kernel writes into output (and scratch) arrays that its caller allocates and validates.
"""

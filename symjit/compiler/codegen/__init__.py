"""Code generators: CPU (numba.njit) and CUDA (numba.cuda.jit) kernels per fused group."""

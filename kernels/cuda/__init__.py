"""CUDA kernels (reserved: symjit currently compiles for the CPU only)."""

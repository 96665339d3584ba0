"""The compiler: Symbol -> Graph -> autodiff -> fusion -> memory plan -> Numba kernels."""

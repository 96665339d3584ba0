"""GPU code runs on numba's CUDA simulator when no NVIDIA device is present (CI sets
NUMBA_ENABLE_CUDASIM=1 itself); this must happen before numba is first imported."""
import os

if "NUMBA_ENABLE_CUDASIM" not in os.environ and not os.path.exists("/dev/nvidia0"):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

# Ahead-of-time modules are built only by the tests of symjit.compiler.aot (which set SYMJIT_AOT
# themselves): a test process binds thousands of programs, none of which should start a builder.
os.environ.setdefault("SYMJIT_AOT", "off")

"""Collection rules for the whole repository (pytest reads this before tests/conftest.py).

``kernels/`` is the package ``symjit.kernels`` (the build maps it there). Collected as a directory,
pytest would import its modules a second time under the names ``kernels.*``; numba keeps one disk
cache per source file, so entries that copy wrote (environments naming ``kernels.cpu.conv``) could
not be loaded by ``symjit.kernels.cpu.conv`` in a later process. Their doctests run on the modules
symjit imports instead (``tests/test_kernel_doctests.py``).
"""
from __future__ import annotations

from pathlib import Path

_KERNELS = Path(__file__).resolve().parent / "kernels"


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    if collection_path == _KERNELS or _KERNELS in collection_path.parents:
        return True
    return None

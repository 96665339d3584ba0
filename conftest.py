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


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--exhaustive", action="store_true", default=False,
        help="also run the tests marked 'exhaustive' (every op case on every target, fused and unfused, "
             "and the slowest end-to-end runs); without it the default tier runs, which covers every "
             "module in a few minutes. CI runs with it.")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "exhaustive: part of the full matrix only; deselected unless --exhaustive is given")


def pytest_collection_modifyitems(config, items) -> None:
    """Without ``--exhaustive``, tests marked ``exhaustive`` are deselected (not skipped: they are
    not part of the default tier at all)."""
    if config.getoption("--exhaustive"):
        return
    kept = [item for item in items if item.get_closest_marker("exhaustive") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("exhaustive")])
        items[:] = kept

"""Modules found in a package instead of listed by hand: the operator families
(:mod:`symjit.ops._families`) and the lowering rule modules (:mod:`symjit.lower`) are imported this
way, so a new family or rule module needs no list entry.

>>> import symjit.ops
>>> 'nn' in submodules(symjit.ops.__name__, symjit.ops.__path__)
True
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable

__all__ = ["submodules", "import_submodules"]


def submodules(package: str, path: Iterable[str], skip: Iterable[str] = (),
               skip_suffixes: tuple[str, ...] = ()) -> list[str]:
    """The names of the modules and subpackages directly in ``package`` (its ``__path__`` is
    ``path``), in name order: all but private ones (``_name``), those in ``skip`` and those ending
    with one of ``skip_suffixes``."""
    skip = set(skip)
    return sorted(m.name for m in pkgutil.iter_modules(list(path))
                  if not m.name.startswith("_") and m.name not in skip
                  and not m.name.endswith(skip_suffixes or ("\0",)))


def import_submodules(package: str, path: Iterable[str], skip: Iterable[str] = (),
                      skip_suffixes: tuple[str, ...] = ()) -> list[str]:
    """Import :func:`submodules` of ``package`` in name order; returns their names."""
    names = submodules(package, path, skip, skip_suffixes)
    for name in names:
        importlib.import_module(f"{package}.{name}")
    return names

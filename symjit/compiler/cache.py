"""On-disk kernel cache: generated modules are real files, so numba's ``cache=True`` works.

The key is a hash of the generated source, the target, the versions of symjit, numba and numpy, and
a fingerprint of symjit's own code (every ``.py`` file of ``symjit`` and ``symjit.kernels``:
generated modules call the scalar bodies and hand-written kernels, whose compiled code numba bakes
into the cached entry, so editing a kernel must not reuse stale machine code);
each module is written once to ``<cache_dir>/kernels/symjit_gen_<target>_<key>.py`` (atomically: a temporary
file then ``os.replace``) and imported under a name derived from the key, and numba keeps its
compiled code in ``__pycache__`` beside it. Kernels are shape-generic, so the same source (and the
same cached machine code) serves every batch size. Two processes that compile the same key at
once both write identical text; the later replace only makes numba recompile once. A cache entry
numba cannot load (corrupt or stale) is purged and compiled again: :func:`purge` removes it.

On the CPU each distinct kernel is a module of its own (its key is its canonical source), which the
program's module imports: a kernel compiled for one program is loaded from the cache by every
other program and process that uses the same kernel form (another bucket's, the inference
program's, another net's), and only the small program functions are compiled anew.

With ``Config.cache`` off, the source is executed in a fresh module (numba then compiles in
memory; nothing is written).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

from .. import _version, jitext
from ..base import source_digest, write_atomic
from ..config import Config

__all__ = ["source_key", "module_name", "load_module", "load_program", "purge", "purge_program",
           "cache_info", "clear_cache"]


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the source of every module of ``symjit`` and ``symjit.kernels`` (~5 ms, once)."""
    loaded = sys.modules.get("symjit.kernels")   # its __path__ once imported, else found unimported
    kernels = loaded.__path__ if loaded is not None else \
        importlib.util.find_spec("symjit.kernels").submodule_search_locations
    return source_digest((os.path.dirname(os.path.dirname(__file__)), *kernels))


@functools.lru_cache(maxsize=1)
def _numba_version() -> str:
    """numba's version, without importing numba: from the ``_version.py`` its wheels ship (a
    regular expression over one small file), else its installed metadata (``importlib.metadata``,
    whose own import costs 10-50 ms)."""
    spec = importlib.util.find_spec("numba")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            with open(os.path.join(folder, "_version.py"), encoding="utf-8") as f:
                found = re.search(r'"version":\s*"([^"]+)"', f.read())
        except OSError:
            continue
        if found:
            return found.group(1)
    from importlib.metadata import version
    return version("numba")


def source_key(source: str, target: str) -> str:
    """The cache key of a generated module."""
    h = hashlib.sha256()
    version = _version.__symjit_version__
    for part in (source, target, version, _numba_version(), np.__version__, code_fingerprint()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _kernel_dir(cfg: Config) -> Path:
    path = Path(cfg.cache_dir) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def module_name(source: str, target: str) -> str:
    """The name a generated module is imported under (and its file's stem)."""
    return f"symjit_gen_{target}_{source_key(source, target)}"


def load_program(program: Any, target: Any, cfg: Config) -> types.ModuleType:
    """Import a generated program of ``target`` (its :class:`~symjit.lower.target.Target`): its
    kernel modules first (which its module imports by name), then its module."""
    for source in program.kernel_modules.values():
        load_module(source, target.name, cfg)
    return load_module(program.module_source, target.name, cfg)


def purge_program(program: Any, module: types.ModuleType) -> None:
    """:func:`purge` a program's module and its kernel modules (one of them may be the entry
    numba cannot load); the next load compiles them again."""
    for name in program.kernel_modules:
        if name in sys.modules:
            purge(sys.modules[name])
    purge(module)


def load_module(source: str, target: str, cfg: Config, attempt: int = 0) -> types.ModuleType:
    """Import the generated ``source`` (through the disk cache when enabled)."""
    name = module_name(source, target) + (f"_r{attempt}" if attempt else "")
    if name in sys.modules:
        return sys.modules[name]
    jitext.install()     # the helpers generated code calls, registered with numba before it compiles
    if not cfg.cache:
        module = types.ModuleType(name)
        module.__file__ = f"<symjit generated {name}>"
        exec(compile(source, module.__file__, "exec"), module.__dict__)  # our own generated code
        sys.modules[name] = module
        return module
    path = _kernel_dir(cfg) / f"{name}.py"
    if not path.exists() or path.read_text() != source:
        write_atomic(path, source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _entries(cfg: Config) -> list[Path]:
    """Every file of the cache that symjit wrote: generated modules, numba's files of them, and the
    ahead-of-time modules with their records (``aot/``, see :mod:`symjit.compiler.aot`)."""
    files: list[Path] = []
    root = Path(cfg.cache_dir) / "kernels"
    if root.is_dir():
        files += list(root.glob("symjit_gen_*.py"))
        pycache = root / "__pycache__"
        files += list(pycache.glob("symjit_gen_*")) if pycache.is_dir() else []
    aot = Path(cfg.cache_dir) / "aot"
    if aot.is_dir():
        files += list(aot.glob("symjit_aot_*")) + list(aot.glob("kernels-*.json"))
        files += list(aot.glob("mixins-*/*"))   # pycc's C helpers (symjit.compiler.aot_build)
    return files


def cache_info(cfg: Config) -> dict:
    """What the kernel cache holds: its directory, the generated modules, numba's compiled
    entries (one index file per kernel function compiled from them), the ahead-of-time modules
    and the bytes of all of it.

    >>> import tempfile
    >>> info = cache_info(Config(cache_dir=tempfile.mkdtemp()))
    >>> info["modules"], info["aot_modules"]
    (0, 0)
    """
    files = _entries(cfg)
    return {"directory": str(Path(cfg.cache_dir) / "kernels"),
            "modules": sum(f.suffix == ".py" for f in files),
            "compiled_functions": sum(f.suffix == ".nbi" for f in files),
            "aot_modules": sum(f.name.startswith("symjit_aot_") and f.suffix == ".json" for f in files),
            "bytes": sum(f.stat().st_size for f in files if f.is_file())}


def clear_cache(cfg: Config) -> int:
    """Delete every cache file symjit wrote (nothing else in the directory); return how many.
    Processes that have a module loaded keep using it; the next bind compiles afresh."""
    files = _entries(cfg)
    for f in files:
        f.unlink(missing_ok=True)
    for d in {f.parent for f in files if f.parent.name.startswith("mixins-")}:
        d.rmdir()
    return len(files)


def purge(module: types.ModuleType) -> None:
    """Delete a module's cache entry (source and numba's files) and forget the module."""
    sys.modules.pop(module.__name__, None)
    src = getattr(module, "__file__", "") or ""
    if not os.path.isfile(src):
        return
    stem = Path(src).stem
    pycache = Path(src).parent / "__pycache__"
    if pycache.is_dir():
        for f in pycache.glob(f"{stem}*"):
            f.unlink(missing_ok=True)
    Path(src).unlink(missing_ok=True)

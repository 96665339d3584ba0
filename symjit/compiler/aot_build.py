"""The ahead-of-time builder process: compiles noted entries (:mod:`symjit.compiler.aot`) with
numba's ahead-of-time compiler (``numba.pycc``).

pycc links into every extension module a set of C helpers (its module initialisation, numba's
helper library, the NRT and the typed containers) that it compiles with the C compiler each time:
~3-5 s of a core, most of a small entry's build. They depend only on numba, numpy, Python and the
C compiler, not on what the entry exports, except for one symbol named after the module (the
initialisation function the generated code calls). So the builder compiles them once, under one
fixed module name (:data:`MIXIN_NAME`) with hidden visibility, keeps the objects in the cache
(``<cache>/aot/mixins-<key>/``, the key hashing what they depend on) and links every later entry
against them, telling pycc to call that fixed initialisation function; an entry's build is then
numba's code generation of its wrappers and one link.

``python -c "from symjit.compiler.aot_build import main; ..." SPEC... [--follow PARENT FD |
--background]`` builds each spec in turn (one numba import for all), writing each entry's record
(``<name>.json``: the shared object's hash, the functions, the seconds it took; or why it failed)
and removing its spec and its lock.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..base import write_atomic
from ..config import Config
from ..lower.target import all_targets
from .aot import BACKGROUND_NICE, RANDOM_STATE, _aot_dir, _sha256, _so_path, entry_name, exports
from .lifeline import follow

__all__ = ["build", "main", "mixin_objects"]

MIXIN_NAME = "symjit_aot_mixin"   # the module name the shared C helpers are compiled under


def _numba_type(t: list) -> Any:
    from numba.core import types as nt
    from numba.np.numpy_support import from_dtype
    if t[0] == "array":
        _, dtype, ndim, layout, writeable, aligned = t
        return nt.Array(from_dtype(np.dtype(dtype)), ndim, layout, readonly=not writeable, aligned=aligned)
    if t[0] == "tuple":
        return nt.UniTuple(getattr(nt, t[2]), t[1])
    return getattr(nt, t[1])


def _wrapper(export: str, fn: Any, n: int) -> Callable:
    """``def export(a0, ..): fn(a0, ..)``: the exported function calls the module's compiled
    function, which keeps its own numba options."""
    params = ", ".join(f"a{i}" for i in range(n))
    ns = {"_fn": fn}
    exec(f"def {export}({params}):\n    _fn({params})\n", ns)   # our own generated code
    return ns[export]


def _release_gil() -> None:
    """Make pycc's wrappers release the GIL around the compiled call, as numba's ``nogil=True``
    dispatchers do (a forward pass must not stop the image pipeline's threads). pycc has no option
    for it: its compile flags are numba's ``Flags``, and ``release_gil`` is the flag ``nogil`` sets.
    Only this builder process is changed; if a numba release moves the name, the build fails and
    records why."""
    from numba.pycc import compiler as pycc_compiler

    class NoGilFlags(pycc_compiler.Flags):
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.release_gil = True
    if not hasattr(pycc_compiler.Flags(), "release_gil"):
        raise RuntimeError("numba's compile flags have no release_gil")
    pycc_compiler.Flags = NoGilFlags


def _host_features() -> None:
    """Compile for the instruction set this processor reports, as numba's jit does. pycc's codegen
    takes a CPU name and no feature list, so ``target_cpu = "host"`` alone means every feature of
    the model LLVM names, including those a virtual machine hides: AVX-512 on a Zen 4 whose
    hypervisor masks it, where the entry would die on its first vector instruction. Only this
    builder process is changed; if a numba release moves the names, the build fails and records
    why."""
    from numba.core import codegen

    aot = codegen.AOTCPUCodegen
    if not (hasattr(aot, "_customize_tm_features") and hasattr(aot, "_get_host_cpu_features")):
        raise RuntimeError("numba's AOT codegen has no _customize_tm_features/_get_host_cpu_features")

    def features(self: Any) -> str:
        return self._get_host_cpu_features() if self._cpu_name == "host" else ""
    aot._customize_tm_features = features


def _export_random_state(cc: Any) -> None:
    """Export :data:`~symjit.compiler.aot.RANDOM_STATE`: the address of the calling thread's state
    of the entry's own copy of numba's generator (the one its kernels' ``np.random`` draws use),
    so the host can hand the entry the samplers' stream before a call and take it back after."""
    from llvmlite import ir
    from numba.core import types as nt
    from numba.cpython.randomimpl import get_state_ptr
    from numba.extending import intrinsic

    @intrinsic
    def state_address(typingctx: Any) -> tuple:
        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return builder.ptrtoint(get_state_ptr(context, builder, "np"), ir.IntType(64))
        return nt.uint64(), codegen

    def random_state() -> int:
        return state_address()
    cc.export(RANDOM_STATE, nt.uint64())(random_state)


def _cc_class() -> type:
    """pycc's ``CC`` linking the cached C helpers (:func:`mixin_objects`) instead of compiling its
    own, and calling their initialisation function. Relies on two of pycc's private names
    (``_init_function``, ``_compile_mixins``); if a numba release changes them, the build fails and
    records why."""
    from numba.pycc import CC

    class CachedMixinsCC(CC):
        def __init__(self, name: str, mixins: list[str]):
            super().__init__(name)
            if not hasattr(self, "_init_function") or not hasattr(self, "_compile_mixins"):
                raise RuntimeError("numba's pycc has no _init_function/_compile_mixins")
            self._init_function = f"pycc_init_{MIXIN_NAME}"
            self._mixins = mixins

        def _compile_mixins(self, build_dir: str) -> list[str]:
            return list(self._mixins)
    return CachedMixinsCC


def _mixin_key(cc: Any) -> str:
    """A hash of what the C helpers' objects depend on: their sources, the macros, the compiler's
    command line, numba's, numpy's and Python's versions."""
    from numba import __version__ as numba_version
    h = hashlib.sha256()
    for part in (numba_version, np.__version__, sys.version, importlib.machinery.EXTENSION_SUFFIXES[0],
                 json.dumps(cc._get_mixin_defines()), json.dumps(cc._toolchain._compiler.compiler_so),
                 json.dumps(cc._get_extra_cflags())):
        h.update(str(part).encode() + b"\0")
    for src in cc._get_mixin_sources():
        h.update(Path(src).read_bytes())
    return h.hexdigest()[:20]


def mixin_objects(cfg: Config) -> list[str]:
    """The C helpers' object files for this numba, numpy, Python and C compiler: from the cache, or
    compiled now (under :data:`MIXIN_NAME`, symbols hidden) and kept there. Two builders compiling
    them at once each write a directory of their own; the first renamed into place wins."""
    from numba.pycc import CC

    class MixinCC(CC):
        def _get_extra_cflags(self) -> list[str]:
            return [*super()._get_extra_cflags(), "-fvisibility=hidden"]
    cc = MixinCC(MIXIN_NAME)
    final = _aot_dir(cfg) / f"mixins-{_mixin_key(cc)}"
    listed = final / "objects.json"     # written last: the directory is complete
    if not listed.is_file():
        shutil.rmtree(final, ignore_errors=True)    # incomplete (emptied by `symjit cache clear`)
        tmp = Path(tempfile.mkdtemp(dir=_aot_dir(cfg), prefix=".mixins-"))
        try:
            names = []
            for i, obj in enumerate(cc._compile_mixins(str(tmp / "build"))):
                names.append(f"{i:02d}_{Path(obj).name}")
                os.replace(obj, tmp / names[-1])
            shutil.rmtree(tmp / "build")
            (tmp / "objects.json").write_text(json.dumps(names))
            os.rename(tmp, final)
        except OSError:
            if not listed.is_file():
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return [str(final / n) for n in json.loads(listed.read_text())]   # ours: data only


def build(spec: dict) -> Path:
    """Compile ``spec``'s units into its entry (run by the builder process); returns its shared
    object's path."""
    from numba.core import types as nt

    from .. import jitext
    all_targets()   # symjit's targets register their own numba helpers (Target.install) too
    jitext.install()
    _release_gil()
    _host_features()
    cfg = Config.from_env().replace(cache_dir=Path(spec["cache_dir"]))
    kernel_dir = str(Path(cfg.cache_dir) / "kernels")
    if kernel_dir not in sys.path:
        sys.path.insert(0, kernel_dir)   # generated modules import their kernel modules by name
    name = spec["name"]
    if entry_name([tuple(u) for u in spec["units"]]) != name:   # another symjit, numba or processor
        raise RuntimeError(f"entry {name} was requested by other code than this builder's "
                           f"({Path(__file__).resolve().parents[1]}); not built")
    cc = _cc_class()(name, mixin_objects(cfg))
    cc.verbose = False
    cc.target_cpu = "host"   # the processor's instruction set, as numba's jit (pycc's default: generic)
    names = exports([tuple(u) for u in spec["units"]])
    for export, module, attr, sig in spec["units"]:
        if names[export] != export:   # the same function and types as an earlier unit: its export
            continue
        fn = getattr(importlib.import_module(module), attr)
        cc.export(export, nt.void(*[_numba_type(t) for t in sig]))(_wrapper(export, fn, len(sig)))
    _export_random_state(cc)
    with tempfile.TemporaryDirectory(dir=_aot_dir(cfg)) as tmp:
        cc.output_dir = tmp
        cc.compile()
        built = Path(tmp) / _so_path(cfg, name).name
        os.replace(built, _so_path(cfg, name))
    return _so_path(cfg, name)


def _build_one(spec_path: Path) -> bool:
    """Build one spec, recording the entry or why it failed; the spec and the lock are removed."""
    start = time.perf_counter()
    try:
        spec = json.loads(spec_path.read_text())   # written by symjit: data only
    except (OSError, ValueError):
        return False
    cfg = Config(cache_dir=Path(spec["cache_dir"]))
    name = spec["name"]
    meta = _aot_dir(cfg) / f"{name}.json"
    try:
        so = build(spec)
        write_atomic(meta, json.dumps({"sha256": _sha256(so), "units": len(spec["units"]),
                                       "seconds": round(time.perf_counter() - start, 2)}))
        return True
    except Exception as exc:   # recorded for every later process (not Ctrl-C)
        reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        write_atomic(meta, json.dumps({"error": f"the builder failed ({reason[:300]})"}))
        traceback.print_exc()   # into the entry's log
        return False
    finally:
        (_aot_dir(cfg) / f"{name}.lock").unlink(missing_ok=True)
        spec_path.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    """The builder: ``SPEC... [--follow PARENT FD | --background]``; see
    :func:`symjit.compiler.aot.request`. Returns 1 when an entry failed."""
    options = next((i for i, a in enumerate(argv) if a.startswith("--")), len(argv))
    specs, how = argv[:options], argv[options:]
    if how[:1] == ["--follow"]:
        follow(int(how[1]), int(how[2]))
    elif how[:1] == ["--background"]:
        os.nice(BACKGROUND_NICE)
    # numba's compiler probe (numba.pycc.platform._gentmpfile) leaves a folder in the temporary
    # directory at each build: the builder's temporary files go into one removed when it is done
    with tempfile.TemporaryDirectory(prefix="symjit-builder-") as tmp:
        tempfile.tempdir = tmp
        try:
            ok = [_build_one(Path(s)) for s in specs]
        finally:
            tempfile.tempdir = None
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The on-disk kernel cache: disabled, warm hits, corrupt entries, concurrent compiles."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import symjit as mx
from symjit.config import Config

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, numpy as np, symjit as mx
x = mx.sym.Variable('x')
net = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=3, name='fc'), act_type='tanh') * 2.0
ex = net.simple_bind(mx.cpu(), x=(4, 5))
ex.arg_dict['x'][:] = 1.0
ex.arg_dict['fc_weight'][:] = 0.5
out = ex.forward(is_train=True)[0].asnumpy()
ex.backward(mx.nd.ones((4, 3)))
prog = ex._programs['train']
names = set(prog.program.kernel_of.values()) | {s.name for segs in prog.program.segments.values()
                                                for s in segs if s.kind == 'njit'}
stats = {p: getattr(prog.module, p).stats for p in names}   # kernels and program functions
print(json.dumps({'out': float(out.sum()), 'hits': sum(len(s.cache_hits) for s in stats.values()),
                  'misses': sum(len(s.cache_misses) for s in stats.values())}))
"""


def _run(cache_dir: Path, extra_env: dict | None = None) -> subprocess.Popen:
    """The script in a new process, compiling in that process only (it counts numba's misses)."""
    env = dict(os.environ, SYMJIT_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT), SYMJIT_COMPILE_WORKERS="1")
    env.update(extra_env or {})
    return subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


EXPECTED = 4 * 3 * 2 * float(np.tanh(2.5))


def test_warm_cache_hits_and_corrupt_entries_recompile(tmp_path):
    first = _result(_run(tmp_path))
    assert abs(first["out"] - EXPECTED) < 1e-4 and first["misses"] >= 1
    second = _result(_run(tmp_path))
    assert second["hits"] >= 2 and second["misses"] == 0
    caches = list((tmp_path / "kernels" / "__pycache__").glob("*.nb*"))
    assert caches, "numba wrote no cache files"
    for f in caches:
        f.write_bytes(b"\x00garbage" * 7)
    third = _result(_run(tmp_path))
    assert abs(third["out"] - EXPECTED) < 1e-4
    for src in (tmp_path / "kernels").glob("symjit_gen_*.py"):   # a stale/edited module is rewritten
        src.write_text("raise RuntimeError('stale')\n")
    fourth = _result(_run(tmp_path))
    assert abs(fourth["out"] - EXPECTED) < 1e-4


def test_two_processes_compiling_at_once(tmp_path):
    procs = [_run(tmp_path) for _ in range(2)]
    for p in procs:
        assert abs(_result(p)["out"] - EXPECTED) < 1e-4


def test_cache_disabled_writes_nothing(tmp_path):
    res = _result(_run(tmp_path, {"SYMJIT_CACHE": "0"}))
    assert abs(res["out"] - EXPECTED) < 1e-4
    assert not (tmp_path / "kernels").exists()


def test_config_reads_environment_in_one_place():
    cfg = Config.from_env({"SYMJIT_CACHE_DIR": "/tmp/x", "SYMJIT_CACHE": "0", "SYMJIT_FUSION": "0"})
    assert (str(cfg.cache_dir), cfg.cache, cfg.fusion) == ("/tmp/x", False, False)
    try:
        Config.from_env({"SYMJIT_CACHE": "maybe"})
    except mx.MXNetError as exc:
        assert "SYMJIT_CACHE" in str(exc)
    else:
        raise AssertionError("an invalid setting must raise")


def test_editing_a_kernel_changes_the_cache_key(tmp_path, monkeypatch):
    """Cached entries embed the compiled kernels they call: a kernel edit must give a new key."""
    import shutil

    import symjit.kernels

    from symjit.compiler import cache

    copy = tmp_path / "kernels"
    shutil.copytree(symjit.kernels.__path__[0], copy)
    monkeypatch.setattr(symjit.kernels, "__path__", [str(copy)])
    cache.code_fingerprint.cache_clear()
    before = cache.source_key("x = 1\n", "cpu")
    assert cache.source_key("x = 1\n", "cpu") == before
    pool = copy / "cpu" / "pool.py"
    pool.write_text(pool.read_text() + "\n# edited\n")
    cache.code_fingerprint.cache_clear()
    assert cache.source_key("x = 1\n", "cpu") != before
    monkeypatch.undo()
    cache.code_fingerprint.cache_clear()


def test_a_kernel_compiled_for_one_graph_serves_another_graph_and_process(tmp_path, monkeypatch):
    """Distinct kernels are modules of their own keyed by their source: a second net using the same
    FullyConnected+relu kernel imports the same compiled dispatcher (no compile), and a new process
    loads every kernel from the disk cache instead of compiling it."""
    monkeypatch.setenv("SYMJIT_CACHE_DIR", str(tmp_path))
    x = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=7, name="fa"), act_type="relu")
    a = mx.sym.FullyConnected(h, num_hidden=3, name="fo")
    hb = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=5, name="fb"), act_type="relu")
    b = mx.sym.softmax(hb, name="sm")   # fb's relu in place over its GEMM's output, as fa's
    ka = a.simple_bind(mx.cpu(), data=(3, 4), grad_req="null")._programs["infer"]

    def misses(prog):
        return {n: sum(sys.modules[n].KERNEL.stats.cache_misses.values())
                for n in prog.program.kernel_modules}
    before = misses(ka)
    kb = b.simple_bind(mx.cpu(), data=(6, 4), grad_req="null")._programs["infer"]
    common = set(ka.program.kernel_modules) & set(kb.program.kernel_modules)
    assert common, "the FullyConnected+relu kernel should be one module for both graphs"
    assert {n: misses(kb)[n] for n in common} == {n: before[n] for n in common}   # nothing compiled
    code = """
import sys, symjit as mx
x = mx.sym.Variable('data')
h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=7, name='fa'), act_type='relu')
p = mx.sym.FullyConnected(h, num_hidden=3, name='fo').simple_bind(mx.cpu(), data=(2, 4), grad_req='null')
p = p._programs['infer']
stats = [sys.modules[n].KERNEL.stats for n in p.program.kernel_modules]
fwd = p.module.forward.stats
print(max(sum(s.cache_misses.values()) for s in stats), sum(fwd.cache_hits.values()),
      sum(fwd.cache_misses.values()))
"""
    # twice in new processes: this process may have imported the kernel's module from another cache
    # directory (an earlier test), so the first one fills ``tmp_path``, the second loads from it
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "SYMJIT_CACHE_DIR": str(tmp_path),
                                  "SYMJIT_PROGRAM_RUNS": "0"}).stdout.split()   # compiled at the bind
    assert out == ["0", "1", "0"], out   # no kernel compiled; the program loaded from the cache


PARALLEL = """
import json, sys
import numpy as np
import symjit as mx
from symjit.compiler import workers
counts = []
serial = workers.precompile
workers.precompile = lambda *a, **k: counts.append(serial(*a, **k)) or counts[-1]
x = mx.sym.Variable('data')
c = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name='c1')
c = mx.sym.Activation(mx.sym.BatchNorm(c, name='bn1'), act_type='relu')
p = mx.sym.Pooling(c, kernel=(2, 2), stride=(2, 2), pool_type='max')
c2 = mx.sym.Convolution(p, kernel=(3, 3), num_filter=4, pad=(1, 1), name='c2')
f = mx.sym.FullyConnected(mx.sym.tanh(c2), num_hidden=3, name='fc')
net = mx.sym.SoftmaxOutput(f, name='softmax')
ex = net.simple_bind(mx.cpu(), data=(2, 1, 6, 6))
rng = np.random.default_rng(0)
for name, arr in ex.arg_dict.items():
    arr[:] = rng.standard_normal(arr.shape).astype(np.float32) if name != 'softmax_label' else [0, 2]
out = ex.forward(is_train=True)[0].asnumpy()
ex.backward()
np.savez(sys.argv[1], out=out, **{k: g.asnumpy() for k, g in ex.grad_dict.items() if g is not None})
print(json.dumps({'in_workers': sum(len(o.by_workers) for o in counts)}))
"""


def _net_run(cache_dir: Path, workers: str, out: Path) -> dict:
    env = dict(os.environ, SYMJIT_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT),
               SYMJIT_COMPILE_WORKERS=workers)
    proc = subprocess.run([sys.executable, "-c", PARALLEL, str(out)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _files(cache_dir: Path, pattern: str) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted((cache_dir / "kernels").rglob(pattern))}


def test_parallel_compile_matches_serial(tmp_path):
    """Compile workers fill the cache with what a serial bind compiles: the same kernel modules, the
    same numba entries, and outputs and gradients equal to the last bit; a warm bind then compiles
    nothing in workers."""
    par, ser = tmp_path / "parallel", tmp_path / "serial"
    assert _net_run(par, "2", tmp_path / "par.npz")["in_workers"] >= 2
    assert _net_run(ser, "1", tmp_path / "ser.npz")["in_workers"] == 0
    a, b = np.load(tmp_path / "par.npz"), np.load(tmp_path / "ser.npz")
    assert sorted(a.files) == sorted(b.files) and len(a.files) > 5
    for k in a.files:
        assert a[k].tobytes() == b[k].tobytes(), k
    assert _files(par, "*.py") == _files(ser, "*.py")
    assert _files(par, "*.nbi").keys() == _files(ser, "*.nbi").keys()
    assert _files(par, "*.nbc").keys() == _files(ser, "*.nbc").keys()
    assert _net_run(par, "2", tmp_path / "warm.npz")["in_workers"] == 0
    warm = np.load(tmp_path / "warm.npz")
    assert all(warm[k].tobytes() == a[k].tobytes() for k in a.files)


def test_import_symjit_does_not_import_numba():
    """numba (and scipy, which numba's start imports) come in at the first compile, not at import:
    a process that only builds symbols, reads files or runs `symjit --help` never pays for them."""
    code = ("import sys, symjit as mx\n"
            "x = mx.sym.FullyConnected(mx.sym.Variable('x'), num_hidden=2)\n"
            "assert x.infer_shape(x=(3, 4))[1] == [(3, 2)]\n"
            "print(sorted(m for m in ('numba', 'scipy', 'llvmlite') if m in sys.modules))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_jitables_marked_after_install_are_registered_at_once():
    from symjit import jitext
    jitext.install()

    @jitext.jitable
    def late(v):
        return v + 1.0

    import numba
    assert numba.njit(lambda v: late(v))(1.0) == 2.0


def test_numba_version_read_without_importing_numba_is_its_installed_version():
    import importlib.metadata

    from symjit.compiler.cache import _numba_version
    assert _numba_version() == importlib.metadata.version("numba")


def test_hand_written_kernels_recompile_when_a_file_they_inline_changes(tmp_path):
    """numba keys a cached kernel by its own file alone; `kernels/cpu/optim.py` compiles the step
    bodies of `kernels/optim_steps.py`. After an edit of that file only, the kernel must compile
    anew (kernels/cpu/_cache_stamp.py), not load the machine code numba cached before it."""
    import shutil
    shutil.copytree(ROOT / "kernels", tmp_path / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import numpy as np\n"
            "from kernels.cpu import optim\n"
            "w = np.ones(2)\n"
            "optim.sgd_update(w, np.ones(2), 0.5, 0.0, 1.0, -1.0)\n"
            "print(w[0], type(optim.sgd_update._cache._impl.locator).__name__)")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)

    def run() -> list[str]:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             timeout=300, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert run() == ["0.5", "_KernelsInTree"]
    assert list((tmp_path / "kernels" / "cpu" / "__pycache__").glob("optim.sgd_update-*.nbc"))
    steps = tmp_path / "kernels" / "optim_steps.py"
    text = steps.read_text()
    edited = text.replace("weight[i] -= lr * (g + wd * weight[i])",
                          "weight[i] -= 2.0 * lr * (g + wd * weight[i])")
    assert edited != text
    steps.write_text(edited)
    assert run() == ["0.0", "_KernelsInTree"]   # numba's own stamp alone: 0.5 again


def test_kernels_imported_under_another_name_do_not_share_cached_code():
    """Cached machine code names the module it was compiled in: a kernel imported as top-level
    ``kernels`` (a doctest from the source tree) gets another stamp than the same file imported
    as ``symjit.kernels``, so neither loads the other's entries."""
    import types

    from symjit.kernels.cpu import _cache_stamp, optim
    fn = optim.sgd_update.py_func
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    twin.__module__ = fn.__module__.removeprefix("symjit.")
    assert twin.__module__ != fn.__module__
    a = _cache_stamp._KernelsInTree.from_function(fn, fn.__code__.co_filename)
    b = _cache_stamp._KernelsInTree.from_function(twin, fn.__code__.co_filename)
    assert a is not None and b is not None
    assert a.get_source_stamp()[:2] == b.get_source_stamp()[:2]
    assert a.get_source_stamp() != b.get_source_stamp()

"""Ahead-of-time modules (symjit.compiler.aot): a warm process runs its programs and its optimizer
updates without importing numba, with the same results bit for bit; argument types as numba types
them; a corrupt or failed entry is never loaded."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np
import pytest

from symjit.compiler import aot, aot_build
from symjit.compiler.cache import cache_info, clear_cache
from symjit.config import Config
from symjit.lower.target import get_target

ROOT = Path(__file__).resolve().parents[1]

# A convolution and ten hidden layers: the forward phase is one compiled function, the backward
# phase (more than 16 kernels) calls its kernels one by one from the host, so both kinds of segment
# are exported; the convolution's kernels are building blocks the program calls directly.
SCRIPT = """
import json, sys, numpy as np, symjit as mx
net = mx.sym.Reshape(mx.sym.Variable('data'), shape=(8, 1, 3, 4))
net = mx.sym.Flatten(mx.sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=2, name='conv'))
for i in range(10):
    net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=16, name=f'fc{i}'), act_type='relu')
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=4, name='out'), name='softmax')
ex = net.simple_bind(mx.cpu(), data=(8, 12))
rng = np.random.default_rng(0)
for name, a in sorted(ex.arg_dict.items()):
    a[:] = rng.standard_normal(a.shape).astype(np.float32) * 0.5
ex.arg_dict['softmax_label'][:] = rng.integers(0, 4, 8)
ex.forward(is_train=True)
ex.backward()
updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
params = [n for n in net.list_arguments() if n not in ('data', 'softmax_label')]
for step in range(2):
    for i, n in enumerate(params):
        updater(i, ex.grad_dict[n], ex.arg_dict[n])
result = [ex.outputs[0].asnumpy()] + [ex.grad_dict[n].asnumpy() for n in params] + \\
    [ex.arg_dict[n].asnumpy() for n in params]
np.save(sys.argv[1], np.concatenate([r.ravel() for r in result]))
kinds = {m: type(p.module).__name__ for m, p in ex._programs.items()}
source = ex._programs['train'].program.module_source
direct = 'from symjit.kernels.cpu.conv import conv2d_backward_weight as' in source
print(json.dumps({'kinds': kinds, 'numba': 'numba' in sys.modules, 'direct': direct}))
"""


# BatchNorm and max pooling on 2^17 elements run their kernels in parts (serial code the host runs
# on its threads): an entry holds them like any other call, so a warm process runs without numba.
THREADED = """
import json, logging, sys, numpy as np, symjit as mx
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
net = mx.sym.BatchNorm(mx.sym.Variable('data'), fix_gamma=False, name='bn')
net = mx.sym.Pooling(net, kernel=(3, 3), stride=(2, 2), pool_type='max')
for i in range(9):
    net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=8, name=f'fc{i}'), act_type='relu')
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=4, name='out'), name='softmax')
ex = net.simple_bind(mx.cpu(), data=(2, 16, 64, 64))
rng = np.random.default_rng(0)
for name, a in sorted(ex.arg_dict.items()):
    a[:] = rng.standard_normal(a.shape).astype(np.float32) * 0.5
ex.arg_dict['softmax_label'][:] = rng.integers(0, 4, 2)
ex.forward(is_train=True)
ex.backward()
result = [ex.outputs[0].asnumpy()] + [g.asnumpy() for g in ex.grad_arrays if g is not None]
np.save(sys.argv[1], np.concatenate([r.ravel() for r in result]))
program = ex._programs['train'].program
parts = sorted(k for k, (_, text) in program.kernel_texts.items() if '_parts(' in text)
print(json.dumps({'kinds': {m: type(p.module).__name__ for m, p in ex._programs.items()},
                  'parts': len(parts), 'numba': 'numba' in sys.modules}))
"""


def _run(cache: Path, mode: str, out: Path, script: str = SCRIPT, log: list | None = None,
         tmp: Path | None = None) -> dict:
    # program functions compiled at the bind (not after 8 passes): the scripts run one or two passes
    env = dict(os.environ, SYMJIT_CACHE_DIR=str(cache), SYMJIT_AOT=mode, PYTHONPATH=str(ROOT),
               SYMJIT_COMPILE_WORKERS="1", SYMJIT_PROGRAM_RUNS="0", **({"TMPDIR": str(tmp)} if tmp else {}))
    proc = subprocess.run([sys.executable, "-c", script, str(out)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    if log is not None:
        log.append(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _wait_for_builders(cache: Path, timeout: float = 600.0) -> None:
    """Background builders hold a lock file per entry until they finish."""
    end = time.time() + timeout
    while list((cache / "aot").glob("*.lock")):
        assert time.time() < end, "an ahead-of-time builder did not finish"
        time.sleep(0.5)


def test_warm_process_runs_without_numba_and_matches(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    first = _run(cache, "auto", tmp_path / "r1.npy")       # cold: compiles with numba
    assert first == {"kinds": {"train": "module"}, "numba": True, "direct": True}
    assert not list((cache / "aot").glob("symjit_aot_*"))   # a process that compiled notes nothing
    second = _run(cache, "auto", tmp_path / "r2.npy")      # warm: numba's cache
    assert second["kinds"] == {"train": "module"}
    # auto starts no builder: it notes the program's and the update kernels' entries at exit
    assert not list((cache / "aot").glob("*.lock")) and not list((cache / "aot").glob("*.so"))
    assert len(list((cache / "aot").glob("symjit_aot_*.spec.json"))) == 2
    from symjit.cli import main
    monkeypatch.setenv("SYMJIT_CACHE_DIR", str(cache))
    assert main(["aot", "build"]) == 0                     # symjit aot build: in the foreground
    assert capsys.readouterr().out.count(": built (") == 2
    entries = sorted(p.name for p in (cache / "aot").glob("symjit_aot_*.json") if ".spec." not in p.name)
    assert len(entries) == 2, entries                       # the program's and the updates'
    assert not list((cache / "aot").glob("*.spec.json")) and not list((cache / "aot").glob("*.lock"))
    assert len(list((cache / "aot").glob("mixins-*"))) == 1  # pycc's C helpers, compiled once
    third = _run(cache, "auto", tmp_path / "r3.npy")
    assert third == {"kinds": {"train": "Loaded"}, "numba": False, "direct": True}
    r1, r2, r3 = (np.load(tmp_path / f"r{i}.npy") for i in (1, 2, 3))
    assert np.array_equal(r1, r2) and np.array_equal(r1, r3)
    assert cache_info(Config(cache_dir=cache))["aot_modules"] == 2
    # The exported functions release the GIL around the compiled call, as numba's nogil=True
    # dispatchers do (the wrappers call PyEval_SaveThread; pycc's own do not).
    for so in (cache / "aot").glob("symjit_aot_*.so"):
        assert b"PyEval_SaveThread" in so.read_bytes(), so.name

    # A corrupt shared object is removed, never loaded; the process runs from numba's cache.
    for so in (cache / "aot").glob("symjit_aot_*.so"):
        so.write_bytes(so.read_bytes()[:1000])
    fourth = _run(cache, "off", tmp_path / "r4.npy")        # off: entries ignored, nothing built
    assert fourth["kinds"] == {"train": "module"} and fourth["numba"]
    temp = tmp_path / "temp"
    temp.mkdir()
    fifth = _run(cache, "background", tmp_path / "r5.npy", tmp=temp)  # rebuilt by a builder outliving it
    assert fifth["kinds"] == {"train": "module"} and fifth["numba"]
    assert np.array_equal(r1, np.load(tmp_path / "r5.npy"))
    _wait_for_builders(cache)
    assert len(list((cache / "aot").glob("symjit_aot_*.so"))) == 2
    assert not list(temp.iterdir())       # numba's compiler probe leaves nothing in the user's TMPDIR
    clear_cache(Config(cache_dir=cache))                   # `symjit cache clear` removes them too
    assert not [p for p in (cache / "aot").iterdir() if p.name.startswith(("symjit_aot_", "kernels-"))]


@pytest.mark.parametrize("value", [
    np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float64).T, np.zeros((4, 4), np.float32)[:, ::2],
    np.zeros(5, np.int64), np.zeros((), np.float32),
    np.frombuffer(b"\0" * 16, np.float32), 0.5, 3, True, np.float32(1.5), np.int64(7), np.bool_(False),
    (np.int64(1), np.int64(2)),
])
def test_argument_types_are_numbas(value):
    assert aot_build._numba_type(json.loads(json.dumps(aot.arg_type(value)))) == numba.typeof(value)


def test_unsupported_arguments_are_named():
    with pytest.raises(aot.Unsupported, match="list"):
        aot.arg_type([1.0])
    with pytest.raises(aot.Unsupported, match="int64"):
        aot.arg_type(2 ** 70)
    with pytest.raises(aot.Unsupported, match=">f4"):
        aot.arg_type(np.zeros(2, ">f4"))


def test_a_failed_build_is_recorded_and_skipped(tmp_path, caplog):
    cfg = Config(cache_dir=tmp_path, aot="sync")
    units = [("f", "symjit.kernels.cpu.no_such_module", "f", (("scalar", "float64"),))]
    assert aot.request(cfg, units, wait=True)
    meta = json.loads((tmp_path / "aot" / f"{aot.entry_name(units)}.json").read_text())
    assert "ModuleNotFoundError" in meta["error"]
    with caplog.at_level("INFO", logger="symjit"):
        assert aot.find(cfg, units) is None
    assert "no ahead-of-time module" in caplog.text
    assert not aot.request(cfg, units, wait=True)          # recorded: not tried again
    assert not list((tmp_path / "aot").glob("*.lock"))


def test_the_builder_imports_the_symjit_that_requested_the_entry(tmp_path, monkeypatch):
    """Started from a folder holding another ``symjit`` (a checkout of another version), the
    builder still imports the requesting process's code: an entry is named for that code, and
    one built by the other (an older builder's instruction set, other kernels) would be loaded
    as this code's."""
    other = tmp_path / "checkout" / "symjit"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("raise ImportError('the other checkout was imported')\n")
    monkeypatch.chdir(other.parent)
    cfg = Config(cache_dir=tmp_path / "cache", aot="sync")
    units = [("f", "symjit.kernels.cpu.no_such_module", "f", (("scalar", "float64"),))]
    assert aot.request(cfg, units, wait=True)
    meta = json.loads((tmp_path / "cache" / "aot" / f"{aot.entry_name(units)}.json").read_text())
    assert "ModuleNotFoundError" in meta["error"]       # this symjit's builder ran and recorded it


def test_a_spec_named_for_other_code_is_not_built(tmp_path):
    units = [("f", "symjit.kernels.cpu.optim", "sgd_update", (("scalar", "float64"),))]
    spec = {"name": "symjit_aot_" + "0" * 24, "units": units, "cache_dir": str(tmp_path)}
    with pytest.raises(RuntimeError, match="requested by other code"):
        aot_build.build(spec)


def test_aot_setting_is_checked():
    from symjit.base import MXNetError
    assert Config.from_env({"SYMJIT_AOT": "sync"}).aot == "sync"
    with pytest.raises(MXNetError, match="SYMJIT_AOT"):
        Config.from_env({"SYMJIT_AOT": "always"})


def test_a_segment_bound_to_other_argument_types_runs_numbas_kernels():
    import types

    from symjit.compiler.codegen.generate import Segment
    a = np.zeros(3, np.float32)
    ran = []
    entry = types.ModuleType("symjit_aot_example")
    entry.forward = lambda *args: ran.append("aot")
    numba_module = types.SimpleNamespace(forward=lambda *args: ran.append("numba"))
    loaded = aot.Loaded(entry, [("forward", "m", "forward", aot.arg_types([a, a]))], lambda: numba_module,
                        target=get_target("cpu"))
    seg = Segment("njit", "forward", [0, 1])
    loaded.call(seg, [a, a])()
    loaded.call(seg, [a, a.astype(np.float64)])()
    loaded.call(seg, [a, a[::2]])()
    assert ran == ["aot", "numba", "numba"]


def test_kernels_in_parts_run_from_entries_without_numba(tmp_path):
    cache, logs = tmp_path / "cache", []
    first = _run(cache, "off", tmp_path / "r1.npy", THREADED)      # compiles with numba
    assert first == {"kinds": {"train": "module"}, "parts": 4, "numba": True}   # BN, pool: both ways
    second = _run(cache, "sync", tmp_path / "r2.npy", THREADED, logs)   # builds the entry, waits
    third = _run(cache, "sync", tmp_path / "r3.npy", THREADED, logs)    # loads it
    assert second["parts"] == 4
    assert third == {"kinds": {"train": "Loaded"}, "parts": 4, "numba": False}, logs[-1]
    assert "removed" not in "".join(logs) and "could not" not in "".join(logs), logs
    entries = [json.loads(p.read_text()) for p in (cache / "aot").glob("symjit_aot_*.json")]
    assert len(entries) == 1 and entries[0]["units"] > 0, entries
    r1, r2, r3 = (np.load(tmp_path / f"r{i}.npy") for i in (1, 2, 3))
    assert np.array_equal(r1, r2) and np.array_equal(r1, r3)


def test_a_call_the_entry_lacks_runs_numbas_beside_the_entrys():
    import types

    from symjit.compiler.codegen.generate import Segment
    a = np.zeros(3, np.float32)
    ran = []
    entry = types.ModuleType("symjit_aot_example")
    entry.backward_0__0 = lambda *args: ran.append("aot k0")
    numba_module = types.SimpleNamespace(k0=lambda *args: ran.append("numba k0"),
                                         k1=lambda *args: ran.append("numba k1"),
                                         backward=lambda *args: ran.append("numba backward"))
    units = [("backward_0__0", "m", "k0", aot.arg_types([a]))]
    # k1 has no unit (the entry was built without it)
    loaded = aot.Loaded(entry, units, lambda: numba_module, target=get_target("cpu"))
    calls = Segment("calls", "backward_0", [0, 1], launches=[("k0", [0], []), ("k1", [1], [])])
    loaded.call(calls, [a, a])()
    phase = Segment("njit", "backward", [0, 1], launches=[("k0", [0], []), ("k1", [1], [])])
    loaded.call(phase, [a, a])()
    assert ran == ["aot k0", "numba k1", "numba backward"]


# Dropout (training) and random_uniform draw from numba's generator; an entry links its own copy of
# it. Between the forwards an imperative uniform draw and an imperative Dropout (numba's kernels)
# continue the same stream.
SEEDED = """
import json, logging, sys, numpy as np, symjit as mx
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=16, name='fc')
net = mx.sym.Dropout(net, p=0.5) + mx.sym.random_uniform(low=-1, high=1, shape=(4, 16))
ex = net.simple_bind(mx.cpu(), data=(4, 8))
rng = np.random.default_rng(0)
for name, a in sorted(ex.arg_dict.items()):
    a[:] = rng.standard_normal(a.shape).astype(np.float32)

def draws(seed):
    mx.random.seed(seed)
    first = ex.forward(is_train=True)[0].asnumpy()
    between = [mx.nd.random.uniform(shape=(3,)).asnumpy(),
               mx.nd.Dropout(mx.nd.ones((2, 8)), p=0.5, mode='always').asnumpy()]
    second = ex.forward(is_train=True)[0].asnumpy()
    return np.concatenate([r.ravel() for r in [first, *between, second]])

np.save(sys.argv[1], np.stack([draws(7), draws(7), draws(8)]))
print(json.dumps({'kinds': {m: type(p.module).__name__ for m, p in ex._programs.items()}}))
"""


def test_seeded_samplers_and_dropout_draw_the_same_numbers_from_an_entry(tmp_path):
    cache, logs = tmp_path / "cache", []
    assert _run(cache, "off", tmp_path / "jit.npy", SEEDED)["kinds"] == {"train": "module"}
    _run(cache, "sync", tmp_path / "build.npy", SEEDED, logs)          # builds the entry, waits
    runs = [_run(cache, "sync", tmp_path / f"aot{i}.npy", SEEDED, logs) for i in (1, 2)]
    assert all(r["kinds"] == {"train": "Loaded"} for r in runs), "\n".join(logs)
    jit, built, aot1, aot2 = (np.load(tmp_path / f"{n}.npy") for n in ("jit", "build", "aot1", "aot2"))
    assert np.array_equal(jit, built)
    assert np.array_equal(jit, aot1), "an entry's kernels drew other numbers than numba's"
    assert np.array_equal(aot1, aot2)                      # two seeded processes from the entry
    assert np.array_equal(aot1[0], aot1[1])                # the same seed again in one process
    assert not np.array_equal(aot1[0], aot1[2])            # another seed
    n = 4 * 16
    assert not np.array_equal(aot1[0][:n], aot1[0][-n:])   # the stream goes on between forwards


# Imperative calls: elementwise arithmetic, a reduction, an argmax on its canonical view and a
# sampler, each a one-operator program (symjit.imperative) served by the imperative calls' entry.
CALLS = """
import json, sys, numpy as np, symjit as mx
x = mx.nd.array(np.arange(60, dtype=np.float32).reshape(3, 4, 5) / 7)
y = mx.nd.exp(x * 0.1) + 1
result = [y.asnumpy(), mx.nd.sum(y, axis=1).asnumpy(), mx.nd.argmax(y, axis=2).asnumpy()]
u = mx.nd.random.uniform(-2, 3, shape=(40, 7)).asnumpy()
assert u.min() >= -2 and u.max() < 3 and len(np.unique(u)) > 200
np.save(sys.argv[1], np.concatenate([r.ravel() for r in result]))
print(json.dumps({'numba': 'numba' in sys.modules}))
"""


def test_imperative_calls_run_from_their_entry_without_numba(tmp_path):
    cache = tmp_path / "cache"
    runs = [_run(cache, "auto", tmp_path / f"r{i}.npy", CALLS) for i in range(4)]
    # cold (compiles: notes nothing), warm (numba's cache: notes the entry), the third builds it
    # at its first call and loads it, the fourth loads it
    assert [r["numba"] for r in runs] == [True, True, False, False]
    registry = json.loads((cache / "aot" / "kernels-imperative-calls.json").read_text())
    assert len(registry["units"]) >= 4
    r0 = np.load(tmp_path / "r0.npy")
    for i in (1, 2, 3):
        assert np.array_equal(r0, np.load(tmp_path / f"r{i}.npy"))
    assert len(list((cache / "aot").glob("symjit_aot_*.so"))) == 1


# A map loop of 2^20 elements or more is split into parts: serial code, which an entry holds, run
# in parts by the host's threads there too.
PARTS = """
import json, sys, numpy as np, symjit as mx, symjit.parts as parts
ran = []
run = parts.POOL.run
parts.POOL.run = lambda fn, args, n: (ran.append(n), run(fn, args, n))
a = mx.sym.Variable('a')
ex = (mx.sym.exp(a * 0.5) + 1.0).simple_bind(mx.cpu(), a=(2, 1000, 600), grad_req='null')
ex.arg_dict['a'][:] = np.random.default_rng(0).standard_normal((2, 1000, 600)).astype(np.float32)
np.save(sys.argv[1], ex.forward()[0].asnumpy())
print(json.dumps({'kinds': {m: type(p.module).__name__ for m, p in ex._programs.items()},
                  'numba': 'numba' in sys.modules, 'parts': len(ran)}))
"""


def test_a_loop_in_parts_runs_from_an_entry_without_numba(tmp_path):
    cache, logs = tmp_path / "cache", []
    first = _run(cache, "sync", tmp_path / "r1.npy", PARTS, logs)    # compiles, builds the entry
    second = _run(cache, "sync", tmp_path / "r2.npy", PARTS, logs)   # loads it
    assert first["kinds"] == {"infer": "module"} and first["parts"] == 1
    assert second == {"kinds": {"infer": "Loaded"}, "numba": False, "parts": 1}, logs[-1]
    r1, r2 = np.load(tmp_path / "r1.npy"), np.load(tmp_path / "r2.npy")
    assert np.array_equal(r1, r2)


HOST_ISA = """
import json
from numba.core import codegen
from numba.core.codegen import get_host_cpu_features
from symjit.compiler import aot_build
aot_build._host_features()
host = codegen.AOTCPUCodegen("entry", cpu_name="host")
generic = codegen.AOTCPUCodegen("entry")
print(json.dumps([host._tm_features, generic._tm_features, get_host_cpu_features()]))
"""


def test_entries_are_compiled_for_the_features_the_processor_reports():
    """The builder gives pycc's codegen this processor's feature list, as numba's jit has: the CPU
    model's name alone would enable what a virtual machine hides (AVX-512 on a masked Zen 4, where
    an entry died on its first vector instruction)."""
    proc = subprocess.run([sys.executable, "-c", HOST_ISA], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    host, generic, reported = json.loads(proc.stdout.strip().splitlines()[-1])
    assert host == reported and host, "the entry's ISA is not the reported one"
    assert generic == ""          # pycc's generic model keeps its own baseline
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists() and "avx512f" not in cpuinfo.read_text():
        assert "+avx512f" not in host.split(",")

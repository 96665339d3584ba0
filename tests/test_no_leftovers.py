"""Nothing symjit starts outlives the user's process (symjit.compiler.lifeline): compile workers end
when the binding process is killed (SIGKILL, mid-compile), through the kernel's parent-death signal
and through the pipe alone; with default settings a program leaves no process behind, cold or
warm, and the ahead-of-time modules a warm run would want are noted, then built by the next run
at its bind, which waits for its builder."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

# A cold bind with many distinct kernels (several seconds of compiling on two workers).
BIND = """
import sys
import symjit as mx
net = mx.sym.Variable('data')
for i, act in enumerate(('relu', 'tanh', 'sigmoid', 'softrelu', 'softsign', 'relu', 'tanh')):
    net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=8, name=f'fc{i}'), act_type=act)
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=3, name='out'), name='softmax')
ex = net.simple_bind(mx.cpu(), data=(2, 8))
ex.forward(is_train=True)
ex.backward()
print('bound', flush=True)
"""


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")   # a zombie has ended, unreaped


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None and st[1] == pid:
                out.append(int(entry.name))
    return out


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    end = time.time() + seconds
    while time.time() < end and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _env(cache: Path, **extra: str) -> dict:
    env = dict(os.environ, SYMJIT_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **extra)
    env.pop("SYMJIT_AOT", None)   # symjit's default, not the test suite's
    return env


def test_compile_workers_end_when_the_binding_process_is_killed(tmp_path):
    log = tmp_path / "stderr.txt"
    workers: list[int] = []
    with open(log, "wb") as err:   # a file, not a pipe: a surviving worker would hold a pipe open
        proc = subprocess.Popen([sys.executable, "-c", BIND], stdout=subprocess.DEVNULL, stderr=err,
                                env=_env(tmp_path / "cache", SYMJIT_COMPILE_WORKERS="2"))
    try:
        end = time.time() + 120
        while len(workers) < 2 and proc.poll() is None and time.time() < end:
            workers = [c for c in _children(proc.pid) if _alive(c)]
            time.sleep(0.02)
        assert len(workers) >= 2, log.read_text()[-2000:]
        time.sleep(0.3)                       # the workers are compiling now
        assert proc.poll() is None            # the bind has not finished
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert _gone_within(workers, 10.0) == [], "compile workers outlived the killed binding process"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in workers:                   # what a failing check left behind
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


# A child following a lifeline through the pipe alone (no parent-death signal), busy in Python as
# a compile is; its parent is then killed.
PIPE_ONLY = """
import os, time
from symjit.compiler import lifeline
line = lifeline.Lifeline()
pid = os.fork()
if pid == 0:
    lifeline._kill_with_parent = lambda: None
    lifeline.follow(line.parent, line.read, close=line.write)
    while True:
        sum(range(10000))
print(pid, flush=True)
time.sleep(120)
"""


def test_the_pipe_alone_ends_a_busy_child_when_its_parent_is_killed(tmp_path):
    out = tmp_path / "pid.txt"
    with open(out, "wb") as f:
        proc = subprocess.Popen([sys.executable, "-c", PIPE_ONLY], env=_env(tmp_path), stdout=f)
    child = None
    try:
        end = time.time() + 60
        while not out.read_text().strip() and time.time() < end:
            time.sleep(0.05)
        child = int(out.read_text())
        time.sleep(0.3)
        assert _alive(child)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert _gone_within([child], 10.0) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)


def _leftovers(marker: str) -> list[str]:
    """Processes whose command line names ``marker`` (forked workers repeat their parent's, a
    builder names its spec in the cache)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd and _alive(int(entry.name)):
                out.append(f"{entry.name}: {cmd[:200]}")
    return out


def test_default_settings_leave_no_process_after_the_program(tmp_path):
    """A cold run (compile workers), then warm runs that bind from the disk cache and call the
    optimizer's update kernels: after each, no process of theirs is left; the ahead-of-time
    modules a warm run would want are noted, not built; the next run builds them at its bind."""
    cache = tmp_path / "cache"
    # a loop of passes, as a training script's: its program functions compile at the 8th
    # (symjit.compiler.program_tier), so the next run binds it all from the disk cache (warm)
    program = BIND + """
for _ in range(8):
    ex.forward(is_train=True)
    ex.backward()
updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
for i, n in enumerate(n for n in net.list_arguments() if n not in ('data', 'softmax_label')):
    updater(i, ex.grad_dict[n], ex.arg_dict[n])
"""
    for run in range(2):
        out = subprocess.run([sys.executable, "-c", program, str(cache)], capture_output=True, text=True,
                             env=_env(cache, SYMJIT_COMPILE_WORKERS="2"), timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        time.sleep(0.5)
        assert _leftovers(str(cache)) == [], f"run {run} left processes behind"
        assert not list(cache.glob("aot/*.lock"))
    noted = sorted(p.name for p in (cache / "aot").glob("symjit_aot_*.spec.json"))
    assert len(noted) == 2, noted    # by the warm run: the program's and the update kernels'
    assert not list((cache / "aot").glob("symjit_aot_*.so"))
    # The third run finds them noted: it builds both at the bind, waiting, loads them (no numba)
    # and leaves no process behind.
    out = subprocess.run([sys.executable, "-c", program + "print('numba' in sys.modules)", str(cache)],
                         capture_output=True, text=True, env=_env(cache), timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["bound", "False"], (out.stdout, out.stderr[-2000:])
    time.sleep(0.5)
    assert _leftovers(str(cache)) == [], "the building run left processes behind"
    assert not list(cache.glob("aot/*.lock")) and not list(cache.glob("aot/*.spec.json"))
    assert len(list((cache / "aot").glob("symjit_aot_*.so"))) == 2

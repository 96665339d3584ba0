"""The BLAS thread policy (symjit.threads): the count follows the load other processes put on the
cores, a user's choice is never changed, and the /proc probe measures real load."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import symjit as mx
from symjit import threads
from symjit.config import Config


class FakeProbe:
    def __init__(self, loads):
        self.loads = list(loads)

    def others(self):
        return self.loads.pop(0)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_threads_for_leaves_the_busy_cores_to_their_processes():
    assert [threads.threads_for(2, o) for o in (0.0, 0.4, 0.6, 1.0, 1.9, 5.0)] == [2, 2, 1, 1, 1, 1]
    assert threads.threads_for(1, 0.0) == 1 and threads.threads_for(16, 3.2) == 13


def test_policy_rereads_the_load_once_per_interval():
    sets, clock = [], Clock()
    pol = threads.BlasThreads(sets.append, FakeProbe([1.0, 0.0, 0.9]), cores=2, interval=0.1, clock=clock)
    pol.adapt()                      # no whole interval yet: nothing read, nothing set
    assert sets == [] and pol.current is None
    clock.now = 0.1
    pol.adapt()                      # one other busy process: one thread
    clock.now = 0.15
    pol.adapt()                      # within the interval: no reading
    clock.now = 0.2
    pol.adapt()                      # idle again: both cores
    clock.now = 0.35
    pol.adapt()                      # busy again
    assert sets == [1, 2, 1] and pol.current == 1


def test_fixed_count_is_set_once_and_kept():
    sets = []
    pol = threads.BlasThreads(sets.append, FakeProbe([]), cores=2, fixed=1, interval=0.0)
    for _ in range(3):
        pol.adapt()
    assert sets == [1]


def test_user_settings_turn_the_policy_off(monkeypatch):
    monkeypatch.setattr(threads, "_POLICY", [])
    assert threads.policy(env={"OPENBLAS_NUM_THREADS": "1"}) is None
    monkeypatch.setattr(threads, "_POLICY", [])
    assert threads.policy(env={"OMP_NUM_THREADS": "2"}) is None
    monkeypatch.setattr(threads, "_POLICY", [])
    pol = threads.policy(env={})
    assert pol is not None and pol.fixed is None and pol.cores == len(os.sched_getaffinity(0))
    assert Config.from_env({"SYMJIT_BLAS_THREADS": "1"}).blas_threads == 1
    with pytest.raises(mx.base.MXNetError, match="SYMJIT_BLAS_THREADS"):
        Config.from_env({"SYMJIT_BLAS_THREADS": "0"})


def _write_proc(tmp_path, cpu0, cpu1, own):
    """/proc/stat with two cores (user nice system idle iowait irq softirq steal) and a
    /proc/self/stat whose utime/stime (fields 14, 15) are ``own``; the command has spaces."""
    stat = tmp_path / "stat"
    stat.write_text(f"cpu  {' '.join(map(str, [a + b for a, b in zip(cpu0, cpu1)]))}\n"
                    f"cpu0 {' '.join(map(str, cpu0))}\ncpu1 {' '.join(map(str, cpu1))}\nintr 5 0\n")
    self_stat = tmp_path / "self"
    self_stat.write_text("42 (py thon) R " + " ".join(["0"] * 10) + f" {own[0]} {own[1]} 0 0 20 0\n")
    return str(stat), str(self_stat)


def test_probe_counts_other_processes_busy_time_on_its_cores(tmp_path):
    hz, clock = os.sysconf("SC_CLK_TCK"), Clock()
    paths = _write_proc(tmp_path, [100, 0, 50, 900, 0, 0, 0, 0], [10, 0, 0, 990, 0, 0, 0, 7], (120, 30))
    probe = threads.LoadProbe({0, 1}, *paths, clock=clock)
    # one second later: core 0 gained hz*0.9 user ticks and core 1 hz*1.0 (+ irq/softirq 10);
    # this process used hz*0.6 of that: the others, 0.9 + 1.0 + 0.1 - 0.6 cores' worth
    clock.now = 1.0
    _write_proc(tmp_path, [100 + int(hz * 0.9), 0, 50, 900, 0, 0, 0, 0],
                [10 + hz, 0, 0, 990, 0, int(hz * 0.05), int(hz * 0.05), 7 + hz],
                (120 + int(hz * 0.5), 30 + int(hz * 0.1)))
    assert probe.others() == pytest.approx(1.4, abs=0.02)
    clock.now = 2.0   # nothing moved: no load (steal time, idle and iowait never count)
    assert probe.others() == 0.0
    only0 = threads.LoadProbe({0}, *paths, clock=clock)   # a core outside the set is not ours to count
    clock.now = 3.0
    _write_proc(tmp_path, [100 + int(hz * 0.9), 0, 50, 900, 0, 0, 0, 0], [10 + 3 * hz, 0, 0, 990, 0, 0, 0, 7],
                (120 + int(hz * 0.5), 30 + int(hz * 0.1)))
    assert only0.others() == 0.0


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the load probe reads Linux's /proc")
def test_probe_reads_this_machine():
    probe = threads.LoadProbe()
    time.sleep(0.05)
    assert 0.0 <= probe.others() <= len(os.sched_getaffinity(0)) + 0.5


def test_executor_applies_the_policy_at_forward(monkeypatch):
    sets = []
    pol = threads.BlasThreads(sets.append, FakeProbe([1.0]), cores=2, interval=0.0)
    monkeypatch.setattr(threads, "_POLICY", [pol])
    x = mx.sym.Variable("x")
    ex = mx.sym.FullyConnected(x, num_hidden=3, name="fc").simple_bind(mx.cpu(), x=(2, 4))
    ex.forward()
    assert sets == [1]
    np.testing.assert_array_equal(ex.outputs[0].shape, (2, 3))


def test_scipy_blas_is_loaded_without_the_scipy_linalg_package():
    """The BLAS module numba's GEMMs import is loaded alone (the package's ``__init__`` imports
    most of scipy.linalg); a later ``import scipy.linalg`` still runs and attaches it."""
    code = """if True:
        import sys
        from symjit import threads
        blas = threads.import_scipy_blas()
        assert blas.__name__ == "scipy.linalg.cython_blas", blas
        assert "scipy.linalg" not in sys.modules, "package imported"
        assert "sgemm" in blas.__pyx_capi__
        assert threads.import_scipy_blas() is blas
        import scipy.linalg
        assert scipy.linalg.cython_blas is blas
        assert scipy.linalg.inv([[2.0]])[0][0] == 0.5
        import scipy.linalg.cython_blas
        from scipy.linalg import cython_blas
        assert cython_blas is blas
        assert not any(type(f).__name__ == "_AttachToPackage" for f in sys.meta_path)
        import numba
        import numpy as np
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        assert np.array_equal(numba.njit(lambda x, y: x @ y)(a, a.T), a @ a.T)
        print("ok")
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]

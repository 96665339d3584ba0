"""Distributed KVStores over MPI: jobs of 1-3 local worker processes started with ``symjit launch``
(mpiexec), compared with the single-process result computed here.

Needs the ``dist`` extra (mpi4py and an MPI library with ``mpiexec``); CI installs it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError
from symjit.dist import launch as dist_launch
from tests import dist_programs as progs

pytest.importorskip("mpi4py", reason="the dist extra (mpi4py, mpich) is not installed")

ROOT = Path(__file__).resolve().parents[1]


def launch(n: int | None, args: list[str], tmp: Path, env: dict | None = None,
           timeout: float = 300) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``python ARGS`` as ``n`` workers with ``symjit launch`` (plainly when ``n`` is None)."""
    cmd = [sys.executable] + args
    if n is not None:
        cmd = [sys.executable, "-m", "symjit.cli", "launch", "-n", str(n), "python"] + args
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    return proc, time.monotonic() - t0


def program(n: int | None, scenario: str, tmp: Path, env: dict | None = None, **kw):
    return launch(n, ["-m", "tests.dist_programs", scenario, str(tmp)], tmp, env, **kw)


def reference(workers: int) -> dict[str, np.ndarray]:
    """The same pushes made by one process: each key's list holds every rank's value."""
    return progs.run_pushpull(mx.kv.create("local"), 0, workers, devices=workers)


# -- dist_sync push / pull / updater --------------------------------------------------------------
@pytest.mark.parametrize("workers, bucket", [(1, None), (2, None), (3, "16")])
def test_dist_sync_equals_single_process(tmp_path, workers, bucket):
    env = {"SYMJIT_DIST_BUCKET_BYTES": bucket} if bucket else {}
    proc, _ = program(workers if workers > 1 else None, "pushpull", tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    ref = reference(workers)
    results = [np.load(tmp_path / f"rank{r}.npz") for r in range(workers)]
    for r, got in enumerate(results):
        assert int(got["num_workers"]) == workers
        assert str(got["store_ctx"]) == "cpu(0)"
        for tag, want in ref.items():
            np.testing.assert_array_equal(got[tag], want, err_msg=f"rank {r} {tag}")
    # init: rank 0's values won although each rank initialised with its own
    np.testing.assert_array_equal(results[-1]["init/a"], progs.initial(0, "a"))
    states = {(tmp_path / f"states{r}.bin").read_bytes() for r in range(workers)}
    assert len(states) == 1, "optimizer states differ between ranks"
    # a store whose states were loaded from a file goes on as the one that wrote them
    kv = mx.kv.create("local")
    more = progs.run_pushpull(kv, 0, workers, devices=workers)
    kv.load_optimizer_states(str(tmp_path / "states0.bin"))
    kv.push(progs.KEYS, [[mx.nd.array(progs.pushed(r, 9, k), dtype=progs.DTYPES[k]) for r in range(workers)]
                         for k in progs.KEYS])
    for k in progs.KEYS:
        want = mx.nd.zeros(progs.SHAPES[k], dtype=progs.DTYPES[k])
        kv.pull(k, out=want)
        for r, got in enumerate(results):
            np.testing.assert_array_equal(got[f"after_load/{k}"], want.asnumpy(), err_msg=f"rank {r} {k}")
    assert more.keys() == ref.keys()


@pytest.mark.gpu
def test_dist_device_sync_on_gpu(tmp_path):
    """Workers push GPU values: sums and updates run on the GPU (the simulator in CI), the
    exchange goes through host memory; the result equals the CPU single-process one."""
    proc, _ = program(2, "pushpull", tmp_path, {"KV_TYPE": "dist_device_sync", "PUSH_CTX": "gpu"},
                      timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ref = reference(2)
    for r in range(2):
        got = np.load(tmp_path / f"rank{r}.npz")
        assert str(got["store_ctx"]) == "gpu(0)"
        for tag, want in ref.items():
            if tag.startswith("ctx/"):
                assert str(got[tag]) == "gpu(0)", tag
            else:
                np.testing.assert_allclose(got[tag], want, rtol=1e-6, atol=1e-6, err_msg=f"rank {r} {tag}")


def test_dist_async_applies_every_push(tmp_path):
    proc, _ = program(2, "pushpull_async", tmp_path)
    assert proc.returncode == 0, proc.stderr
    for r in range(2):
        got = np.load(tmp_path / f"rank{r}.npz")
        for k in progs.KEYS:
            total = sum(progs.pushed(w, i, k).astype(np.float64)
                        for w in range(2) for i in range(progs.ROUNDS))
            want = progs.initial(0, k) - 0.1 * total
            np.testing.assert_allclose(got[f"final/{k}"], want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"rank {r} key {k}")
    assert (tmp_path / "states0.bin").stat().st_size > 0
    assert "optimizer states live in the server on rank 0" in (tmp_path / "states1.txt").read_text()


# -- errors -----------------------------------------------------------------------------------------
def test_bad_push_is_an_error_on_every_rank(tmp_path):
    proc, elapsed = program(2, "bad_push", tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for r in range(2):
        lines = (tmp_path / f"rank{r}.txt").read_text().splitlines()
        shape, key, uninit, after = lines
        assert "failed on rank 1" in shape and "(3,3)" in shape and "(2,3)" in shape, shape
        assert "workers disagree" in key and "rank 0 push 'w'" in key and "rank 1 push 'v'" in key, key
        assert "failed on rank 1" in uninit and "'nope' is not initialised" in uninit, uninit
        assert after == "after: [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]"


@pytest.mark.parametrize("how, expect", [
    ("kill", "rank 1 of 2 (pid"),
    ("raise", "ValueError: rank 1 fails on purpose"),
    ("stall", "DistTimeout"),
])
def test_failed_worker_stops_the_job(tmp_path, how, expect):
    proc, elapsed = program(2, "fail", tmp_path, {"FAIL_HOW": how, "SYMJIT_DIST_TIMEOUT": "5"}, timeout=120)
    assert proc.returncode != 0
    assert elapsed < 60, f"the job took {elapsed:.0f} s to stop"
    assert expect in proc.stderr, proc.stderr[-2000:]
    assert "rank 1" in proc.stderr if how != "stall" else "rank 0 waited 5 s" in proc.stderr
    assert not (tmp_path / "rank0.txt").exists(), "rank 0 finished although rank 1 failed"


def test_kill_names_the_signal(tmp_path):
    proc, _ = program(2, "fail", tmp_path, {"FAIL_HOW": "kill"}, timeout=120)
    assert "was killed by signal SIGKILL" in proc.stderr


# -- training ---------------------------------------------------------------------------------------
def train(n: int, tmp: Path, *extra: str) -> tuple[list, subprocess.CompletedProcess]:
    tmp.mkdir()
    proc, _ = launch(n, ["examples/train_mlp_dist.py", "--epochs", "2", "--examples", "30000",
                         "--out", str(tmp), *extra], tmp)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [np.load(tmp / f"rank{r}.npz") for r in range(n)], proc


def same_params(results: list) -> None:
    names = [k for k in results[0].files if k.startswith("epoch")]
    assert {k.split("/")[0] for k in names} == {"epoch0", "epoch1"}
    for other in results[1:]:
        for k in names:
            np.testing.assert_array_equal(results[0][k], other[k], err_msg=k)


def test_module_fit_dist_sync_two_workers_as_one(tmp_path):
    one, _ = train(1, tmp_path / "one")
    two, _ = train(2, tmp_path / "two")
    same_params(two)
    acc1, acc2 = float(one[0]["accuracy"]), float(two[0]["accuracy"])
    assert acc1 >= 0.93 and acc2 >= 0.93, (acc1, acc2)
    assert abs(acc1 - acc2) <= 0.02, (acc1, acc2)
    assert float(two[1]["accuracy"]) == acc2
    # rank 0 alone wrote checkpoints; each rank logged its own lines
    written = sorted(p.name for p in (tmp_path / "two").glob("mlp-*"))
    assert written == ["mlp-rank0-0001.params", "mlp-rank0-0002.params", "mlp-rank0-symbol.json"]
    log1 = (tmp_path / "two" / "log1.txt").read_text()
    assert "Rank[1] Epoch[1] Train-accuracy=" in log1 and "Rank[1] Epoch[0] Batch [100]" in log1


def test_feedforward_fit_dist_sync(tmp_path):
    results, _ = train(2, tmp_path / "ff", "--api", "feedforward")
    same_params(results)
    assert float(results[0]["accuracy"]) >= 0.93


def test_dist_async_mlp_converges(tmp_path):
    # each worker's push is a step of its own on weights other pushes may have moved: half the
    # synchronous learning rate (0.1) keeps it stable on a loaded machine too
    results, _ = train(2, tmp_path / "async", "--kvstore", "dist_async", "--lr", "0.05")
    assert min(float(r["accuracy"]) for r in results) >= 0.9


# -- launcher and iterators -------------------------------------------------------------------------
def test_launch_errors(tmp_path, monkeypatch, capsys):
    from symjit import cli
    assert cli.main(["launch", "-n", "2", "--mpiexec", str(tmp_path / "nope"), "python", "x.py"]) == 2
    assert "is not an executable" in capsys.readouterr().err
    assert cli.main(["launch", "-n", "0", "python", "x.py"]) == 2
    assert "-n must be at least 1" in capsys.readouterr().err
    monkeypatch.setattr(dist_launch.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MXNetError, match=r"mpi4py is not installed.*pip install 'symjit\[dist\]'"):
        dist_launch.launch(2, ["python", "x.py"])


def test_launch_command_line():
    cmd = dist_launch.build_command(3, ["python", "t.py", "-x"], "/m/mpiexec", "openmpi", "hosts")
    assert cmd[:5] == ["/m/mpiexec", "-n", "3", "--hostfile", "hosts"]
    assert cmd[-6:] == ["-m", "symjit.dist.worker", "--", "python", "t.py", "-x"]
    assert dist_launch.build_command(2, ["p"], "mpiexec", "mpich", "h")[3:5] == ["-f", "h"]


def test_iterators_read_the_worker_part(monkeypatch):
    X = np.arange(10, dtype=np.float32).reshape(10, 1)
    monkeypatch.setenv("PMI_RANK", "1")
    monkeypatch.setenv("PMI_SIZE", "3")
    it = mx.io.NDArrayIter(X, np.zeros(10), batch_size=3)
    assert [b.data[0].asnumpy().ravel().tolist() for b in it] == [[3.0, 4.0, 5.0]]
    whole = mx.io.NDArrayIter(X, np.zeros(10), batch_size=5, num_parts=1)
    assert sum(1 for _ in whole) == 2
    with pytest.raises(MXNetError, match="part_index"):
        mx.io.NDArrayIter(X, batch_size=2, num_parts=2, part_index=2)
    mnist = ROOT.parent / "shared" / "data" / "mnist"
    part = mx.io.MNISTIter(str(mnist / "t10k-images-idx3-ubyte.gz"), str(mnist / "t10k-labels-idx1-ubyte.gz"),
                           batch_size=100, shuffle=False, flat=True, silent=True)
    full = mx.io.MNISTIter(str(mnist / "t10k-images-idx3-ubyte.gz"), str(mnist / "t10k-labels-idx1-ubyte.gz"),
                           batch_size=100, shuffle=False, flat=True, silent=True, num_parts=1)
    first = next(iter(part)).data[0].asnumpy()
    everything = np.concatenate([b.data[0].asnumpy() for b in full])
    np.testing.assert_array_equal(first, everything[3333:3433])

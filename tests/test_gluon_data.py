"""mx.gluon.data: datasets and their views, samplers, batchify functions, and the DataLoader in
this process, in threads and in worker processes (batches equal to the serial ones, errors from
workers, no worker left behind after a pass, an abandoned pass, a collected loader or a killed
parent). Vision datasets and transforms are in test_gluon_vision.py."""
from __future__ import annotations

import gc
import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError
from symjit.gluon import data as gdata
from symjit.gluon.data import batchify

# --- datasets -----------------------------------------------------------------------------------


def test_views_of_a_dataset():
    ds = gdata.SimpleDataset(list(range(10)))
    assert list(ds.filter(lambda x: x % 3 == 0)) == [0, 3, 6, 9]
    assert list(ds.take(3)) == [0, 1, 2] and len(ds.take(None)) == 10 and len(ds.take(99)) == 10
    assert list(ds.sample(gdata.IntervalSampler(10, 4))) == [0, 4, 8, 1, 5, 9, 2, 6, 3, 7]
    with pytest.raises(TypeError, match="Sampler"):
        ds.sample([1, 2])
    pairs = gdata.SimpleDataset([(i, chr(97 + i)) for i in range(3)])
    assert list(pairs.transform(lambda a, b: b * a)) == ["", "b", "cc"]
    assert list(pairs.transform_first(lambda a: a + 10)) == [(10, "a"), (11, "b"), (12, "c")]
    assert list(ds.transform(lambda x: x + 1).filter(lambda x: x % 5 == 0)) == [5, 10]


@pytest.mark.parametrize("n", [1, 7, 9, 12])
def test_shards_cover_the_dataset_once_in_nearly_equal_parts(n):
    ds = gdata.SimpleDataset(list(range(n)))
    parts = [list(ds.shard(4, i)) for i in range(4)]
    assert sum(parts, []) == list(range(n))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert [len(p) for p in parts] == sorted((len(p) for p in parts), reverse=True)
    with pytest.raises(MXNetError, match="index"):
        ds.shard(4, 4)


def test_lazy_and_eager_transforms_call_the_function_when_expected():
    calls = []

    def fn(x):
        calls.append(x)
        return x * 2
    ds = gdata.SimpleDataset([1, 2, 3])
    lazy = ds.transform(fn)
    assert calls == [] and lazy[2] == 6 and lazy[2] == 6 and calls == [3, 3]
    calls.clear()
    eager = ds.transform(fn, lazy=False)
    assert calls == [1, 2, 3] and list(eager) == [2, 4, 6] and calls == [1, 2, 3]


def test_array_dataset_pairs_its_arrays_and_checks_lengths():
    x, y = np.arange(12).reshape(6, 2), mx.nd.array(np.arange(6) * 10)
    ds = gdata.ArrayDataset(x, y)
    a, b = ds[4]
    assert a.tolist() == [8, 9] and b == 40.0 and not isinstance(b, mx.nd.NDArray)
    assert gdata.ArrayDataset(x)[1].tolist() == [2, 3]
    with pytest.raises(MXNetError, match="same length"):
        gdata.ArrayDataset(x, [1, 2])


def _write_records(path, payloads):
    w = mx.recordio.MXIndexedRecordIO(str(path.with_suffix(".idx")), str(path), "w")
    for i, p in enumerate(payloads):
        w.write_idx(i, p)
    w.close()


def test_record_file_dataset_reads_records_in_index_order_from_many_threads(tmp_path):
    payloads = [bytes([i]) * (i * 37 % 300 + 1) for i in range(40)]
    rec = tmp_path / "r.rec"
    _write_records(rec, payloads)
    ds = gdata.RecordFileDataset(str(rec))
    assert len(ds) == 40 and ds[5] == payloads[5] and ds[-1] == payloads[-1]
    bad = []

    def read(offset):
        for k in range(200):
            i = (k * 7 + offset) % 40
            if ds[i] != payloads[i]:
                bad.append(i)
    threads = [threading.Thread(target=read, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
    loader = gdata.DataLoader(ds, batch_size=5, num_workers=2, batchify_fn=list)
    assert [r for batch in loader for r in batch] == payloads
    os.remove(rec.with_suffix(".idx"))
    with pytest.raises(MXNetError, match=r"r\.idx"):
        gdata.RecordFileDataset(str(rec))


# --- samplers -----------------------------------------------------------------------------------


def test_samplers():
    assert list(gdata.SequentialSampler(4, start=3)) == [3, 4, 5, 6]
    np.random.seed(3)
    first = list(gdata.RandomSampler(20))
    np.random.seed(3)
    assert list(gdata.RandomSampler(20)) == first and sorted(first) == list(range(20))
    assert first != list(range(20))
    assert list(gdata.FilterSampler(lambda s: s < 0, [1, -1, 2, -2])) == [1, 3]
    assert list(gdata.IntervalSampler(5, 2, rollover=False)) == [0, 2, 4]
    assert len(gdata.IntervalSampler(5, 2, rollover=False)) == 3 and len(gdata.IntervalSampler(5, 2)) == 5
    with pytest.raises(MXNetError, match="last_batch"):
        gdata.BatchSampler(gdata.SequentialSampler(3), 2, "drop")


@pytest.mark.parametrize("mode,passes", [
    ("keep", [[[0, 1, 2], [3, 4, 5], [6]]] * 2),
    ("discard", [[[0, 1, 2], [3, 4, 5]]] * 2),
    ("rollover", [[[0, 1, 2], [3, 4, 5]], [[6, 0, 1], [2, 3, 4]], [[5, 6, 0], [1, 2, 3], [4, 5, 6]]]),
])
def test_batch_sampler_last_batch(mode, passes):
    b = gdata.BatchSampler(gdata.SequentialSampler(7), 3, mode)
    for expected in passes:
        assert len(b) == len(expected)
        assert list(b) == expected


# --- batchify -----------------------------------------------------------------------------------


def test_batchify_functions():
    s = batchify.Stack()([np.ones((2, 3), "int32"), np.zeros((2, 3), "int32")])
    assert s.shape == (2, 2, 3) and s.dtype == np.int32 and s.asnumpy()[0].sum() == 6
    with pytest.raises(MXNetError, match="one shape"):
        batchify.Stack()([np.ones(2), np.ones(3)])
    p = batchify.Pad(val=-1, dtype="float32", round_to=3)([np.ones((1, 2)), np.full((2, 1), 5)])
    assert p.dtype == np.float32
    assert p.asnumpy().tolist() == [[[1, 1, -1], [-1, -1, -1], [-1, -1, -1]],
                                    [[5, -1, -1], [5, -1, -1], [-1, -1, -1]]]
    a = batchify.Append()([np.ones(2), mx.nd.zeros((3,))])
    assert [x.shape for x in a] == [(1, 2), (1, 3)]
    assert [x.shape for x in batchify.Append(expand=False)([np.ones(2)])] == [(2,)]
    g = batchify.Group(batchify.Pad(), batchify.Stack(), batchify.AsList())
    x, y, z = g([([1, 2], 0, "a"), ([3], 1, "b")])
    assert x.asnumpy().tolist() == [[1, 2], [3, 0]] and y.asnumpy().tolist() == [0, 1] and z == ["a", "b"]
    with pytest.raises(MXNetError, match="3 functions"):
        g([(1, 2)])


def test_default_batchify():
    b = gdata.default_batchify_fn([mx.nd.ones((2,)), mx.nd.zeros((2,))])
    assert b.shape == (2, 2) and b.asnumpy().tolist() == [[1, 1], [0, 0]]
    x, y = gdata.default_batchify_fn([(np.float64(1.5), 3), (np.float64(2.5), 4)])
    assert x.dtype == np.float64 and y.asnumpy().tolist() == [3, 4]
    with pytest.raises(MXNetError, match="batchify_fn"):
        gdata.default_batchify_fn([[1, 2], [3]])


# --- DataLoader ---------------------------------------------------------------------------------


class Squares(gdata.Dataset):
    """Sample i: (an NDArray of i's, i * i)."""

    def __len__(self):
        return 23

    def __getitem__(self, i):
        if i >= len(self):
            raise IndexError(f"sample {i} of {len(self)}")
        return mx.nd.full((3,), i), i * i


def _as_lists(loader):
    return [[part.asnumpy().tolist() for part in batch] for batch in loader]


@pytest.mark.parametrize("last_batch,count", [("keep", 5), ("discard", 4), ("rollover", 4)])
def test_loader_batches_match_across_workers_and_threads(last_batch, count):
    serial = _as_lists(gdata.DataLoader(Squares(), 5, last_batch=last_batch))
    assert len(serial) == count and serial[0] == [[[i] * 3 for i in range(5)], [i * i for i in range(5)]]
    assert sum(len(b[1]) for b in serial) == (23 if last_batch == "keep" else 20)
    for kw in ({"num_workers": 2, "thread_pool": True}, {"num_workers": 2},
               {"num_workers": 2, "prefetch": 0}):
        assert _as_lists(gdata.DataLoader(Squares(), 5, last_batch=last_batch, **kw)) == serial


def test_loader_arguments_and_contexts():
    with pytest.raises(MXNetError, match="batch_size"):
        gdata.DataLoader([1, 2])
    with pytest.raises(MXNetError, match="not both"):
        gdata.DataLoader([1, 2], 1, shuffle=True, sampler=gdata.SequentialSampler(2))
    with pytest.raises(MXNetError, match="batch_sampler"):
        gdata.DataLoader([1, 2], 1, batch_sampler=gdata.BatchSampler(gdata.SequentialSampler(2), 1))
    x = np.random.uniform(size=(10, 4))
    for kw in ({}, {"num_workers": 2}, {"num_workers": 1, "thread_pool": True}):
        loader = gdata.DataLoader(gdata.ArrayDataset(x), 4, pin_memory=True, **kw)
        batches = list(loader)
        assert len(loader) == 3 and all(b.context == mx.cpu_pinned(0) for b in batches)
        np.testing.assert_array_equal(np.concatenate([b.asnumpy() for b in batches]), x)
    np.random.seed(0)
    shuffled = np.concatenate([b.asnumpy() for b in gdata.DataLoader(x, 3, shuffle=True)])
    assert not np.array_equal(shuffled, x) and np.array_equal(np.sort(shuffled, axis=0), np.sort(x, axis=0))


def _structured(samples):
    return {"ids": [int(s[1]) for s in samples], "name": "batch", "raw": b"\x00\x01",
            "data": (np.stack([s[0].asnumpy() for s in samples]), None, 2.5, True)}


def test_worker_batches_of_any_supported_structure_come_back_unchanged():
    serial = list(gdata.DataLoader(Squares(), 4, batchify_fn=_structured))
    procs = list(gdata.DataLoader(Squares(), 4, batchify_fn=_structured, num_workers=2))
    assert len(procs) == len(serial) == 6
    for a, b in zip(serial, procs):
        assert a["ids"] == b["ids"] and b["name"] == "batch" and b["raw"] == b"\x00\x01"
        np.testing.assert_array_equal(a["data"][0], b["data"][0])
        assert b["data"][1:] == (None, 2.5, True) and isinstance(b["data"], tuple)


def _bad_index(samples):
    raise IndexError("no such sample")


def test_worker_errors_reach_the_loader():
    it = iter(gdata.DataLoader(Squares(), 4, batchify_fn=_bad_index, num_workers=2))
    with pytest.raises(IndexError, match=r"worker 0 \(pid \d+\) failed: IndexError: no such sample"):
        next(it)
    assert it.worker_pids() and _alive(it.worker_pids()) == []
    loader = gdata.DataLoader(Squares(), 2, batchify_fn=lambda s: object(), num_workers=1)
    with pytest.raises(MXNetError, match="cannot send a value of type builtins.object"):
        list(loader)


class Slow(gdata.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(3)
        return i


def test_a_batch_later_than_the_timeout_is_an_error():
    for kw in ({"num_workers": 1}, {"num_workers": 1, "thread_pool": True}):
        with pytest.raises(multiprocessing.TimeoutError, match="timeout=0.5"):
            next(iter(gdata.DataLoader(Slow(), 1, timeout=0.5, **kw)))


class Noise(gdata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return np.random.uniform(size=(2,))


def test_workers_draw_different_random_numbers_each_and_each_pass():
    np.random.seed(5)
    loader = gdata.DataLoader(Noise(), 1, num_workers=2)
    one = np.concatenate([b.asnumpy() for b in loader])
    two = np.concatenate([b.asnumpy() for b in loader])
    assert len(np.unique(one.round(12))) == one.size and not np.allclose(one, two)
    np.random.seed(5)
    again = np.concatenate([b.asnumpy() for b in gdata.DataLoader(Noise(), 1, num_workers=2)])
    np.testing.assert_array_equal(one, again)


def _alive(pids):
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    out.append(pid)
        except OSError:
            pass
    return out


def _wait_gone(pids, seconds=10.0):
    deadline = time.time() + seconds
    while _alive(pids) and time.time() < deadline:
        time.sleep(0.05)
    return _alive(pids)


def test_no_worker_outlives_its_pass():
    data = np.arange(40, dtype="float32").reshape(20, 2)
    loader = gdata.DataLoader(data, 2, num_workers=2)
    it = iter(loader)
    pids = it.worker_pids()
    assert len(pids) == 2 and len(_alive(pids)) == 2
    assert sum(1 for _ in it) == 10
    assert _alive(pids) == []                      # a finished pass
    it = iter(loader)
    next(it)
    pids = it.worker_pids()
    assert len(_alive(pids)) == 2
    del it                                         # an abandoned pass
    assert _alive(pids) == []
    for _ in loader:                               # a loop left by break
        break
    gc.collect()
    assert _alive(pids) == []
    reloading = gdata.DataLoader(data, 2, num_workers=2, auto_reload=True)
    pids = reloading._ready.worker_pids()
    assert len(_alive(pids)) == 2
    del reloading                                  # a collected loader with a prefetched pass
    gc.collect()
    assert _alive(pids) == []


def test_workers_end_when_the_parent_is_killed(tmp_path):
    script = tmp_path / "victim.py"
    script.write_text(textwrap.dedent("""
        import os, signal, sys, numpy as np
        from symjit.gluon.data import DataLoader
        it = iter(DataLoader(np.zeros((100, 3)), 1, num_workers=2))
        next(it)
        print(" ".join(map(str, it.worker_pids())), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == -9, out.stderr
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2
    assert _wait_gone(pids) == []

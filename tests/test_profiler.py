"""mx.profiler: Chrome-trace events per kernel call (named by fused group), compile and imperative
events, user annotations, pause/resume, and results equal to the unprofiled executor's."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from examples.nets import mlp  # noqa: E402

prof = mx.profiler


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "trace.json"
    prof.set_config(filename=str(path), profile_all=True)
    prof.dumps(reset=True)
    yield path
    prof.set_state("stop")
    prof.dumps(reset=True)
    prof.set_config(filename="profile.json")


def bound(seed=0):
    ex = mlp().simple_bind(mx.cpu(), data=(8, 784))
    rng = np.random.default_rng(seed)
    for name, arr in ex.arg_dict.items():
        arr[:] = rng.normal(0, 0.1, arr.shape) if name != "softmax_label" else rng.integers(0, 10, arr.shape)
    return ex


def events(path):
    doc = json.loads(path.read_text())
    assert doc["displayTimeUnit"] == "ms"
    for e in doc["traceEvents"]:
        assert {"name", "ph", "pid"} <= set(e)
        if e["ph"] == "X":
            assert e["dur"] >= 0 and e["ts"] >= 0 and "cat" in e
    return doc["traceEvents"]


def test_kernel_events_by_group_and_same_results(trace):
    plain = bound()
    plain.forward(is_train=True)
    plain.backward()
    ex = bound()
    prof.set_state("run")
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward()
    prof.set_state("stop")
    for name in plain.grad_dict:
        np.testing.assert_array_equal(ex.grad_dict[name].asnumpy(), plain.grad_dict[name].asnumpy())
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), plain.outputs[0].asnumpy())
    prof.dump()
    evs = events(trace)
    kernels = [e for e in evs if e.get("cat") == "kernel"]
    names = {e["name"] for e in kernels}
    assert "k0 fc1+relu1" in names and any("fc3" in n for n in names)
    groups = len(ex._programs["train_prof"].program.segments["forward"]) + \
        len(ex._programs["train_prof"].program.segments["backward"])
    assert len(kernels) == 2 * groups
    assert any(e.get("cat") == "compile" for e in evs)
    stats = json.loads(prof.dumps(format="json"))
    assert stats == {} or all(v["count"] >= 1 for v in stats.values())      # dump(finished) cleared them


def test_pause_resume_stop_and_stats(trace):
    ex = bound()
    ex.forward(is_train=True)                      # not running: nothing recorded
    prof.set_state("run")
    ex.forward(is_train=True)
    prof.pause()
    ex.forward(is_train=True)
    prof.resume()
    mx.nd.FullyConnected(mx.nd.ones((2, 3)), mx.nd.ones((4, 3)), mx.nd.zeros((4,)), num_hidden=4)
    prof.set_state("stop")
    ex.forward(is_train=True)
    stats = json.loads(prof.dumps(format="json"))
    assert stats["kernel:k0 fc1+relu1"]["count"] == 1
    assert stats["imperative:FullyConnected"]["count"] == 1
    table = prof.dumps(sort_by="count")
    assert table.splitlines()[0] == "Profile Statistics (ms)" and "kernel:k0 fc1+relu1" in table
    prof.dumps(reset=True)
    assert json.loads(prof.dumps(format="json")) == {}


def test_user_annotations(trace):
    dom = prof.Domain("data")
    prof.set_state("run")
    with dom.new_task("decode"):
        pass
    counter = dom.new_counter("queued", 3)
    counter += 2
    dom.new_marker("epoch").mark("global")
    prof.set_state("stop")
    prof.dump()
    evs = events(trace)
    assert [e["name"] for e in evs if e["ph"] == "X"] == ["decode"]
    assert [e["args"]["queued"] for e in evs if e["ph"] == "C"] == [3, 5]
    assert [(e["name"], e["s"]) for e in evs if e["ph"] == "i"] == [("epoch", "g")]


def test_bad_settings():
    with pytest.raises(MXNetError, match="unknown options"):
        prof.set_config(profile_everything=True)
    with pytest.raises(MXNetError, match="state must be 'run' or 'stop'"):
        prof.set_state("go")
    with pytest.raises(MXNetError, match="format"):
        prof.dumps(format="xml")
    with pytest.raises(MXNetError, match="stop\\(\\) without start"):
        prof.Task(prof.Domain("d"), "t").stop()


@pytest.mark.gpu
def test_kernel_events_on_gpu(trace):
    ex = mlp().simple_bind(mx.gpu(0), data=(2, 784))
    prof.set_state("run")
    ex.forward(is_train=True)
    ex.backward()
    prof.set_state("stop")
    prof.dump()
    assert "k0 fc1+relu1" in {e["name"] for e in events(trace) if e.get("cat") == "kernel"}

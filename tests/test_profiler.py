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
    prof.set_config(filename=str(path), profile_all=True, aggregate_stats=True)
    prof.dump()                     # drops the trace's events so far
    prof.dumps(reset=True)          # and the statistics
    yield path
    prof.set_state("stop")
    prof.dump()
    prof.dumps(reset=True)
    prof.set_config(filename="profile.json", aggregate_stats=False)


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
    stats = json.loads(prof.dumps(format="json"))["Time"]       # dump(finished) leaves the statistics
    assert stats["kernel"]["k0 fc1+relu1"]["Count"] == 2
    assert sum(v["Count"] for v in stats["kernel"].values()) == 2 * groups


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
    stats = json.loads(prof.dumps(format="json"))["Time"]
    assert stats["kernel"]["k0 fc1+relu1"]["Count"] == 1
    assert stats["operator"]["FullyConnected"]["Count"] == 1
    table = prof.dumps(sort_by="count")
    assert "Profile Statistics:" in table and "k0 fc1+relu1" in table
    prof.dumps(reset=True)
    assert json.loads(prof.dumps(format="json"))["Time"] == {}


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


def _sorted_by(rows, field, ascending):
    values = [r[field] for r in rows.values()]
    return values == sorted(values, reverse=not ascending)


def test_aggregate_layout_sorting_and_reset(trace):
    prof.set_state("run")
    x = mx.nd.ones((4, 4))
    for _ in range(3):
        x = x + 1                                  # a number operand: MXNet's scalar operator
    y = 2 - mx.nd.sqrt(x)                          # the number on the left
    dom = prof.Domain("steps")
    for i in range(4):
        with dom.new_task(f"t{i % 2}"):
            pass
    prof.set_state("stop")
    np.testing.assert_array_equal(y.asnumpy(), 0.0)
    doc = json.loads(prof.dumps(format="json"))
    assert set(doc) == {"Time", "Memory", "Unit"} and doc["Unit"] == {"Time": "ms", "Memory": "kB"}
    ops = doc["Time"]["operator"]
    assert ops["_plus_scalar"]["Count"] == 3 and ops["sqrt"]["Count"] == 1
    assert ops["_rminus_scalar"]["Count"] == 1 and "broadcast_add" not in ops
    assert ops["_ones"]["Count"] == 1             # mx.nd.ones: MXNet's _ones operator
    for row in ops.values():
        assert set(row) == {"Count", "Total", "Min", "Max", "Avg"}
        assert row["Min"] <= row["Avg"] <= row["Max"] <= row["Total"] + 1e-9
        assert abs(row["Avg"] * row["Count"] - row["Total"]) < 1e-5
    assert {n: r["Count"] for n, r in doc["Time"]["steps"].items()} == {"t0": 2, "t1": 2}
    fields = {"total": "Total", "avg": "Avg", "min": "Min", "max": "Max", "count": "Count"}
    for key, field in fields.items():
        for ascending in (False, True):
            again = json.loads(prof.dumps(format="json", sort_by=key, ascending=ascending))
            assert all(_sorted_by(rows, field, ascending) for rows in again["Time"].values())
    table = prof.dumps(sort_by="count", ascending=True)
    lines = table.splitlines()
    at = lines.index("operator")
    assert lines[at + 1].startswith("=")
    assert "Total Count" in lines[at + 2] and "Avg Time (ms)" in lines[at + 2]
    names = [line.split()[0] for line in lines[at + 4:] if line.strip()][:4]
    assert names[-1] == "_plus_scalar"             # 3 calls: last of the category's rows, ascending
    assert json.loads(prof.dumps(format="json", reset=True))["Time"]    # returned, then cleared
    assert json.loads(prof.dumps(format="json"))["Time"] == {}
    with pytest.raises(MXNetError, match="sort_by"):
        prof.dumps(sort_by="median")


def test_aggregate_off_collects_nothing(trace):
    prof.set_config(aggregate_stats=False)
    prof.set_state("run")
    mx.nd.sqrt(mx.nd.ones((2,)))
    prof.set_state("stop")
    assert json.loads(prof.dumps(format="json"))["Time"] == {}
    prof.dump()
    assert [e["name"] for e in events(trace) if e.get("cat") == "operator"] == ["_ones", "sqrt"]


class _AddOne(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 1)


@mx.operator.register("prof_add_one")
class _AddOneProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def infer_shape(self, in_shape):
        return [in_shape[0]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _AddOne()


def test_custom_op_statistics(trace):
    prof.set_state("run")
    out = mx.nd.Custom(mx.nd.zeros((3,)), op_type="prof_add_one")
    ex = mx.sym.Custom(mx.sym.Variable("a"), op_type="prof_add_one").simple_bind(mx.cpu(), a=(3,))
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((3,)))
    prof.set_state("stop")
    np.testing.assert_array_equal(out.asnumpy(), 1.0)
    np.testing.assert_array_equal(ex.grad_dict["a"].asnumpy(), 1.0)
    custom = json.loads(prof.dumps(format="json"))["Time"]["Custom Operator"]
    assert custom["prof_add_one::pure_python"]["Count"] == 2
    assert custom["prof_add_one::_plus_scalar"]["Count"] == 2
    assert custom["_backward_prof_add_one::pure_python"]["Count"] == 1
    assert custom["_backward_prof_add_one::_mul_scalar"]["Count"] == 1

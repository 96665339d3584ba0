"""`symjit compile`: text, json, source, dot, inference vs training plans, errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from symjit.cli import main

ROOT = Path(__file__).resolve().parents[1]
MLP_JSON = str(ROOT.parent / "shared" / "data" / "mxnet" / "mlp-symbol.json")


def run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(["compile", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_text_report_of_an_mxnet_symbol(capsys):
    rc, out, _ = run(capsys, MLP_JSON, "--shape", "data=6,8")
    assert rc == 0
    for section in ("== graph (training", "== fused groups", "== memory plan ==", "in-place:"):
        assert section in out
    assert "_backward_BatchNorm" in out and "planned" in out


def test_json_report_and_inference_plan_is_smaller(capsys):
    rc, out, _ = run(capsys, MLP_JSON, "--shape", "data=6,8", "--format", "json")
    train = json.loads(out)
    rc2, out2, _ = run(capsys, MLP_JSON, "--shape", "data=6,8", "--format", "json", "--grad-req", "null")
    infer = json.loads(out2)
    assert rc == rc2 == 0
    assert set(train) == {"nodes", "groups", "memory", "launches"}
    assert infer["memory"]["planned_bytes"] < train["memory"]["planned_bytes"]
    assert infer["memory"]["planned_bytes"] <= infer["memory"]["naive_bytes"]
    fused = [g["ops"] for g in infer["groups"] if len(g["ops"]) > 1]
    assert ["fc1", "bn1", "relu1"] in fused
    assert all(n["phase"] == "forward" for n in infer["nodes"])


def test_source_dot_and_module_attr(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    dot = tmp_path / "g.dot"
    rc, out, _ = run(capsys, "examples.nets:mlp", "--shape", "data=10,784", "--source", "--dot", str(dot))
    assert rc == 0
    assert "@numba.njit(cache=True" in out and "def forward(" in out and "def backward(" in out
    text = dot.read_text()
    assert text.startswith("digraph") and "group0" in text and "fc1" in text


def test_no_fusion_gives_one_kernel_per_op(capsys):
    _, fused, _ = run(capsys, MLP_JSON, "--shape", "data=6,8", "--format", "json", "--grad-req", "null")
    _, unfused, _ = run(capsys, MLP_JSON, "--shape", "data=6,8", "--format", "json", "--grad-req", "null",
                        "--no-fusion")
    kernels = [g for g in json.loads(fused)["groups"] if not g["view"]]
    assert len(json.loads(unfused)["groups"]) == len(json.loads(unfused)["nodes"])
    assert len(kernels) < len(json.loads(unfused)["groups"])


@pytest.mark.parametrize("argv, message", [
    (["missing.json", "--shape", "data=1,2"], "missing.json"),
    ([MLP_JSON], "unknown shapes"),
    ([MLP_JSON, "--shape", "data=6,9", "--shape", "fc1_weight=16,8"], "FullyConnected 'fc1'"),
    (["examples.nets:nope", "--shape", "data=1,2"], "cannot load"),
])
def test_errors_are_clear(capsys, monkeypatch, argv, message):
    monkeypatch.chdir(ROOT)
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and message in err


def test_timings_compile_each_distinct_kernel_once(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SYMJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.syspath_prepend(str(ROOT))
    rc, out, _ = run(capsys, "examples.nets:lenet", "--shape", "data=2,1,28,28", "--grad-req", "null",
                     "--format", "json", "--timings")
    assert rc == 0
    doc = json.loads(out)
    timings = {t["kernel"]: t for t in doc["timings"]}
    convs = [g for g in doc["groups"] if g["ops"][0].startswith("conv")]
    assert len(convs) == 2 and convs[0]["kernel"] == convs[1]["kernel"]   # geometry is an argument
    assert timings[convs[0]["kernel"]]["groups"] == [convs[0]["id"], convs[1]["id"]]
    # kernels are modules of their own, shared by programs: an earlier test may have imported one
    # (from its own cache directory, where compile workers may have cached it for that test)
    assert all(t["seconds"] >= 0 and t["origin"] in ("compiled", "this process", "kernel cache")
               for t in timings.values())
    rc, out, _ = run(capsys, "examples.nets:lenet", "--shape", "data=2,1,28,28", "--grad-req", "null",
                     "--timings")
    assert rc == 0 and "== compile time per kernel (" in out and "(from this process)" in out
    rc, _, err = run(capsys, "examples.nets:lenet", "--shape", "data=2,1,28,28", "--target", "cuda",
                     "--timings")
    assert rc == 2 and "--timings compiles cpu kernels" in err


def test_cache_info_and_clear(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SYMJIT_CACHE_DIR", str(tmp_path))
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "keep.txt").write_text("not ours")
    import symjit as mx
    x = mx.sym.Variable("x")
    (mx.sym.exp(x) * 2).bind(mx.cpu(), {"x": mx.nd.ones((3,))}).forward()
    assert main(["cache", "info", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["directory"] == str(tmp_path / "kernels") and info["modules"] >= 1
    assert info["compiled_functions"] >= 1 and info["bytes"] > 0
    assert main(["cache", "clear"]) == 0
    assert "removed" in capsys.readouterr().out
    assert main(["cache", "info"]) == 0
    assert "0 generated modules, 0 compiled functions" in capsys.readouterr().out
    assert (tmp_path / "kernels" / "keep.txt").exists()


def test_a_long_bind_logs_one_line(caplog, monkeypatch, tmp_path):
    import logging

    import symjit as mx
    import symjit.executor as executor
    monkeypatch.setenv("SYMJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(executor, "COMPILE_LOG_SECONDS", 0.0)
    x = mx.sym.Variable("x")
    with caplog.at_level(logging.INFO, logger="symjit"):
        mx.sym.tanh(mx.sym.FullyConnected(x, num_hidden=3, name="fc")).simple_bind(mx.cpu(), x=(2, 5))
    lines = [r.getMessage() for r in caplog.records if r.name == "symjit"]
    assert len(lines) == 1 and lines[0].startswith("bind: ") and "distinct" in lines[0], lines


def test_long_bind_shows_progress_on_a_terminal(monkeypatch):
    """A bind whose hosted kernels take longer than PROGRESS_SECONDS rewrites one terminal line
    with its progress and erases it at the end; nothing on a stream that is not a terminal."""
    import io

    import symjit as mx
    from symjit import executor

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.syspath_prepend(str(ROOT))
    from examples.nets import deep_mlp
    for stream, shows in ((Tty(), True), (io.StringIO(), False)):
        monkeypatch.setattr(executor, "PROGRESS_STREAM", stream)
        monkeypatch.setattr(executor, "PROGRESS_SECONDS", 0.0)
        deep_mlp(layers=10, units=8).simple_bind(mx.cpu(), data=(2, 8))
        text = stream.getvalue()
        assert ("symjit: compiling kernels " in text) == shows, text[:200]
        if shows:
            last = text.rsplit("\r", 2)
            assert "/" in text and last[-1] == "" and last[-2].strip() == ""   # erased at the end

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

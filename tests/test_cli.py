"""`symjit compile`: text, json, source, dot, inference vs training plans, errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
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
    ([MLP_JSON], "no shape for the data input(s) 'data'; give one with --shape data=D1,D2,..."),
    ([MLP_JSON, "--shape", "data=6,9", "--shape", "fc1_weight=16,8"], "FullyConnected 'fc1'"),
    (["examples.nets:nope", "--shape", "data=1,2"], "cannot load"),
])
def test_errors_are_clear(capsys, monkeypatch, argv, message):
    monkeypatch.chdir(ROOT)
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and message in err


def _small_convnet():
    import symjit as mx
    x = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=4, name="conv0")
    x = mx.sym.Activation(mx.sym.BatchNorm(x, name="bn0"), act_type="relu", name="relu0")
    x = mx.sym.FullyConnected(mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), name="pool"), num_hidden=3,
                              name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax")


@pytest.mark.parametrize("shapes, message", [
    ([], "symjit compile: error: no shape for the data input(s) 'data'; give one with "
         "--shape data=N,C,H,W (for example --shape data=1,3,224,224)"),
    (["--shape", "dat=1,3,8,8"],
     "symjit compile: error: --shape dat=...: the symbol has no input named 'dat'; its data input(s): "
     "'data'; give a shape with --shape data=N,C,H,W (for example --shape data=1,3,224,224)"),
])
def test_a_missing_shape_names_the_data_inputs(capsys, tmp_path, shapes, message):
    path = tmp_path / "net-symbol.json"
    path.write_text(_small_convnet().tojson())
    rc, _, err = run(capsys, str(path), *shapes)
    assert rc == 2 and err.strip() == message
    assert "weight" not in err and "moving" not in err and "label" not in err
    rc, out, err = run(capsys, str(path), "--shape", "data=1,3,8,8", "--grad-req", "null")
    assert rc == 0 and "conv0 = Convolution(" in out, err


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


@pytest.mark.parametrize("spec, shape", [("examples.nets:mlp", "data=2,8"),
                                         ("examples.nets:lenet", "data=1,1,28,28"),
                                         ("examples.nets:resnet", "data=1,3,32,32")])
def test_cuda_text_report_shows_every_launch_kind(capsys, monkeypatch, spec, shape):
    """Grid-stride kernels report elements, block reductions blocks, tiled GEMMs tiles (code is
    generated, not compiled: no GPU needed)."""
    monkeypatch.chdir(ROOT)
    argv = (spec, "--shape", shape, "--target", "cuda")
    rc, out, err = run(capsys, *argv, "--format", "json")
    assert rc == 0, err
    launches = json.loads(out)["launches"]
    rc, out, err = run(capsys, *argv)
    assert rc == 0, err
    plan = out.split("== launch plan (cuda) ==\n")[1].split("\n==")[0].splitlines()
    assert len(plan) == len(launches)
    for line, la in zip(plan, launches):
        kind, n = next((k, v) for k, v in la.items() if k in ("elements", "blocks", "tiles"))
        assert line.startswith(f"  {la['kernel']}: {n} {kind if n != 1 else kind[:-1]}, grid {la['grid']}")
    kinds = {k for la in launches for k in la if k in ("blocks", "tiles")}
    assert kinds or spec.endswith("lenet")   # the simulator tiles small products only


def test_ptx_without_numba_cuda_says_to_install_the_extra():
    """numba's bundled numba.cuda is no substitute for numba-cuda: without the extra, --emit ptx
    says how to install it (with it, the PTX comes out). Run without the simulator, which would
    stop it first."""
    from importlib import metadata
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    done = subprocess.run([sys.executable, "-m", "symjit.cli", "compile", MLP_JSON, "--shape", "data=2,8",
                           "--grad-req", "null", "--target", "cuda", "--emit", "ptx"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    try:
        metadata.distribution("numba-cuda")
    except metadata.PackageNotFoundError:
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == (
            "symjit compile: error: PTX needs numba-cuda with the CUDA compiler packages (pip install "
            "'symjit[cuda]'); numba-cuda is not installed, and the numba.cuda bundled with numba cannot "
            "compile symjit's kernels")
    else:
        assert done.returncode == 0, done.stderr[-2000:]
        assert "// ---- kernel k" in done.stdout and ".target sm_90" in done.stdout


def test_cache_info_and_clear(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SYMJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SYMJIT_INTERPRET", "0")   # compiled at the bind, into the cache
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

"""`symjit compile --format dot` / `--dot FILE`: the fused graph of ResNet-50 as a readable picture
(parameters folded into their operators, one cluster per kernel, the text report's labels, a
size that Graphviz renders without scaling it down)."""
from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import symjit as mx
from examples import nets
from symjit.cli import main

ROOT = Path(__file__).resolve().parents[1]
NODE = re.compile(r'^\s*(\w+) \[label=(?:"((?:[^"\\]|\\.)*)"|(\w+))', re.M)   # quoted or a bare ID
CLUSTER = re.compile(r"subgraph (cluster_\w+) \{(.*?)\n\t\}", re.S)
# the bound the picture of ResNet-50 stays under, in points (PNG at Graphviz's 96 dpi: 4/3 pixel each)
LONG_SIDE_PT = {"null": 3000, "write": 6500}


def compile_cli(tmp: Path, *argv: str) -> tuple[str, str]:
    """``symjit compile resnet50.json --shape data=1,3,224,224 ARGV --dot FILE``: (stdout, the DOT)."""
    path = tmp / f"g{len(list(tmp.iterdir()))}.dot"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["compile", str(tmp / "resnet50.json"), "--shape", "data=1,3,224,224", *argv,
                   "--dot", str(path)])
    assert rc == 0
    return out.getvalue(), path.read_text()


@pytest.fixture(scope="module")
def r50(tmp_path_factory):
    """ResNet-50 v1 (the Gluon model zoo's shape, built with mx.sym) saved as a symbol file, and per
    grad_req its text report, JSON report and picture."""
    tmp = tmp_path_factory.mktemp("dot")
    with mx.name.NameManager():   # automatic names (flatten0) whatever other tests built before
        sym = nets.resnet(50)
    sym.save(str(tmp / "resnet50.json"))
    out = {"symbol": sym, "file": str(tmp / "resnet50.json")}
    for req in ("null", "write"):
        text, dot = compile_cli(tmp, "--grad-req", req)
        doc, dot_again = compile_cli(tmp, "--grad-req", req, "--format", "json")
        assert dot_again == dot
        out[req] = {"text": text, "json": json.loads(doc), "dot": dot}
    return out


def node_labels(text: str) -> list[tuple[str, str]]:
    """(node, label) of each node statement of DOT source."""
    return [(name, quoted or bare) for name, quoted, bare in NODE.findall(text)]


def nodes(dot: str) -> dict[str, str]:
    return dict(node_labels(dot))


@pytest.mark.parametrize("req", ["null", "write"])
def test_parameters_are_folded_into_their_operators(r50, req):
    sym = r50["symbol"]
    params = [n for n in sym.list_arguments() + sym.list_auxiliary_states()
              if n not in ("data", "softmax_label")]
    labels = nodes(r50[req]["dot"]).values()
    for p in params:
        assert not any(lab.startswith(p + " (") for lab in labels), p
    assert 'label="data (1,3,224,224)"' in r50[req]["dot"]
    # the first convolution's weight and its BatchNorm's four vectors, with their shapes
    stem = "stem_conv: Convolution\\nweight (64,3,7,7)"
    bn = "gamma, beta, moving_mean, moving_var (64,)"
    assert stem in labels and any(lab.startswith("stem_bn: ") and lab.endswith(bn) for lab in labels)


@pytest.mark.parametrize("req", ["null", "write"])
def test_one_cluster_per_kernel_holding_its_operators(r50, req):
    groups = r50[req]["json"]["groups"]
    clusters = dict(CLUSTER.findall(r50[req]["dot"]))
    kernels = [g for g in groups if not g["view"]]
    assert len(clusters) == len(kernels) and len(kernels) > 50
    text = r50[req]["text"]
    for g in kernels:
        body = clusters[f"cluster_g{g['id']}"]
        inside = [lab.split("\\n")[0].split(":")[0] for name, lab in node_labels(body)
                  if name.startswith("o")]
        assert inside == g["ops"]
        heading = re.search(rf"^  (group{g['id']}\[[^\]]+\]): ", text, re.M).group(1)
        assert f'label="{heading}' in body   # the text report's words for the kernel


def test_view_label_is_the_text_reports(r50):
    text, dot = r50["null"]["text"], r50["null"]["dot"]
    line = re.search(r"^  (group\d+\[(view[^\]]*)\]): flatten0$", text, re.M)
    assert line is not None and line.group(2) == "view, no kernel"
    label = nodes(dot)[next(n for n, lab in nodes(dot).items() if lab.startswith("flatten0"))]
    assert label.endswith("\\n" + line.group(1))
    assert "style=dashed" in next(x for x in dot.splitlines() if "flatten0" in x)
    assert "[injective]" not in dot and "[injective]" not in text
    # the four views of each BatchNorm's vectors are folded with them: no node of their own
    assert not any(lab.startswith("stem_bn_0_view") for lab in nodes(dot).values())


@pytest.mark.parametrize("req", ["null", "write"])
def test_resnet50_node_count_stays_small(r50, req):
    """One node per kernel (its label) and per operator but the views of parameters, plus the data
    and label inputs: 235 for inference, against 571 when every parameter and view was a
    node of its own."""
    sym, groups = r50["symbol"], r50[req]["json"]["groups"]
    of_params = set(sym.list_arguments() + sym.list_auxiliary_states()) - {"data", "softmax_label"}
    for g in groups:   # in schedule order: views of views of parameters too
        if g["view"] and set(g["inputs"]) <= of_params:
            of_params.update(g["outputs"])
    n_ops = sum(len(g["ops"]) for g in groups if not set(g["outputs"]) <= of_params)
    n_kernels = sum(not g["view"] for g in groups)
    count = len(nodes(r50[req]["dot"]))
    assert count <= n_ops + n_kernels + 2
    assert count < {"null": 250, "write": 800}[req]


@pytest.mark.parametrize("req", ["null", "write"])
def test_resnet50_renders_unscaled_within_a_few_thousand_pixels(r50, req, tmp_path):
    assert shutil.which("dot"), "Graphviz `dot` is required (apt-get install graphviz)"
    src = tmp_path / "g.dot"
    src.write_text(r50[req]["dot"])
    done = subprocess.run(["dot", "-Tsvg", str(src)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Warning" not in done.stderr, done.stderr
    width, height = (float(x) for x in re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"',
                                                 done.stdout).groups())
    assert height > width   # top to bottom
    assert max(width, height) <= LONG_SIDE_PT[req], (width, height)


def test_format_dot_prints_the_picture_and_dot_params_draws_parameters(r50, capsys):
    argv = ["compile", r50["file"], "--shape", "data=1,3,224,224", "--grad-req", "null", "--format", "dot"]
    assert main(argv) == 0
    folded = capsys.readouterr().out
    assert folded.startswith("digraph fused {") and "== graph" not in folded
    assert main([*argv, "--dot-params"]) == 0
    shown = capsys.readouterr().out
    labels = list(nodes(shown).values())
    sym = r50["symbol"]
    for p in set(sym.list_arguments() + sym.list_auxiliary_states()) - {"data", "softmax_label"}:
        assert sum(lab.startswith(p + " (") for lab in labels) == 1, p
    views = [lab for lab in labels if lab.startswith("stem_bn_0_view")]
    assert len(views) == 1 and views[0].endswith("[view, no kernel]")
    assert len(CLUSTER.findall(shown)) == len(CLUSTER.findall(folded))


def test_dot_file_that_cannot_be_written_is_a_clear_error(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    rc = main(["compile", "examples.nets:mlp", "--shape", "data=2,784",
               "--dot", str(tmp_path / "no" / "g.dot")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("symjit compile: error: --dot ") and "Traceback" not in err

"""A long bind's progress on stderr (symjit.compiler.progress): plain lines where stderr is not a
terminal, one rewritten line on a terminal, nothing for a quick bind, and a closing line whose
counts (compiled here, by workers, from the disk cache, already loaded) add up."""
from __future__ import annotations

import io
import logging
import re
import sys
import threading
import time
from pathlib import Path

import pytest

import symjit as mx
from symjit import executor
from symjit.compiler import progress as progress_mod
from symjit.config import Config
from symjit.executor import Executor

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from examples.nets import deep_mlp  # noqa: E402

LINE = re.compile(r"^symjit: compiling kernels (\d+)/(\d+), \d+ s(, about \d+ s left)?$")
CLOSING = re.compile(r"(\d+) compiled functions = (\d+) compiled here \+ (\d+) compiled by worker "
                     r"processes \+ (\d+) from the disk cache \+ (\d+) already loaded")


class Tty(io.StringIO):
    def isatty(self):
        return True


def _bind(net, cfg: Config, stream, monkeypatch, **shapes) -> Executor:
    """``simple_bind`` with an explicit ``Config`` and progress stream."""
    monkeypatch.setattr(executor, "PROGRESS_STREAM", stream)
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    args = [mx.nd.zeros(s) for s in arg_shapes]
    grads = [mx.nd.zeros(s) for s in arg_shapes]
    aux = [mx.nd.zeros(s) for s in aux_shapes]
    return Executor(net, mx.cpu(), args, grads, "write", aux, config=cfg)


def _counts(text: str) -> dict[str, int]:
    """The closing line's counts, checked to add up."""
    last = text.rstrip("\n").split("\n")[-1].split("\r")[-1]
    assert last.startswith("symjit: bind: "), text[-400:]
    m = CLOSING.search(last)
    assert m, last
    total, here, workers, disk, loaded = map(int, m.groups())
    assert here + workers + disk + loaded == total > 0, last
    return {"total": total, "here": here, "workers": workers, "disk": disk, "loaded": loaded}


def test_slow_bind_writes_plain_lines_where_stderr_is_no_terminal(tmp_path, monkeypatch):
    # every compile counts as slow: threshold and interval 0, a fresh kernel cache
    cfg = Config(cache_dir=tmp_path, compile_workers=1, progress_seconds=0.0, progress_interval=0.0)
    stream = io.StringIO()
    _bind(deep_mlp(layers=3, units=8), cfg, stream, monkeypatch, data=(2, 8))
    text = stream.getvalue()
    assert "\r" not in text, text[:300]
    lines = text.rstrip("\n").split("\n")
    progress = [LINE.match(line) for line in lines[:-1]]
    assert progress and all(progress), lines
    done = [int(m.group(1)) for m in progress]
    assert done == sorted(done) and max(done) == int(progress[-1].group(2))   # counts up to the total
    counts = _counts(text)
    assert counts["workers"] == 0 and counts["here"] >= max(done) >= 1   # a cold cache, one process
    assert str(tmp_path / "kernels") in lines[-1]   # where the compiled code is kept

    # The same program bound again in this process: everything already loaded, and a quick bind
    # (under a threshold of a minute) writes nothing.
    again = io.StringIO()
    _bind(deep_mlp(layers=3, units=8), cfg.replace(progress_seconds=60.0), again, monkeypatch, data=(2, 8))
    assert again.getvalue() == ""
    _bind(deep_mlp(layers=3, units=8), cfg, again, monkeypatch, data=(2, 8))
    assert _counts(again.getvalue()) == dict(counts, here=0, disk=0, loaded=counts["total"])


def test_a_terminal_gets_one_rewritten_line_then_the_closing_line(tmp_path, monkeypatch):
    # program functions compiled at the bind: this process may hold the kernels from another test
    cfg = Config(cache_dir=tmp_path, compile_workers=1, progress_seconds=0.0, program_runs=0)
    stream = Tty()
    _bind(deep_mlp(layers=2, units=8), cfg, stream, monkeypatch, data=(2, 8))
    text = stream.getvalue()
    assert text.startswith("\rsymjit: compiling kernels ") and text.endswith("\n"), text[:200]
    assert text.count("\n") == 1                    # the progress line rewritten in place
    _counts(text)


def test_switched_off_by_the_setting_or_the_logger_level(tmp_path, monkeypatch, caplog):
    cfg = Config(cache_dir=tmp_path, compile_workers=1, progress_seconds=0.0, progress_interval=0.0)
    assert Config.from_env({"SYMJIT_PROGRESS": "0"}).progress is False
    stream = io.StringIO()
    with caplog.at_level(logging.INFO, logger="symjit"):
        _bind(deep_mlp(layers=2, units=8), cfg.replace(progress=False), stream, monkeypatch, data=(2, 8))
    assert stream.getvalue() == ""
    records = [r.getMessage() for r in caplog.records if r.name == "symjit" and r.levelno == logging.INFO]
    assert len(records) == 1 and records[0].startswith("bind: "), records   # the closing line, logged
    _counts("symjit: " + records[0])
    logger = logging.getLogger("symjit")
    monkeypatch.setattr(logger, "level", logging.WARNING)
    _bind(deep_mlp(layers=2, units=9), cfg, stream, monkeypatch, data=(2, 8))
    assert stream.getvalue() == ""


def test_a_long_compile_keeps_writing_and_the_ticker_ends_with_it(monkeypatch):
    """While one compile runs long, the ticker thread writes a line every interval; it exists only
    inside ``ticking()``, also when the body raises."""
    monkeypatch.setattr(progress_mod, "TICK_SECONDS", 0.02)
    stream = io.StringIO()
    p = progress_mod.Progress(Config(progress_seconds=0.0, progress_interval=0.1), stream)
    p.expect(["k0", "k1"])
    p.done("k0")
    with pytest.raises(RuntimeError), p.ticking():
        time.sleep(0.5)                             # one compile, 0.5 s
        raise RuntimeError("numba failed")
    assert not [t for t in threading.enumerate() if t.name == "symjit-progress"]
    lines = stream.getvalue().split("\n")[:-1]
    assert len(lines) >= 3, lines
    assert all(line.startswith("symjit: compiling kernels 1/2, ") for line in lines), lines
    assert "s left" in lines[-1]


def test_workers_compiles_are_counted_as_theirs(tmp_path, monkeypatch):
    # kernels no other test of this process compiles (generated modules are shared by name)
    net = mx.sym.Variable("data")
    for i, act in enumerate(("softrelu", "sigmoid", "softsign")):
        net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=7, name=f"fc{i}"), act_type=act)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=3, name="out"), name="softmax")
    cfg = Config(cache_dir=tmp_path, compile_workers=2, progress_seconds=0.0, progress_interval=0.0)
    stream = io.StringIO()
    _bind(net, cfg, stream, monkeypatch, data=(2, 7))
    counts = _counts(stream.getvalue())
    assert counts["workers"] >= 2 and counts["here"] == 0, counts

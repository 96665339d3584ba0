"""Every example and benchmark answers ``--help`` with its usage and its whole description, and runs
nothing else.

One interpreter runs all the scripts (``runpy`` with ``sys.argv = [script, '--help']``), so the cost
is one ``import symjit``; a script that ignored ``--help`` would run in it and be reported.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = {"__init__.py", "common.py", "nets.py"}   # imported by the scripts, not run
SCRIPTS = sorted(str(p.relative_to(ROOT)) for folder in ("examples", "benchmarks")
                 for p in (ROOT / folder).glob("*.py") if p.name not in LIBRARIES)

_DRIVER = r"""
import contextlib, io, json, runpy, sys
out = {}
for script in sys.argv[1:]:
    buf = io.StringIO()
    sys.argv = [script, "--help"]
    code = "returned"
    try:
        with contextlib.redirect_stdout(buf):
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:  # a script's own failure is the test's report
        code = f"{type(exc).__name__}: {exc}"
    out[script] = {"code": code, "help": buf.getvalue()}
sys.__stdout__.write("\n" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def helps() -> dict:
    proc = subprocess.run([sys.executable, "-c", _DRIVER, *SCRIPTS], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env={**__import__("os").environ, "SYMJIT_AOT": "off"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.rsplit("\n", 1)[1])


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_prints_usage_and_the_whole_description(helps, script):
    result = helps[script]
    assert result["code"] == 0, f"{script} --help: {result['code']}"
    text = result["help"]
    assert text.startswith("usage: "), text[:300]
    doc = ast.get_docstring(ast.parse((ROOT / script).read_text()))
    assert doc, f"{script} has no docstring to describe it"
    first = _words(doc.split("\n\n", 1)[0])          # the docstring's opening paragraph
    assert first in _words(text), f"{script} --help cuts its description:\n{text[:600]}"
    assert _words(doc) in _words(text), f"{script} --help leaves part of its docstring out"


def test_every_script_is_checked():
    assert "benchmarks/bench_memory.py" in SCRIPTS and "examples/symbol_basics.py" in SCRIPTS
    assert len(SCRIPTS) >= 30

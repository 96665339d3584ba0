"""symjit's log messages: one ``symjit`` prefix, whoever prints them.

Each case runs in a new interpreter, so the root logger starts unconfigured, as in a user's program.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _stderr(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr


def test_basic_config_prints_each_message_once_with_one_prefix():
    err = _stderr("import logging\n"
                  "logging.basicConfig(level=logging.INFO)\n"
                  "import symjit\n"
                  "from symjit.compiler import aot\n"
                  "aot._log_once('symjit_aot_x', 'not built yet')\n"
                  "logging.getLogger('symjit').warning('compile workers stopped')\n")
    assert err.splitlines() == [
        "INFO:symjit:no ahead-of-time module symjit_aot_x: not built yet; using numba's kernel cache",
        "WARNING:symjit:compile workers stopped",
    ]


def test_unconfigured_logging_prints_warnings_with_the_symjit_prefix():
    err = _stderr("import logging, symjit\n"
                  "log = logging.getLogger('symjit')\n"
                  "log.info('not shown')\n"
                  "log.warning('compile workers stopped (%s)', 'lost')\n"
                  "assert logging.getLogger().handlers == [], logging.getLogger().handlers\n")
    assert err == "symjit: compile workers stopped (lost)\n"


def test_a_handler_configured_after_import_takes_over():
    err = _stderr("import logging, symjit\n"
                  "logging.basicConfig(format='[%(name)s] %(message)s')\n"
                  "logging.getLogger('symjit').warning('once')\n")
    assert err == "[symjit] once\n"


def test_no_log_message_carries_its_own_prefix():
    """The logger's name is the prefix: a message text starting with ``symjit:`` would print it twice."""
    call = re.compile(r"""(?:_LOG|LOG|log|logger|logging)\.(?:debug|info|warning|error|exception|log)\("""
                      r"""(?:[^,()]+,\s*)?f?["']symjit:""")
    offenders = [f"{path.relative_to(ROOT)}:{n}"
                 for folder in ("symjit", "kernels") for path in sorted((ROOT / folder).rglob("*.py"))
                 for n, line in enumerate(path.read_text().splitlines(), 1) if call.search(line)]
    assert offenders == []

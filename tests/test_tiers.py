"""The default tier's list of slow tests (``tests/conftest.py``) names tests that exist: an entry
left behind by a renamed test or parameter would silently put that test back in the default tier,
and a KEEP entry must be one of the tests the list covers."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from . import conftest

ROOT = Path(__file__).resolve().parents[1]


def test_every_slow_test_entry_names_collected_tests():
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                           "--exhaustive", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = [line for line in proc.stdout.splitlines() if line.startswith("tests/") and "::" in line]
    assert len(ids) > 1000, proc.stdout[-2000:]
    stale = [entry for entry in conftest.EXHAUSTIVE if not any(i.startswith(entry) for i in ids)]
    assert not stale, f"entries of EXHAUSTIVE that name no test: {stale}"
    for keep in conftest.KEEP:
        assert keep in ids and keep.startswith(conftest.EXHAUSTIVE), keep

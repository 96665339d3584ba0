"""Docs that are generated must match what generates them."""
from pathlib import Path

from symjit.opdoc import ops_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_ops_md_is_up_to_date():
    assert (ROOT / "docs" / "ops.md").read_text() == ops_markdown(), \
        "docs/ops.md is stale: run `python -m symjit.opdoc > docs/ops.md`"

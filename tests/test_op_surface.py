"""MXNet 1.9.1's public operator names (../shared/docs/mxnet-1.9.1-operators.json, as the pip build
lists them per namespace) against symjit's. Every name must be present, be one of the documented
out-of-scope names (sparse storage, quantization: a clear error, symjit/unsupported.py), or be
listed in PENDING below with what it waits for. A name outside these fails the test, and a listed
name that now exists must leave PENDING, so the list only shrinks."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import symjit as mx
from symjit.unsupported import QUANTIZATION, SPARSE, SPARSE_SYMBOL

ROOT = Path(__file__).resolve().parents[1]
SURFACE = ROOT.parent / "shared" / "docs" / "mxnet-1.9.1-operators.json"

NAMESPACES = ("mx.sym", "mx.nd", "mx.sym.random", "mx.nd.random", "mx.sym.linalg", "mx.nd.linalg",
              "mx.sym.contrib", "mx.nd.contrib", "mx.sym.image", "mx.nd.image")


# reason -> {namespace: names}; a namespace key "*" means both mx.sym and mx.nd (or both .contrib, ...).
# Empty: every name of the list exists (or is one of the documented out-of-scope names).
PENDING: dict[str, dict[str, tuple[str, ...]]] = {}


def _expand(spec: str) -> tuple[str, ...]:
    if spec == "*":
        return ("mx.sym", "mx.nd")
    if spec.startswith("*."):
        return (f"mx.sym.{spec[2:]}", f"mx.nd.{spec[2:]}")
    return (spec,)


def pending(namespace: str) -> dict[str, str]:
    """name -> the reason it is missing, for one namespace."""
    out = {}
    for reason, table in PENDING.items():
        for spec, names in table.items():
            if namespace in _expand(spec):
                out.update({n: reason for n in names})
    return out


def _namespace(path: str):
    module = mx
    for part in path.split(".")[1:]:
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


@pytest.fixture(scope="module")
def surface() -> dict:
    assert SURFACE.is_file(), f"{SURFACE} is missing (CI clones ../shared beside the repository)"
    return json.loads(SURFACE.read_text())


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_mxnet_name_exists_or_is_listed(surface, namespace):
    module = _namespace(namespace)
    names = surface[namespace]
    missing = {n for n in names if module is None or not hasattr(module, n)}
    listed = pending(namespace)
    unexplained = sorted(missing - set(listed))
    stale = sorted(n for n in listed if n in names and n not in missing)
    assert not unexplained, f"{namespace}: missing and not listed in PENDING: {unexplained}"
    assert not stale, f"{namespace}: implemented now, remove from PENDING: {stale}"
    absent = sorted(set(listed) - set(names))
    assert not absent, f"{namespace}: PENDING lists names MXNet does not have here: {absent}"


@pytest.mark.parametrize("namespace", ("mx.sym", "mx.nd"))
def test_out_of_scope_names_raise_a_clear_error(namespace):
    for table in (SPARSE, QUANTIZATION, SPARSE_SYMBOL if namespace == "mx.sym" else {}):
        for space, names in table.items():
            module = _namespace(f"{namespace}.{space}" if space else namespace)
            for n in names:
                with pytest.raises(mx.MXNetError, match=rf"{n}: .*not supported by symjit"):
                    getattr(module, n)()
    if namespace == "mx.sym":       # sparse symbols are out of scope; mx.nd.sparse is real
        with pytest.raises(mx.MXNetError, match=r"sparse\.csr_matrix: sparse storage"):
            _namespace(f"{namespace}.sparse").csr_matrix   # noqa: B018
        assert not hasattr(_namespace(f"{namespace}.sparse"), "row_sparse_array")
    else:
        assert callable(_namespace(f"{namespace}.sparse").row_sparse_array)


def test_report_counts(surface, capsys):
    """Print the coverage per namespace (shown with ``pytest -s``); fails only on a broken table."""
    for namespace in NAMESPACES:
        module = _namespace(namespace)
        names = surface[namespace]
        have = sum(module is not None and hasattr(module, n) for n in names)
        print(f"{namespace}: {have}/{len(names)}")
        assert 0 <= have <= len(names)

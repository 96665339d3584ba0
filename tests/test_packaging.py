"""The package list of pyproject.toml names every package of the source tree, so a non-editable
install (a wheel) ships all of symjit."""
from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


def _found() -> set[str]:
    names = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "symjit").rglob("__init__.py")}
    names |= {"symjit.kernels" + "".join("." + part for part in p.parent.relative_to(ROOT / "kernels").parts)
              for p in (ROOT / "kernels").rglob("__init__.py")}
    return {n for n in names if "__pycache__" not in n}


def test_every_package_is_listed_for_the_wheel():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    assert _found() - listed == set(), "packages missing from pyproject.toml's [tool.setuptools] packages"
    assert listed - _found() == set(), "pyproject.toml lists packages that do not exist"

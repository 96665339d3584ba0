"""The ``symjit`` command line's own surface: ``--version``, bare ``symjit cache``, and help texts
that are sentences."""
from __future__ import annotations

import argparse
import json
import re

import pytest

from symjit.cli import main


class _Captured(Exception):
    pass


@pytest.fixture
def parser(monkeypatch) -> argparse.ArgumentParser:
    """The parser ``main`` builds (caught where it starts parsing)."""
    seen = []

    def capture(self, *args, **kwargs):
        seen.append(self)
        raise _Captured

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(_Captured):
        main([])
    return seen[0]


def _texts(parser: argparse.ArgumentParser, where: str = "symjit") -> list[tuple[str, str | None]]:
    """(where, text) for the description and every argument's help, sub-commands included."""
    out = [(f"{where}: description", parser.description)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                out.append((f"{where} {choice.dest}: summary", choice.help))
            for name, sub in action.choices.items():
                out += _texts(sub, f"{where} {name}")
        else:
            out.append((f"{where} {'/'.join(action.option_strings) or action.dest}", action.help))
    return out


def test_every_help_text_is_a_sentence(parser):
    texts = _texts(parser)
    assert any(w.startswith("symjit cache") for w, _ in texts) and any("--version" in w for w, _ in texts)
    # a sentence: a capital, the program's name or a value being explained ("build: ..."), then a full stop
    bad = [(w, t) for w, t in texts if not (t and re.fullmatch(r"(?:[A-Z]|symjit|[\w-]+: ).*\.", t, re.S))]
    assert bad == []


def test_bare_cache_prints_the_cache_info(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SYMJIT_CACHE_DIR", str(tmp_path))
    assert main(["cache", "info"]) == 0
    info = capsys.readouterr().out
    assert main(["cache"]) == 0
    assert capsys.readouterr().out == info
    assert info.startswith(f"kernel cache: {tmp_path / 'kernels'}")
    assert main(["cache", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["directory"] == str(tmp_path / "kernels")

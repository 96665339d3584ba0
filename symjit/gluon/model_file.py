"""``Block.save(prefix)`` and ``Block.load(prefix)``: a model's structure in ``<prefix>-model.json``
and its parameters in ``<prefix>-model.params`` (``save_parameters``' structural names).

The JSON file has MXNet 1.9.1's layout: a block is an object holding ``orig_name`` (its name),
``hybridized``, for a traced block ``in_format``, ``out_format``, ``inputs`` and ``symbol`` (the
traced graph as JSON), ``children`` (each child's name -> its key in the parent) and one entry
per child, keyed by the child's lower-case class name and its position in a depth-first walk
(``dense2``). ``load`` walks a model made by the same code in the same order: it gives each block
its saved name and its children their saved keys (so the structural parameter names match the
file), hybridizes the blocks that were traced, and loads the parameters. symjit traces a restored
block again at its next call instead of reading the saved symbol back: the same code traces the
same graph, and the graph's parameter variables then name the new model's parameters.

>>> import os, tempfile
>>> import symjit as mx
>>> net = mx.gluon.nn.Dense(2, in_units=3); net.initialize(mx.init.One())
>>> prefix = os.path.join(tempfile.mkdtemp(), 'dense')
>>> net.save(prefix)
>>> other = mx.gluon.nn.Dense(2, in_units=3); other.load(prefix)
>>> other(mx.nd.ones((1, 3))).asnumpy().tolist()
[[3.0, 3.0]]
"""
from __future__ import annotations

import json
from typing import Any

from ..base import MXNetError

__all__ = ["save_model", "load_model"]


def _key(block: Any, index: list[int]) -> str:
    return f"{type(block).__name__.lower()}{index[0]}"


def _describe(block: Any, index: list[int], into: dict) -> None:
    entry: dict[str, Any] = {"orig_name": block.name}
    into[_key(block, index)] = entry
    graph = getattr(block, "_cached_graph", None)
    if graph is not None:           # a HybridBlock
        entry["hybridized"] = bool(graph)
        if graph:
            inputs, out = graph
            entry.update(in_format=block._in_format, out_format=block._out_format,
                         inputs=[i.tojson() for i in inputs], symbol=out.tojson())
    entry["children"] = {child.name: key for key, child in block._children.items()}
    for child in block._children.values():
        index[0] += 1
        _describe(child, index, entry)


def save_model(block: Any, prefix: str) -> None:
    """Write ``block``'s structure to ``<prefix>-model.json`` and its parameters to
    ``<prefix>-model.params``."""
    structure: dict = {}
    _describe(block, [0], structure)
    with open(f"{prefix}-model.json", "w") as f:
        json.dump(structure, f)
    block.save_parameters(f"{prefix}-model.params")


def _restore(block: Any, index: list[int], structure: dict, where: str) -> None:
    key = _key(block, index)
    entry = structure.get(key)
    if not isinstance(entry, dict) or "orig_name" not in entry:
        raise MXNetError(f"{where}: the file has no block {key!r} where this model has a "
                         f"{type(block).__name__}; load needs a model made by the same code, in the "
                         "same order, as the saved one")
    block._name = entry["orig_name"]
    for child in block._children.values():
        index[0] += 1
        _restore(child, index, entry, where)
    saved = entry.get("children", {})
    renamed = []
    for child in block._children.values():
        if child.name not in saved:
            raise MXNetError(f"{where}: block {block.name!r} has a child {child.name!r} the saved "
                             f"model does not have (saved children: {sorted(saved)})")
        renamed.append((saved[child.name], child))
    block._children.clear()
    block._children.update(renamed)
    if entry.get("hybridized"):
        block.hybridize(True)


def load_model(block: Any, prefix: str) -> None:
    """Rename ``block``'s descendants as in ``<prefix>-model.json``, hybridize the ones saved
    traced, and load ``<prefix>-model.params``."""
    where = f"load({prefix!r})"
    try:
        with open(f"{prefix}-model.json") as f:
            structure = json.load(f)
    except (OSError, ValueError) as exc:
        raise MXNetError(f"{where}: cannot read {prefix}-model.json: {exc}") from exc
    if not isinstance(structure, dict):
        raise MXNetError(f"{where}: {prefix}-model.json does not hold a saved model structure")
    _restore(block, [0], structure, where)
    block.load_parameters(f"{prefix}-model.params")

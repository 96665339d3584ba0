"""The pipeline ``bind`` runs: a short list of named passes, each printable on its own.

    build      Symbol + shapes/dtypes -> forward Graph            (passes/build.py)
    half       Graph -> Graph with float16 values computed in
               float32, rounded where they are made           (passes/half.py)
    autodiff   Graph -> Graph with the backward program appended  (passes/autodiff.py)
    simplify   Graph -> Graph rewrites that enable fusion, then the target's
               scheduling marks (Target.schedule)                 (passes/simplify.py)
    fuse       Graph -> kernel groups                             (passes/fuse.py)
    plan       Graph + groups -> memory plan                      (passes/plan.py)
    codegen    Graph + groups -> generated module source          (codegen/generate.py)
    load       source -> imported module, via the kernel cache    (cache.py)

``fuse``, ``plan`` and ``codegen`` read the lowering rules of the target (:mod:`symjit.lower`),
which every stage receives as the :class:`~symjit.lower.target.Target` object itself;
``symjit compile`` runs the same list and prints each stage.
"""
from __future__ import annotations

import dataclasses
import types
from typing import Any

import numpy as np

from ..config import Config
from ..lower.target import Target, as_target
from ..symbol.symbol import Symbol
from .cache import load_program
from .codegen.generate import Program, generate
from .graph import Graph
from .passes.autodiff import autodiff
from .passes.build import build_forward
from .passes.fuse import Group, fuse
from .passes.half import widen_half
from .passes.plan import MemoryPlan, plan_memory
from .passes.simplify import simplify

__all__ = ["Compiled", "compile_symbol", "PASSES"]

PASSES = ("build", "half", "autodiff", "simplify", "fuse", "plan", "codegen", "load")


@dataclasses.dataclass
class Compiled:
    """Every stage's result for one program (one mode of one executor)."""

    forward_graph: Graph
    graph: Graph
    groups: list[Group]
    plan: MemoryPlan
    program: Program
    target: Target
    module: types.ModuleType | None = None


def compile_symbol(sym: Symbol, shapes: dict[str, tuple], dtypes: dict[str, Any],
                   grad_req: dict[str, str], is_train: bool, cfg: Config,
                   target: Target | str | None = None, load: bool = True, monitor: bool = False,
                   profile: bool = False, over: dict[int, str] | None = None) -> Compiled:
    """Run the pipeline for ``target`` (a :class:`~symjit.lower.target.Target`, such as a
    device's ``ctx.device.target``; a target's name or None, the host's, are looked up here
    once). ``load=False`` stops before importing (for ``symjit compile``).

    ``is_train`` picks the forward's mode (batch statistics, dropout); the backward program is
    built for the arguments whose ``grad_req`` is not ``'null'`` in either mode (an inference-mode
    program with gradients differentiates what inference computes: Dropout as identity,
    BatchNorm with its moving statistics).

    ``monitor=True`` builds the program a monitor watches: one kernel per op (no fusion) and no
    memory reuse, so every op's outputs (``Graph.watch``) can be read after the program ran.
    ``profile=True`` builds the same kernels and memory plan with every kernel call a step of its
    own, so the executor can time each for ``mx.profiler``.

    ``over`` (output index -> argument name): outputs the caller will pass over the very array of
    that argument (the same buffer, shape and dtype, as ``mx.nd.sgd_update(w, g, out=w)``), where
    the caller knows that is safe. A kernel that reads the argument and writes the output then
    takes the array once, as it does a planned in-place pair, so its loop vectorizes (two names
    for one buffer fail LLVM's run-time overlap check and run the scalar loop). It changes no
    load or store, only what the kernel knows.
    """
    dtypes = {k: np.dtype(v) for k, v in dtypes.items()}
    fusion = cfg.fusion and not monitor
    fwd = widen_half(build_forward(sym, shapes, dtypes, is_train))
    graph = autodiff(fwd, grad_req) if grad_req else fwd
    tgt = as_target(target)
    graph = tgt.schedule(simplify(graph, fusion=fusion))
    groups = fuse(graph, tgt, enabled=fusion)
    plan = plan_memory(graph, groups, reuse=not monitor)
    program = generate(graph, groups, tgt, fastmath=cfg.fastmath, cache=cfg.cache, profile=profile,
                       inplace=plan.inplace + _over_pairs(graph, over), program_calls=cfg.program_calls)
    out = Compiled(fwd, graph, groups, plan, program, tgt)
    if load:
        out.module = load_program(program, tgt, cfg)
    return out


def _over_pairs(graph: Graph, over: dict[int, str] | None) -> list[tuple[int, int]]:
    """``over`` as ``(output value, argument value)`` pairs of ``graph``: those whose values have
    one shape and dtype (the others stay two arrays to the kernels)."""
    pairs = []
    for j, name in (over or {}).items():
        o, i = graph.outputs[j], graph.args.get(name, graph.aux.get(name))
        if i is not None and o != i and o not in graph.args.values() \
                and graph.values[o].shape == graph.values[i].shape \
                and graph.values[o].dtype == graph.values[i].dtype:
            pairs.append((o, i))
    return pairs

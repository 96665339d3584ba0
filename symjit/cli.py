"""``symjit compile``: show every stage of the lowering of a symbol.

    symjit compile mlp-symbol.json --shape data=100,784
    symjit compile mypkg.nets:mlp --shape data=100,784 --grad-req null --source
    symjit compile net.json --shape data=64,1,28,28 --format json --dot fused.dot
    symjit compile net.json --shape data=1,3,224,224 --grad-req null --format dot | dot -Tsvg > net.svg
    symjit compile net.json --shape data=2,8 --target cuda --emit ptx --arch sm_90
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
from typing import Any

import numpy as np

from .base import MXNetError, dtype_name, shape_str
from .compiler.pipeline import Compiled, compile_symbol
from .config import Config
from .executor import normalize_grad_req
from .lower.target import get_target, kernel_signature, target_names
from .symbol import Symbol, load

__all__ = ["main", "report", "load_symbol", "data_inputs", "missing_shapes", "unknown_shape_names"]


def _parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    name, _, dims = text.partition("=")
    if not name or not dims:
        raise argparse.ArgumentTypeError(f"--shape {text!r}: expected NAME=D1,D2,...")
    try:
        return name, tuple(int(d) for d in dims.replace("x", ",").split(",") if d.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape {text!r}: dimensions must be integers") from None


def load_symbol(spec: str) -> Symbol:
    """A symbol JSON file, or ``module:attr`` naming a Symbol (or a function returning one)."""
    if spec.endswith(".json") or ":" not in spec:
        return load(spec)
    module, _, attr = spec.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())   # like `python -m`: modules of the current directory
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise MXNetError(f"{spec}: cannot load: {exc}") from None
    if callable(obj) and not isinstance(obj, Symbol):
        obj = obj()
    if not isinstance(obj, Symbol):
        raise MXNetError(f"{spec}: not a Symbol (got {type(obj).__name__})")
    return obj


# MXNet's names of the parameters and aux states ops create (``fc1_weight``, ``bn1_moving_var``)
_PARAM_SUFFIXES = ("_weight", "_bias", "_gamma", "_beta", "_moving_mean", "_moving_var")
# the data layout the first consumer of an input implies: op -> {rank of its kernel: layout}
_LAYOUTS = {op: {1: "N,C,W", 2: "N,C,H,W", 3: "N,C,D,H,W"}
            for op in ("Convolution", "Deconvolution", "Pooling")}


def data_inputs(sym: Symbol) -> list[str]:
    """The arguments of ``sym`` that are neither parameters (by MXNet's naming) nor labels: the
    inputs a shape has to be given for."""
    aux = set(sym.list_auxiliary_states())
    return [n for n in sym.list_arguments()
            if n not in aux and not n.endswith(_PARAM_SUFFIXES) and not n.endswith("_label")]


def _shape_form(sym: Symbol, name: str) -> str:
    """``data=N,C,H,W (for example --shape data=1,3,224,224)`` for an input read by a 2-D
    convolution; ``name=D1,D2,...`` where its first consumer implies no layout."""
    nodes = json.loads(sym.tojson())["nodes"]
    var = next(i for i, n in enumerate(nodes) if n["op"] == "null" and n["name"] == name)
    user = next((n for n in nodes if any(e[0] == var for e in n.get("inputs", []))), None)
    rank = None
    if user is not None and user["op"] in _LAYOUTS:   # the kernel's rank: the numbers in "(3, 3)"
        rank = len(re.findall(r"\d+", str(user.get("attrs", {}).get("kernel", "")))) or None
    layout = _LAYOUTS.get(user["op"] if user else "", {}).get(rank)
    if layout is None:
        return f"{name}=D1,D2,..."
    example = f" (for example --shape {name}=1,3,224,224)" if rank == 2 else ""
    return f"{name}={layout}{example}"


def _quoted(names: list[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)


def unknown_shape_names(sym: Symbol, shapes: dict) -> MXNetError | None:
    """The error for a ``--shape NAME`` that is no input of ``sym`` (a misspelt name), or None."""
    names = set(sym.list_arguments()) | set(sym.list_auxiliary_states())
    unknown = [n for n in shapes if n not in names]
    if not unknown:
        return None
    inputs = data_inputs(sym)
    return MXNetError(f"--shape {unknown[0]}=...: the symbol has no input named '{unknown[0]}'; its data "
                      f"input(s): {_quoted(inputs) or 'none'}"
                      + (f"; give a shape with --shape {_shape_form(sym, inputs[0])}" if inputs else ""))


def missing_shapes(sym: Symbol, shapes: dict) -> MXNetError:
    """The error when the given shapes leave some argument's shape unknown: the data inputs
    without a shape and how to give one (the parameters' shapes follow from theirs)."""
    part = sym.infer_shape_partial(**shapes)[0]
    missing = [n for n, s in zip(sym.list_arguments(), part) if not s]
    data = set(data_inputs(sym))
    inputs = [n for n in missing if n in data]
    inputs = inputs or [n for n in missing if not n.endswith(_PARAM_SUFFIXES)]
    if not inputs:
        return MXNetError(f"cannot infer the shape of {_quoted(missing)} from the given ones; give it with "
                          f"--shape NAME=D1,D2,...")
    forms = " ".join(f"--shape {_shape_form(sym, n)}" for n in inputs)
    return MXNetError(f"no shape for the data input(s) {_quoted(inputs)}; give "
                      f"{'one' if len(inputs) == 1 else 'each'} with {forms}")


def report(c: Compiled) -> dict:
    """The JSON report: ``nodes``, ``groups`` and ``memory``."""
    g = c.graph
    nodes = [{"name": op.name, "op": op.op.name, "phase": op.phase,
              "inputs": [g.values[i].name for i in op.inputs],
              "outputs": [{"name": g.values[o].name, "shape": list(g.values[o].shape),
                           "dtype": dtype_name(g.values[o].dtype), "kind": g.values[o].kind}
                          for o in op.outputs]} for op in g.ops]
    groups = [{"id": grp.id, "kind": grp.kind.name.lower(), "phase": grp.phase, "view": grp.view,
               "ops": [op.name for op in grp.ops],
               "inputs": [g.values[i].name for i in grp.inputs],
               "outputs": [g.values[o].name for o in grp.outputs],
               "workspace": [g.values[w].name for w in grp.workspace],
               "kernel": c.program.kernel_of.get(f"k{grp.id}")} for grp in c.groups]
    plan = c.plan
    memory = {
        "planned_bytes": plan.planned_bytes, "naive_bytes": plan.naive_bytes, "strategy": plan.strategy,
        "buffers": [{"id": b["id"], "size": b["size"], "offset": plan.offsets[b["values"][0]],
                     "live": [b["start"], b["end"]], "values": [g.values[v].name for v in b["values"]]}
                    for b in plan.buffers],
        "inplace": [[g.values[o].name, g.values[i].name] for o, i in plan.inplace],
        "workspace_bytes": _workspace_bytes(c),
    }
    return {"nodes": nodes, "groups": groups, "memory": memory, "launches": _launches(c)}


def _workspace_bytes(c: Compiled) -> int:
    """Bytes of the kernels' scratch buffers (planned like every temporary)."""
    return sum(c.graph.values[w].nbytes for grp in c.groups for w in grp.workspace)


def _launches(c: Compiled) -> list[dict]:
    """The launch plan of a GPU program: per kernel, its group, elements, grid and block."""
    target = c.target
    out = []
    for grp in c.groups:
        name = f"k{grp.id}"
        if grp.view or grp.host or name not in c.program.spans:
            continue
        per, n = c.program.spans[name]
        cfg = target.launch_config(n, per)
        if cfg is not None:
            out.append({"kernel": c.program.kernel_of.get(name, name), "group": grp.id, per + "s": n,
                        "grid": cfg[0], "block": cfg[1]})
    return out


def _span(launch: dict) -> str:
    """What a launch covers, by its kind: elements (grid-stride), blocks (one per slice) or tiles.

    >>> _span({"kernel": "k3", "group": 3, "tiles": 8, "grid": 8, "block": 256})
    '8 tiles'
    """
    kind = next(k for k in launch if k not in ("kernel", "group", "grid", "block"))
    return f"{launch[kind]} {kind[:-1] if launch[kind] == 1 else kind}"


def _text(c: Compiled, source: bool) -> str:
    g, plan = c.graph, c.plan
    lines = [f"== graph ({'training' if g.is_train else 'inference'}, {len(g.ops)} ops) =="]
    for op in g.ops:
        ins = ", ".join(g.values[i].name for i in op.inputs)
        outs = ", ".join(f"{g.values[o].name}{shape_str(g.values[o].shape)}:{dtype_name(g.values[o].dtype)}"
                         for o in op.outputs)
        lines.append(f"  [{op.phase[0]}] {op.name} = {op.op.name}({ins}) -> {outs}")
    kernel_of = c.program.kernel_of
    lines.append(f"== fused groups ({sum(not grp.view for grp in c.groups)} kernels, "
                 f"{len(set(kernel_of.values()))} distinct) ==")
    for grp in c.groups:
        fn = kernel_of.get(f"k{grp.id}")
        shared = f"  (kernel {fn})" if fn is not None and fn != f"k{grp.id}" else ""
        lines.append(f"  {grp.describe()}{shared}")
    launches = _launches(c)
    if launches:
        lines.append(f"== launch plan ({c.target.name}) ==")
        for la in launches:
            lines.append(f"  {la['kernel']}: {_span(la)}, grid {la['grid']} x block {la['block']}")
    lines.append("== memory plan ==")
    for b in plan.buffers:
        names = ", ".join(g.values[v].name for v in b["values"])
        lines.append(f"  buffer {b['id']}: {b['size']} bytes @ {plan.offsets[b['values'][0]]}, "
                     f"live {b['start']}..{b['end']}: {names}")
    for o, i in plan.inplace:
        lines.append(f"  in-place: {g.values[o].name} overwrites {g.values[i].name}")
    n_ws = sum(len(grp.workspace) for grp in c.groups)
    lines.append(f"  workspace: {n_ws} kernel scratch buffers, {_workspace_bytes(c)} bytes (in the plan)")
    lines.append(f"  planned {plan.planned_bytes} bytes vs naive {plan.naive_bytes} bytes ({plan.strategy})")
    if source:
        lines += ["== generated source ==", c.program.source]
    return "\n".join(lines)


def _parameters(sym: Symbol) -> set[str]:
    """The parameters of ``sym``: its aux states and the arguments that are neither data inputs
    nor labels (what the fused graph's picture folds into the operators reading them)."""
    labels = {n for n in sym.list_arguments() if n.endswith("_label")}
    return (set(sym.list_arguments()) - set(data_inputs(sym)) - labels) | set(sym.list_auxiliary_states())


def _dot(c: Compiled, sym: Symbol, params_as_nodes: bool) -> str:
    """The Graphviz source of ``--format dot`` and ``--dot FILE`` (see ``symjit/fused_dot.py``)."""
    from .fused_dot import fused_dot
    return fused_dot(c, _parameters(sym), params_as_nodes)


def _kernel_order(name: str) -> tuple[int, int]:
    """Sort key of a kernel name, ``k<group>`` or ``k<group>p<i>`` (a building block the program runs
    before the group's kernel): the group, then the building blocks first.

    >>> _kernel_order("k12"), _kernel_order("k12p0")
    ((12, 1), (12, 0))
    """
    group, _, prior = name[1:].partition("p")
    return int(group), 0 if prior else 1


def kernel_timings(c: Compiled) -> list[dict]:
    """Compile every distinct kernel of a loaded cpu program for its argument types, one at a time,
    timing each; ``origin`` says whether numba compiled it, loaded it from the kernel cache, or
    found it compiled already in this process."""
    import time
    prog = c.program
    out = []
    for fn in sorted(set(prog.kernel_of.values()), key=_kernel_order):
        disp = getattr(c.module, fn)
        known = bool(disp.overloads)
        start = time.perf_counter()
        disp.compile(kernel_signature(c, fn))
        groups = sorted(_kernel_order(k)[0] for k, f in prog.kernel_of.items() if f == fn)
        origin = ("this process" if known else "kernel cache" if sum(disp.stats.cache_hits.values())
                  else "compiled")
        out.append({"kernel": fn, "groups": groups, "seconds": round(time.perf_counter() - start, 4),
                    "origin": origin})
    return out


def _timings_text(timings: list[dict]) -> str:
    total = sum(t["seconds"] for t in timings)
    lines = [f"== compile time per kernel ({len(timings)} distinct, {total:.2f} s) =="]
    for t in sorted(timings, key=lambda t: -t["seconds"]):
        where = "" if t["origin"] == "compiled" else f" (from {t['origin']})"
        lines.append(f"  {t['kernel']}: {t['seconds']:.2f} s, groups {t['groups']}{where}")
    return "\n".join(lines)


def _cache_command(action: str, fmt: str) -> int:
    """``symjit cache info|clear``."""
    from .compiler.cache import cache_info, clear_cache
    cfg = Config.from_env()
    if action == "clear":
        n = clear_cache(cfg)
        print(f"removed {n} files from {cache_info(cfg)['directory']}")
        return 0
    info = cache_info(cfg)
    if fmt == "json":
        print(json.dumps(info, indent=1))
    else:
        print(f"kernel cache: {info['directory']}\n  {info['modules']} generated modules, "
              f"{info['compiled_functions']} compiled functions, {info['aot_modules']} ahead-of-time "
              f"modules, {info['bytes'] / 2**20:.1f} MiB")
    return 0


def _aot_command() -> int:
    """``symjit aot build``: the noted ahead-of-time modules, built by one builder process."""
    from .compiler.aot import build_pending
    cfg = Config.from_env()
    built = build_pending(cfg, lambda text: print(text, flush=True))
    print(f"{built} ahead-of-time modules built in {cfg.cache_dir}")
    return 0


def _launch_command(args: argparse.Namespace) -> int:
    """``symjit launch -n N [-H HOSTFILE] python prog.py ...``."""
    from .dist.launch import launch
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        return launch(args.num_workers, command, args.hostfile, args.mpiexec, args.num_servers)
    except MXNetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


_DESCRIPTION = ("symjit's tools: inspect how a symbol compiles, manage the kernel cache, launch distributed "
                "jobs.")


def _help_sentences(parser: argparse.ArgumentParser) -> None:
    """Give ``-h``/``--help`` of ``parser`` and of its sub-commands a help text that is a sentence,
    as the others are (argparse's own is not)."""
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            action.help = "Show this help and exit."
        elif isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _help_sentences(sub)


def version_text() -> str:
    """What ``symjit --version`` prints: symjit's own version and the MXNet API level it implements.

    >>> version_text()
    'symjit 0.1.0 (MXNet 1.9.1 API)'
    """
    from ._version import __symjit_version__, __version__
    return f"symjit {__symjit_version__} (MXNet {__version__} API)"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``symjit`` console script."""
    ap = argparse.ArgumentParser(prog="symjit", description=_DESCRIPTION)
    ap.add_argument("--version", action="version", version=version_text(),
                    help="Print symjit's version and the MXNet API level it implements, then exit.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    cp = sub.add_parser("compile", help="Print every stage of compiling a symbol.",
                        description="Print every stage of compiling a symbol for the given input shapes: "
                                    "the graph, the fused groups, the memory plan and, on request, the "
                                    "generated source, each kernel's compile time or its PTX.")
    cp.add_argument("symbol", help="A symbol JSON file, or module:attr naming a Symbol (or a function "
                                   "returning one).")
    cp.add_argument("--shape", action="append", type=_parse_shape, default=[],
                    help="The shape of an input, as NAME=D1,D2,...; repeat it for each input.")
    cp.add_argument("--dtype", action="append", default=[],
                    help="The dtype of an input, as NAME=float64 (default float32); repeat it for each "
                         "input.")
    cp.add_argument("--target", choices=target_names(), default="cpu",
                    help="The device to compile for (default cpu).")
    cp.add_argument("--grad-req", choices=("write", "add", "null"), default="write",
                    help="The gradient request of every argument; null compiles the inference program "
                         "(default write).")
    cp.add_argument("--format", choices=("text", "json", "dot"), default="text",
                    help="The form of the report (default text); dot: a Graphviz picture of the fused "
                         "graph, one cluster per kernel.")
    cp.add_argument("--source", action="store_true", help="Print the generated kernel source too.")
    cp.add_argument("--no-fusion", action="store_true", help="Compile one kernel per operator.")
    cp.add_argument("--dot", metavar="FILE", help="Write a Graphviz picture of the fused graph to FILE.")
    cp.add_argument("--dot-params", action="store_true",
                    help="Draw parameters, aux states and their views as nodes of their own in the "
                         "Graphviz picture (default: listed in the label of the operator reading them).")
    cp.add_argument("--emit", choices=("report", "ptx"), default="report",
                    help="What to print: the report (default), or each kernel's PTX (with --target cuda; "
                         "needs numba-cuda, not a GPU).")
    cp.add_argument("--arch", default="sm_90", help="The CUDA architecture of --emit ptx (default sm_90).")
    cp.add_argument("--timings", action="store_true",
                    help="Compile every distinct kernel (cpu) and print its compile time.")
    kp = sub.add_parser("cache", help="Show or empty the kernel cache.",
                        description="Show (info, the default) or empty (clear) the kernel cache in "
                                    "SYMJIT_CACHE_DIR (default $XDG_CACHE_HOME/symjit or ~/.cache/symjit).")
    kp.add_argument("action", choices=("info", "clear"), nargs="?", default="info",
                    help="What to do: info prints where the cache is and what it holds (the default), "
                         "clear removes its files.")
    kp.add_argument("--format", choices=("text", "json"), default="text",
                    help="The form of the info output (default text).")
    lp = sub.add_parser("launch", help="Run a program as N distributed workers under mpiexec.",
                        description="Run a program as N distributed workers under mpiexec, as MXNet's "
                                    "tools/launch.py does for the dist_sync and dist_async KVStores.")
    lp.add_argument("-n", "--num-workers", type=int, required=True, help="The number of worker processes.")
    lp.add_argument("-H", "--hostfile", help="The host file of the machines (passed to mpiexec).")
    lp.add_argument("-s", "--num-servers", type=int,
                    help="Accepted for MXNet's launch.py and ignored (symjit runs no server processes).")
    lp.add_argument("--mpiexec", help="The mpiexec to use (default: the one beside python, then PATH's).")
    lp.add_argument("command", nargs=argparse.REMAINDER,
                    help="The program and its arguments, e.g. python train.py --epochs 2.")
    ap_aot = sub.add_parser("aot", help="Build the ahead-of-time modules earlier runs noted.",
                            description="Build, in the foreground, the ahead-of-time modules that "
                                        "earlier runs with SYMJIT_AOT=auto noted in the kernel cache, "
                                        "so later runs start without numba (needs a C compiler).")
    ap_aot.add_argument("action", choices=("build",), help="build: build every noted module.")
    _help_sentences(ap)
    args = ap.parse_args(argv)
    if args.cmd == "aot":
        return _aot_command()
    if args.cmd == "cache":
        return _cache_command(args.action, args.format)
    if args.cmd == "launch":
        return _launch_command(args)
    try:
        sym = load_symbol(args.symbol)
        shapes = dict(args.shape)
        misspelt = unknown_shape_names(sym, shapes)
        if misspelt is not None:
            raise misspelt
        arg_s, _, aux_s = sym.infer_shape(**shapes)
        if arg_s is None:
            raise missing_shapes(sym, shapes)
        names = sym.list_arguments() + sym.list_auxiliary_states()
        all_shapes = dict(zip(names, list(arg_s) + list(aux_s)))
        given_t = dict(d.split("=", 1) for d in args.dtype)
        types = {n: np.dtype(given_t.get(n, "float32")) for n in names}
        reqs = normalize_grad_req(args.grad_req, sym.list_arguments())
        is_train = args.grad_req != "null"
        cfg = Config.from_env().replace(fusion=not args.no_fusion)
        ptx = args.emit == "ptx"
        if ptx and args.target != "cuda":
            raise MXNetError("--emit ptx needs --target cuda")
        if args.timings and args.target != "cpu":
            raise MXNetError("--timings compiles cpu kernels; for cuda, --emit ptx compiles them")
        c = compile_symbol(sym, all_shapes, types, reqs, is_train, cfg, target=get_target(args.target),
                           load=ptx or args.timings)
        timings = kernel_timings(c) if args.timings else None
        if ptx:
            from .lower.cuda.ptx import kernel_ptx
            for name, text in kernel_ptx(c, args.arch).items():
                print(f"// ---- kernel {name} ({args.arch}) ----\n{text}")
            return 0
    except (MXNetError, OSError, ValueError) as exc:
        print(f"symjit compile: error: {exc}", file=sys.stderr)
        return 2
    if args.dot or args.format == "dot":
        picture = _dot(c, sym, args.dot_params)
        if args.dot:
            try:
                with open(args.dot, "w") as f:
                    f.write(picture)
            except OSError as exc:
                print(f"symjit compile: error: --dot {args.dot}: {exc}", file=sys.stderr)
                return 2
        if args.format == "dot":
            print(picture)
            return 0
    if args.format == "json":
        doc = report(c)
        if args.source:
            doc["source"] = c.program.source
        if timings is not None:
            doc["timings"] = timings
        print(json.dumps(doc, indent=1))
    else:
        print(_text(c, args.source))
        if timings is not None:
            print(_timings_text(timings))
    return 0


if __name__ == "__main__":   # pragma: no cover
    sys.exit(main())

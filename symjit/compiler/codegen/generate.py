"""Pass 5: generate one kernel per fused group, and one program per phase (forward, backward) that
runs the group kernels in schedule order on the planned buffers, for any :class:`~symjit.lower.Target`.

A group kernel runs its anchor's lowering rule (GEMM, convolution, a hand-written kernel...), then
one loop over the group's loop shape (:mod:`.loop`) that evaluates the elementwise ops' scalar
bodies. An anchor whose rule returns an element expression (FullyConnected's ``acc + bias``) has
that expression evaluated in the same loop, so bias and activation cost no extra pass. What differs
between targets (decorators, how a loop opens, how a program calls its kernels) is the target's;
this module never tests a target by name.

Kernels index arrays with their runtime shapes: nothing but ranks, dtypes and broadcast patterns is
baked in, so a new batch size reuses the compiled code.

A phase is a list of :class:`Segment` s run in order: a compiled program function, a host call
(a ``Custom`` op's Python code, which compiled code cannot call), or (``calls``, on targets with
kernel modules) kernel calls made one by one from the host, for steps of more than
:data:`PROGRAM_CALLS_LIMIT` kernels (``Config.program_calls``), for programs without GEMMs,
convolutions or opaque kernels (:func:`_light`) and for profiled programs. A phase
without host ops is one compiled function named after the phase (``forward``/``backward``, listed
in ``entries`` too); a host op splits it into ``forward_0``, host call, ``forward_1``...
"""
from __future__ import annotations

import dataclasses
import functools
import re

from ...base import MXNetError
from ...lower.rules import ElemExpr
from ...lower.target import Launch, Target
from ...lower.writer import PARTS_SUFFIX, WHOLE_SUFFIX, KernelWriter, ModuleWriter
from ...ops.registry import Kind
from ..cache import module_name
from ..graph import Graph, OpNode
from ..passes.fuse import Group
from .loop import emit_loop, loop_dims, vname

__all__ = ["generate", "Program", "Segment", "canonical_form", "PROGRAM_CALLS_LIMIT"]


@dataclasses.dataclass
class Segment:
    """One step of a phase: a compiled function (``name``, called on the arrays of ``vids``), or a
    host call of ``node`` (``kind='host'``) on its inputs then outputs, with one req per output."""

    kind: str   # "njit" | "host"
    name: str
    vids: list[int]
    node: OpNode | None = None
    reqs: list[str] = dataclasses.field(default_factory=list)
    label: str = ""   # what the profiler calls it: the group's kernel and ops (profiled programs)
    launches: list = dataclasses.field(default_factory=list)   # the kernels it calls: (kernel, vids, consts)
    consts: list = dataclasses.field(default_factory=list)   # what a program function takes after the arrays


# A step of more kernel calls than this runs them from the host, one dispatcher call each, instead of
# through a compiled program function (targets with kernel modules: the CPU). Numba links every
# kernel a program function calls into it and optimises the whole again, which took most of the
# compile time of big programs (an unrolled LSTM's 168 calls: 23 s with the kernels cached; ResNet-18
# inference, 24 calls: 12.5 s against 6.7 s hosted); a host loop costs ~1-2 us per call, small
# beside the kernels of such programs. Small phases (the tutorial MLP's 4 and 9 calls, LeNet's)
# keep their one compiled call, where the per-call cost would show.
PROGRAM_CALLS_LIMIT = 16


def _light(groups: list[Group]) -> bool:
    """Whether every kernel of a program is an elementwise, broadcast, injective or reduction group
    (no GEMM, convolution or opaque kernel): such a program calls its kernels from the host,
    however big its arrays, instead of through a compiled program function, and its broadcast
    loops and kept-rank reductions are written for every broadcast pattern of their ranks
    (``KernelWriter.any_pattern``: what tests and imperative calls bind on ever new shapes; a
    model's program keeps one kernel per pattern, which LLVM compiles 2-3x faster and which runs up
    to 3x faster where the innermost axis is short). Its kernels are
    compiled once per rank and shared by every size, but a program function
    links them in again, so it cost as much to compile as the kernels themselves: the binds of
    MXNet's broadcast-operator tests (one two-input op over 31 shape pairs, forward and backward)
    took half the time without it (``benchmarks/bench_bind_sweep.py``). The host's ~1-2 us per call
    is what a step of such small kernels costs either way, and nothing beside a big array's: at 2 K,
    10 K and 120 K elements a three-op graph's step time was the same within noise
    (``docs/performance.md``, "Elementwise and reduction programs call their kernels from the
    host")."""
    return all(grp.kind <= Kind.REDUCTION for grp in groups if not (grp.view or grp.host))


def _launches(step: list) -> list:
    return [(fn, list(vs), list(consts)) for fn, vs, _, _, _, consts in step]


def _host_calls(name: str, step: list, label: str) -> Segment:
    vids = list(dict.fromkeys(v for _, vs, *_ in step for v in vs))
    return Segment("calls", name, vids, label=label, launches=_launches(step))


class Program:
    """What the generated module exports: per phase, its segments (see the module docstring);
    ``entries`` maps each phase that is a single compiled function to (name, value ids);
    ``kernels`` maps each group kernel to the value ids it takes, ``spans`` to what it spans at
    the bound shapes (keyed by group, ``k<group id>``; ``kernel_of`` names the function each
    group calls, one per distinct kernel form): ``("element", n)`` (a loop over n elements),
    ``("block", n)`` (n slices, one block each, for targets that launch blocks) or
    ``("tile", n)`` (n GEMM tiles, one block each); ``host_args`` to the (module, function) of
    each int64 scalar the host program computes and passes after the arrays (a Dropout seed)."""

    def __init__(self, source: str, entries: dict[str, tuple[str, list[int]]],
                 segments: dict[str, list[Segment]] | None = None,
                 kernels: dict[str, list[int]] | None = None,
                 spans: dict[str, tuple[str, int]] | None = None,
                 host_args: dict[str, list[tuple[str, str]]] | None = None,
                 kernel_of: dict[str, str] | None = None, consts: dict[str, list] | None = None,
                 kernel_modules: dict[str, str] | None = None,
                 kernel_texts: dict[str, tuple[str, str]] | None = None):
        self.module_source = source   # the program's module (what is imported)
        self.kernel_modules = kernel_modules or {}   # module name -> source, imported by the module
        self.kernel_texts = kernel_texts or {}   # kernel -> (its module, its source with value names)
        self.kernel_of = kernel_of or {}
        self.consts = consts or {}   # kernel function -> the values of its trailing int arguments
        self.entries = entries
        self.kernels = kernels or {}
        self.spans = spans or {}
        self.host_args = host_args or {}
        self.segments = segments if segments is not None else \
            {phase: [Segment("njit", name, vids)] for phase, (name, vids) in entries.items()}

    @property
    def source(self) -> str:
        """All the generated code, to read: the program's module, then each kernel as generated
        for its first group (its module holds the same code with positional names, ``KERNEL``)."""
        parts = [self.module_source]
        parts += [f"# ---- {fn}: module {module} ----\n{text}"
                  for fn, (module, text) in self.kernel_texts.items()]
        return "\n".join(parts)


def _no_rule(node: OpNode, target: Target) -> MXNetError:
    return MXNetError(f"{node.op.name} '{node.name}': no {target.name} lowering for this operator")


def _static_span(grp: Group, k) -> tuple[str, int]:
    if k.per_block is not None:
        return k.block_kind, k.per_block[1]
    n = 1
    for d in grp.loop_shape or ():
        n *= d
    return "element", n


def _kernel_module(kmw: ModuleWriter, form: str, target: Target) -> str:
    """The source of a module holding one kernel form (as ``KERNEL``)."""
    kmw.functions.append(form)
    return kmw.source(f"One symjit kernel for the {target.name} target (a distinct kernel form).")


def _group_kernel(mw: ModuleWriter, target: Target, g: Graph, grp: Group,
                  spans: dict[str, tuple[str, int]], forms: dict[str, str],
                  kernel_of: dict[str, str], const_values: dict[str, list],
                  kmods: dict[str, str], new_writer, inplace: dict[int, int],
                  any_pattern: bool = False) -> list[Launch]:
    """The launches of a group: its kernel, after the kernels of any building-block calls its
    rule asked to run on their own (``KernelWriter.prior``). ``any_pattern``: written for every
    broadcast pattern of its ranks (``KernelWriter.any_pattern``)."""
    params = list(dict.fromkeys(grp.inputs + grp.outputs))
    same = _same_arrays(g, params, inplace)
    kmw = new_writer() if target.kernel_modules else mw
    k = KernelWriter(kmw, f"k{grp.id}", [vname(v) for v in params if v not in same],
                     {vname(v): g.values[v] for v in params})
    k.same = {vname(o): vname(i) for o, i in same.items()}
    k.any_pattern = any_pattern
    anchor = grp.anchor
    elem: dict[int, ElemExpr] = {}
    if anchor is not None:
        rule = grp.rules[0]
        if rule is None or rule.emit is None:
            raise _no_rule(anchor, target)
        k.workspace = [vname(w) for w in grp.workspace]
        res = rule.emit(k, anchor, [vname(i) for i in anchor.inputs], [vname(o) for o in anchor.outputs])
        for slot, expr in ({} if res is None else res if isinstance(res, dict) else {0: res}).items():
            elem[anchor.outputs[slot]] = expr
    loop_ops = [(op, r) for op, r in zip(grp.ops, grp.rules) if op is not anchor]
    if loop_ops or elem:
        emit_loop(target, k, g, grp, loop_ops, elem)
    reg = functools.partial(_register, mw, target, g, grp, spans, forms, kernel_of, const_values, kmods, same)
    launches = []
    by_name = {vname(v): same.get(v, v) for v in params}
    for i, (names, emit) in enumerate(k.prior):
        vids = list(dict.fromkeys(by_name[n] for n in names))
        pk = KernelWriter(new_writer() if target.kernel_modules else mw, f"k{grp.id}p{i}",
                          [vname(v) for v in vids], {vname(v): g.values[v] for v in vids})
        emit(pk)
        launches.append(reg(pk, vids, loop=False))
    if launches and not k.lines:   # the prior kernels did all the work (a GEMM with no epilogue)
        return launches
    return launches + [reg(k, [v for v in params if v not in same])]


def _register(mw: ModuleWriter, target: Target, g: Graph, grp: Group, spans: dict, forms: dict,
              kernel_of: dict, const_values: dict, kmods: dict, same: dict[int, int],
              k: KernelWriter, params: list[int], loop: bool = True) -> Launch:
    """Name a written kernel by its canonical form (one function per distinct form: a module of its
    own on targets with kernel modules; a kernel that only calls a building block with its own
    arguments, ``KernelWriter.direct``, is that building block) and return its launch (``loop``:
    sized by the group's loop, else a single call)."""
    text = _one_name(k.finish(), same)
    direct = k.direct if target.kernel_modules else None
    form = f"{direct[0]}.{direct[1]}" if direct else canonical_form(text, k.name, k.params)
    # a kernel split into parts says so by its name, which the host calls read (symjit.parts);
    # one form called whole and in parts has a name for each (one kernel module)
    key = form + (" whole" if k.whole else "")
    first = key not in forms
    fn = forms.setdefault(key, k.name + (WHOLE_SUFFIX if k.whole else PARTS_SUFFIX if k.parts else ""))
    if direct:   # only a building block's call: the program calls it on the arrays it takes
        params = [dict(zip(k.params, params))[a] for a in direct[2]]
    if first and direct:
        mw.imp_as(direct[0], direct[1], fn)
        kmods.setdefault("", {})[fn] = (direct[0], text)
    elif first and target.kernel_modules:   # the first group of this form: a module of its own
        source = _kernel_module(k.module, form, target)
        name = module_name(source, target.name)
        kmods[name] = source
        kmods.setdefault("", {})[fn] = (name, source.replace(form, text))   # value names, to read
        mw.imp_as(name, "KERNEL", fn)
    elif first:      # ... or its kernel goes into the program's module
        mw.functions.append(text if fn == k.name else text.replace(f"def {k.name}(", f"def {fn}(", 1))
    spans[k.name] = _static_span(grp, k)
    kernel_of[k.name] = fn
    host = [(module, f) for _, module, f in k.host_args]
    consts = [v for _, v in k.consts]
    const_values.setdefault(fn, consts)
    if k.per_block is not None:   # launch sizes read the arrays the kernel gets: the same names
        return fn, params, _one_name(k.per_block[0], same), k.block_kind, host, consts
    size = " * ".join(loop_dims(g, grp)) if loop and grp.loop_shape is not None else "1"
    return fn, params, _one_name(size, same), "element", host, consts


_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_VALUE = re.compile(r"\b[kv]\d+(?:p\d+)?\b")   # the words vname and kernel names are


def _rename(text: str, names: dict[str, str]) -> str:
    """``text`` with each whole word that is a key of ``names`` replaced by its value. Kernels are
    long and their names few: where every name is a value's or a kernel's (``v12``, ``k3p0``)
    only words of that shape are looked at, the same words as when every word is."""
    pattern = _VALUE if all(_VALUE.fullmatch(n) for n in names) else _WORD
    return pattern.sub(lambda m: names.get(m.group(0), m.group(0)), text)


def _same_arrays(g: Graph, params: list[int], inplace: dict[int, int]) -> dict[int, int]:
    """The kernel's outputs planned in place over one of its own inputs of the same shape and
    dtype (``output -> input``): one array, which the kernel gets once, under the input's name.

    Two parameters that are one buffer would make LLVM's runtime alias check fail, and the loop
    would run its scalar fallback (an in-place fused ``tanh`` epilogue over LeNet's conv1 output:
    2.5 ms instead of 0.68); one name lets it vectorize."""
    out = {}
    inside = set(params)
    for o in params:    # the kernel's own values only: a graph has thousands of in-place pairs
        i = inplace.get(o)
        if i is None:
            continue
        while i in inplace and i not in inside:   # a chain of in-place values: the kernel's input
            i = inplace[i]
        vo, vi = g.values[o], g.values[i]
        if o in params and i in params and vo.shape == vi.shape and vo.dtype == vi.dtype:
            out[o] = i
    for o in out:   # an output in place over another output of the kernel: the first input's name
        while out[o] in out:
            out[o] = out[out[o]]
    return out


def _one_name(text: str, same: dict[int, int]) -> str:
    """``text`` with each output of ``same`` named as the input it is."""
    if not same:
        return text
    return _rename(text, {vname(o): vname(i) for o, i in same.items()})


def canonical_form(text: str, name: str, params: list[str]) -> str:
    """A kernel's source with its name and its parameters renamed by position (``KERNEL``,
    ``a0``, ``a1``, ...): groups whose kernels have one form share one kernel function, so a
    net's repeated blocks (the same conv+BatchNorm+relu at every layer) compile once.

    >>> canonical_form("def k3(v7, v9): v9[0] = v7[0] + _v1", "k3", ["v7", "v9"])
    'def KERNEL(a0, a1): a1[0] = a0[0] + _v1'
    """
    local = {p: f"a{i}" for i, p in enumerate(params)}
    local[name] = "KERNEL"
    return _rename(text, local)


def _host_segment(g: Graph, grp: Group, target: Target) -> Segment:
    node = grp.ops[0]
    if not target.host_calls:
        raise MXNetError(f"{node.op.name} '{node.name}': the {target.name} target cannot call Python "
                         "host code between its kernels")
    read = {i for op in g.ops for i in op.inputs}
    reqs = ["write" if node.phase == "forward" or o in read or g.values[o].kind != "tmp" else "null"
            for o in node.outputs]
    return Segment("host", node.name, list(node.inputs) + list(node.outputs), node, reqs)


def group_label(grp: Group) -> str:
    """``k<id> op1+op2+...``: a fused group as the profiler names its kernel calls."""
    return f"k{grp.id} " + "+".join(op.name for op in grp.ops)


def generate(g: Graph, groups: list[Group], target: Target, fastmath: bool = False,
             cache: bool = True, profile: bool = False,
             inplace: list[tuple[int, int]] = (), program_calls: int | None = None) -> Program:
    """Generate the module source of a program for ``target``: group kernels plus
    ``forward``/``backward`` (or, around host ops, numbered segments of them). ``profile`` makes
    every group's kernel call a segment of its own, labelled by :func:`group_label`, so the
    executor can time each one (the kernels are the same). ``inplace`` are the memory plan's
    ``(output, input it overwrites)`` pairs: a kernel that has both takes the array once.
    ``program_calls``: the most kernel calls of a step run through one program function (default
    :data:`PROGRAM_CALLS_LIMIT`; ``Config.program_calls``)."""
    inplace = dict(inplace)
    limit = PROGRAM_CALLS_LIMIT if program_calls is None else program_calls
    light = _light(groups)
    if program_calls is None and light:
        limit = 0
    mw = target.module_writer(cache, fastmath)
    runs: dict[str, list] = {"forward": [], "backward": []}   # host Segments and lists of launches
    spans: dict[str, tuple[str, int]] = {}
    forms: dict[str, str] = {}   # canonical kernel source -> the kernel function of that form
    kernel_of: dict[str, str] = {}   # group kernel name (k<group id>) -> the function it calls
    const_values: dict[str, list] = {}   # kernel function -> the values of its const arguments
    labels: dict[int, str] = {}   # id of a list of launches -> its first group's label
    kmods: dict[str, str] = {}    # kernel module name -> source (targets with kernel_modules)
    for grp in groups:
        steps = runs[grp.phase]
        if grp.host:
            steps.append(_host_segment(g, grp, target))
        elif not grp.view:   # a view group is only an alias in the memory plan
            if profile or not steps or isinstance(steps[-1], Segment):
                steps.append([])
                labels[id(steps[-1])] = group_label(grp)
            steps[-1].extend(_group_kernel(mw, target, g, grp, spans, forms, kernel_of, const_values,
                                           kmods, lambda: target.module_writer(cache, fastmath), inplace,
                                           light))
    entries, segments = {}, {}

    def building_block(fn: str) -> bool:   # a direct kernel: the building block's own function
        module = kmods.get("", {}).get(fn, ("",))[0]
        return bool(module) and module not in kmods

    def hosted(step: list) -> bool:
        """Whether a step's kernels are called from the host instead of through a program function:
        a profiled step, one longer than ``limit``, a kernel in parts (symjit.parts), and a step
        whose program function would only link again what is compiled already: one kernel, or
        only building blocks (a direct call each), which numba would link and optimise anew for
        every program (1-2 s each, for one host call saved per kernel)."""
        return target.kernel_modules and (profile or len(step) > limit or len(step) == 1
                                          or all(building_block(fn) for fn, *_ in step)
                                          or any(fn.endswith(PARTS_SUFFIX) for fn, *_ in step))

    for phase, steps in runs.items():
        if not steps:
            continue
        if len(steps) == 1 and not isinstance(steps[0], Segment) and not hosted(steps[0]):   # one call
            entries[phase] = (phase, target.program(mw, phase, steps[0], vname))
            segments[phase] = [Segment("njit", phase, entries[phase][1], label=labels[id(steps[0])],
                                       launches=_launches(steps[0]), consts=target.program_consts(steps[0]))]
            continue
        segments[phase] = []
        for step in steps:
            name = f"{phase}_{len(segments[phase])}"
            if isinstance(step, Segment):
                segments[phase].append(step)
            elif hosted(step):
                segments[phase].append(_host_calls(name, step, labels[id(step)]))
            else:
                segments[phase].append(Segment("njit", name, target.program(mw, name, step, vname),
                                               label=labels[id(step)], launches=_launches(step),
                                               consts=target.program_consts(step)))
    header = f"Generated by symjit for the {target.name} target: one kernel per fused group."
    kernels: dict[str, list[int]] = {}   # kernel function -> the arrays of its first group (as consts)
    for steps in runs.values():
        for step in steps:
            for name, vids, *_ in ([] if isinstance(step, Segment) else step):
                kernels.setdefault(name, vids)
    host = {name: h for steps in runs.values() for step in steps if not isinstance(step, Segment)
            for name, _, _, _, h, _ in step if h}
    texts = kmods.pop("", {})
    return Program(mw.source(header), entries, segments, kernels, spans, host, kernel_of, const_values,
                   kmods, texts)

"""Pass 4: static memory planning over the kernel schedule.

Only *temporaries* are planned: values a kernel materializes (see fuse.py) that are not arguments,
aux states, gradients handed to the user, head gradients or outputs (those are the executor's
arrays and are never reused). Steps are kernel-group indices of the whole program (forward, then
backward for training), so forward values the backward pass reads stay alive until then, and an
inference program frees them as soon as its own later kernels are done with them.

1. Liveness: a temporary lives from the group that writes it to the last group that reads it. A
   forward value the backward program reads lives past the program's last group and is never
   overwritten in place: MXNet allows any number of ``backward`` calls after one ``forward``, and
   each must read the activations that forward left (only backward temporaries are reused
   within the backward program).
2. Views: the output of a reshape-like view group shares its input's buffer (a view of an
   external array gets no buffer: the executor reshapes the external array). In-place: a group's
   output may take over the buffer of one of its inputs that dies in that
   group, has the same byte size and is read index-aligned: by the elementwise loop of the group
   (each element is read before the same element is written) or through an ``inplace`` pair the
   anchor's lowering rule declares for the target (valid for that emitter's access order). Such
   values form one buffer whose lifetime is the union of theirs.
3. Placement: buffers get offsets in one arena so that buffers alive at the same time never
   overlap. Two strategies run, best-fit by decreasing size and first-fit in schedule order, and
   the smaller arena wins (above a few thousand buffers, as in a long unrolled loop, only the
   schedule-order one: it is one sweep, the other scans every buffer alive at each placement).
   Sizes are real byte sizes (dtype-aware), offsets 64-byte aligned.

``planned_bytes`` is the arena size; ``naive_bytes`` is one buffer per temporary. Kernel
workspaces (scratch buffers lowering rules ask for, see :mod:`symjit.lower.rules`) are temporaries
alive during their group only; ``activation_bytes`` is the smallest arena the same strategies give
without them, the figure MXNet's memory numbers count (its operators' workspaces are a separate
resource).
"""
from __future__ import annotations

import bisect
import dataclasses
import heapq
from collections.abc import Callable

from ..graph import Graph
from .fuse import FUSABLE_INTO, Group

__all__ = ["MemoryPlan", "plan_memory", "ALIGN"]

ALIGN = 64


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclasses.dataclass
class MemoryPlan:
    """Where each temporary lives in the arena."""

    offsets: dict[int, int]                 # value id -> byte offset
    buffer_of: dict[int, int]               # value id -> buffer id
    buffers: list[dict]                     # id, size, start, end, values
    inplace: list[tuple[int, int]]          # (output value, input value it overwrites)
    planned_bytes: int
    naive_bytes: int
    strategy: str
    aliases: dict[int, int] = dataclasses.field(default_factory=dict)   # view value -> its source
    workspace: frozenset[int] = frozenset()   # the kernels' scratch values among the temporaries

    @property
    def activation_bytes(self) -> int:
        """The smallest arena the placement strategies give without the kernel workspaces (what
        MXNet's memory figures count); computed on demand, not at every bind."""
        keep = [b["id"] for b in self.buffers if not set(b["values"]) & self.workspace]
        return min(place(self.buffers, order)[1] for place, order in _orders(self.buffers, keep).values())

    def summary(self) -> str:
        return (f"{len(self.buffers)} buffers for {len(self.buffer_of)} temporaries, "
                f"{len(self.inplace)} in-place, planned {self.planned_bytes} bytes "
                f"({self.activation_bytes} without kernel workspaces) "
                f"vs naive {self.naive_bytes} bytes ({self.strategy})")


def _intervals(g: Graph, groups: list[Group]) -> dict[int, list[int]]:
    """temporary value id -> [first step, last step]; a forward value that a backward group reads
    ends one step past the last group, so no backward group writes over it (see ``kept``)."""
    life: dict[int, list[int]] = {}
    for grp in groups:
        for o in grp.outputs:
            if g.values[o].kind == "tmp":
                life[o] = [grp.id, grp.id]
    for grp in groups:
        for i in grp.inputs:
            if i in life:
                life[i][1] = max(life[i][1], grp.id)
    beyond = len(groups)
    for v in kept(groups):
        if v in life:
            life[v][1] = beyond
    return life


def kept(groups: list[Group]) -> set[int]:
    """The values forward groups write that backward groups read: what every ``backward`` call
    after one ``forward`` needs unchanged."""
    written = {o for grp in groups if grp.phase == "forward" for o in grp.outputs}
    return {i for grp in groups if grp.phase == "backward" for i in grp.inputs if i in written}


class _Extents:
    """value -> [first step, last step of the buffer it shares so far], read on demand (a dict
    rebuilt for every group would make planning quadratic in the graph size)."""

    def __init__(self, life: dict, end: dict, root: Callable[[int], int]):
        self._life, self._end, self._root = life, end, root

    def __contains__(self, v: int) -> bool:
        return v in self._life

    def __getitem__(self, v: int) -> list[int]:
        return [self._life[v][0], self._end[self._root(v)]]


def _inplace_candidates(g: Graph, grp: Group, life: dict, taken: set) -> list[tuple[int, int]]:
    """(output, input) pairs of this group that may share storage.

    In a group with an elementwise loop, a loop output may overwrite any value the loop reads
    index-aligned (full loop shape) that dies here, the anchor's output included: the loop reads an
    element before writing it, and the anchor has finished before the loop starts, or computes
    each element inside it (then the inputs its rule ``gathers`` from stay untouched). A lone
    non-elementwise op uses the ``inplace`` pairs of its lowering rule.
    """
    def free(i: int, step: int) -> bool:
        return i in life and life[i][1] == step and i not in taken

    anchor = grp.anchor
    loop_ops = [(op, r) for op, r in zip(grp.ops, grp.rules) if op.op.kind in FUSABLE_INTO]
    pairs: list[tuple[int, int]] = []
    if loop_ops:
        rule = grp.anchor_rule
        busy = set(anchor.inputs) if rule is not None and rule.gathers else set()   # read across the loop
        reads = [i for op, r in loop_ops for slot, i in enumerate(op.inputs)
                 if (r is None or slot not in r.shape_only) and i not in busy]
        aligned = [i for i in dict.fromkeys(reads)
                   if free(i, grp.id) and g.values[i].shape == grp.loop_shape]
        loop_outs = [o for op, _ in loop_ops for o in op.outputs if o in grp.outputs and o in life]
        for o in loop_outs:
            size = g.values[o].nbytes
            i = next((i for i in aligned if i not in taken and g.values[i].nbytes == size), None)
            if i is not None:
                pairs.append((o, i))
                taken.add(i)
        return pairs
    rule = grp.anchor_rule
    pairs_of = rule.inplace_pairs(anchor.params) if rule is not None else ()
    for in_idx, out_idx in pairs_of:   # alternatives: each output takes one input at most
        if in_idx < len(anchor.inputs) and out_idx < len(anchor.outputs):
            i, o = anchor.inputs[in_idx], anchor.outputs[out_idx]
            if free(i, grp.id) and o in life and g.values[i].nbytes == g.values[o].nbytes \
                    and all(o != p[0] for p in pairs):
                pairs.append((o, i))
                taken.add(i)
    return pairs


_SPAN = 64   # steps per bucket of the placement's index of short-lived buffers


class _Placed:
    """The buffers placed so far (offset, size, start, end), indexed by time: a buffer living at
    most :data:`_SPAN` steps is listed in the one or two buckets of ``_SPAN`` steps it touches,
    a longer one in a plain list, so finding the buffers alive with a new one reads a few buckets
    and the long-lived ones, not every buffer of the graph (an unrolled loop has tens of
    thousands)."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, int, int]] = []
        self.long: list[int] = []
        self.buckets: dict[int, list[int]] = {}

    def add(self, offset: int, size: int, start: int, end: int) -> None:
        j = len(self.items)
        self.items.append((offset, size, start, end))
        if end - start > _SPAN:
            self.long.append(j)
            return
        for k in range(start // _SPAN, end // _SPAN + 1):
            self.buckets.setdefault(k, []).append(j)

    def clashes(self, start: int, end: int) -> list[tuple[int, int]]:
        """(offset, size) of each placed buffer alive at some step of [start, end], sorted."""
        near = set(self.long)
        for k in range(start // _SPAN, end // _SPAN + 1):
            near.update(self.buckets.get(k, ()))
        items = self.items
        return sorted((items[j][0], items[j][1]) for j in near
                      if not (items[j][3] < start or items[j][2] > end))


def _place(buffers: list[dict], order: list[int]) -> tuple[dict[int, int], int]:
    """Best fit in any order: each buffer goes in the smallest gap between the placed buffers it
    meets in time (the lowest such gap on ties), else above them."""
    placed = _Placed()
    offsets: dict[int, int] = {}
    for b in order:
        buf = buffers[b]
        clashes = placed.clashes(buf["start"], buf["end"])
        best, best_gap = None, None
        cursor = 0
        for o, s in clashes:
            gap = o - cursor
            if gap >= buf["size"] and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, o + s)
        offset = best if best is not None else cursor
        offsets[b] = offset
        placed.add(offset, buf["size"], buf["start"], buf["end"])
    total = max((o + s for o, s, _, _ in placed.items), default=0)
    return offsets, total


class _Arena:
    """The arena at one step of a sweep in schedule order: the free holes below the top of the
    buffers alive, by size, and the top."""

    def __init__(self) -> None:
        self.by_size: list[tuple[int, int]] = []     # (size, offset), sorted
        self.at: dict[int, int] = {}                 # hole offset -> size
        self.ending: dict[int, int] = {}             # hole end -> offset
        self.top = 0

    def _drop(self, offset: int) -> int:
        size = self.at.pop(offset)
        del self.ending[offset + size]
        del self.by_size[bisect.bisect_left(self.by_size, (size, offset))]
        return size

    def _hole(self, offset: int, size: int) -> None:
        self.at[offset], self.ending[offset + size] = size, offset
        bisect.insort(self.by_size, (size, offset))

    def take(self, size: int) -> int:
        """The offset of a new buffer: the smallest hole that holds it (the lowest on ties), its
        start, else the top."""
        k = bisect.bisect_left(self.by_size, (size, -1))
        if k == len(self.by_size):
            offset, self.top = self.top, self.top + size
            return offset
        hole, offset = self.by_size[k]
        self._drop(offset)
        if hole > size:
            self._hole(offset + size, hole - size)
        return offset

    def free(self, offset: int, size: int) -> None:
        lo, hi = offset, offset + size
        if lo in self.ending:
            lo = self.ending[lo]
            self._drop(lo)
        if hi in self.at:
            hi += self._drop(hi)
        if hi == self.top:
            self.top = lo
        else:
            self._hole(lo, hi - lo)


def _sweep(buffers: list[dict], order: list[int]) -> tuple[dict[int, int], int]:
    """The best-fit placement of :func:`_place` for buffers in schedule order (by start step), in
    one sweep: the buffers alive with a new one are those placed before it that end at its start
    or later, so the ones that ended are freed and the new one takes the best hole among the rest.
    Same offsets as :func:`_place`, in O(n log n) instead of a scan of every buffer alive at
    once for each (an unrolled loop's forward values stay alive for its backward pass)."""
    arena, alive, offsets, total = _Arena(), [], {}, 0
    for b in order:
        buf = buffers[b]
        while alive and alive[0][0] < buf["start"]:
            _, offset, size = heapq.heappop(alive)
            arena.free(offset, size)
        offsets[b] = arena.take(buf["size"])
        heapq.heappush(alive, (buf["end"], offsets[b], buf["size"]))
        total = max(total, arena.top)
    return offsets, total


_BEST_FIT_MAX = 3000   # buffers: above, only the schedule-order sweep runs


def _orders(buffers: list[dict], ids) -> dict[str, tuple[Callable, list[int]]]:
    """The placement strategies for the buffers ``ids``, each a placer and its order: best-fit by
    decreasing size (up to :data:`_BEST_FIT_MAX` buffers: each placement scans the buffers
    alive with it, quadratic in an unrolled loop's graph), first-fit in schedule order."""
    ids = list(ids)
    orders = {}
    if len(ids) <= _BEST_FIT_MAX:
        orders["best-fit by decreasing size"] = (_place, sorted(ids, key=lambda b: (-buffers[b]["size"], b)))
    orders["first-fit in schedule order"] = (_sweep, sorted(ids, key=lambda b: (buffers[b]["start"], b)))
    return orders


def plan_memory(g: Graph, groups: list[Group], reuse: bool = True) -> MemoryPlan:
    """Plan the temporaries of ``g`` given its kernel groups (see the module docstring).

    ``reuse=False`` (the executor's monitored programs) gives every temporary its own buffer,
    alive to the end of the program, so each one can be inspected after the program ran.
    """
    life = _intervals(g, groups)
    if not reuse:
        last = max((grp.id for grp in groups), default=0)
        life = {v: [start, last] for v, (start, _) in life.items()}
    parent: dict[int, int] = {v: v for v in life}
    end: dict[int, int] = {v: life[v][1] for v in life}   # per root: last step of the whole buffer

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]   # path halving: in-place chains get long
            v = parent[v]
        return v

    def union(o: int, i: int) -> None:
        ro, ri = root(o), root(i)
        if ro != ri:
            parent[ro] = ri
            end[ri] = max(end[ri], end[ro])

    aliases: dict[int, int] = {}
    for grp in groups:          # views share their source's storage
        if grp.view:
            src, dst = grp.ops[0].inputs[0], grp.ops[0].outputs[0]
            if src in life:
                union(dst, src)
            else:               # a view of an external array: no buffer of its own
                life.pop(dst, None)
                parent.pop(dst, None)
            aliases[dst] = src
    inplace: list[tuple[int, int]] = []
    taken: set[int] = set()
    extents = _Extents(life, end, root)
    for grp in groups:
        if grp.view or not reuse:
            continue
        for o, i in _inplace_candidates(g, grp, extents, taken):
            union(o, i)
            inplace.append((o, i))
    members: dict[int, list[int]] = {}
    for v in life:
        members.setdefault(root(v), []).append(v)
    buffers = []
    buffer_of: dict[int, int] = {}
    for vals in members.values():
        bid = len(buffers)
        buffers.append({"id": bid, "size": _align(max(g.values[v].nbytes for v in vals)),
                        "start": min(life[v][0] for v in vals), "end": max(life[v][1] for v in vals),
                        "values": sorted(vals)})
        for v in vals:
            buffer_of[v] = bid
    strategies = _orders(buffers, range(len(buffers)))
    best = None
    for name, (place, order) in strategies.items():
        offs, total = place(buffers, order)
        if best is None or total < best[2]:
            best = (name, offs, total)
    name, offs, total = best
    return MemoryPlan(
        offsets={v: offs[buffer_of[v]] for v in life}, buffer_of=buffer_of, buffers=buffers,
        inplace=inplace, planned_bytes=total,
        naive_bytes=sum(g.values[v].nbytes for v in _intervals(g, groups)), strategy=name,
        aliases=aliases, workspace=frozenset(w for grp in groups for w in grp.workspace),
    )

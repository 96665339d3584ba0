"""What an ``mx.autograd`` recording is made of, and how ``backward`` reads it back.

An :class:`Entry` is one recorded operator call, left on the arrays it made
(``NDArray._ag_node = (entry, output)``): the operator (a registered op's name, :data:`GRAPH` for
a whole traced Symbol, :data:`FUNCTION` for an ``autograd.Function``), its params, where each
input came from (another entry's output, or a *leaf*: an array no recorded call made, with its
write count) and the mode. A :class:`Tape` walks the entries reaching some heads into schedule
order and writes them as a Symbol of registered operators whose variables are the leaves
(``leaf<i>``); :mod:`symjit.autograd` binds it for training.

>>> import symjit as mx
>>> x = mx.nd.ones((2,)); x.attach_grad()
>>> with mx.autograd.record():
...     y = mx.nd.relu(x) * 2
>>> tape = Tape([y], 'example')
>>> [e.op for e in tape.entries], len(tape.leaves)
(['relu', 'broadcast_mul'], 2)
"""
from __future__ import annotations

from typing import Any

from .base import MXNetError
from .imperative import MODE
from .ndarray import NDArray
from .ndarray.arith import SCALAR_OPS
from .symbol.symbol import Group, Symbol, Variable, make_op_symbol

__all__ = ["Entry", "GraphState", "held_outputs", "signature", "is_cut", "cut_outputs", "check_unchanged",
           "tracked", "history", "source_of", "mark", "constant", "no_variable_write", "record_entry",
           "GRAPH", "FUNCTION", "GraphOp", "record_graph", "storage_overlaps", "Tape", "output_of"]

FUNCTION = "_function"  # the op name of an entry whose gradient is an autograd.Function's backward


class Entry:
    """One recorded operator call: op, params, inputs' sources ((entry, output) or a leaf
    NDArray), each leaf's write count when it was recorded (None: not checked), number of
    outputs, mode; ``freed`` once a backward without ``retain_graph`` used it."""

    __slots__ = ("op", "params", "sources", "vers", "n_out", "train", "freed", "saved", "held",
                 "held_vers", "sig")

    def __init__(self, op: str, params: dict, sources: list, n_out: int, train: bool,
                 vers: list | None = None, saved: Any = None, sig: tuple | None = None):
        self.op, self.params, self.sources, self.n_out, self.train = op, params, sources, n_out, train
        self.sig = sig          # (op, params, mode) as a recording's key has it; made on first need
        self.vers = vers if vers is not None else [None] * len(sources)
        self.freed = False
        self.saved = saved      # a traced graph's forward pass kept for its backward (GraphState)
        self.held: list | None = None   # the outputs' values (views sharing their write counts)
        self.held_vers: list = []

    def kept(self) -> list | None:
        """The values this call computed, for a backward pass to read instead of computing them
        again: None once freed, or when one was written since."""
        held = self.held
        if held is None or any(h._ver[0] != v for h, v in zip(held, self.held_vers)):
            return None
        return held


class GraphState:
    """A traced graph's training-mode call whose forward pass its executor still holds: the
    recorded entry's backward is the executor's own backward (as MXNet's cached operators do),
    while the executor has not run again (``runs``, its shared run count, still ``stamp``).

    ``backward(ograds)`` gives one gradient per input of the entry (None where none is needed);
    ``outputs`` and ``versions`` are the recorded outputs and their write counts."""

    __slots__ = ("exe", "runs", "stamp", "grads", "outputs", "versions")

    def __init__(self, exe: Any, runs: list, grads: list, outputs: list):
        self.exe, self.runs, self.stamp, self.grads = exe, runs, runs[0], grads
        self.outputs, self.versions = held_outputs(outputs), [o._cell()[0] for o in outputs]

    def valid(self) -> bool:
        return self.runs[0] == self.stamp

    def backward(self, e: Entry, ograds: list, where: str) -> list:
        """The gradients of entry ``e``'s inputs given those of its outputs; an error if an input
        was written since the call (its executor's gradients would mix old and new values)."""
        for s, v in zip(e.sources, e.vers):
            if not isinstance(s, tuple):
                check_unchanged(s, v, e, where)
        self.exe.backward(ograds)
        return self.grads


def held_outputs(outs: list) -> list:
    """What an entry keeps of its outputs (the values a backward pass that stops there reads):
    views of them sharing their storage and write counters, not the arrays themselves, which
    refer to the entry (their history): a cycle through them would keep the entry's buffers (a
    traced graph's executor) alive after the arrays are dropped, until Python's cycle collector
    next runs. A sparse output is kept as it is."""
    return [o._view(o._data) if type(o) is NDArray else o for o in outs]


def signature(op: str, params: dict, train: bool) -> tuple:  # noqa: FBT001
    """An entry's part of a recording's structure key: its operator, params (by their reprs) and
    mode."""
    return op, tuple(sorted((k, repr(v)) for k, v in params.items())), train


def is_cut(e: Entry, graphs: bool) -> bool:  # noqa: FBT001
    """Whether a backward pass stops at entry ``e`` and calls its own backward between compiled
    parts: an ``autograd.Function``'s, and (``graphs``) a traced graph's whose forward pass its
    executor still holds."""
    return e.op == FUNCTION or graphs and e.saved is not None and e.saved.valid()


def cut_outputs(e: Entry) -> tuple[list, list]:
    """The recorded outputs of a cut entry and their write counts when recorded."""
    if e.op == FUNCTION:
        return e.params["outputs"], e.params["versions"]
    return e.saved.outputs, e.saved.versions


def history(a: Any) -> tuple | None:
    """The entry output ``a`` was recorded as, unless a backward pass freed that recording (its
    history cleared, as MXNet's: a later recording reads ``a`` as a constant)."""
    node = getattr(a, "_ag_node", None)
    return None if node is None or node[0].freed else node


def tracked(a: Any) -> bool:
    return history(a) is not None or getattr(a, "_ag_req", None) is not None


def source_of(a: NDArray, where: str) -> tuple[Any, int | None]:
    """Where input ``a`` comes from: its entry's output, or ``a`` itself as a leaf, with the
    leaf's write count. An array written in place after it was recorded (through a view, or by
    a call that was not recorded) is an error: its recording no longer describes its values."""
    node = history(a)
    if node is None:
        return a, a._cell()[0]
    if a._ver is not None and a._ver[0] != a._ag_ver:
        raise MXNetError(f"{where}: an input of shape {a.shape} (computed by {node[0].op}) was "
                         "changed in place after it was recorded (a write through a view of it, or "
                         "one outside autograd.record()); its gradient would be wrong. Record the "
                         "change itself (assign to the array, not to a view) or copy the array first")
    return node, None


def mark(outs: list, entry: Entry) -> None:
    """Leave ``entry`` on its outputs; the entry holds their values (views of their storage: an
    output array may die before the backward pass that reads its value)."""
    for i, o in enumerate(outs):
        o._ag_node, o._ag_ver = (entry, i), o._cell()[0]
    if entry.op != GRAPH and entry.op != FUNCTION:
        entry.held = [o._view(o._data) for o in outs]
        entry.held_vers = [o._ag_ver for o in outs]


def constant(outs: Any) -> Any:
    """Arrays written with values that depend on no variable: no recording reaches them."""
    for o in outs if isinstance(outs, (list, tuple)) else [outs]:
        if isinstance(o, NDArray):
            o._ag_node = None
    return outs


def no_variable_write(a: Any, where: str) -> None:
    if getattr(a, "_ag_req", None) is not None:
        raise MXNetError(f"{where}: writes in place into a variable (an array with attach_grad() or "
                         f"mark_variables(), shape {a.shape}) while recording; its gradient could "
                         "not be computed. Write into a copy, or do the update under autograd.pause()")
    if getattr(a, "_is_view", False):
        raise MXNetError(f"{where}: writes a recorded value into a view (a slice, reshape or "
                         f"detach() result, shape {a.shape}) while recording; the arrays sharing its "
                         "storage would not be recorded. Assign into the array itself "
                         "(array[key] = value) instead")


def record_entry(name: str, params: dict, inputs: list, outs: list, train: bool,  # noqa: FBT001
                  unchecked: set | frozenset = frozenset(), input_names: list | None = None,
                  saved: GraphState | None = None) -> list:
    """Record ``outs`` as the outputs of one entry reading ``inputs`` (those named in
    ``unchecked``, aux states, without a write-count check)."""
    pairs = [source_of(a, name) for a in inputs]
    names = list(input_names or []) + [None] * (len(pairs) - len(input_names or []))
    pairs = [(s, None) if n in unchecked else (s, v) for n, (s, v) in zip(names, pairs)]
    mark(outs, Entry(name, params, [s for s, _ in pairs], len(outs), train, [v for _, v in pairs],
                     saved))
    return outs


GRAPH = "_graph"   # the op name of an entry whose operator is a whole traced Symbol


class GraphOp:
    """A traced Symbol recorded as one operator (a hybridized Gluon block's call): its inputs are
    the symbol's variables in ``list_inputs`` order; ``key`` tells recordings apart (the symbol's
    structure); ``backward`` inlines its nodes, renamed under the entry's name, into the graph it
    binds."""

    def __init__(self, symbol: Symbol, key: str):
        self.symbol, self.key = symbol, key
        self.inputs = symbol.list_inputs()
        self.aux = set(symbol.list_auxiliary_states())

    def __repr__(self) -> str:
        return f"GraphOp({self.key})"

    def inline(self, inputs: list[Symbol], name: str) -> Symbol:
        return self.symbol(name=name, **dict(zip(self.inputs, inputs)))


def record_graph(op: GraphOp, inputs: list[NDArray], outs: list[NDArray],
                 saved: GraphState | None = None) -> list[NDArray]:
    """Record ``outs``, computed by running ``op``'s symbol on ``inputs`` (one array per
    variable), as one entry while recording and when an input depends on a variable. Aux states
    are not version-checked: a training pass updates them in place. ``saved``: the call's forward
    pass, kept by its executor for the entry's backward.

    >>> import symjit as mx
    >>> x = mx.nd.array([2.0]); x.attach_grad()
    >>> op = mx.autograd.GraphOp(mx.sym.var('a') * mx.sym.var('a'), 'square')
    >>> with mx.autograd.record():
    ...     y = mx.autograd.record_graph(op, [x], [x * 0 + 4])[0]
    >>> y.backward(); x.grad.asnumpy().tolist()
    [4.0]
    """
    if not MODE.recording or not any(tracked(a) for a in inputs):
        return constant(outs)
    return record_entry(GRAPH, {"graph": op}, inputs, outs, MODE.training, op.aux, op.inputs, saved)


def storage_overlaps(a: Any, b: Any) -> bool:
    from .ndarray import storage
    return isinstance(a, NDArray) and isinstance(b, NDArray) and storage.overlaps(a._data, b._data)
# --- the recorded graph -----------------------------------------------------------------------

def check_heads(heads: list, where: str) -> list[tuple[Entry, int]]:
    """The recorded outputs ``heads`` are: an error names a head that is not one."""
    for i, h in enumerate(heads):
        if not isinstance(h, NDArray):
            raise MXNetError(f"{where}: head {i} must be an NDArray, got {type(h).__name__}")
        if getattr(h, "_ag_node", None) is None:
            raise MXNetError(f"{where}: head {i} of shape {h.shape} was not computed from a "
                             "variable under autograd.record(); attach_grad() its inputs and "
                             "compute it inside record()")
        source_of(h, f"{where}: head {i}")
    return [h._ag_node for h in heads]


def check_unchanged(leaf: NDArray, version: int | None, e: Entry, where: str) -> None:
    """A leaf entry ``e`` read (at write count ``version``; None: unchecked) was not written since."""
    if version is not None and leaf._cell()[0] != version:
        op = "a hybridized block" if e.op == GRAPH else e.op
        raise MXNetError(f"{where}: an input of shape {leaf.shape} of the recorded operator "
                         f"{op} was changed in place after it was recorded; the "
                         "gradient would be computed from its new values. Do not "
                         "write into recorded inputs (variables included) before "
                         "backward, or write into a copy")


def walk(roots: list[Entry], where: str, through: bool = False,  # noqa: FBT001, FBT002
         graphs: bool = False) -> list[Entry]:  # noqa: FBT001, FBT002
    """The entries reaching ``roots``, inputs before their consumers; a cut entry's
    (:func:`is_cut`) inputs only when ``through``."""
    order: list[Entry] = []
    seen: set[int] = set()
    stack = [(e, False) for e in reversed(roots)]
    while stack:                    # iterative post-order
        e, done = stack.pop()
        if id(e) in seen and not done:
            continue
        if e.freed:
            raise MXNetError(f"{where}: the recorded graph (operator {e.op}) was already used by a "
                             "backward pass and freed; pass retain_graph=True to the first "
                             "backward to differentiate it again")
        if done:
            if id(e) not in seen:
                seen.add(id(e))
                order.append(e)
            continue
        stack.append((e, True))
        if through or not is_cut(e, graphs):
            stack.extend((s[0], False) for s in reversed(e.sources)
                         if isinstance(s, tuple) and id(s[0]) not in seen)
    return order


class Tape:
    """The entries reaching ``heads`` (arrays, or ``nodes``: (entry, output) pairs) in schedule
    order, the leaves, and the structure key. The outputs of a cut entry (an
    ``autograd.Function``'s, and with ``graphs`` a traced graph's that kept its forward pass) are
    leaves too (``cuts``: leaf index -> (entry, output)): its gradient is not compiled."""

    def __init__(self, heads: list[NDArray], where: str, nodes: list[tuple[Entry, int]] | None = None,
                 graphs: bool = False, entries: list[Entry] | None = None):  # noqa: FBT001, FBT002
        self.leaves: list[NDArray] = []
        leaf_index: dict[int, int] = {}
        self.refs: list[list] = []       # per entry: ("e", entry, output) or ("l", leaf) per input
        self.cuts: dict[int, tuple[Entry, int]] = {}
        nodes = check_heads(heads, where) if nodes is None else nodes
        # ``entries``: the walk from the heads' entries already made, when it met no cut entry
        self.entries = entries if entries is not None else [
            e for e in walk([n[0] for n in nodes], where, graphs=graphs) if not is_cut(e, graphs)]
        index = {id(e): j for j, e in enumerate(self.entries)}
        cuts = entries is None      # a walk given here met no cut entry
        leaves = self.leaves
        for e in self.entries:
            refs = []
            for s, v in zip(e.sources, e.vers):
                if isinstance(s, tuple):
                    if cuts and is_cut(s[0], graphs):
                        refs.append(("l", self._cut_leaf(s, leaf_index, where)))
                    else:
                        refs.append(("e", index[id(s[0])], s[1]))
                    continue
                if v is not None and s._cell()[0] != v:
                    check_unchanged(s, v, e, where)     # the error
                j = leaf_index.get(id(s))
                if j is None:
                    j = leaf_index[id(s)] = len(leaves)
                    leaves.append(s)
                refs.append(("l", j))
            self.refs.append(refs)
        self.heads = [(index[id(e)], i) for e, i in nodes]
        self.reqs = [getattr(a, "_ag_req", None) or "null" for a in self.leaves]

    def _cut_leaf(self, s: tuple, leaf_index: dict, where: str) -> int:
        """The leaf index of a cut entry's output ``s`` ((entry, output)), made on first use."""
        outs, vers = cut_outputs(s[0])
        out, ver = outs[s[1]], vers[s[1]]
        if out._cell()[0] != ver:
            what = "an autograd.Function" if s[0].op == FUNCTION else "a hybridized block"
            raise MXNetError(f"{where}: an output of shape {out.shape} of {what} was changed in "
                             "place after it was recorded; its gradient would be wrong")
        if id(out) not in leaf_index:
            leaf_index[id(out)] = len(self.leaves)
            self.cuts[len(self.leaves)] = s
            self.leaves.append(out)
        return leaf_index[id(out)]

    def key(self, given: list[bool], wanted: list[bool] | None) -> tuple:
        ops = []
        for e, r in zip(self.entries, self.refs):
            if e.sig is None:
                e.sig = signature(e.op, e.params, e.train)
            ops.append((e.sig, tuple(r)))
        leaves = tuple((a._store.shape, a._store.dtype.str, a._ctx) for a in self.leaves)
        return tuple(ops), leaves, tuple(self.reqs), tuple(self.heads), tuple(given), \
            None if wanted is None else tuple(wanted)

    def symbol(self, numbers: bool = False) -> Symbol:  # noqa: FBT001, FBT002
        """The recording as a Symbol: leaf ``i`` is variable ``leaf<i>``, entry ``j`` node ``op<j>``;
        ``numbers``: arithmetic with a number as the scalar operator (the number a param), not a
        variable (one compiled program serves every value of it when it is a variable)."""
        leaf_syms = [Variable(f"leaf{i}") for i in range(len(self.leaves))]
        made: list[Symbol] = []
        for j, (e, refs) in enumerate(zip(self.entries, self.refs)):
            scalar = scalar_form(e, refs, self.leaves) if numbers else None
            if scalar is not None:
                r = scalar[1]
                src = leaf_syms[r[1]] if r[0] == "l" else output_of(made[r[1]], r[2], self.entries[r[1]])
                made.append(make_op_symbol(scalar[0], src, name=f"op{j}", scalar=scalar[2]))
                continue
            ins = [leaf_syms[r[1]] if r[0] == "l" else output_of(made[r[1]], r[2], self.entries[r[1]])
                   for r in refs]
            if e.op == GRAPH:                   # a traced Symbol: its nodes join this graph
                made.append(e.params["graph"].inline(ins, f"op{j}"))
                continue
            params = dict(e.params)
            if e.op == "BatchNorm" and not e.train:
                params["use_global_stats"] = True
            made.append(make_op_symbol(e.op, *ins, name=f"op{j}", **params))
        heads = [output_of(made[j], i, self.entries[j]) for j, i in self.heads]
        return heads[0] if len(heads) == 1 else Group(heads)



def scalar_form(e: Entry, refs: list, leaves: list) -> tuple[str, tuple, float] | None:
    """``(scalar op, the other operand's ref, the number)`` for arithmetic of a recorded array
    with a number, else None."""
    ops = SCALAR_OPS.get(e.op)
    if ops is None or len(refs) != 2:
        return None
    for k in (1, 0):
        r = refs[k]
        if r[0] == "l" and leaves[r[1]]._number and getattr(leaves[r[1]], "_ag_req", None) is None:
            return ops[1 - k], refs[1 - k], float(leaves[r[1]].asnumpy().reshape(-1)[0])
    return None


def output_of(sym: Symbol, i: int, entry: Entry) -> Symbol:
    return sym if entry.n_out == 1 else sym[i]

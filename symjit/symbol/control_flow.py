"""Control flow in symbols and on NDArrays: ``contrib.foreach``, ``contrib.while_loop`` and
``contrib.cond``, with MXNet 1.x's signatures and results.

On NDArrays they are Python loops and branches (as in MXNet). In a symbol:

* ``foreach(body, data, init_states)`` traces ``body`` once on placeholder symbols into a subgraph
  (symbols it uses from outside, weights or computed values, become inputs of the loop node, as
  MXNet cuts its subgraphs) and makes one ``_foreach`` node holding the subgraph as JSON. The
  number of steps is the data's first axis, known only when shapes are: the bind unrolls the
  subgraph once per step (``_foreach`` is a composite op), so gradients, fusion and the memory plan
  see ordinary ops, and the loop's kernels are those of the body.
* ``while_loop(cond, func, loop_vars, max_iterations)`` is one ``_while_loop`` node whose host call
  runs the condition and step programs in a loop (:mod:`symjit.symbol.while_loop`).
* ``cond(pred, then_func, else_func)`` computes both branches and selects with ``where``; the
  gradient reaches only the selected branch.

Both branches are computed, which MXNet does not do: they must not raise for the values they see.

>>> import symjit as mx
>>> step = lambda x, states: (x + states[0], [states[0] * 2])
>>> outs, states = mx.sym.contrib.foreach(step, mx.sym.var('data'), [mx.sym.var('s')])
>>> ex = outs.bind(mx.cpu(), {'data': mx.nd.array([[1, 2], [3, 4]]), 's': mx.nd.array([1, 1])})
>>> ex.forward()[0].asnumpy().tolist()
[[2.0, 3.0], [5.0, 6.0]]
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..base import MXNetError, shape_str
from ..ops.partial_shape import merge, merge_all
from ..ops.registry import Kind, OpDef, Param, RuleError, register
from .infer import infer_graph
from .naming import current_name_manager, subgraph_scope, unique_subgraph_name
from .symbol import Node, Symbol, load_json, make_op_symbol, topo_order

__all__ = ["foreach", "cond", "nd_foreach", "nd_while_loop", "nd_cond"]

_PH = "_cf_in"   # the subgraph's placeholders: _cf_in0, _cf_in1, ... in the loop node's input order


# --- nested lists (MXNet's _flatten/_regroup) --------------------------------------------------------
def _flatten(x: Any, what: str, kind: type) -> tuple[list, Any]:
    if isinstance(x, kind):
        return [x], 0
    if isinstance(x, (list, tuple)):
        flat, fmt = [], []
        for item in x:
            f, s = _flatten(item, what, kind)
            flat += f
            fmt.append(s)
        return flat, fmt
    raise MXNetError(f"{what} must be a {kind.__name__} or a (nested) list of them, got {type(x).__name__}")


def _regroup(flat: list, fmt: Any) -> tuple[Any, list]:
    if fmt == 0:
        return flat[0], flat[1:]
    out = []
    for s in fmt:
        item, flat = _regroup(flat, s)
        out.append(item)
    return out, flat


# --- the subgraph ---------------------------------------------------------------------------------
def _cut(outputs: list[tuple[Node, int]], placeholders: list[Node]) -> tuple[Symbol, list[tuple[Node, int]]]:
    """The part of the graph of ``outputs`` that depends on ``placeholders``, as a symbol whose
    variables are the placeholders then one new placeholder per entry it reads from outside (in
    order); returns it and those outside entries."""
    dep = {id(p) for p in placeholders}
    copies: dict[int, Node] = {id(p): p for p in placeholders}
    free: dict[tuple[int, int], Node] = {}
    outside: list[tuple[Node, int]] = []

    def entry(src: Node, i: int) -> tuple[Node, int]:
        if id(src) in dep:
            return copies[id(src)], i
        key = (id(src), i)
        if key not in free:
            free[key] = Node(None, f"{_PH}{len(placeholders) + len(outside)}")
            outside.append((src, i))
        return free[key], 0

    for node in topo_order(outputs):
        if id(node) in dep or not any(id(s) in dep for s, _ in node.inputs):
            continue
        dep.add(id(node))
        copies[id(node)] = Node(node.op, node.name, dict(node.params), dict(node.attrs),
                                [entry(s, i) for s, i in node.inputs], node.given)
    return Symbol([entry(n, i) for n, i in outputs]), outside


@functools.lru_cache(maxsize=64)
def _graph(text: str) -> Symbol:
    return load_json(text)


def _placeholders(n: int) -> dict[str, int]:
    return {f"{_PH}{k}": k for k in range(n)}


def _slice_shape(shape: tuple) -> tuple:
    """The shape of one step's slice of a data input: without its first axis, or ``(1,)`` for a
    1-D input (MXNet's arrays have no 0-d shape: a step of ``arange(3)`` is one element)."""
    return tuple(shape[1:]) or (1,)


def _infer_body(p: dict, ins: list, what: str) -> list | None:
    """The body's output shapes/dtypes for the loop node's input shapes/dtypes (None if unknown)."""
    nd = p["num_data"]
    if any(v is None for v in ins):
        return None
    known = {}
    for k, v in enumerate(ins):
        if what == "shape" and k < nd:
            if len(v) < 1 or v[0] < 1:
                raise RuleError(f"data {k} must have a first axis of at least one step, got {shape_str(v)}")
            v = _slice_shape(v)
        known[f"{_PH}{k}"] = v
    return sub_outputs(_graph(p["body"]), known, what, "the loop body's")


def sub_outputs(sub: Symbol, known: dict, what: str, whose: str) -> list:
    """The shapes/dtypes (``what``) of a subgraph's outputs given its placeholders' (``known``);
    a RuleError when one cannot be inferred (``whose``: the subgraph's name in the message)."""
    got = infer_graph(sub._outputs, what, known)
    outs = [got.get((id(n), i)) for n, i in sub._outputs]
    if any(o is None for o in outs):
        raise RuleError(f"cannot infer the {what} of {whose} outputs from its inputs")
    return outs


def _foreach_rule(what: str):
    def rule(p: dict, ins: list, aux: list):
        outs = _infer_body(p, ins, what)
        n_out, ns, nd = p["num_out_data"], p["num_states"], p["num_data"]
        if outs is None:
            return list(ins), [None] * (n_out + ns), []
        states_in = ins[nd:nd + ns]
        for k, (given, got) in enumerate(zip(states_in, outs[n_out:])):
            if given != got:
                fmt = shape_str if what == "shape" else (lambda d: np.dtype(d).name)
                raise RuleError(f"state {k} enters the body as {fmt(given)} and leaves it as {fmt(got)}")
        if what == "shape":
            steps = ins[0][0]
            if any(d[0] != steps for d in ins[:nd]):
                raise RuleError("every data input must have the same number of steps (first axis), got "
                                + ", ".join(shape_str(d) for d in ins[:nd]))
            outs = [(steps, *o) for o in outs[:n_out]] + list(outs[n_out:])
        return list(ins), outs, []
    return rule


def _foreach_partial(p: dict, ins: list, outs: list, aux: list):
    """Shapes with unknown sizes through the loop: the body is inferred on the placeholders'
    partial shapes (a data input without its first axis, a state as it enters and leaves, an
    outside input as given), again while a state's shape leaving the body tells more of the state
    entering it; what the body learns of its placeholders (the weights an op sizes from its data)
    flows back to the loop node's inputs, and the number of steps is shared by the data inputs and
    the stacked outputs."""
    nd, ns, n_out = p["num_data"], p["num_states"], p["num_out_data"]
    if any(s is not None and len(s) < 1 for s in ins[:nd]):
        raise RuleError("every data input must have a first axis (the steps)")
    steps = merge_all([(-1,) if s is None else s[:1] for s in [*ins[:nd], *outs[:n_out]]])
    places = [None if s is None else _slice_shape(s) for s in ins[:nd]]
    flat = [s is not None and len(s) == 1 for s in ins[:nd]]   # 1-D data: steps of one element
    places += [merge(i, o) for i, o in zip(ins[nd:nd + ns], outs[n_out:])] + list(ins[nd + ns:])
    places, body_outs = refine_places(_graph(p["body"]), places, nd, ns, n_out, "in the loop body")
    new_ins = [None if v is None else tuple(steps) if f else (*steps, *v)
               for v, f in zip(places[:nd], flat)] + places[nd:]
    new_outs = [None if o is None else (*steps, *o) for o in body_outs[:n_out]] + places[nd:nd + ns]
    return new_ins, new_outs, []


def refine_places(sub: Symbol, places: list, first: int, count: int, n_out: int,
                  where: str) -> tuple[list, list]:
    """A loop subgraph inferred on its placeholders' partial shapes ``places``, again while what
    it learns tells more: of a placeholder (a weight an op sizes from its data), or of the loop
    state ``places[first + k]`` from the subgraph's output ``n_out + k`` (``count`` states).
    Returns the refined placeholders' shapes and the subgraph's outputs'."""
    variables = {n.name: n for n in topo_order(sub._outputs) if n.is_variable}
    outs: list = [None] * len(sub._outputs)
    for _ in range(count + 1):
        known = {f"{_PH}{k}": v for k, v in enumerate(places) if v is not None}
        try:
            got = infer_graph(sub._outputs, "shape", known, partial_dims=True)
        except MXNetError as exc:
            raise RuleError(f"{where}: {exc}") from None
        outs = [got.get((id(n), i)) for n, i in sub._outputs]
        new = [merge(v, got.get((id(variables[f"{_PH}{k}"]), 0)) if f"{_PH}{k}" in variables else v)
               for k, v in enumerate(places)]
        for k in range(count):
            new[first + k] = merge(new[first + k], outs[n_out + k])
        if new == places:
            break
        places = new
    return places, outs


def _inline(b: Any, body: Symbol, inputs: list[int]) -> list[int]:
    """Append the body's ops to the graph builder with its placeholders bound to ``inputs``."""
    vals: dict[tuple[int, int], int] = {}
    index = _placeholders(len(inputs))
    for node in topo_order(body._outputs):
        if node.is_variable:
            if node.name not in index:
                raise MXNetError(f"_foreach: the loop body reads an unbound variable {node.name!r}")
            vals[(id(node), 0)] = inputs[index[node.name]]
            continue
        outs = b.add(node.op, [vals[(id(s), i)] for s, i in node.inputs], name=b._fresh(node.name),
                     params=dict(node.params))
        for i, v in enumerate(outs):
            vals[(id(node), i)] = v
    return [vals[(id(n), i)] for n, i in body._outputs]


def _foreach_expand(b: Any, ins: list[int], p: dict) -> list[int]:
    nd, ns, n_out = p["num_data"], p["num_states"], p["num_out_data"]
    body = _graph(p["body"])
    steps = b.g.values[ins[0]].shape[0]
    slices = [b.add("split", [d], num_outputs=steps, axis=0, squeeze_axis=len(b.g.values[d].shape) > 1)
              if steps > 1 else [b.add1("Reshape", d, shape=_slice_shape(b.g.values[d].shape))]
              for d in ins[:nd]]
    states, free = list(ins[nd:nd + ns]), list(ins[nd + ns:])
    per_step: list[list[int]] = [[] for _ in range(n_out)]
    for t in range(steps):
        outs = _inline(b, body, [s[t] for s in slices] + states + free)
        for k in range(n_out):
            per_step[k].append(outs[k])
        states = outs[n_out:]
    stacked = [b.add1("stack", *vals, axis=0, num_args=steps) if steps > 1 else
               b.add1("expand_dims", vals[0], axis=0) for vals in per_step]
    return stacked + states


def _foreach_args(p: dict) -> list[str]:
    return ([f"data{k}" for k in range(p["num_data"])] + [f"state{k}" for k in range(p["num_states"])]
            + [f"free{k}" for k in range(p["num_free"])])


register(OpDef(
    name="_foreach",
    params=(Param("body", "str", doc="the loop body, a symbol in JSON (outputs: step outputs, then states)"),
            Param("num_data", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="data inputs"),
            Param("num_states", "int", check=lambda v: v >= 0, check_msg=">= 0", doc="loop states"),
            Param("num_free", "int", 0, check=lambda v: v >= 0, check_msg=">= 0",
                  doc="inputs the body reads from outside the loop"),
            Param("num_out_data", "int", check=lambda v: v >= 0, check_msg=">= 0", doc="step outputs")),
    arguments=_foreach_args,
    outputs=lambda p: [f"output{k}" for k in range(p["num_out_data"])] + [f"state{k}" for k in
                                                                            range(p["num_states"])],
    shape=_foreach_rule("shape"), dtype=_foreach_rule("dtype"), kind=Kind.OPAQUE, expand=_foreach_expand,
    shape_partial=_foreach_partial,
    hint="foreach",
    doc="contrib.foreach: the body subgraph run on each slice of the data along axis 0, threading the "
        "states; outputs the step outputs stacked along axis 0, then the final states. Unrolled at bind.",
))


# --- the symbol API -------------------------------------------------------------------------------
def foreach(body: Any, data: Any, init_states: Any, name: str = "foreach") -> tuple[Any, Any]:
    """Run ``body(data_slice, states) -> (outputs, new_states)`` on every slice of ``data`` along
    axis 0 (``data`` a symbol or a list of them; states a symbol or nested lists); return the step
    outputs stacked along axis 0 and the final states, shaped as the body returns them."""
    flat_data, data_fmt = _flatten(data, "foreach data", Symbol)
    flat_states, state_fmt = _flatten(init_states, "foreach init_states", Symbol)
    for s in flat_data + flat_states:
        if len(s) != 1:
            raise MXNetError("foreach: data and states must be single-output symbols")
    nd, ns = len(flat_data), len(flat_states)
    ph = [Node(None, f"{_PH}{k}") for k in range(nd + ns)]
    d_in, _ = _regroup([Symbol([(n, 0)]) for n in ph[:nd]], data_fmt)
    s_in, _ = _regroup([Symbol([(n, 0)]) for n in ph[nd:]], state_fmt)
    with subgraph_scope(unique_subgraph_name(name)):
        outs, new_states = body(d_in, s_in)
    flat_outs, out_fmt = _flatten(outs if outs is not None else [], "foreach body outputs", Symbol)
    flat_new, new_fmt = _flatten(new_states, "foreach body states", Symbol)
    if len(flat_new) != ns:
        raise MXNetError(f"foreach: the body returned {len(flat_new)} states for {ns} initial states")
    entries = [s._outputs[0] for s in flat_outs + flat_new]
    sub, outside = _cut(entries, ph)
    _check_used(sub, nd, ns)
    params = {"body": sub.tojson(), "num_data": nd, "num_states": ns, "num_free": len(outside),
              "num_out_data": len(flat_outs)}
    op = _FOREACH()
    node_name = current_name_manager().get(name, "foreach")
    parsed = op.parse_params(params)
    node = Node(op, node_name, parsed, {}, [s._outputs[0] for s in flat_data + flat_states] + outside,
                frozenset(params))
    results = [Symbol([(node, k)]) for k in range(len(flat_outs) + ns)]
    out_syms, _ = _regroup(results[:len(flat_outs)], out_fmt) if flat_outs else ([], [])
    state_syms, _ = _regroup(results[len(flat_outs):], new_fmt)
    return out_syms, state_syms


def _check_used(sub: Symbol, nd: int, ns: int) -> None:
    """foreach's body must read every data slice and every state, as MXNet 1.9.1 requires (an
    ``AssertionError`` there as here): an unread state, say, is a body written for other states."""
    read = set(sub.list_arguments())
    for k in range(nd + ns):
        if f"{_PH}{k}" not in read:
            what = f"data input {k}" if k < nd else f"state {k - nd}"
            raise AssertionError(f"foreach: the loop body does not use its {what}; every data array and "
                                 f"every state must be used in the body")


def _FOREACH() -> OpDef:
    from ..ops.registry import get_op
    return get_op("_foreach")


def _loop_vars(loop_vars: Any, kind: type) -> tuple[list, Any]:
    """A while loop's variables (one, or nested lists) as a flat list and their structure."""
    flat, fmt = _flatten(loop_vars, "while_loop loop_vars", kind)
    if not flat:
        raise MXNetError("while_loop: loop_vars should contain at least one element")
    return flat, fmt


def _call_with(fn: Any, flat: list, fmt: Any) -> Any:
    """``fn`` called with the loop variables in their structure: the variable itself when there
    is one, else the top-level items of the (nested) list as its arguments, as MXNet's."""
    nested = _regroup(flat, fmt)[0]
    return fn(nested) if fmt == 0 else fn(*nested)


def _new_loop_vars(new_vars: Any, count: int, kind: type) -> list:
    flat, _ = _flatten(new_vars if new_vars is not None else [], "while_loop func's loop variables", kind)
    if len(flat) != count:
        raise MXNetError(f"while_loop: func returned {len(flat)} loop variables, expected {count}")
    return flat


# --- _cond: pick one of two lists of values by a one-element predicate ------------------------------
def _cond_shape(p: dict, ins: list, aux: list):
    n = p["num_outputs"]
    pred, a, e = ins[0], ins[1:1 + n], ins[1 + n:]
    if pred is not None and int(np.prod(pred)) != 1:
        raise RuleError(f"the predicate must have one element, got {shape_str(pred)}")
    outs = []
    for k, (x, y) in enumerate(zip(a, e)):
        if x is not None and y is not None and x != y:
            raise RuleError(f"output {k} of then_func is {shape_str(x)}, of else_func {shape_str(y)}")
        outs.append(x if x is not None else y)
    return [pred] + outs + outs, outs, []


def _cond_dtype(p: dict, ins: list, aux: list):
    n = p["num_outputs"]
    a, e = ins[1:1 + n], ins[1 + n:]
    outs = []
    for k, (x, y) in enumerate(zip(a, e)):
        if x is not None and y is not None and x != y:
            raise RuleError(f"output {k} of then_func is {np.dtype(x).name}, of else_func {np.dtype(y).name}")
        outs.append(x if x is not None else y)
    return [ins[0]] + outs + outs, outs, []


def _cond_expand(b: Any, ins: list[int], p: dict) -> list[int]:
    n = p["num_outputs"]
    flag = b.add1("_not_equal_scalar", ins[0], scalar=0.0)
    outs = []
    for a, e in zip(ins[1:1 + n], ins[1 + n:]):
        shape = b.g.values[a].shape
        mask = b.add1("broadcast_to", b.add1("Reshape", flag, shape=(1,) * len(shape)), shape=shape)
        outs.append(b.add1("where", mask, a, e))
    return outs


register(OpDef(
    name="_cond",
    params=(Param("num_outputs", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="values per branch"),),
    arguments=lambda p: (["pred"] + [f"then{k}" for k in range(p["num_outputs"])]
                         + [f"else{k}" for k in range(p["num_outputs"])]),
    outputs=lambda p: [f"output{k}" for k in range(p["num_outputs"])],
    shape=_cond_shape, dtype=_cond_dtype, kind=Kind.OPAQUE, expand=_cond_expand, hint="cond",
    doc="contrib.cond: the then values where the one-element predicate is non-zero, else the else values "
        "(both computed; the gradient reaches the selected ones).",
))


def _select(pred: Symbol, then_vals: list[Symbol], else_vals: list[Symbol], name: str | None = None) -> list:
    out = make_op_symbol("_cond", pred, *then_vals, *else_vals, num_outputs=len(then_vals), name=name)
    return [out[k] for k in range(len(then_vals))] if len(then_vals) > 1 else [out]


def cond(pred: Any, then_func: Any, else_func: Any, name: str = "cond") -> Any:
    """``then_func()`` where ``pred`` (one element) is non-zero, else ``else_func()``; both return
    a symbol or nested lists of symbols of the same structure, shapes and dtypes."""
    unique_subgraph_name(f"{name}_pred")     # counted as MXNet counts it: pred is built already
    with subgraph_scope(unique_subgraph_name(f"{name}_then")):
        then_out, fmt = _flatten(then_func(), "cond then_func output", Symbol)
    with subgraph_scope(unique_subgraph_name(f"{name}_else")):
        else_out, _ = _flatten(else_func(), "cond else_func output", Symbol)
    if len(then_out) != len(else_out):
        raise MXNetError(f"cond: then_func gave {len(then_out)} outputs, else_func {len(else_out)}")
    return _regroup(_select(pred, then_out, else_out, name=current_name_manager().get(None, name)), fmt)[0]


# --- NDArrays: Python control flow, as MXNet's ------------------------------------------------------
_FAN_IN = 16


def _concat_rows(parts: list) -> Any:
    """``parts`` (NDArrays) concatenated along axis 0 in groups of at most ``_FAN_IN``, then those
    results alike: a long loop's outputs need a few small Concat kernels, not one with an argument
    per step (whose compile time grows with the step count)."""
    from .. import ndarray as nd
    while len(parts) > 1:
        parts = [nd.concat(*parts[i:i + _FAN_IN], dim=0) if len(parts[i:i + _FAN_IN]) > 1 else parts[i]
                 for i in range(0, len(parts), _FAN_IN)]
    return parts[0]


def nd_foreach(body: Any, data: Any, init_states: Any) -> tuple[Any, Any]:
    """``contrib.foreach`` on NDArrays: a Python loop over axis 0, outputs stacked."""
    from ..ndarray import NDArray
    flat_data, data_fmt = _flatten(data, "foreach data", NDArray)
    _flatten(init_states, "foreach init_states", NDArray)
    states, per_step, out_fmt = init_states, [], None
    for t in range(flat_data[0].shape[0]):
        outs, states = body(_regroup([d[t] for d in flat_data], data_fmt)[0], states)
        flat, out_fmt = _flatten(outs if outs is not None else [], "foreach output", NDArray)
        per_step.append(flat)
    stacked = [_concat_rows([x.expand_dims(0) for x in items]) for items in zip(*per_step)]
    return (_regroup(stacked, out_fmt)[0] if stacked else []), states


def nd_while_loop(cond: Any, func: Any, loop_vars: Any,
                  max_iterations: int | None = None) -> tuple[list, Any]:
    """``contrib.while_loop`` on NDArrays: outputs of the steps run, padded to ``max_iterations``
    rows (with zeros; MXNet leaves the padding undefined)."""
    from .. import ndarray as nd
    from ..ndarray import NDArray
    if max_iterations is None:
        raise MXNetError("while_loop: max_iterations should be specified")
    vars_, var_fmt = _loop_vars(loop_vars, NDArray)
    steps, outputs, out_fmt = 0, [], None
    while steps < int(max_iterations) and bool(_scalar(_call_with(cond, vars_, var_fmt))):
        step_out, new_vars = _call_with(func, vars_, var_fmt)
        vars_ = _new_loop_vars(new_vars, len(vars_), NDArray)
        flat, out_fmt = _flatten(step_out if step_out is not None else [], "while_loop output", NDArray)
        outputs.append(flat)
        steps += 1
    stacked = []
    for items in zip(*outputs):
        rows = [x.expand_dims(0) for x in items]
        if steps < int(max_iterations):
            rows.append(nd.zeros((int(max_iterations) - steps, *items[0].shape), ctx=items[0].context,
                                 dtype=items[0].dtype))
        stacked.append(_concat_rows(rows))
    return (_regroup(stacked, out_fmt)[0] if out_fmt is not None else []), _regroup(vars_, var_fmt)[0]


def _scalar(x: Any) -> Any:
    return x.asscalar() if hasattr(x, "asscalar") else x


def nd_cond(pred: Any, then_func: Any, else_func: Any) -> Any:
    """``contrib.cond`` on NDArrays: ``then_func()`` if ``pred`` is non-zero, else ``else_func()``."""
    return then_func() if bool(_scalar(pred)) else else_func()

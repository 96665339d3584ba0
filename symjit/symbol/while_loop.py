"""Symbolic ``contrib.while_loop``: one ``_while_loop`` node run as a loop of compiled programs.

``while_loop(cond, func, loop_vars, max_iterations)`` traces ``cond`` and ``func`` once on
placeholder symbols (``_cf_in0, ...``: the loop variables, then one per value the two read from
outside the loop, as :func:`symjit.symbol.control_flow.foreach` cuts its body) and makes one
``_while_loop`` node holding both subgraphs as JSON. Its inputs are the loop variables' initial
values, then the outside values; its outputs are the step outputs stacked along a first axis of
``max_iterations`` rows (rows after the loop stopped are zeros; MXNet leaves them undefined), then
the final loop variables.

The node is a host op (as ``Custom``): the executor's program stops at it, and its host call runs
the loop as MXNet's subgraph executor does, on programs compiled once per executor: the condition
program, read on the host (one element; non-zero continues), then the step program, its new loop
variables copied into the step's inputs, at most ``max_iterations`` times. So a loop of a thousand
steps compiles two small programs, not a thousand copies of its body. In a training pass each
step's loop variables are kept; ``_backward_while_loop`` walks the steps that ran backwards, running
the step program's forward and backward at each step's kept values with the gradients of that
step's outputs (its row of the stacked outputs' gradient) and of its new loop variables, and sums
the outside values' gradients over the steps. A step that draws random numbers (``Dropout``,
samplers) cannot be replayed so in training: binding such a loop for training is an error.

>>> import symjit as mx
>>> outs, (i, s) = mx.sym.contrib.while_loop(lambda i, s: i <= 5, lambda i, s: ([i + s], [i + 1, s + i]),
...                                          [mx.sym.var('i'), mx.sym.var('s')], max_iterations=8)
>>> ex = mx.sym.Group([outs[0], s]).bind(mx.cpu(), {'i': mx.nd.array([0]), 's': mx.nd.array([1])})
>>> [a.asnumpy().ravel().tolist() for a in ex.forward()]
[[1.0, 2.0, 4.0, 7.0, 11.0, 16.0, 0.0, 0.0], [16.0]]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import MXNetError, shape_str
from ..ndarray.dispatch import settle
from ..ndarray.ndarray import NDArray
from ..ops.partial_shape import merge
from ..ops.registry import Kind, OpDef, Param, RuleError, register
from .control_flow import (
    _PH,
    _call_with,
    _cut,
    _flatten,
    _graph,
    _loop_vars,
    _new_loop_vars,
    _regroup,
    refine_places,
    sub_outputs,
)
from .naming import current_name_manager, subgraph_scope, unique_subgraph_name
from .symbol import Node, Symbol, topo_order

__all__ = ["while_loop"]


# --- the op's record ----------------------------------------------------------------------------
def _counts(p: dict) -> tuple[int, int, int]:
    return p["num_loop_vars"], p["num_free"], p["num_out_data"]


def _fmt(what: str) -> Callable[[Any], str]:
    return shape_str if what == "shape" else (lambda d: np.dtype(d).name)


def _infer_sub(text: str, ins: list, what: str, label: str) -> list:
    """A subgraph's output shapes/dtypes for the loop node's complete input shapes/dtypes."""
    try:
        known = {f"{_PH}{k}": v for k, v in enumerate(ins)}
        return sub_outputs(_graph(text), known, what, f"the loop's {label}")
    except MXNetError as exc:
        raise RuleError(f"in the loop's {label}: {exc}") from None


def _while_rule(what: str):
    def rule(p: dict, ins: list, aux: list):
        n, _, n_out = _counts(p)
        if any(v is None for v in ins):
            return list(ins), [None] * (n_out + n), []
        fmt = _fmt(what)
        (flag,) = _infer_sub(p["cond"], ins, what, "condition")
        if what == "shape" and int(np.prod(flag)) != 1:
            raise RuleError(f"the condition must give one element, got {shape_str(flag)}")
        outs = _infer_sub(p["func"], ins, what, "step")
        for k, (given, got) in enumerate(zip(ins[:n], outs[n_out:])):
            if given != got:
                raise RuleError(f"loop variable {k} enters the step as {fmt(given)} and leaves it as "
                                f"{fmt(got)}")
        if what == "shape":
            steps = p["max_iterations"]
            return list(ins), [(steps, *o) for o in outs[:n_out]] + list(ins[:n]), []
        return list(ins), outs, []
    return rule


def _while_partial(p: dict, ins: list, outs: list, aux: list):
    """Partial shapes through the loop: the step inferred on the placeholders' partial shapes (a
    loop variable as it enters and leaves the step), again while a loop variable's shape leaving
    the step tells more of it entering; what the step learns of its placeholders (a weight an op
    sizes from its data) flows back to the loop node's inputs."""
    n, _, n_out = _counts(p)
    places = [merge(i, o) for i, o in zip(ins[:n], outs[n_out:])] + list(ins[n:])
    places, body_outs = refine_places(_graph(p["func"]), places, 0, n, n_out, "in the loop's step")
    steps = p["max_iterations"]
    new_outs = [None if o is None else (steps, *o) for o in body_outs[:n_out]] + places[:n]
    return places, new_outs, []


def _arguments(p: dict) -> list[str]:
    n, nf, _ = _counts(p)
    return [f"loop_var{k}" for k in range(n)] + [f"free{k}" for k in range(nf)]


def _outputs(p: dict) -> list[str]:
    n, _, n_out = _counts(p)
    return [f"output{k}" for k in range(n_out)] + [f"loop_var{k}" for k in range(n)]


def _while_grad(b: Any, node: Any, ograds: list) -> list:
    heads = [og if og is not None else b.add1("zeros_like", o) for og, o in zip(ograds, node.outputs)]
    params = {**node.params, "forward_node": node.name}
    return list(b.add("_backward_while_loop", heads + list(node.inputs), name=f"{node.name}_backward",
                      params=params))


def _bwd_arguments(p: dict) -> list[str]:
    return [f"{o}_grad" for o in _outputs(p)] + _arguments(p)


def _bwd_rule(p: dict, ins: list, aux: list):
    """Shapes and dtypes alike: one gradient per forward input, as that input."""
    n, _, n_out = _counts(p)
    return list(ins), list(ins[n_out + n:]), []


_PARAMS = (
    Param("cond", "str", doc="the condition, a symbol in JSON over the placeholders (one output)"),
    Param("func", "str", doc="the step, a symbol in JSON (outputs: step outputs, then loop variables)"),
    Param("num_loop_vars", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="loop variables"),
    Param("num_free", "int", 0, check=lambda v: v >= 0, check_msg=">= 0",
          doc="inputs the condition or the step read from outside the loop"),
    Param("num_out_data", "int", check=lambda v: v >= 0, check_msg=">= 0", doc="step outputs"),
    Param("max_iterations", "int", check=lambda v: v >= 1, check_msg=">= 1", doc="the most steps run"),
)


# --- host calls ---------------------------------------------------------------------------------
class _Loop:
    """The condition and step programs of one loop node in one executor program: executors bound
    once on placeholder arrays (shared by both, one per placeholder), reused by every pass."""

    def __init__(self, node: Any, ctx: Any, ins: list, train: bool):
        p = node.params
        self.name, self.train = node.name, train
        self.n, self.n_free, self.n_out = _counts(p)
        self.cond, self.func = _graph(p["cond"]), _graph(p["func"])
        if train:
            _refuse_random(self.func, node.name)
        self.slots = {f"{_PH}{k}": _zeros(a.shape, a.dtype, ctx) for k, a in enumerate(ins)}
        self.cond_exec = self._bind(self.cond, ctx, grads=False)
        self.func_exec = self._bind(self.func, ctx, grads=train)
        # where a step's result is a placeholder itself (a variable passed on): its index
        self.passed = [int(nd.name[len(_PH):]) if nd.is_variable else None for nd, _ in self.func._outputs]

    def _bind(self, sym: Symbol, ctx: Any, grads: bool) -> Any:
        args = {a: self.slots[a] for a in sym.list_arguments()}
        aux = {a: self.slots[a] for a in sym.list_auxiliary_states()}
        grad = None
        if grads:
            grad = {a: _zeros(v.shape, v.dtype, ctx) for a, v in args.items()}
        req = {a: "write" if grads and np.issubdtype(v.dtype, np.floating) else "null"
               for a, v in args.items()}
        return sym.bind(ctx, args, args_grad=grad, grad_req=req, aux_states=aux or None)

    def load(self, values: list) -> None:
        """Copy the loop's values (NDArrays, in placeholder order) into the placeholders."""
        for k, v in enumerate(values):
            if v is not None:
                v.copyto(self.slots[f"{_PH}{k}"])

    def go_on(self) -> bool:
        flag = self.cond_exec.forward(is_train=False)[0]
        if flag.size != 1:
            raise MXNetError(f"the condition gave {shape_str(flag.shape)}, expected one element")
        return bool(flag.asnumpy().ravel()[0])

    def step(self, rows: list, t: int) -> None:
        """One step: its outputs into row ``t`` of ``rows``, its new loop variables into the slots."""
        res = self.func_exec.forward(is_train=self.train)
        got = [self.slots[f"{_PH}{j}"] if j is not None else r for j, r in zip(self.passed, res)]
        for k in range(self.n_out):
            got[k].copyto(rows[k][t])
        new = got[self.n_out:]
        moved = [v.copy() if j is not None and j != k else v
                 for k, (j, v) in enumerate(zip(self.passed[self.n_out:], new))]
        for k, v in enumerate(moved):
            if self.passed[self.n_out + k] != k:
                v.copyto(self.slots[f"{_PH}{k}"])


def _zeros(shape: tuple, dtype: Any, ctx: Any) -> NDArray:
    return NDArray(ctx.device.alloc(tuple(shape), np.dtype(dtype), 0), ctx)


def _refuse_random(func: Symbol, name: str) -> None:
    for nd in topo_order(func._outputs):
        if nd.op is not None and (nd.op.name == "Dropout" or "sampler" in nd.op.extra):
            raise MXNetError(f"_while_loop '{name}': the step draws random numbers ({nd.op.name} "
                             f"'{nd.name}'); its gradient would replay each step with other draws, so "
                             f"a training pass over such a loop is not supported")


def _loop_of(node: Any, env: dict, ins: list) -> _Loop:
    key = ("while_loop", node.params.get("forward_node", node.name))
    loop = env.get(key)
    if loop is None:
        train = bool(node.train) or node.op.name == "_backward_while_loop"
        loop = env[key] = _Loop(node, env["ctx"], ins, train)
    return loop


def _wrap(arrays: list, ctx: Any) -> list[NDArray]:
    return [NDArray(a, ctx) for a in arrays]


def _forward(node: Any, ins: list, outs: list, env: dict) -> Callable[[], None]:
    ctx = env["ctx"]
    values, results = _wrap(ins, ctx), _wrap(outs, ctx)
    n, n_free, n_out = _counts(node.params)
    rows, finals = results[:n_out], results[n_out:]
    steps = node.params["max_iterations"]

    def run() -> None:
        loop = _loop_of(node, env, ins)
        loop.load(values)
        kept, t = [], 0
        while t < steps and loop.go_on():
            if loop.train:
                kept.append([loop.slots[f"{_PH}{k}"].copy() for k in range(n)])
            loop.step(rows, t)
            t += 1
        for r in rows:
            if t < steps:
                r[t:] = 0
        for k, f in enumerate(finals):
            loop.slots[f"{_PH}{k}"].copyto(f)
        env[("while_loop_steps", node.name)] = kept
    return run


def _backward(node: Any, ins: list, outs: list, reqs: list[str], env: dict) -> Callable[[], None]:
    ctx = env["ctx"]
    n, n_free, n_out = _counts(node.params)
    heads, values, grads = _wrap(ins[:n_out + n], ctx), _wrap(ins[n_out + n:], ctx), _wrap(outs, ctx)
    fwd = node.params["forward_node"]

    def run() -> None:
        kept = env.get(("while_loop_steps", fwd))
        if kept is None:
            raise MXNetError("backward needs a forward pass with is_train=True first")
        loop = _loop_of(node, env, ins[n_out + n:])
        ex = loop.func_exec
        carried = [h.copy() for h in heads[n_out:]]
        free_sum = [None] * n_free
        for t in reversed(range(len(kept))):
            loop.load(kept[t] + values[n:])
            ex.forward(is_train=True)
            ex.backward([h[t] for h in heads[:n_out]] + carried)
            got = [ex.grad_dict.get(f"{_PH}{k}") for k in range(n + n_free)]
            carried = [g.copy() if g is not None else carried[k].zeros_like() for k, g in enumerate(got[:n])]
            for j, g in enumerate(got[n:]):
                if g is not None:
                    free_sum[j] = g.copy() if free_sum[j] is None else free_sum[j] + g
        for k, (g, req) in enumerate(zip(carried + free_sum, reqs)):
            if req == "null":
                continue
            if g is None:
                grads[k][:] = 0
            else:
                g.copyto(grads[k])
    return run


def host_call(node: Any, ins: list, outs: list, reqs: list[str], env: dict) -> Callable[[], None]:
    """A zero-argument callable running a ``_while_loop`` or ``_backward_while_loop`` node on its
    planned buffers (``env``: the program's host-call state, holding ``ctx``)."""
    forward = node.op.name == "_while_loop"
    fn = _forward(node, ins, outs, env) if forward else _backward(node, ins, outs, reqs, env)
    phase = "forward" if forward else "backward"
    where = node.params.get("forward_node") or node.name

    def call() -> None:
        try:
            fn()
            settle()
        except MXNetError as exc:
            raise MXNetError(f"_while_loop '{where}': {phase}: {exc}") from None
    return call


register(OpDef(
    name="_while_loop",
    params=_PARAMS,
    arguments=_arguments, outputs=_outputs,
    shape=_while_rule("shape"), dtype=_while_rule("dtype"), shape_partial=_while_partial,
    kind=Kind.OPAQUE, grad=_while_grad, extra={"host": host_call, "reads_mode": True},
    hint="while_loop",
    doc="contrib.while_loop: the step subgraph run while the condition subgraph gives non-zero, at most "
        "max_iterations times, threading the loop variables; outputs the step outputs stacked along axis 0 "
        "(max_iterations rows, zeros after the last step), then the final loop variables. Run by the host "
        "as a loop of two programs compiled once.",
))

register(OpDef(
    name="_backward_while_loop",
    params=(*_PARAMS, Param("forward_node", "str", "")),
    arguments=_bwd_arguments, outputs=lambda p: [f"{a}_grad" for a in _arguments(p)],
    shape=_bwd_rule, dtype=_bwd_rule, kind=Kind.OPAQUE,
    extra={"host": host_call, "backward_of": "_while_loop"},
    doc="Gradient of _while_loop: the step's gradient program run backwards over the steps that ran.",
))


# --- the symbol API -----------------------------------------------------------------------------
def while_loop(cond: Any, func: Any, loop_vars: Any, max_iterations: int | None = None,
               name: str = "while_loop") -> tuple[list, Any]:
    """``while cond(*vars): outputs, vars = func(*vars)`` for at most ``max_iterations`` steps;
    returns the step outputs stacked along axis 0 (``max_iterations`` rows, zeros after the loop
    stopped) and the final loop variables, shaped as ``func`` returns them.

    >>> import symjit as mx
    >>> _, (v,) = mx.sym.contrib.while_loop(lambda v: v < 10, lambda v: ([], [v * 2]), [mx.sym.var('v')],
    ...                                     max_iterations=6)
    >>> v.bind(mx.cpu(), {'v': mx.nd.array([1])}).forward()[0].asnumpy().tolist()
    [16.0]
    """
    if max_iterations is None:
        raise MXNetError("while_loop: max_iterations should be specified")
    steps = int(max_iterations)
    if steps < 1:
        raise MXNetError(f"while_loop: max_iterations must be >= 1, got {max_iterations}")
    flat_vars, var_fmt = _loop_vars(loop_vars, Symbol)
    for s in flat_vars:
        if len(s) != 1:
            raise MXNetError("while_loop: loop_vars must be single-output symbols")
    n = len(flat_vars)
    ph = [Node(None, f"{_PH}{k}") for k in range(n)]
    ph_syms = [Symbol([(p, 0)]) for p in ph]
    with subgraph_scope(unique_subgraph_name(f"{name}_cond")):
        flag = _call_with(cond, ph_syms, var_fmt)
    if not isinstance(flag, Symbol) or len(flag) != 1:
        raise MXNetError(f"while_loop: cond must return one single-output symbol, got {flag!r}")
    with subgraph_scope(unique_subgraph_name(f"{name}_func")):
        step_out, new_vars = _call_with(func, ph_syms, var_fmt)
    new_flat = _new_loop_vars(new_vars, n, Symbol)
    out_flat, out_fmt = _flatten(step_out if step_out is not None else [], "while_loop step output", Symbol)
    for s in out_flat + new_flat:
        if len(s) != 1:
            raise MXNetError("while_loop: func must return single-output symbols")
    sub, outside = _cut([flag._outputs[0]] + [s._outputs[0] for s in out_flat + new_flat], ph)
    params = {"cond": Symbol(sub._outputs[:1]).tojson(), "func": Symbol(sub._outputs[1:]).tojson(),
              "num_loop_vars": n, "num_free": len(outside), "num_out_data": len(out_flat),
              "max_iterations": steps}
    op = _WHILE()
    node = Node(op, current_name_manager().get(None, name), op.parse_params(params), {},
                [s._outputs[0] for s in flat_vars] + outside, frozenset(params))
    results = [Symbol([(node, k)]) for k in range(len(out_flat) + n)]
    outputs = _regroup(results[:len(out_flat)], out_fmt)[0] if out_flat else []
    return outputs, _regroup(results[len(out_flat):], var_fmt)[0]


def _WHILE() -> OpDef:
    from ..ops.registry import get_op
    return get_op("_while_loop")

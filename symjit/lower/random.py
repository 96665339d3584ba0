"""Lowerings of the random samplers (:mod:`symjit.ops.random_ops`, :mod:`symjit.ops.sample_ops`),
one rule per op for every target: the element expression calls the op's sampler (a plain function
of the seed, the element's flat index and the distribution's parameters, wrapped per target) with
a seed the target provides (:meth:`~symjit.lower.target.Target.emit_seed`: each target knows how a
fresh seed reaches its kernels; every one of them draws it from the one seeded stream).

The per-element samplers read their parameters at the leading indices of the output element
(runtime shapes), so one kernel serves every shape of a rank; ``mx.random``'s functions call them
with one-element parameter arrays (:mod:`symjit.random`).

>>> import symjit as mx
>>> mx.random.seed(0)
>>> ex = mx.sym.random.normal(loc=1.0, scale=0.0, shape=(3,)).simple_bind(mx.cpu())
>>> ex.forward()[0].asnumpy().tolist()
[1.0, 1.0, 1.0]
"""
from __future__ import annotations

from ..ops.registry import all_ops
from .emit import elem_index, flat_index
from .rules import ANY, ElemExpr, lookup, rule

__all__: list[str] = []


def _seed(k) -> str:
    """A fresh seed for this kernel call, as the kernel's target provides it."""
    return k.target.emit_seed(k)


def _sampler(k, node, ins, outs) -> ElemExpr:
    """``_random_<dist>`` (and ``*_like``): every element from the seed, its flat index and the
    distribution's parameters (constants of the node)."""
    fn = k.module.body(node.op.extra["sampler"])
    args = ", ".join(repr(float(node.params[n])) for n in node.op.extra["params"])
    seed, out = _seed(k), outs[0]
    return lambda idx: f"{fn}({seed}, {flat_index(idx, out)}, {args})"


def _per_element(k, node, ins, outs) -> ElemExpr:
    """``_sample_<dist>``: the output is P + ``shape`` over parameter arrays of shape P; each
    element's parameters are those at its leading P indices."""
    fn = k.module.body(node.op.extra["sampler"])
    lead = [len(k.info[arr].shape) for arr in ins]
    seed, out = _seed(k), outs[0]

    def expr(idx: list[str]) -> str:
        params = ", ".join(f"{arr}[{elem_index(idx[:n]) if n else '0'}]" for arr, n in zip(ins, lead))
        return f"{fn}({seed}, {flat_index(idx, out)}, {params})"
    return expr


def _multinomial(k, node, ins, outs) -> None:
    from ..ops.random_ops import uniform01
    from ..ops.rules import prod
    from ..ops.sample_ops import categorical
    data = ins[0]
    kcat = k.info[data].shape[-1]
    rows = max(prod(k.info[data].shape[:-1]), 1)
    per = max(prod(node.params["shape"]), 1)
    probs = k.tmp("pr")
    k.line(f"{probs} = {data}.reshape({rows}, {kcat})")
    flat = []
    for o in outs:
        v = k.tmp("o")
        k.line(f"{v} = {o}.reshape({rows * per})")
        flat.append(v)
    seed = _seed(k)
    target = k.target
    idx = target.open_loop(k, [str(rows * per)])
    q, c = idx[0], k.tmp("c")
    k.line(f"{c} = {k.module.body(categorical)}({probs}, {q} // {per}, {kcat}, "
           f"{k.module.body(uniform01)}({seed}, {q}))")
    k.line(f"{flat[0]}[{q}] = {c}")
    if len(outs) > 1:
        k.line(f"{flat[1]}[{q}] = math.log({probs}[{q} // {per}, {c}])")
    target.close_loop(k, idx)


def _shuffle(k, node, ins, outs) -> None:
    from ..ops.rules import prod
    from ..ops.sample_ops import shuffle_rows
    shape = k.info[ins[0]].shape
    rows = shape[0] if shape else 1
    width = max(prod(shape[1:]), 1)
    x, out = k.tmp("x"), k.tmp("o")
    k.line(f"{x} = {ins[0]}.reshape({rows}, {width})")
    k.line(f"{out} = {outs[0]}.reshape({rows}, {width})")
    seed = _seed(k)
    target = k.target
    idx = target.open_loop(k, ["1"])
    k.line(f"{k.module.body(shuffle_rows)}({x}, {out}, {seed}, {rows}, {width})")
    target.close_loop(k, idx)


def register_rules() -> list[str]:
    """A rule for every target of each sampler record (``random`` and ``sample`` families) that
    has none yet: at import, and again for a record registered later
    (:func:`symjit.ops.random_ops.register_sampler`); returns the ops given one."""
    done = []
    for name, op in all_ops().items():
        family = op.extra.get("family")
        if family not in ("random", "sample") or lookup(op, ANY) is not None:
            continue
        if family == "random":
            rule(name, ANY, _sampler, **({"shape_only": (0,)} if name.endswith("_like") else {}))
        elif "sampler" in op.extra:
            rule(name, ANY, _per_element)
        else:
            rule(name, ANY, {"_sample_multinomial": _multinomial, "_shuffle": _shuffle}[name])
        done.append(name)
    return done


register_rules()

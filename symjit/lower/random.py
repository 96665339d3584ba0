"""Lowerings of the random samplers (:mod:`symjit.ops.random_ops`): the element expression calls
the op's sampler (a plain function of the seed, the element's flat index and the distribution's
parameters, wrapped per target) with a seed that differs per target only in where it comes from.
The CPU kernel draws it from numba's generator (seeded by ``mx.random.seed``) when it starts; a
CUDA launch gets it from the host (``symjit.random.next_seed``), as Dropout's masks do.

>>> import symjit as mx
>>> mx.random.seed(0)
>>> ex = mx.sym.random.normal(loc=1.0, scale=0.0, shape=(3,)).simple_bind(mx.cpu())
>>> ex.forward()[0].asnumpy().tolist()
[1.0, 1.0, 1.0]
"""
from __future__ import annotations

from ..ops.registry import all_ops
from .emit import flat_index
from .rules import ANY, ElemExpr, rule
from .target import get_target

__all__: list[str] = []


def _cpu_seed(k) -> str:
    seed = k.tmp("seed")
    k.line(f"{seed} = np.random.randint(0, 2147483647)")
    return seed


def _cuda_seed(k) -> str:
    seed = k.tmp("seed")
    k.params.append(seed)
    k.host_args.append((seed, "symjit.random", "next_seed"))
    return seed


def _sampler(seed_of):
    def emit(k, node, ins, outs) -> ElemExpr:
        fn = k.module.body(node.op.extra["sampler"])
        args = ", ".join(repr(float(node.params[n])) for n in node.op.extra["params"])
        seed, out = seed_of(k), outs[0]
        return lambda idx: f"{fn}({seed}, {flat_index(idx, out)}, {args})"
    return emit


def register_rules() -> None:
    for name, op in all_ops().items():
        if op.extra.get("family") == "random":
            facts = {"shape_only": (0,)} if name.endswith("_like") else {}
            rule(name, "cpu", _sampler(_cpu_seed), **facts)
            rule(name, "cuda", _sampler(_cuda_seed), **facts)


register_rules()


def _seed(k) -> str:
    return _cuda_seed(k) if k.module.target == "cuda" else _cpu_seed(k)


def _per_element(seed_of):
    """``_sample_<dist>``: each output element's parameters are those at its leading index."""
    def emit(k, node, ins, outs) -> ElemExpr:
        from ..ops.rules import prod
        fn = k.module.body(node.op.extra["sampler"])
        per = max(prod(node.params["shape"]), 1)
        views = []
        for arr in ins:
            v = k.tmp("p")
            k.line(f"{v} = {arr}.reshape({max(prod(k.info[arr].shape), 1)})")
            views.append(v)
        seed, out = seed_of(k), outs[0]

        def expr(idx: list[str]) -> str:
            q = flat_index(idx, out)
            return f"{fn}({seed}, {q}, {', '.join(f'{v}[({q}) // {per}]' for v in views)})"
        return expr
    return emit


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
    target = get_target(k.module.target)
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
    target = get_target(k.module.target)
    idx = target.open_loop(k, ["1"])
    k.line(f"{k.module.body(shuffle_rows)}({x}, {out}, {seed}, {rows}, {width})")
    target.close_loop(k, idx)


def register_sample_rules() -> None:
    for name, op in all_ops().items():
        if op.extra.get("family") == "sample" and "sampler" in op.extra:
            rule(name, "cpu", _per_element(_cpu_seed))
            rule(name, "cuda", _per_element(_cuda_seed))
    rule("_sample_multinomial", ANY, _multinomial)
    rule("_shuffle", ANY, _shuffle)


register_sample_rules()

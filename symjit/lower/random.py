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
from .rules import ElemExpr, rule

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

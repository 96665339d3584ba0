"""Target-neutral lowering of the optimizer update operators (:mod:`symjit.ops.update`): per weight,
one loop over its elements calling the op's step (:mod:`symjit.kernels.optim_steps`, wrapped for
the target), on flat views of the arrays. A step's scalars are literals from the params, or
elements of the scalar vector of a ``_rt_`` twin (what ``mx.nd`` calls), or elements of input
arrays (the preloaded learning rates, AdamW's ``rescale_grad``). Each element is read and written
by one iteration, so the output may share the weight's buffer (``out=weight``).

>>> import symjit as mx
>>> w = mx.nd.array([1.0, 2.0])
>>> mx.nd.sgd_update(w, mx.nd.array([1.0, 1.0]), lr=0.5).asnumpy().tolist()
[0.5, 1.5]
"""
from __future__ import annotations

from ..ops.registry import all_ops
from ..ops.rules import prod
from ..ops.update import scalar_layout
from .rules import ANY, rule

__all__: list[str] = []


def _emit(k, node, ins, outs) -> None:
    op, p = node.op, node.params
    spec = op.extra["update"]
    runtime = op.extra.get("runtime", False)
    names = dict(zip(op.list_arguments(p) + op.list_aux(p), ins))
    n = p["num_weights"] if spec.group else 1
    layout = scalar_layout(spec, n)
    target = k.target
    step = k.module.body(spec.step)
    flat: dict[str, str] = {}

    def view(local: str) -> str:
        local = k.same.get(local, local)   # an output over its weight: one array, one view
        if local not in flat:
            flat[local] = k.tmp("f")
            k.line(f"{flat[local]} = {local}.reshape(-1)")
        return flat[local]

    def scalar(s: str, j: int) -> str:
        per = s.endswith("[]")
        name = s.rstrip("[]")
        if name.startswith("@"):
            return f"{view(names[name[1:]])}[{j if per else 0}]"
        if runtime:
            return f"{view(names['scalars'])}[{layout[name] + (j if per else 0)}]"
        value = p[name][j] if per else p[name]
        return repr(float(value))

    for j in range(n):
        def local(name: str, j: int = j) -> str:
            return names[f"{name}{j}" if spec.group and name in spec.group else name]
        weight = names[op.extra["outputs_like"](p)[j]]
        out, size = view(outs[j]), prod(k.info[weight].shape)
        arrays = [view(local(a)) for a in spec.arrays]
        scalars = [scalar(s, j) for s in spec.scalars]
        # every view is made before the loop: one made inside it is remade each iteration
        w = view(weight) if spec.style in ("row", "inplace") else None
        w32 = view(local("weight32")) if spec.style == "mp" else None
        if spec.style == "row":
            rows = k.info[weight].shape[0]
            cols = size // rows
            idx = target.open_loop(k, [str(rows)])
            if w != out:
                c = k.tmp("c")
                k.line(f"for {c} in range({cols}):")
                k.line(f"    {out}[{idx[0]} * {cols} + {c}] = {w}[{idx[0]} * {cols} + {c}]")
            k.line(f"{step}({idx[0]}, {cols}, {out}, {', '.join(arrays + scalars)})")
            target.close_loop(k, idx)
            continue
        idx = target.open_loop(k, [str(size)])
        i = idx[0]
        if spec.style == "inplace":
            if w != out:
                k.line(f"{out}[{i}] = {w}[{i}]")
            k.line(f"{step}({i}, {out}, {', '.join(arrays + scalars)})")
        elif spec.style == "mp":
            k.line(f"{step}({i}, {w32}, {', '.join(arrays + scalars)})")
            k.line(f"{out}[{i}] = {w32}[{i}]")
        else:
            k.line(f"{step}({i}, {out}, {', '.join(arrays + scalars)})")
        target.close_loop(k, idx)


def _inplace(op):
    def pairs(p: dict) -> tuple[tuple[int, int], ...]:
        names = op.list_arguments(p) + op.list_aux(p)
        likes = op.extra["outputs_like"](p)
        return tuple((names.index(w), j) for j, w in enumerate(likes))
    return pairs


def register_rules() -> None:
    for name, op in all_ops().items():
        if op.extra.get("family") == "update":
            rule(name, ANY, _emit, inplace=_inplace(op))


register_rules()


def _reset(k, node, ins, outs) -> None:
    target = k.target
    for a, o in zip(ins, outs):
        fa, fo = k.tmp("f"), k.tmp("f")
        k.line(f"{fa} = {a}.reshape(-1)")
        k.line(f"{fo} = {o}.reshape(-1)")
        idx = target.open_loop(k, [str(prod(k.info[a].shape))])
        k.line(f"{fa}[{idx[0]}] = 0")
        k.line(f"{fo}[{idx[0]}] = 0")
        target.close_loop(k, idx)


rule("reset_arrays", ANY, _reset, inplace=lambda p: tuple((j, j) for j in range(p["num_arrays"])))

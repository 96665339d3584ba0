"""Cases for the optimizer update operators (symjit/ops/update.py) and their ``_rt_`` twins (the
same update with its float params in a vector, as ``mx.nd`` calls it): the numpy references of
tests/update_refs.py (checked against MXNet 1.9.1's outputs and states), the output and every state
the op changes in place. Update ops have no gradient."""

from __future__ import annotations

import numpy as np

from symjit.ops.registry import get_op
from symjit.ops.update import runtime_params, runtime_scalars
from symjit.symbol.symbol import make_op_symbol

from .. import update_refs as R
from ..opcheck import Case

RNG = np.random.default_rng(83)
S = (2, 3)


def _u(shape=S, lo=-1.0, hi=1.0, dtype=np.float64) -> np.ndarray:
    return RNG.uniform(lo, hi, shape).astype(dtype)


def _pos(shape=S, dtype=np.float64) -> np.ndarray:
    return _u(shape, 0.1, 1.0, dtype)


def _w() -> np.ndarray:
    return _u(dtype=np.float32)


def _wp() -> np.ndarray:
    return _pos(dtype=np.float32)


def _cases(op: str, ref, inputs: dict, params: dict, id: str = "", tol: float = 1e-6) -> list[Case]:
    """The case of ``op`` and of its twin; ``inputs`` in MXNet's order, ``ref(*arrays, **params)``
    changing the states it is given in place."""
    opdef = get_op(op)
    parsed = opdef.parse_params(dict(params))
    states = opdef.list_aux(parsed) or [n for n in inputs if n.startswith(("mom", "mean", "var", "weight32"))]
    order = list(inputs)

    def run(**arrays):
        copies = {n: arrays[n].astype(np.float64) for n in order}
        outs = ref(*[copies[n] for n in order], **params)
        return outs, copies

    def forward(**arrays):
        return run(**arrays)[0]

    def after(**arrays):
        copies = run(**arrays)[1]
        return {n: copies[n] for n in states}

    spec = opdef.extra["update"]
    runtime = set(runtime_params(spec))
    n = parsed["num_weights"] if spec.group else 1
    twin_inputs = {**inputs, "scalars": runtime_scalars(spec, parsed, n)}
    twin_params = {k: v for k, v in params.items() if k not in runtime}
    slots = opdef.list_arguments(parsed) + opdef.list_aux(parsed)
    twin_slots = opdef.list_arguments(parsed) + ["scalars"] + opdef.list_aux(parsed)
    return [
        Case(op, lambda v: make_op_symbol(op, *[v[s] for s in slots], **params), dict(inputs), forward,
             grad="none", after=after, id=id, rtol=tol, atol=tol),
        Case(f"_rt_{op}", lambda v: make_op_symbol(f"_rt_{op}", *[v[s] for s in twin_slots], **twin_params),
             twin_inputs, forward, grad="none", after=after, id=id, rtol=tol, atol=tol),
    ]


_C = dict(rescale_grad=2.0, clip_gradient=0.5)
F32 = np.float32


def _mp(fn):
    return R.mp(fn)


CASES: list[Case] = []
CASES += _cases("sgd_update", R.sgd, {"weight": _u(), "grad": _u()}, dict(lr=0.1, wd=0.01, **_C))
CASES += _cases("sgd_mom_update", R.sgd_mom, {"weight": _u(), "grad": _u(), "mom": _u()},
                dict(lr=0.1, momentum=0.9, wd=0.01, **_C))
CASES += _cases("nag_mom_update", R.nag_mom, {"weight": _u(), "grad": _u(), "mom": _u()},
                dict(lr=0.1, momentum=0.9, wd=0.01, **_C))
CASES += _cases("adam_update", R.adam, {"weight": _u(), "grad": _u(), "mean": _u(), "var": _pos()},
                dict(lr=0.1, beta1=0.8, beta2=0.9, epsilon=1e-3, wd=0.01, **_C))
CASES += _cases("rmsprop_update", R.rmsprop, {"weight": _u(), "grad": _u(), "n": _pos()},
                dict(lr=0.1, gamma1=0.8, epsilon=1e-3, wd=0.01, clip_weights=0.9, **_C))
CASES += _cases("rmspropalex_update", R.rmspropalex,
                {"weight": _u(), "grad": _u(), "n": _pos() + 2, "g": _u() * 0.1, "delta": _u()},
                dict(lr=0.1, gamma1=0.8, gamma2=0.7, epsilon=1e-3, wd=0.01, clip_weights=0.9, **_C))
CASES += _cases("signsgd_update", R.signsgd, {"weight": _u(), "grad": _u()}, dict(lr=0.1, wd=0.01, **_C))
CASES += _cases("signum_update", R.signum, {"weight": _u(), "grad": _u(), "mom": _u()},
                dict(lr=0.1, momentum=0.9, wd=0.01, wd_lh=0.05, **_C))
CASES += _cases("ftrl_update", R.ftrl, {"weight": _u(), "grad": _u(), "z": _u(), "n": _pos()},
                dict(lr=0.1, lamda1=0.3, beta=0.7, wd=0.01, **_C))
CASES += _cases("ftml_update", R.ftml, {"weight": _u(), "grad": _u(), "d": _pos(), "v": _pos(), "z": _u()},
                dict(lr=0.1, t=3, beta1=0.6, beta2=0.9, epsilon=1e-3, wd=0.01, rescale_grad=2.0,
                     clip_grad=0.5))
CASES += _cases("mp_sgd_update", _mp(R.sgd), {"weight": _w(), "grad": _w(),
                                               "weight32": _w()}, dict(lr=0.1, wd=0.01, **_C), tol=1e-5)
CASES += _cases("mp_sgd_mom_update", _mp(R.sgd_mom),
                {"weight": _w(), "grad": _w(), "mom": _w(), "weight32": _w()},
                dict(lr=0.1, momentum=0.9, wd=0.01, **_C), tol=1e-5)
CASES += _cases("mp_nag_mom_update", _mp(R.nag_mom),
                {"weight": _w(), "grad": _w(), "mom": _w(), "weight32": _w()},
                dict(lr=0.1, momentum=0.9, wd=0.01, **_C), tol=1e-5)
_ADAMW = dict(lr=0.1, eta=0.7, beta1=0.8, beta2=0.9, epsilon=1e-3, wd=0.01, clip_gradient=0.5)
for _scale, _id in ((2.0, ""), (np.nan, "skip")):
    CASES += _cases("_adamw_update", R.adamw, {"weight": _u(), "grad": _u(), "mean": _u(), "var": _pos(),
                                               "rescale_grad": np.array([_scale])}, _ADAMW, id=_id)
CASES += _cases("_mp_adamw_update", R.mp_adamw,
                {"weight": _w(), "grad": _w(), "mean": _w(), "var": _wp(),
                 "weight32": _w(), "rescale_grad": np.array([2.0], F32)}, _ADAMW, tol=1e-5)
CASES += _cases("_contrib_group_adagrad_update", R.group_adagrad,
                {"weight": _u((3, 4)), "grad": _u((3, 4)), "history": _pos((3, 1))},
                dict(lr=0.1, epsilon=1e-3, **_C))
for _bc in (True, False):
    CASES += _cases("lamb_update_phase1", R.lamb_phase1,
                    {"weight": _u(), "grad": _u(), "mean": _u(), "var": _pos()},
                    dict(t=3, wd=0.01, beta1=0.8, beta2=0.9, epsilon=1e-3, bias_correction=_bc, **_C),
                    id="" if _bc else "nobias")
for (_lb, _ub), _r1, _id in (((-1.0, -1.0), 2.0, ""), ((3.0, -1.0), 2.0, "lower"),
                             ((-1.0, 0.5), 2.0, "upper"), ((-1.0, -1.0), 0.0, "zero")):
    CASES += _cases("lamb_update_phase2", R.lamb_phase2,
                    {"weight": _u(), "g": _u(), "r1": np.array([_r1]), "r2": np.array([1.5])},
                    dict(lr=0.1, lower_bound=_lb, upper_bound=_ub), id=_id)
CASES += _cases("mp_lamb_update_phase1", R.mp_lamb_phase1,
                {"weight": _w(), "grad": _w(), "mean": _w(), "var": _wp(),
                 "weight32": _w()}, dict(t=3, wd=0.01, beta1=0.8, beta2=0.9, epsilon=1e-3, **_C),
                tol=1e-5)
CASES += _cases("mp_lamb_update_phase2", R.mp_lamb_phase2,
                {"weight": _w(), "g": _w(), "r1": np.array([2.0], F32),
                 "r2": np.array([1.5], F32), "weight32": _w()},
                dict(lr=0.1, lower_bound=0.1, upper_bound=5.0), tol=1e-5)
CASES += _cases("multi_lars", R.multi_lars,
                {"lrs": _pos((5,)), "weights_sum_sq": np.array([1.0, 0, 2, 3, 4]),
                 "grads_sum_sq": np.array([1.0, 2, 0, 3, 4]), "wds": _pos((5,)) * 0.1},
                dict(eta=0.5, eps=0.01, rescale_grad=2.0))


# --- multi_* forms: per-weight references -------------------------------------------------------
SHAPES = ((2, 3), (4,))


def _multi_ref(single, group: tuple[str, ...], per: dict, shared: tuple[str, ...] = (), mp: bool = False):
    """A reference of a multi op from the single op's: ``per`` maps the single op's param name to
    the multi op's tuple param (or ``@array`` of the preloaded form)."""
    def ref(*arrays, num_weights, **params):
        size = len(group)
        tail = dict(zip(shared, arrays[size * num_weights:]))
        outs = []
        for j in range(num_weights):
            mine = dict(zip(group, arrays[size * j:size * (j + 1)]))
            p = {k: v for k, v in params.items() if k not in per.values()}
            for name, src in per.items():
                p[name] = float(tail[src[1:]][j]) if src.startswith("@") else params[src][j]
            fn = R.mp(single) if mp else single
            outs += fn(*[mine[n] for n in group], **p)
        return outs
    return ref


def _multi_inputs(group: tuple[str, ...], mp: bool) -> dict:
    out = {}
    for j, shape in enumerate(SHAPES):
        for n in group:
            dt = F32 if mp else np.float64
            out[f"{n}{j}"] = _u(shape, dtype=dt)
    return out


for _pre in (False, True):
    _p = "preloaded_" if _pre else ""
    for _name, _single, _group, _mom in (("sgd", R.sgd, ("weight", "grad"), False),
                                        ("sgd_mom", R.sgd_mom, ("weight", "grad", "mom"), True)):
        for _mp_on in (False, True):
            group = _group + (("weight32",) if _mp_on else ())
            ins = _multi_inputs(group, _mp_on)
            params = dict(rescale_grad=2.0, clip_gradient=0.5, num_weights=2,
                          **({"momentum": 0.9} if _mom else {}))
            if _pre:
                dt = F32 if _mp_on else np.float64
                ins.update(lrs=np.array([0.1, 0.2], dt), wds=np.array([0.01, 0.0], dt))
                per = {"lr": "@lrs", "wd": "@wds"}
            else:
                params.update(lrs=(0.1, 0.2), wds=(0.01, 0.0))
                per = {"lr": "lrs", "wd": "wds"}
            CASES += _cases(f"{_p}multi_{'mp_' if _mp_on else ''}{_name}_update",
                            _multi_ref(_single, _group + (("weight32",) if _mp_on else ()), per,
                                       ("lrs", "wds") if _pre else (), _mp_on),
                            ins, params, tol=1e-5 if _mp_on else 1e-6)


def _adamw_single(weight, grad, mean, var, *rest, rescale, **params):
    if rest:
        return R.mp_adamw(weight, grad, mean, var, rest[0], np.array([rescale]), **params)
    return R.adamw(weight, grad, mean, var, np.array([rescale]), **params)


for _mp_on in (False, True):
    group = ("weight", "grad", "mean", "var") + (("weight32",) if _mp_on else ())
    ins = _multi_inputs(group, _mp_on)
    for j in range(2):
        ins[f"var{j}"] = np.abs(ins[f"var{j}"]) + 0.1
    ins["rescale_grad"] = np.array([2.0], F32 if _mp_on else np.float64)

    def _ref(*arrays, num_weights, lrs, wds, etas, group=group, **params):
        size = len(group)
        scale = float(arrays[-1][0])
        outs = []
        for j in range(num_weights):
            mine = arrays[size * j:size * (j + 1)]
            outs += _adamw_single(*mine, rescale=scale, lr=lrs[j], wd=wds[j], eta=etas[j], **params)
        return outs
    CASES += _cases(f"_multi_{'mp_' if _mp_on else ''}adamw_update", _ref, ins,
                    dict(lrs=(0.1, 0.2), wds=(0.01, 0.0), etas=(0.7, 1.0), beta1=0.8, beta2=0.9, epsilon=1e-3,
                         clip_gradient=0.5, num_weights=2), tol=1e-5 if _mp_on else 1e-6)


def _reset_ref(*arrays, num_arrays):
    for a in arrays:
        a[...] = 0.0
    return [np.zeros_like(a) for a in arrays]


CASES.append(Case("reset_arrays", lambda v: make_op_symbol("reset_arrays", v["a"], v["b"], num_arrays=2),
                  {"a": _u(), "b": _u((4,))}, lambda a, b: [np.zeros_like(a), np.zeros_like(b)], grad="none",
                  after=lambda a, b: {"a": np.zeros_like(a), "b": np.zeros_like(b)}))


"""MXNet 1.9.1's optimizer update operators (``sgd_update``, ``adam_update``, ``multi_sgd_mom_update``,
``contrib.adamw_update``, ...): one record each, whose per-element step is the same plain function
the ``mx.optimizer`` classes run (:mod:`symjit.kernels.optim_steps`), so an optimizer and its
operator cannot disagree.

An update op returns the new weight (``out=weight`` updates in place, as MXNet's optimizers call
it) and changes its state inputs in place: they are the op's auxiliary states (``mom``, ``mean``,
``var``, ``weight32``, ...), as MXNet's mutable inputs are; the ``multi_*`` forms take every
array as an argument, interleaved per weight as MXNet orders them, and change the states among
them in place. No update op has a gradient.

A float parameter is a constant of the compiled kernel in a symbol (as MXNet's attributes are).
``mx.nd`` calls pass them at run time instead: each op ``X`` has a twin ``_rt_X`` whose last
argument is a float64 vector of those parameters (:func:`runtime_scalars`), so a learning rate
that changes every step reuses one kernel. Lowering: :mod:`symjit.lower.update`.

symjit's choices where MXNet's behaviour is not documented: ``mp_lamb_update_phase2`` writes the
new weight to ``weight32`` too (as every other ``mp_*`` op; MXNet 1.9.1's CPU build leaves it); a
skipped ``adamw_update`` (``rescale_grad`` nan, inf or 0) returns the weight unchanged (MXNet
leaves a new output unwritten). float16 arrays compute in float32 and are rounded back, states
included (:func:`symjit.imperative._invoke_half`; the compiled kernels have no float16).

>>> import symjit as mx
>>> w, m = mx.nd.ones((2,)), mx.nd.zeros((2,))
>>> _ = mx.nd.sgd_mom_update(w, mx.nd.ones((2,)), m, lr=0.5, momentum=0.9, out=w)
>>> w.asnumpy().tolist(), m.asnumpy().tolist()
([0.5, 0.5], [-0.5, -0.5])
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from symjit.kernels import optim_steps as steps

from ..base import shape_str
from .registry import Kind, OpDef, Param, RuleError, register

__all__ = ["Update", "runtime_scalars", "scalar_layout", "runtime_params"]


@dataclasses.dataclass(frozen=True)
class Update:
    """How an update op runs its step, per weight.

    ``style``: ``"inplace"`` (the output starts as a copy of ``weight`` and the step updates it:
    ``step(i, out, *arrays, *scalars)``), ``"mp"`` (the step updates ``weight32``, then the output
    is it in the weight's dtype), ``"out"`` (``step(i, out, *arrays, *scalars)`` computes the output
    from the arrays) or ``"row"`` (``step(r, cols, out, *arrays, *scalars)`` per row of the
    weight). ``arrays``: input names passed after the first array. ``scalars``: the step's scalar
    arguments: a param name, ``name[]`` (a per-weight tuple param), ``@name`` (element 0 of an
    input array) or ``@name[]`` (element ``j`` of an input array, for weight ``j``).
    ``group``: a ``multi_*`` op's inputs per weight (interleaved), ``shared``: its inputs after
    the groups (the preloaded ``lrs``, ``wds``)."""

    step: Callable
    style: str
    arrays: tuple[str, ...]
    scalars: tuple[str, ...]
    group: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()


def runtime_params(spec: Update) -> list[str]:
    """The params a ``mx.nd`` call passes at run time (in the scalar vector's order)."""
    return [s.rstrip("[]") for s in spec.scalars if not s.startswith("@")]


def scalar_layout(spec: Update, n: int) -> dict[str, int]:
    """param -> offset in the scalar vector of an op updating ``n`` weights (a tuple param takes
    ``n`` slots)."""
    out, at = {}, 0
    for s in spec.scalars:
        if not s.startswith("@"):
            out[s.rstrip("[]")] = at
            at += n if s.endswith("[]") else 1
    out[""] = at        # the vector's length
    return out


def runtime_scalars(spec: Update, params: dict, n: int) -> np.ndarray:
    """The float64 scalar vector of a ``_rt_`` twin for parsed ``params``."""
    vec = np.empty(scalar_layout(spec, n)[""], np.float64)
    at = 0
    for s in spec.scalars:
        if s.startswith("@"):
            continue
        value = params[s.rstrip("[]")]
        if s.endswith("[]"):
            vec[at:at + n] = [float(v) for v in value]
            at += n
        else:
            vec[at] = float(value)
            at += 1
    return vec


# --- params --------------------------------------------------------------------------------------
def _f(name: str, default=None, doc: str = "") -> Param:
    from .registry import REQUIRED
    return Param(name, "float", REQUIRED if default is None else default, doc=doc)


_LR = _f("lr", doc="learning rate")
_WD = _f("wd", 0.0, "weight decay")
_RESCALE = _f("rescale_grad", 1.0, "gradient = rescale_grad * grad")
_CLIP = _f("clip_gradient", -1.0, "clip the gradient to [-clip_gradient, clip_gradient] (off when < 0)")
_MOMENTUM = _f("momentum", 0.0, "momentum decay")
_LAZY = Param("lazy_update", "bool", True, doc="sparse-gradient option of MXNet (dense here: no effect)")
_CLIP_W = _f("clip_weights", -1.0, "clip the weight to [-clip_weights, clip_weights] (off when < 0)")
_EPS = _f("epsilon", 1e-8, "added to the denominator")
_B1, _B2 = _f("beta1", 0.9, "decay of the first moment"), _f("beta2", 0.999, "decay of the second moment")
_T = Param("t", "int", doc="the update count (from 1)", check=lambda v: v >= 1, check_msg=">= 1")
_BIAS = Param("bias_correction", "bool", True, doc="divide the moments by 1 - beta**t")
_NUM = Param("num_weights", "int", 1, check=lambda v: v >= 1, check_msg=">= 1", doc="number of weights")
_LRS = Param("lrs", "floats", doc="learning rate per weight")
_WDS = Param("wds", "floats", doc="weight decay per weight")

_SGD = ("lr", "wd", "rescale_grad", "clip_gradient")
_MOM = ("lr", "momentum", "wd", "rescale_grad", "clip_gradient")
_ADAM = ("lr", "beta1", "beta2", "epsilon", "wd", "rescale_grad", "clip_gradient")


# --- rules ---------------------------------------------------------------------------------------
def _names(op: OpDef, p: dict) -> list[str]:
    return op.list_arguments(p) + op.list_aux(p)


def _shape_rule(same: Callable[[dict], list[tuple[str, str]]], fixed: Callable[[dict], dict]):
    """Shapes: each (input, like) pair of ``same(p)`` shares a shape; ``fixed(p, shapes)`` gives inputs
    of a fixed shape (from the params and the known shapes); each output has its weight's shape."""
    def rule(p: dict, ins: list, aux: list, *, op: OpDef):
        names = _names(op, p)
        shapes = dict(zip(names, list(ins) + list(aux)))
        for name, shape in fixed(p, shapes).items():
            if shapes.get(name) is not None and shapes[name] != shape:
                raise RuleError(f"input '{name}' must have shape {shape_str(shape)}, "
                                f"got {shape_str(shapes[name])}")
            shapes[name] = shape
        for name, like in same(p):
            a, b = shapes.get(name), shapes.get(like)
            if a is not None and b is not None and a != b:
                raise RuleError(f"input '{name}' has shape {shape_str(a)}, '{like}' {shape_str(b)}: "
                                "they must be equal")
            shapes[name] = shapes[like] = a if a is not None else b
        for name, shape in shapes.items():
            if shape is not None and 0 in shape:
                raise RuleError(f"input '{name}' is empty ({shape_str(shape)})")
        n_args = len(op.list_arguments(p))
        outs = [shapes[o] for o in _weights(op, p)]
        return [shapes[n] for n in names[:n_args]], outs, [shapes[n] for n in names[n_args:]]
    return rule


def _weights(op: OpDef, p: dict) -> list[str]:
    """The input each output takes its shape and dtype from."""
    return op.extra["outputs_like"](p)


def _dtype_rule(p: dict, ins: list, aux: list, *, op: OpDef):
    names = _names(op, p)
    dts = dict(zip(names, list(ins) + list(aux)))
    fixed = op.extra.get("float32", lambda p: ())(p)
    for name, dt in dts.items():
        if dt is not None and dt.kind != "f":
            raise RuleError(f"input '{name}' must have a floating-point dtype, got {dt.name}")
        if name in fixed and dt is not None and dt != np.float32:
            raise RuleError(f"input '{name}' must be float32 (the master copy and states of a "
                            f"multi-precision update), got {dt.name}")
    for name in fixed:
        dts[name] = np.dtype(np.float32)
    known = next((dt for n, dt in dts.items() if dt is not None and n not in fixed and n != "scalars"), None)
    dts = {n: known if dt is None else dt for n, dt in dts.items()}
    outs = [dts.get(w) for w in _weights(op, p)]
    n_args = len(op.list_arguments(p))
    return [dts[n] for n in names[:n_args]], outs, [dts[n] for n in names[n_args:]]


def _bind(rule, op: OpDef):
    return lambda p, ins, aux: rule(p, ins, aux, op=op)


def _add(name: str, spec: Update, params: tuple, arguments, aux, doc: str, *, same, fixed=None,
         outputs_like=None, float32=None, outputs=("output",), twin: bool = True) -> OpDef:
    """Register an update op (and its ``_rt_`` twin)."""
    extra = {"update": spec, "no_grad": True, "family": "update",
             "outputs_like": outputs_like or (lambda p: ["weight"]), "float32": float32 or (lambda p: ())}
    op = OpDef(name=name, params=params, arguments=arguments, aux=aux, outputs=outputs, kind=Kind.OPAQUE,
               doc=doc, extra=extra, hint=name.lower())
    op.shape = _bind(_shape_rule(same, fixed or (lambda p, shapes: {})), op)
    op.dtype = _bind(_dtype_rule, op)
    register(op)
    if twin:
        _add_twin(op)
    return op


def _add_twin(op: OpDef) -> OpDef:
    spec = op.extra["update"]
    runtime = set(runtime_params(spec))
    params = tuple(p for p in op.params if p.name not in runtime)
    n_of = (lambda p: p["num_weights"]) if spec.group else (lambda p: 1)

    def arguments(p: dict) -> list[str]:
        return op.list_arguments(p) + ["scalars"]

    def full(p: dict) -> dict:      # the public op's params (its rules read only the twin's ones)
        return {q.name: (p[q.name] if q.name in p else q.default) for q in op.params}

    def shape(p: dict, ins: list, aux: list):
        a, o, x = op.shape(full(p), list(ins[:-1]), aux)
        return a + [(scalar_layout(spec, n_of(p))[""],)], o, x

    def dtype(p: dict, ins: list, aux: list):
        a, o, x = op.dtype(full(p), list(ins[:-1]), aux)
        return a + [np.dtype(np.float64)], o, x

    twin = OpDef(name=f"_rt_{op.name}", params=params, arguments=arguments, aux=op.aux, outputs=op.outputs,
                 kind=Kind.OPAQUE, shape=shape, dtype=dtype, hint=op.hint,
                 doc=f"{op.name} with its float parameters in a float64 vector (the last argument), "
                     "as mx.nd calls it.",
                 extra={**op.extra, "rewrite_of": op.name, "runtime": True})
    del twin.extra["no_grad"]
    return register(twin)


_COMMON = {q.name: q for q in (_LR, _WD, _RESCALE, _CLIP, _MOMENTUM, _CLIP_W, _EPS, _B1, _B2, _T, _BIAS)}


def _params(scalars: tuple[str, ...], own: tuple[Param, ...] = ()) -> tuple[Param, ...]:
    """The params named by ``scalars``, in that order (MXNet's order for these ops): ``own`` ones
    first, else the common ones."""
    mine = {q.name: q for q in own}
    names = [s.rstrip("[]") for s in scalars if not s.startswith("@")]
    return tuple(mine.get(n) or _COMMON[n] for n in names)


def _single(name: str, step, states: tuple[str, ...], scalars: tuple[str, ...], own=(), doc: str = "",
            lazy: bool = False, mp: bool = False) -> OpDef:
    """An op updating one weight in place: arguments (weight, grad), aux ``states`` (then ``weight32``
    for a multi-precision op), params in the order of the step's scalars."""
    params = _params(scalars, own) + ((_LAZY,) if lazy else ())
    aux = states + (("weight32",) if mp else ())
    spec = Update(step, "mp" if mp else "inplace", ("grad",) + states, scalars)
    return _add(name, spec, params, ("weight", "grad"), aux, doc,
                same=lambda p: [(n, "weight") for n in ("grad",) + aux],
                float32=(lambda p: aux) if mp else None)


_single("sgd_update", steps.sgd_step, (), _SGD, lazy=True,
        doc="SGD: ``weight -= lr * (clip(rescale_grad * grad) + wd * weight)``.")
_single("sgd_mom_update", steps.sgd_mom_step, ("mom",), _MOM, lazy=True,
        doc="SGD with momentum: ``mom = momentum * mom - lr * (g + wd * weight); weight += mom`` "
            "(``g = clip(rescale_grad * grad)``).")
_single("nag_mom_update", steps.nag_mom_step, ("mom",), _MOM,
        doc="Nesterov momentum: ``g' = g + wd * weight; mom = momentum * mom - lr * g'; "
            "weight += momentum * mom - lr * g'``.")
_single("mp_sgd_update", steps.sgd_step, (), _SGD, lazy=True, mp=True,
        doc="sgd_update on the float32 master copy ``weight32``; the output is it in the weight's dtype.")
_single("mp_sgd_mom_update", steps.sgd_mom_step, ("mom",), _MOM, lazy=True, mp=True,
        doc="sgd_mom_update on the float32 master copy ``weight32``.")
_single("mp_nag_mom_update", steps.nag_mom_step, ("mom",), _MOM, mp=True,
        doc="nag_mom_update on the float32 master copy ``weight32``.")
_single("adam_update", steps.adam_wdclip_step, ("mean", "var"), _ADAM, lazy=True,
        own=(_f("epsilon", 1e-8, "added to sqrt(var)"),),
        doc="Adam (no bias correction: the optimizer folds it into ``lr``): ``g = clip(rescale_grad * "
            "grad + wd * weight); mean = beta1 mean + (1-beta1) g; var = beta2 var + (1-beta2) g^2; "
            "weight -= lr * mean / (sqrt(var) + epsilon)``.")
_single("rmsprop_update", steps.rmsprop_wdclip_step, ("n",),
        ("lr", "gamma1", "epsilon", "wd", "rescale_grad", "clip_gradient", "clip_weights"),
        own=(_f("gamma1", 0.95, "decay of n"),),
        doc="RMSProp (Tieleman & Hinton): ``g = clip(rescale_grad * grad + wd * weight); n = (1-gamma1) "
            "g^2 + gamma1 n; weight -= lr g / sqrt(n + epsilon)``, then clipped by clip_weights.")
_single("rmspropalex_update", steps.rmspropalex_step, ("n", "g", "delta"),
        ("lr", "gamma1", "gamma2", "epsilon", "wd", "rescale_grad", "clip_gradient", "clip_weights"),
        own=(_f("gamma1", 0.95, "decay of n and g"), _f("gamma2", 0.9, "momentum of delta")),
        doc="Centered RMSProp (Graves 2013): ``n = (1-gamma1) g^2 + gamma1 n; g_avg = (1-gamma1) g + "
            "gamma1 g_avg; delta = gamma2 delta - lr g / sqrt(n - g_avg^2 + epsilon); weight += delta``.")
_single("signsgd_update", steps.signsgd_step, (), _SGD,
        doc="signSGD: ``weight = (1 - lr * wd) * weight - lr * sign(clip(rescale_grad * grad))``.")
_single("signum_update", steps.signum_step, ("mom",), _MOM + ("wd_lh",),
        own=(_f("wd_lh", 0.0, "decoupled weight decay"),),
        doc="Signum: ``mom = momentum mom - (1-momentum) (wd weight + g); weight = (1 - lr wd_lh) weight "
            "+ lr sign(mom)``.")
_single("ftrl_update", steps.ftrl_step, ("z", "n"),
        ("lr", "lamda1", "beta", "wd", "rescale_grad", "clip_gradient"),
        own=(_LR, _f("lamda1", 0.01, "L1 regularisation"), _f("beta", 1.0, "per-coordinate lr beta")),
        doc="FTRL-Proximal (McMahan et al.): ``z += g - (sqrt(n + g^2) - sqrt(n)) weight / lr; n += g^2; "
            "weight = (sign(z) lamda1 - z) / ((beta + sqrt(n)) / lr + wd)`` where ``|z| > lamda1``, else 0.")
_single("ftml_update", steps.ftml_step, ("d", "v", "z"),
        ("lr", "beta1", "beta2", "epsilon", "t", "wd", "rescale_grad", "clip_grad"),
        own=(_LR, _f("beta1", 0.6, "first-moment decay"), _B2, _f("epsilon", 1e-8, "stability"), _T,
                      _WD, _RESCALE, _f("clip_grad", -1.0, "clip the gradient (off when < 0)")),
        doc="FTML (Zheng & Kwok): ``v = b2 v + (1-b2) g^2; d_t = (1-b1^t)/lr (sqrt(v/(1-b2^t)) + eps); "
            "z = b1 z + (1-b1) g - (d_t - b1 d) weight; d = d_t; weight = -z/d_t``, "
            "``g = clip(rescale_grad grad + wd weight)``.")


# --- AdamW, group AdaGrad, LAMB, LARS ------------------------------------------------------------
_ONE = {"rescale_grad": (1,)}
_ADAMW = ("@rescale_grad", "lr", "beta1", "beta2", "epsilon", "wd", "eta", "clip_gradient")
_ETA = _f("eta", doc="multiplier of the whole step (the learning-rate schedule)")
_ADAMW_DOC = ("AdamW (Loshchilov & Hutter): ``g = clip(rescale_grad * grad)``, Adam's moments, "
              "``weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight)``; ``rescale_grad`` is "
              "an array of one element, and nan, inf or 0 there skips the step (weight and moments "
              "unchanged).")
for _mp in (False, True):
    _aux = ("mean", "var") + (("weight32",) if _mp else ())
    _add(f"_{'mp_' if _mp else ''}adamw_update",
         Update(steps.adamw_step, "mp" if _mp else "inplace", ("grad", "mean", "var"), _ADAMW),
         _params(_ADAMW, (_ETA,)), ("weight", "grad", "rescale_grad"), _aux,
         _ADAMW_DOC + (" On the float32 master copy ``weight32``." if _mp else ""),
         same=lambda p, _aux=_aux: [(n, "weight") for n in ("grad",) + _aux], fixed=lambda p, shapes: _ONE,
         float32=(lambda p, _aux=_aux: _aux) if _mp else None)


def _history_shape(p: dict, shapes: dict) -> dict:
    w = shapes.get("weight")
    if w is None:
        return {}
    if len(w) != 2:
        raise RuleError(f"weight must be 2-D (rows, columns), got {shape_str(w)}")
    return {"history": (w[0], 1)}


_add("_contrib_group_adagrad_update",
     Update(steps.group_adagrad_row, "row", ("grad", "history"),
            ("lr", "rescale_grad", "clip_gradient", "epsilon")),
     _params(("lr", "rescale_grad", "clip_gradient", "epsilon"), (_f("epsilon", 1e-5, "stability"),)),
     ("weight", "grad"), ("history",),
     "Group AdaGrad (one learning rate per row): ``g = clip(rescale_grad * grad); history += mean(g^2, "
     "axis=1, keepdims=True); weight -= lr * g / sqrt(history + epsilon)``; history is (rows, 1).",
     same=lambda p: [("grad", "weight")], fixed=_history_shape)

_PHASE1 = ("beta1", "beta2", "epsilon", "t", "bias_correction", "wd", "rescale_grad", "clip_gradient")
_P1_OWN = (_f("epsilon", 1e-6, "added to sqrt(v)"), _f("wd", doc="weight decay"))
_P1_DOC = ("LAMB's first phase: Adam's moments of ``g = clip(rescale_grad * grad)`` (divided by ``1 - "
           "beta**t`` when bias_correction), returns ``mean / (sqrt(var) + epsilon) + wd * weight``.")
_add("lamb_update_phase1", Update(steps.lamb_phase1_step, "out", ("weight", "grad", "mean", "var"), _PHASE1),
     _params(_PHASE1, _P1_OWN), ("weight", "grad"), ("mean", "var"), _P1_DOC,
     same=lambda p: [(n, "weight") for n in ("grad", "mean", "var")])
_add("mp_lamb_update_phase1",
     Update(steps.lamb_phase1_step, "out", ("weight32", "grad", "mean", "var"), _PHASE1),
     _params(_PHASE1, _P1_OWN), ("weight", "grad"), ("mean", "var", "weight32"),
     _P1_DOC + " Computed from the float32 master copy ``weight32``; the result is float32.",
     same=lambda p: [(n, "weight") for n in ("grad", "mean", "var", "weight32")],
     float32=lambda p: ("mean", "var", "weight32"), outputs_like=lambda p: ["weight32"])

_PHASE2 = ("lr", "lower_bound", "upper_bound")
_P2_OWN = (_f("lower_bound", -1.0, "lower limit of ||weight|| (off when < 0)"),
           _f("upper_bound", -1.0, "upper limit of ||weight|| (off when < 0)"))
_R12 = {"r1": (1,), "r2": (1,)}
_P2_DOC = ("LAMB's second phase: ``weight - lr * (r1 / r2) * g`` with ``r1`` (||weight||, clamped to the "
           "bounds) and ``r2`` (||g||) arrays of one element; the ratio is 1 when either is 0.")
_add("lamb_update_phase2", Update(steps.lamb_phase2_step, "out", ("weight", "g", "r1", "r2"), _PHASE2),
     _params(_PHASE2, _P2_OWN), ("weight", "g", "r1", "r2"), (), _P2_DOC,
     same=lambda p: [("g", "weight")], fixed=lambda p, shapes: _R12)
_add("mp_lamb_update_phase2", Update(steps.lamb_phase2_step, "mp", ("weight32", "g", "r1", "r2"), _PHASE2),
     _params(_PHASE2, _P2_OWN), ("weight", "g", "r1", "r2"), ("weight32",),
     _P2_DOC + " On the float32 master copy ``weight32`` (updated too); the output is it in the "
     "weight's dtype.",
     same=lambda p: [("g", "weight"), ("weight32", "weight")], fixed=lambda p, shapes: _R12,
     float32=lambda p: ("g", "r1", "r2", "weight32"))

_LARS_IN = ("lrs", "weights_sum_sq", "grads_sum_sq", "wds")
_add("multi_lars", Update(steps.multi_lars_step, "out", _LARS_IN, ("eta", "eps", "rescale_grad")),
     (_f("eta", doc="LARS eta"), _f("eps", doc="LARS epsilon"), _RESCALE), _LARS_IN, (),
     "LARS learning rates: ``lrs * eta * ||w|| / (||g|| + wds * ||w|| + eps)`` per layer from the squared "
     "norms (``||g||`` times rescale_grad); ``lrs`` where a norm is 0. All inputs are vectors of one length.",
     same=lambda p: [(n, "lrs") for n in _LARS_IN[1:]], outputs_like=lambda p: ["lrs"])


# --- the multi_* forms: many weights in one call --------------------------------------------------
def _multi(name: str, step, group: tuple[str, ...], scalars: tuple[str, ...], params: tuple[Param, ...],
           doc: str, shared: tuple[str, ...] = (), mp: bool = False) -> OpDef:
    """An op updating ``num_weights`` weights: arguments ``group`` per weight (``weight0, grad0, ...``,
    interleaved as MXNet takes them), then ``shared``; one output per weight."""
    states = tuple(n for n in group if n not in ("weight", "grad", "weight32"))
    spec = Update(step, "mp" if mp else "inplace", ("grad",) + states, scalars, group, shared)

    def arguments(p: dict) -> list[str]:
        return [f"{n}{j}" for j in range(p["num_weights"]) for n in group] + list(shared)

    def same(p: dict) -> list[tuple[str, str]]:
        return [(f"{n}{j}", f"weight{j}") for j in range(p["num_weights"]) for n in group if n != "weight"]

    def fixed(p: dict, shapes: dict) -> dict:
        return {n: ((1,) if n == "rescale_grad" else (p["num_weights"],)) for n in shared}

    def check(p: dict) -> None:
        for q in params:
            if q.kind == "floats" and len(p[q.name]) != p["num_weights"]:
                raise RuleError(f"{name}: parameter '{q.name}' has {len(p[q.name])} values for "
                                f"num_weights={p['num_weights']}")

    float32 = (lambda p: [f"{n}{j}" for j in range(p["num_weights"]) for n in group
                          if n not in ("weight", "grad")]) if mp else None
    op = _add(name, spec, params + (_NUM,), arguments, (), doc, same=same, fixed=fixed, float32=float32,
              outputs_like=lambda p: [f"weight{j}" for j in range(p["num_weights"])],
              outputs=lambda p: [f"output{j}" for j in range(p["num_weights"])], twin=False)
    op.check = check
    _add_twin(op)
    return op


_M_SGD = (_LRS, _WDS, _RESCALE, _CLIP)
_M_MOM = (_LRS, _WDS, _MOMENTUM, _RESCALE, _CLIP)
_P_SGD = (_RESCALE, _CLIP)
_P_MOM = (_MOMENTUM, _RESCALE, _CLIP)
_PRE = " The learning rates and weight decays are the arrays ``lrs`` and ``wds`` after the weights' inputs."
for _pre in (False, True):
    _p, _shared = ("preloaded_", ("lrs", "wds")) if _pre else ("", ())
    _lr, _wd = ("@lrs[]", "@wds[]") if _pre else ("lrs[]", "wds[]")
    _multi(f"{_p}multi_sgd_update", steps.sgd_step, ("weight", "grad"),
           (_lr, _wd, "rescale_grad", "clip_gradient"), _P_SGD if _pre else _M_SGD,
           "sgd_update of ``num_weights`` weights in one call (inputs weight, grad per weight)."
           + (_PRE * _pre),
           _shared)
    _multi(f"{_p}multi_sgd_mom_update", steps.sgd_mom_step, ("weight", "grad", "mom"),
           (_lr, "momentum", _wd, "rescale_grad", "clip_gradient"), _P_MOM if _pre else _M_MOM,
           "sgd_mom_update of ``num_weights`` weights in one call (weight, grad, mom per weight)."
           + (_PRE * _pre),
           _shared)
    _multi(f"{_p}multi_mp_sgd_update", steps.sgd_step, ("weight", "grad", "weight32"),
           (_lr, _wd, "rescale_grad", "clip_gradient"), _P_SGD if _pre else _M_SGD,
           "mp_sgd_update of ``num_weights`` weights in one call (weight, grad, weight32 per weight)."
           + (_PRE * _pre), _shared, mp=True)
    _multi(f"{_p}multi_mp_sgd_mom_update", steps.sgd_mom_step, ("weight", "grad", "mom", "weight32"),
           (_lr, "momentum", _wd, "rescale_grad", "clip_gradient"), _P_MOM if _pre else _M_MOM,
           "mp_sgd_mom_update of ``num_weights`` weights in one call (weight, grad, mom, weight32 per "
           "weight)."
           + (_PRE * _pre), _shared, mp=True)

_M_ADAMW = (_LRS, _B1, _B2, _EPS, _WDS, Param("etas", "floats", doc="eta per weight"), _CLIP)
for _mp in (False, True):
    _multi(f"_multi_{'mp_' if _mp else ''}adamw_update", steps.adamw_step,
           ("weight", "grad", "mean", "var") + (("weight32",) if _mp else ()),
           ("@rescale_grad", "lrs[]", "beta1", "beta2", "epsilon", "wds[]", "etas[]", "clip_gradient"),
           _M_ADAMW, f"{'mp_' if _mp else ''}adamw_update of ``num_weights`` weights in one call; "
           "``rescale_grad`` (one element) after the weights' inputs.", ("rescale_grad",), mp=_mp)


# --- reset_arrays ------------------------------------------------------------------------------------
def _reset_shape(p: dict, ins: list, aux: list):
    return list(ins), list(ins), []


def _reset_dtype(p: dict, ins: list, aux: list):
    return list(ins), list(ins), []


register(OpDef(
    name="reset_arrays", params=(Param("num_arrays", "int", check=lambda v: v >= 1, check_msg=">= 1",
                                       doc="number of arrays"),),
    arguments=lambda p: [f"data{j}" for j in range(p["num_arrays"])], variadic="num_arrays",
    outputs=lambda p: [f"output{j}" for j in range(p["num_arrays"])],
    shape=_reset_shape, dtype=_reset_dtype, kind=Kind.OPAQUE, extra={"no_grad": True},
    doc="Sets every input array to zero in place (as the optimizers reset gradients); ``mx.nd.reset_arrays`` "
        "returns nothing, as MXNet's; in a symbol each output is the zeroed array.",
))

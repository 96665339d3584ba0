"""Cases for the broadcast ops (symjit/ops/broadcast.py): the broadcast_* binary ops over several
shape pairs (leading axes added, size-1 axes grown on either side, both at once), broadcast_to,
broadcast_axis and broadcast_like. Gradients are checked numerically: they must come back summed
over the broadcast axes, in each input's own shape."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(7)


def rnd(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape)


def away(*shape, lo=0.3, hi=1.5):
    return R.uniform(lo, hi, shape) * R.choice([-1.0, 1.0], shape)


def _cmp(f):
    return lambda lhs, rhs: f(lhs, rhs).astype(np.float64)


# shape pairs: same, rhs row vector, rhs column with a leading axis added, both sides grow
PAIRS = {"same": ((2, 3), (2, 3)), "row": ((3, 4), (4,)), "col": ((2, 3, 1), (3, 4)),
         "both": ((3, 1), (2, 1, 4))}


def _inputs(name, lshape, rshape):
    """Inputs in the op's smooth domain, broadcast-compatible."""
    if name == "broadcast_power":
        return rnd(*lshape, lo=0.4, hi=2.0), rnd(*rshape, lo=-2, hi=2)
    if name == "broadcast_div":
        return rnd(*lshape), away(*rshape)
    if name in ("broadcast_maximum", "broadcast_minimum"):
        lhs = rnd(*lshape, lo=-3, hi=3)
        rhs = rnd(*rshape, lo=-3, hi=3)
        return lhs, rhs
    if name == "broadcast_hypot":
        return away(*lshape), away(*rshape)
    return rnd(*lshape), rnd(*rshape)


SMOOTH = {
    "broadcast_add": np.add, "broadcast_sub": np.subtract, "broadcast_mul": np.multiply,
    "broadcast_div": np.divide, "broadcast_power": np.power, "broadcast_maximum": np.maximum,
    "broadcast_minimum": np.minimum, "broadcast_hypot": np.hypot,
}
COMPARE = {
    "broadcast_equal": np.equal, "broadcast_not_equal": np.not_equal, "broadcast_greater": np.greater,
    "broadcast_greater_equal": np.greater_equal, "broadcast_lesser": np.less,
    "broadcast_lesser_equal": np.less_equal,
}


def _binary(name, ref, pair, grad="numeric", inputs=None):
    lshape, rshape = PAIRS[pair]
    lhs, rhs = inputs if inputs is not None else _inputs(name, lshape, rshape)
    return Case(name, lambda v: getattr(mx.sym, name)(v["lhs"], v["rhs"]), {"lhs": lhs, "rhs": rhs},
                lambda lhs, rhs: ref(lhs, rhs), grad=grad, id=pair)


def _no_ties(lhs, rhs):
    """True when no output element sees lhs == rhs within 0.05 (maximum/minimum are smooth)."""
    return bool(np.all(np.abs(np.subtract(lhs, rhs)) > 0.05))


def _untied(name, pair):
    for _ in range(100):
        lhs, rhs = _inputs(name, *PAIRS[pair])
        if _no_ties(lhs, rhs):
            return lhs, rhs
    raise AssertionError("could not draw tie-free inputs")


def _mod_case(pair):
    lshape, rshape = PAIRS[pair]
    out = np.broadcast_shapes(lshape, rshape)
    for _ in range(1000):
        lhs, rhs = rnd(*lshape, lo=-3, hi=3), away(*rshape, lo=0.6, hi=1.4)
        q = np.asarray(lhs / rhs).reshape(out) if lshape == out else np.broadcast_to(lhs, out) / rhs
        frac = q - np.floor(q)
        if np.all((frac > 0.1) & (frac < 0.9)):
            return _binary("broadcast_mod", np.mod, pair, inputs=(lhs, rhs))
    raise AssertionError("could not draw mod inputs away from its jumps")


def _compare_inputs(pair):
    lhs, rhs = rnd(*PAIRS[pair][0]), rnd(*PAIRS[pair][1])
    rhs.reshape(-1)[0] = lhs.reshape(-1)[0]   # at least one exact tie
    return lhs, rhs


# add and mul on every shape pair; the others where both inputs grow and on a row vector
BINARY_CASES = []
for _name, _ref in SMOOTH.items():
    for _pair in PAIRS if _name in ("broadcast_add", "broadcast_mul") else ("row", "both"):
        inputs = _untied(_name, _pair) if _name in ("broadcast_maximum", "broadcast_minimum") else None
        BINARY_CASES.append(_binary(_name, _ref, _pair, inputs=inputs))
BINARY_CASES += [_mod_case(p) for p in ("row", "col")]
BINARY_CASES += [_binary(_name, _cmp(_f), "both", grad="none", inputs=_compare_inputs("both"))
                 for _name, _f in COMPARE.items()]

OTHER = [
    Case("broadcast_to", lambda v: mx.sym.broadcast_to(v["x"], shape=(2, 3, 4)), {"x": rnd(2, 1, 4)},
         lambda x: np.broadcast_to(x, (2, 3, 4)).copy(), id="middle"),
    Case("broadcast_to", lambda v: mx.sym.broadcast_to(v["x"], shape=(3, 0)), {"x": rnd(1, 4)},
         lambda x: np.broadcast_to(x, (3, 4)).copy(), id="keep0"),
    Case("broadcast_to", lambda v: mx.sym.broadcast_to(v["x"], shape=(2, 3)), {"x": rnd(2, 3)},
         lambda x: x.copy(), id="noop"),
    Case("broadcast_axis", lambda v: mx.sym.broadcast_axis(v["x"], axis=(0, 2), size=(2, 3)),
         {"x": rnd(1, 4, 1)}, lambda x: np.broadcast_to(x, (2, 4, 3)).copy(), id="two"),
    Case("broadcast_axis", lambda v: mx.sym.broadcast_axis(v["x"], axis=-1, size=5), {"x": rnd(3, 1)},
         lambda x: np.broadcast_to(x, (3, 5)).copy(), id="neg"),
    Case("broadcast_like", lambda v: mx.sym.broadcast_like(v["lhs"], v["rhs"]),
         {"lhs": rnd(1, 3), "rhs": rnd(4, 3)}, lambda lhs, rhs: np.broadcast_to(lhs, rhs.shape).copy(),
         no_grad=("rhs",), id="full"),
    Case("broadcast_like", lambda v: mx.sym.broadcast_like(v["lhs"], v["rhs"], lhs_axes=(0,), rhs_axes=(1,)),
         {"lhs": rnd(1, 3), "rhs": rnd(3, 5)}, lambda lhs, rhs: np.broadcast_to(lhs, (5, 3)).copy(),
         no_grad=("rhs",), id="axes"),
    # the rhs only lends its shape: its gradient is zero (written under grad_req='write')
    Case("broadcast_like", lambda v: mx.sym.broadcast_like(v["lhs"], v["rhs"]),
         {"lhs": rnd(2, 1), "rhs": rnd(2, 3)}, lambda lhs, rhs: np.broadcast_to(lhs, (2, 3)).copy(),
         id="rhs_grad"),
    # one variable on both sides, and a bias-like chain (the usual use of broadcasting)
    Case("broadcast_mul", lambda v: mx.sym.broadcast_mul(v["x"], v["x"]), {"x": rnd(2, 3)},
         lambda x: x * x, id="same_var"),
    Case("broadcast_add", lambda v: mx.sym.tanh(mx.sym.broadcast_add(mx.sym.broadcast_mul(v["x"], v["w"]),
                                                                     v["b"])),
         {"x": rnd(4, 3), "w": rnd(1, 3), "b": rnd(3)}, lambda x, w, b: np.tanh(x * w + b), id="affine"),
]

CASES = BINARY_CASES + OTHER

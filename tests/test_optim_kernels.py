"""The optimizers' update kernels generated from one table (``kernels/optim_table.py``,
``kernels/optim_gen.py``): the checked-in modules are the generator's output, every row has a CPU
and a GPU kernel of each form with the row's arguments, and each row's CPU kernels compute its rule
as a numpy float64 reference does (MXNet's operator references of ``update_refs`` where an operator
has the rule, written here for the others). The GPU kernels are run against the same references on
the simulator by tests/test_optimizer_host.py."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from symjit.kernels import optim_gen
from symjit.kernels.optim_table import UPDATES, Update

from . import update_refs as R

SIZES = (6, 1, 0)       # the parameters of a multi update (an empty one too)
VARIANTS = (0, 1, 2)    # no clipping / clipping and bounds / clipping, LBSGD's accumulating call


def _clip(x, c):
    return np.clip(x, -c, c) if c >= 0 else x


def _mxnet(fn):
    """An operator reference of update_refs called with a kernel row's argument names."""
    params = inspect.signature(fn).parameters
    rename = {"rescale": "rescale_grad", "eps": "epsilon",
              "clip": "clip_grad" if "clip_grad" in params else "clip_gradient"}

    def ref(a, s):
        a["weight"][...] = fn(*a.values(), **{rename.get(k, k): v for k, v in s.items()})[0]
    return ref


def _adagrad(a, s):
    g = _clip(a["grad"] * s["rescale"], s["clip"])
    a["history"] += g * g
    a["weight"] -= s["lr"] * (g / np.sqrt(a["history"] + s["eps"]) + s["wd"] * a["weight"])


def _adadelta(a, s):
    g, rho = _clip(a["grad"] * s["rescale"], s["clip"]), s["rho"]
    a["acc_g"][...] = rho * a["acc_g"] + (1 - rho) * g * g
    d = np.sqrt(a["acc_delta"] + s["eps"]) / np.sqrt(a["acc_g"] + s["eps"]) * g
    a["acc_delta"][...] = rho * a["acc_delta"] + (1 - rho) * d * d
    a["weight"] -= d + s["wd"] * a["weight"]


def _adamax(a, s):
    g = _clip(a["grad"] * s["rescale"] + s["wd"] * a["weight"], s["clip"])
    a["mean"][...] = s["beta1"] * a["mean"] + (1 - s["beta1"]) * g
    a["u"][...] = np.maximum(s["beta2"] * a["u"], np.abs(g))
    a["weight"] -= s["lr"] * a["mean"] / a["u"]


def _nadam(a, s):
    g = _clip(a["grad"] * s["rescale"] + s["wd"] * a["weight"], s["clip"])
    a["mean"][...] = s["beta1"] * a["mean"] + (1 - s["beta1"]) * g
    a["var"][...] = s["beta2"] * a["var"] + (1 - s["beta2"]) * g * g
    m_bar = s["coef_g"] * g + s["coef_m"] * a["mean"]
    a["weight"] -= s["lr"] * m_bar / (np.sqrt(a["var"] / s["bias2"]) + s["eps"])


def _dcasgd(a, s):
    g, w = _clip(a["grad"] * s["rescale"], s["clip"]), a["weight"].copy()
    step = -s["lr"] * (g + s["wd"] * w + s["lamda"] * g * g * (w - a["prev"]))
    if "mom" in a:
        step = a["mom"][...] = s["momentum"] * a["mom"] + step
    a["prev"][...] = w
    a["weight"] += step


def _sgld(a, s):
    g = _clip(a["grad"] * s["rescale"], s["clip"])
    a["weight"] += -0.5 * s["lr"] * (g + s["wd"] * a["weight"]) + a["noise"]


def _sgd_at(a, s, rate, grad):
    """SGD (with momentum when the row has ``mom``) at ``rate`` on ``grad``."""
    step = -rate * (_clip(grad * s["rescale"], s["clip"]) + s["wd"] * a["weight"])
    if "mom" in a:
        step = a["mom"][...] = s["momentum"] * a["mom"] + step
    a["weight"] += step


def _lamb(a, s):
    g = _clip(a["grad"] * s["rescale"], s["clip"])
    a["mean"][...] = s["beta1"] * a["mean"] + (1 - s["beta1"]) * g
    a["var"][...] = s["beta2"] * a["var"] + (1 - s["beta2"]) * g * g
    r = a["mean"] * s["inv1"] / (np.sqrt(a["var"] * s["inv2"]) + s["eps"]) + s["wd"] * a["weight"]
    a["direction"][...] = r
    wn, rn = np.linalg.norm(a["weight"]), np.linalg.norm(r)
    if s["lower"] >= 0:
        wn = max(wn, s["lower"])
    if s["upper"] >= 0:
        wn = min(wn, s["upper"])
    a["weight"] -= s["lr"] * (wn / rn if wn > 0 and rn > 0 else 1.0) * r


def _lars(a, s):
    wn, gn = np.linalg.norm(a["weight"]), np.linalg.norm(a["grad"] * s["rescale"])
    trusted = s["use_trust"] != 0 and wn > 0 and gn > 0
    rate = s["lr"] * s["eta"] * wn / (gn + s["wd"] * wn + s["eps"]) if trusted else s["lr"]
    _sgd_at(a, s, rate, a["grad"])


def _lbsgd(a, s):
    a["acc"][...] = a["grad"] if s["first"] else a["acc"] + a["grad"]
    if not s["step"]:
        return
    a["acc"] /= s["scale"]
    w2, g2 = (a["weight"] ** 2).sum(), (a["acc"] ** 2).sum()
    trust = min(max(np.sqrt(w2 / (g2 + s["wd"] * w2 + 1e-18)), 0.01), 100.0)
    _sgd_at(a, s, s["lr"] * trust if s["lars"] else s["lr"], a["acc"])


REFERENCES = {
    "sgd": _mxnet(R.sgd), "sgd_mom": _mxnet(R.sgd_mom), "nag_mom": _mxnet(R.nag_mom),
    "adagrad": _adagrad, "adadelta": _adadelta, "adam_wdclip": _mxnet(R.adam),
    "rmsprop_wdclip": _mxnet(R.rmsprop), "rmspropalex": _mxnet(R.rmspropalex), "signsgd": _mxnet(R.signsgd),
    "signum": _mxnet(R.signum), "ftml": _mxnet(R.ftml), "ftrl": _mxnet(R.ftrl), "adamax": _adamax,
    "nadam": _nadam, "dcasgd": _dcasgd, "dcasgd_mom": _dcasgd, "sgld": _sgld, "lamb": _lamb,
    "lars": _lars, "lars_mom": _lars, "lbsgd": _lbsgd, "lbsgd_mom": _lbsgd,
}

# scalars by name: (low, high) of a uniform draw, or one value per variant
_SCALARS = {"momentum": (0.5, 0.95), "beta1": (0.8, 0.95), "beta2": (0.9, 0.999), "gamma1": (0.8, 0.95),
            "gamma2": (0.8, 0.95), "rho": (0.8, 0.95), "eps": (1e-6, 1e-3), "wd": (0.0, 0.1),
            "rescale": (0.5, 2.0), "t": (2.0, 2.0), "inv1": (1.5, 3.0), "inv2": (1.5, 3.0),
            "bias2": (0.2, 0.9), "scale": (2.0, 4.0),
            "clip": (-1.0, 0.5, 0.3), "clip_weights": (-1.0, 0.8, 0.6), "lower": (-1.0, 0.5, -1.0),
            "upper": (-1.0, 1.2, 0.4), "use_trust": (1.0, 1.0, 0.0), "first": (1.0, 0.0, 0.0),
            "step": (1.0, 1.0, 0.0), "lars": (0.0, 1.0, 1.0)}
# states by name: (low, high) of a uniform draw (the default: positive, as a second moment is)
_STATES = {"mom": (-0.1, 0.1), "g_avg": (-0.1, 0.1), "delta": (-0.1, 0.1), "z": (-1.0, 1.0),
           "prev": (-1.0, 1.0), "noise": (-0.01, 0.01), "acc": (-1.0, 1.0)}


def inputs(row: Update, variant: int, n: int, seed: int) -> tuple[dict, dict]:
    """Random float64 arrays (by name) of ``n`` elements and scalars (by name) for ``row``."""
    rng = np.random.default_rng([seed, variant, n, len(row.name)])
    arrays = {"weight": rng.uniform(-1, 1, n), "grad": rng.standard_normal(n)}
    arrays.update({s: rng.uniform(*_STATES.get(s, (0.1, 1.0)), n) for s in row.states})
    scalars = {}
    for name in row.scalars:
        spec = _SCALARS.get(name, (0.05, 0.5))
        scalars[name] = float(spec[variant] if len(spec) == 3 else rng.uniform(*spec))
    return arrays, scalars


def expected(row: Update, arrays: dict, scalars: dict) -> dict:
    """The row's arrays after one update by its numpy reference."""
    out = {k: v.copy() for k, v in arrays.items()}
    with np.errstate(all="ignore"):
        REFERENCES[row.name](out, scalars)
    return out


def assert_matches(got: dict, want: dict, what: str) -> None:
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-15, err_msg=f"{what}: {name}")


def test_generated_modules_are_the_generators_output():
    """kernels/cpu/optim.py and kernels/cuda/optim.py are written by the generator from the table:
    after an edit of either, ``python -m symjit.kernels.optim_gen`` rewrites them."""
    assert optim_gen.stale() == [], "run: python -m symjit.kernels.optim_gen"
    assert "Generated by" in optim_gen.cpu_source() and "_multi_lamb_kernel" in optim_gen.cuda_source()


def test_a_row_that_disagrees_with_the_hand_written_code_is_refused(monkeypatch):
    good = UPDATES["adagrad"]
    monkeypatch.setitem(UPDATES, "adagrad", good._replace(scalars=good.scalars[:-1]))
    with pytest.raises(ValueError, match="row 'adagrad': optim_steps.adagrad_step takes"):
        optim_gen.check_table()
    monkeypatch.setitem(UPDATES, "adagrad", good)
    lars = UPDATES["lars"]
    monkeypatch.setitem(UPDATES, "lars", lars._replace(scalars=("lr",) + lars.scalars))
    with pytest.raises(ValueError, match="row 'lars': cpu/optim_norm.lars_update takes"):
        optim_gen.check_table()


def test_every_row_has_both_targets_and_both_forms_with_its_arguments():
    from symjit.kernels.cpu import optim as cpu
    from symjit.kernels.cuda import optim as gpu
    kernels = {f"{p}{r.name}_update" for r in UPDATES.values() for p in ("", "multi_")}
    assert set(cpu.__all__) - {"view"} == kernels
    assert set(gpu.__all__) - {"multi_launch"} == kernels
    assert set(REFERENCES) == set(UPDATES)
    for row in UPDATES.values():
        single, multi = getattr(cpu, f"{row.name}_update"), getattr(cpu, f"multi_{row.name}_update")
        assert tuple(inspect.signature(single.py_func).parameters) == row.args, row.name
        assert tuple(inspect.signature(multi.py_func).parameters) == optim_gen.MULTI_ARGS, row.name
        assert single.targetoptions.get("error_model", "python") == row.error_model, row.name
        host = inspect.signature(getattr(gpu, f"{row.name}_update")).parameters
        assert tuple(host) == row.args + ("stream",), row.name
        host = inspect.signature(getattr(gpu, f"multi_{row.name}_update")).parameters
        assert tuple(host) == optim_gen.MULTI_ARGS + ("stream",), row.name
        kernel = getattr(gpu, f"_{row.name}_step_kernel").py_func
        assert tuple(inspect.signature(kernel).parameters) == row.args, row.name
        assert callable(getattr(gpu, f"_multi_{row.name}_kernel")), row.name


def _cpu_multi(cpu, row: Update, rows: list[tuple[dict, dict]]) -> list[dict]:
    """Run ``multi_{name}_update`` of the CPU over copies of ``rows``; the arrays after it."""
    arrays = [{k: v.copy() for k, v in a.items()} for a, _ in rows]
    addrs = np.array([[a[k].ctypes.data for k in row.arrays] for a in arrays], np.int64)
    sizes = np.array([a["weight"].size for a in arrays], np.int64)
    scalars = np.array([[s[k] for k in row.scalars] for _, s in rows], np.float64)
    like = max((a["weight"] for a in arrays), key=lambda w: w.size)
    getattr(cpu, f"multi_{row.name}_update")(addrs, sizes, scalars, like)
    return arrays


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", list(UPDATES))
def test_cpu_kernels_match_the_numpy_reference(name, variant):
    """Both forms of each row on float64 arrays; a row of the multi form is bit for bit the single
    form on that parameter."""
    from symjit.kernels.cpu import optim as cpu
    row = UPDATES[name]
    rows = [inputs(row, variant, n, seed) for seed, n in enumerate(SIZES)]
    singles = []
    for k, (arrays, scalars) in enumerate(rows):
        got = {a: v.copy() for a, v in arrays.items()}
        getattr(cpu, f"{name}_update")(*got.values(), *scalars.values())
        assert_matches(got, expected(row, arrays, scalars), f"{name}_update, parameter {k}")
        singles.append(got)
    for k, (got, single) in enumerate(zip(_cpu_multi(cpu, row, rows), singles)):
        for a in row.arrays:
            np.testing.assert_array_equal(got[a], single[a], err_msg=f"multi_{name}_update, row {k}: {a}")
    assert any(not np.array_equal(s["weight"], a["weight"]) for s, (a, _) in zip(singles, rows)) \
        or (name.startswith("lbsgd") and variant == 2), "the update left every weight as it was"


def check_on_the_device(name: str, variant: int) -> None:
    """Both GPU forms of row ``name`` against its numpy reference (float64 device arrays; run by
    the ``gpu`` tests of tests/test_optimizer_host.py, on the simulator without a GPU)."""
    from numba import cuda
    from symjit.kernels.cuda import optim as gpu

    from symjit.ndarray.storage import address
    row = UPDATES[name]
    rows = [inputs(row, variant, n, seed) for seed, n in enumerate(SIZES)]
    for k, (arrays, scalars) in enumerate(rows):
        dev = [cuda.to_device(v) for v in arrays.values()]
        getattr(gpu, f"{name}_update")(*dev, *scalars.values())
        got = {a: d.copy_to_host() for a, d in zip(arrays, dev)}
        assert_matches(got, expected(row, arrays, scalars), f"GPU {name}_update, parameter {k}")
    dev = [[cuda.to_device(a[k]) for k in row.arrays] for a, _ in rows]
    addrs = np.array([[address(d) for d in r] for r in dev], np.int64)
    sizes = np.array([r[0].size for r in dev], np.int64)
    scalars = np.array([[s[k] for k in row.scalars] for _, s in rows], np.float64)
    like = max((r[0] for r in dev), key=lambda w: w.size)
    tables = [cuda.to_device(addrs), cuda.to_device(sizes), cuda.to_device(scalars)]
    getattr(gpu, f"multi_{name}_update")(*tables, like)
    for k, ((arrays, s), r) in enumerate(zip(rows, dev)):
        got = {a: d.copy_to_host() for a, d in zip(row.arrays, r)}
        assert_matches(got, expected(row, arrays, s), f"GPU multi_{name}_update, row {k}")

"""The optimizers' fused update kernels, one row each: what :mod:`symjit.kernels.optim_gen` writes
both targets' wrappers from.

A row names the update (its kernels are ``{name}_update`` for one parameter and
``multi_{name}_update`` for many, on the CPU and on a GPU), its state arrays (after ``weight`` and
``grad``), its scalar parameters (in the order of the kernels' arguments, and of a row of the
``scalars`` table of the multi form), and the per-element step of
:mod:`symjit.kernels.optim_steps` it runs. An elementwise update runs its step on every element
(the step's arguments are ``i``, the arrays, then the scalars). A ``norm`` update needs sums of
squares over the whole parameter first (LAMB, LARS, LBSGD): its passes are hand-written in the
``optim_norm`` module of each target (``{name}_update`` on the CPU, ``_{name}_block`` on a GPU,
with the row's arguments) and only the kernels around them are generated. ``error_model`` is the
CPU kernels' numba error model: "numpy" (a division by zero gives inf or nan, as MXNet's kernels
and the GPU's do, and the loop vectorizes; Adam's step on the tutorial MLP's parameters took 7x
longer when each division checked for zero first) or "python" (it raises).

>>> row = UPDATES["adam_wdclip"]
>>> row.arrays, row.step
(('weight', 'grad', 'mean', 'var'), 'adam_wdclip_step')
>>> sum(r.norm for r in UPDATES.values())
5
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["Update", "UPDATES"]

_SGD = ("lr", "wd", "rescale", "clip")
_MOM = ("lr", "momentum", "wd", "rescale", "clip")


class Update(NamedTuple):
    """One fused update: the row of the table."""

    name: str
    states: tuple[str, ...]
    scalars: tuple[str, ...]
    step: str
    doc: str
    norm: bool = False
    error_model: str = "numpy"

    @property
    def arrays(self) -> tuple[str, ...]:
        """The kernels' array arguments: the weight, the gradient, then the states."""
        return ("weight", "grad") + self.states

    @property
    def args(self) -> tuple[str, ...]:
        """The single-parameter kernel's arguments."""
        return self.arrays + self.scalars


def _rows(*rows: Update) -> dict[str, Update]:
    return {r.name: r for r in rows}


UPDATES: dict[str, Update] = _rows(
    Update("sgd", (), _SGD, "sgd_step", "``w -= lr * (g + wd * w)``."),
    Update("sgd_mom", ("mom",), _MOM, "sgd_mom_step",
           "``mom = momentum * mom - lr * (g + wd * w); w += mom``."),
    Update("nag_mom", ("mom",), _MOM, "nag_mom_step",
           "Nesterov: ``g' = g + wd*w; mom = momentum*mom - lr*g'; w += momentum*mom - lr*g'``."),
    Update("adagrad", ("history",), ("lr", "eps", "wd", "rescale", "clip"), "adagrad_step",
           "``h += g^2; w -= lr * (g / sqrt(h + eps) + wd * w)``."),
    Update("adadelta", ("acc_g", "acc_delta"), ("rho", "eps", "wd", "rescale", "clip"), "adadelta_step",
           "Zeiler: running averages of g^2 and of delta^2; ``w -= delta + wd * w``."),
    Update("adam_wdclip", ("mean", "var"), ("lr", "beta1", "beta2", "eps", "wd", "rescale", "clip"),
           "adam_wdclip_step", "Adam with ``g = clip(rescale*grad + wd*w)``; ``lr`` already bias-corrected."),
    Update("rmsprop_wdclip", ("n",), ("lr", "gamma1", "eps", "wd", "rescale", "clip", "clip_weights"),
           "rmsprop_wdclip_step", "RMSProp with ``g = clip(rescale*grad + wd*w)``, states ``(n,)``."),
    Update("rmspropalex", ("n", "g_avg", "delta"),
           ("lr", "gamma1", "gamma2", "eps", "wd", "rescale", "clip", "clip_weights"), "rmspropalex_step",
           "Centered RMSProp (Graves 2013), states ``(n, g_avg, delta)``."),
    Update("signsgd", (), _SGD, "signsgd_step", "``w = (1 - lr wd) w - lr sign(g)``."),
    Update("signum", ("mom",), _MOM + ("wd_lh",), "signum_step",
           "``mom = momentum mom - (1-momentum) (wd w + g); w = (1 - lr wd_lh) w + lr sign(mom)``."),
    Update("ftml", ("d", "v", "z"), ("lr", "beta1", "beta2", "eps", "t", "wd", "rescale", "clip"),
           "ftml_step", "FTML, states ``(d, v, z)``."),
    Update("ftrl", ("z", "n"), ("lr", "lamda1", "beta", "wd", "rescale", "clip"), "ftrl_step",
           "FTRL-Proximal, states ``(z, n)``."),
    Update("adamax", ("mean", "u"), ("lr", "beta1", "beta2", "wd", "rescale", "clip"), "adamax_step",
           "AdaMax, states ``(m, u)``; ``lr`` already bias-corrected."),
    Update("nadam", ("mean", "var"),
           ("lr", "beta1", "beta2", "eps", "wd", "rescale", "clip", "coef_g", "coef_m", "bias2"),
           "nadam_step", "Nadam, states ``(m, v)``; the schedule's coefficients from the host."),
    Update("dcasgd", ("prev",), ("lr", "lamda", "wd", "rescale", "clip"), "dcasgd_step",
           "DCASGD without momentum, state: the previous weight."),
    Update("dcasgd_mom", ("mom", "prev"), ("lr", "momentum", "lamda", "wd", "rescale", "clip"),
           "dcasgd_mom_step", "DCASGD with momentum, states ``(mom, previous weight)``."),
    Update("sgld", ("noise",), _SGD, "sgld_step", "SGLD, the noise drawn by the host (as a state array)."),
    Update("lamb", ("mean", "var", "direction"),
           ("lr", "beta1", "beta2", "eps", "wd", "rescale", "clip", "inv1", "inv2", "lower", "upper"),
           "lamb_moments_step", "LAMB, states ``(mean, var)`` and a scratch array for Adam's direction "
           "``r``; then ``w -= lr (||w|| / ||r||) r``.", norm=True),
    Update("lars", (), ("lr", "eta", "eps", "wd", "rescale", "clip", "use_trust"), "sgd_step",
           "LARS without momentum: SGD at the layer's rate (``optim_steps.lars_rate``).", norm=True),
    Update("lars_mom", ("mom",), ("lr", "momentum", "eta", "eps", "wd", "rescale", "clip", "use_trust"),
           "sgd_mom_step", "LARS with momentum: SGD with momentum at the layer's rate.", norm=True),
    Update("lbsgd", ("acc",), _SGD + ("first", "step", "scale", "lars"), "sgd_step",
           "LBSGD without momentum, state: the summed gradient; no step unless ``step``.", norm=True),
    Update("lbsgd_mom", ("acc", "mom"), _MOM + ("first", "step", "scale", "lars"), "sgd_mom_step",
           "LBSGD with momentum, states ``(summed gradient, momentum)``.", norm=True),
)

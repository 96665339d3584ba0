"""Neural-network layers: FullyConnected, Convolution, Pooling, Embedding, Dropout, Activation, LeakyReLU."""
from __future__ import annotations

from .registry import Kind, OpDef, Param, RuleError, register
from .rules import need_rank, positive, prod

# ---------------------------------------------------------------------------------------------
# FullyConnected: out = data . weight^T + bias, data flattened to 2-D unless flatten=False.


def _fc_args(p: dict) -> list[str]:
    return ["data", "weight"] if p["no_bias"] else ["data", "weight", "bias"]


def _fc_shape(p: dict, ins: list, aux: list):
    data = ins[0]
    nh = p["num_hidden"]
    if data is None:
        w = ins[1]
        return [None, None if w is None else w] + ([(nh,)] if not p["no_bias"] else []), [None], []
    need_rank(data, "data", 1)
    if p["flatten"]:
        in_dim = prod(data[1:])
        out = (data[0], nh)
    else:
        in_dim = data[-1]
        out = (*data[:-1], nh)
    new = [data, (nh, in_dim)] + ([] if p["no_bias"] else [(nh,)])
    return new, [out], []


FullyConnected = register(OpDef(
    name="FullyConnected",
    params=(
        Param("num_hidden", "int", check=positive, check_msg="> 0", doc="number of output units"),
        Param("no_bias", "bool", False, doc="no bias term"),
        Param("flatten", "bool", True, doc="flatten data to 2-D first; else apply to the last axis"),
    ),
    arguments=_fc_args,
    shape=_fc_shape,
    kind=Kind.OUT_ELEMWISE_FUSABLE,
    doc="Fully connected layer: ``out = dot(data, weight.T) + bias``.",
))


# ---------------------------------------------------------------------------------------------
# Activation: elementwise, one of five functions.

ACT_TYPES = ("relu", "sigmoid", "tanh", "softrelu", "softsign")


def _unary_shape(p: dict, ins: list, aux: list):
    return [ins[0]], [ins[0]], []


Activation = register(OpDef(
    name="Activation",
    params=(Param("act_type", "str", choices=ACT_TYPES, doc="activation function"),),
    shape=_unary_shape,
    kind=Kind.ELEMWISE,
    inplace=((0, 0),),
    doc="Elementwise activation: relu, sigmoid, tanh, softrelu (log(1+exp(x))) or softsign (x/(1+|x|)).",
))

__all__ = ["FullyConnected", "Activation", "RuleError"]

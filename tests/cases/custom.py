"""Cases for Custom (Python operators from mx.operator): a scaled sigmoid with a string parameter
and a two-input, two-output op; references in numpy, gradients by finite differences."""
from __future__ import annotations

import numpy as np

import symjit as mx

from ..opcheck import Case

R = np.random.default_rng(11)


class _ScaledSigmoid(mx.operator.CustomOp):
    def __init__(self, scale: float):
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        self.assign(out_data[0], req[0], self.scale / (1.0 + np.exp(-x)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        s = 1.0 / (1.0 + np.exp(-in_data[0].asnumpy()))
        self.assign(in_grad[0], req[0], out_grad[0].asnumpy() * self.scale * s * (1.0 - s))


@mx.operator.register("_case_scaled_sigmoid")
class _ScaledSigmoidProp(mx.operator.CustomOpProp):
    def __init__(self, scale: str = "1"):
        super().__init__(need_top_grad=True)
        self.scale = float(scale)

    def create_operator(self, ctx, shapes, dtypes):
        return _ScaledSigmoid(self.scale)


class _MulAdd(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data[0].asnumpy(), in_data[1].asnumpy()
        self.assign(out_data[0], req[0], a * b)
        self.assign(out_data[1], req[1], a + b)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data[0].asnumpy(), in_data[1].asnumpy()
        g0, g1 = out_grad[0].asnumpy(), out_grad[1].asnumpy()
        self.assign(in_grad[0], req[0], g0 * b + g1)
        self.assign(in_grad[1], req[1], g0 * a + g1)


@mx.operator.register("_case_mul_add")
class _MulAddProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["lhs", "rhs"]

    def list_outputs(self):
        return ["prod", "sum"]

    def create_operator(self, ctx, shapes, dtypes):
        return _MulAdd()


CASES = [
    Case("Custom", lambda v: mx.sym.Custom(v["x"], op_type="_case_scaled_sigmoid", scale=3),
         {"x": R.uniform(-2.0, 2.0, (3, 4))}, lambda x: 3.0 / (1.0 + np.exp(-x)), id="scaled_sigmoid"),
    Case("Custom", lambda v: mx.sym.Custom(lhs=v["a"], rhs=v["b"], op_type="_case_mul_add"),
         {"a": R.uniform(-1.0, 1.0, (2, 5)), "b": R.uniform(-1.0, 1.0, (2, 5))},
         lambda a, b: [a * b, a + b], id="two_outputs"),
]

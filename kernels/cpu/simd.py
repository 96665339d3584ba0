"""SIMD vectors of 16 float32 lanes for hand-blocked CPU kernels: a numba type and seven intrinsics.

numba vectorises loops on its own, but it cannot keep a block of accumulators in registers across a
reduction: LLVM's loop vectoriser works on arrays in memory, so a register-blocked kernel (say, 24
vectors of partial sums updated from one vector load and one broadcast each) needs the vectors as
values. :data:`f32x16` is LLVM's ``<16 x float>`` as a numba type; local variables of that type live
in SSA registers. On AVX-512 each is one ``zmm`` register; on AVX2 LLVM splits it into two ``ymm``.

* :func:`vzero` ``() -> f32x16``: all lanes 0.
* :func:`vload` ``(a, i) -> f32x16``: ``a[i:i + 16]`` of a 1-D float32 array (unaligned).
* :func:`vbcast` ``(a, i) -> f32x16``: ``a[i]`` in all 16 lanes (a broadcast load, which LLVM
  folds into the multiply-add that uses it).
* :func:`vstore` ``(a, i, v)``: ``a[i:i + 16] = v``.
* :func:`vadd` ``(a, b) -> f32x16``: ``a + b``.
* :func:`vmuladd` ``(acc, a, b) -> f32x16``: ``acc + a * b`` of three vectors.
* :func:`vsum` ``(v) -> float32``: the sum of the lanes.

No bounds checks (as everywhere in numba): callers validate their index ranges before the loop.
These are used by :mod:`symjit.kernels.cpu.conv_vec` (whose tile :mod:`symjit.kernels.cpu.conv_small`
also calls).

>>> import numpy as np, numba
>>> @numba.njit
... def axpy16(x, y, s, i):
...     vstore(y, 0, vmuladd(vload(y, 0), vload(x, 0), vbcast(s, i)))
>>> x, y = np.arange(16, dtype=np.float32), np.ones(16, np.float32)
>>> axpy16(x, y, np.array([0.5, 2.0], np.float32), 1)
>>> y[:4]
array([1., 3., 5., 7.], dtype=float32)
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

__all__ = ["LANES", "f32x16", "vzero", "vload", "vbcast", "vstore", "vadd", "vmuladd", "vsum"]

LANES = 16
_VEC = ir.VectorType(ir.FloatType(), LANES)


class F32x16(types.Type):
    """numba's type of an LLVM ``<16 x float>`` value."""

    def __init__(self) -> None:
        super().__init__(name="f32x16")


f32x16 = F32x16()


@register_model(F32x16)
class _F32x16Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type) -> None:
        super().__init__(dmm, fe_type, _VEC)


def _check_array(name: str, arr) -> None:
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype == types.float32):
        raise TypeError(f"{name}: expected a 1-D float32 array, got {arr}")


def _element(context, builder, aryty, ary, idx):
    """A ``float*`` to element ``idx`` of the 1-D array ``ary``."""
    return builder.gep(context.make_array(aryty)(context, builder, ary).data, [idx])


def _address(context, builder, aryty, ary, idx):
    """A ``<16 x float>*`` to element ``idx`` of the 1-D array ``ary``."""
    return builder.bitcast(_element(context, builder, aryty, ary, idx), _VEC.as_pointer())


@intrinsic
def vzero(typingctx):
    """A vector of zeros."""
    def codegen(context, builder, signature, args):
        return ir.Constant(_VEC, [0.0] * LANES)
    return f32x16(), codegen


@intrinsic
def vload(typingctx, arr, idx):
    """``arr[idx:idx + 16]`` of a 1-D float32 array as a vector."""
    _check_array("vload", arr)

    def codegen(context, builder, signature, args):
        i = context.cast(builder, args[1], signature.args[1], types.intp)
        return builder.load(_address(context, builder, signature.args[0], args[0], i), align=4)
    return f32x16(arr, idx), codegen


@intrinsic
def vbcast(typingctx, arr, idx):
    """``arr[idx]`` of a 1-D float32 array in all 16 lanes (a broadcast load: no negative-index
    wraparound, so that LLVM folds it into the multiply-add that uses it)."""
    _check_array("vbcast", arr)

    def codegen(context, builder, signature, args):
        i = context.cast(builder, args[1], signature.args[1], types.intp)
        scalar = builder.load(_element(context, builder, signature.args[0], args[0], i), align=4)
        lane0 = builder.insert_element(ir.Constant(_VEC, ir.Undefined), scalar,
                                       ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(lane0, ir.Constant(_VEC, ir.Undefined),
                                      ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES))
    return f32x16(arr, idx), codegen


@intrinsic
def vstore(typingctx, arr, idx, vec):
    """``arr[idx:idx + 16] = vec``."""
    _check_array("vstore", arr)
    if vec != f32x16:
        raise TypeError(f"vstore: expected an f32x16 value, got {vec}")

    def codegen(context, builder, signature, args):
        i = context.cast(builder, args[1], signature.args[1], types.intp)
        builder.store(args[2], _address(context, builder, signature.args[0], args[0], i), align=4)
        return context.get_dummy_value()
    return types.void(arr, idx, vec), codegen


@intrinsic
def vadd(typingctx, a, b):
    """``a + b`` lane by lane."""
    if a != f32x16 or b != f32x16:
        raise TypeError(f"vadd: expected two f32x16 values, got ({a}, {b})")

    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1])
    return f32x16(a, b), codegen


@intrinsic
def vmuladd(typingctx, acc, a, b):
    """``acc + a * b`` lane by lane (``llvm.fma``) of three vectors."""
    if acc != f32x16 or a != f32x16 or b != f32x16:
        raise TypeError(f"vmuladd: expected three f32x16 values, got ({acc}, {a}, {b})")

    def codegen(context, builder, signature, args):
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VEC, [_VEC] * 3),
                                             "llvm.fma.v16f32")
        return builder.call(fma, [args[1], args[2], args[0]])
    return f32x16(acc, a, b), codegen


@intrinsic
def vsum(typingctx, vec):
    """The sum of a vector's 16 lanes (a float32; added pairwise: lanes ``i`` and ``i + 8``, ...)."""
    if vec != f32x16:
        raise TypeError(f"vsum: expected an f32x16 value, got {vec}")

    def codegen(context, builder, signature, args):
        v, width = args[0], LANES
        while width > 1:
            half = width // 2
            idx = ir.VectorType(ir.IntType(32), half)
            lo = builder.shuffle_vector(v, v, ir.Constant(idx, list(range(half))))
            hi = builder.shuffle_vector(v, v, ir.Constant(idx, list(range(half, width))))
            v, width = builder.fadd(lo, hi), half
        return builder.extract_element(v, ir.Constant(ir.IntType(32), 0))
    return types.float32(vec), codegen

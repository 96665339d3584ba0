"""``mx.gluon.contrib.cnn``: the deformable convolution layers (``DeformableConvolution``,
``ModulatedDeformableConvolution``).

>>> from symjit.gluon.contrib.cnn import DeformableConvolution
>>> DeformableConvolution(8, kernel_size=3).offset_weight.shape
(18, 0, 3, 3)
"""
from .conv_layers import DeformableConvolution, ModulatedDeformableConvolution

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]

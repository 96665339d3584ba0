"""The example networks of ``examples/nets.py`` have the shapes of MXNet 1.9.1's Gluon model zoo:
the output shape and the number of learned parameters (weights, biases, BatchNorm's gamma and beta)
of ``mxnet.gluon.model_zoo.vision.get_model(name)``, counted once with MXNet 1.9.1."""
from __future__ import annotations

import numpy as np
import pytest

from examples import nets

# (builder, image side, MXNet's model-zoo name, its parameter count)
ZOO = {
    "resnet18": (lambda: nets.resnet(18), 224, "resnet18_v1", 11_689_512),
    "resnet50": (lambda: nets.resnet(50), 224, "resnet50_v1", 25_575_912),
    "mobilenet_v2": (nets.mobilenet_v2, 224, "mobilenetv2_1.0", 3_504_960),
    "squeezenet1_1": (nets.squeezenet1_1, 224, "squeezenet1.1", 1_235_496),
    "inception_v3": (nets.inception_v3, 299, "inceptionv3", 23_834_568),
}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_net_has_the_model_zoo_shape(name):
    build, side, _, params = ZOO[name]
    sym = build()
    args, outs, _ = sym.infer_shape(data=(2, 3, side, side))
    assert outs == [(2, 1000)]
    learned = sum(int(np.prod(s)) for n, s in zip(sym.list_arguments(), args)
                  if n not in ("data", "softmax_label"))
    assert learned == params

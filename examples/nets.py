"""The networks of MXNet's tutorials, as functions returning symbols (used by examples, benchmarks
and ``symjit compile examples.nets:mlp``)."""
from __future__ import annotations

import symjit as mx


def mlp(hidden=(128, 64), classes: int = 10, act: str = "relu"):
    """MXNet's tutorial MLP: FullyConnected+act per hidden layer, then SoftmaxOutput."""
    net = mx.sym.Variable("data")
    for i, h in enumerate(hidden, 1):
        net = mx.sym.FullyConnected(data=net, name=f"fc{i}", num_hidden=h)
        net = mx.sym.Activation(data=net, name=f"{act}{i}", act_type=act)
    net = mx.sym.FullyConnected(data=net, name=f"fc{len(hidden) + 1}", num_hidden=classes)
    return mx.sym.SoftmaxOutput(data=net, name="softmax")


def mlp_bn(hidden=(128, 64), classes: int = 10, act: str = "tanh"):
    """The low-level tutorial's MLP: FullyConnected, BatchNorm and act per layer."""
    net = mx.sym.Variable("data")
    for i, h in enumerate(hidden, 1):
        net = mx.sym.FullyConnected(data=net, name=f"fc{i}", num_hidden=h)
        net = mx.sym.BatchNorm(data=net, name=f"bn{i}")
        net = mx.sym.Activation(data=net, name=f"{act}{i}", act_type=act)
    net = mx.sym.FullyConnected(data=net, name=f"fc{len(hidden) + 1}", num_hidden=classes)
    return mx.sym.SoftmaxOutput(data=net, name="softmax")


def deep_mlp(layers: int = 10, units: int = 512, classes: int = 10):
    """The memory benchmark's MLP: ``layers`` x (FullyConnected(units) + BatchNorm + relu)."""
    net = mx.sym.Variable("data")
    for i in range(1, layers + 1):
        net = mx.sym.FullyConnected(data=net, name=f"fc{i}", num_hidden=units)
        net = mx.sym.BatchNorm(data=net, name=f"bn{i}")
        net = mx.sym.Activation(data=net, name=f"relu{i}", act_type="relu")
    net = mx.sym.FullyConnected(data=net, name="fc_out", num_hidden=classes)
    return mx.sym.SoftmaxOutput(data=net, name="softmax")


def lenet(classes: int = 10):
    """LeNet as in MXNet's tutorial: two conv(tanh)+maxpool stages, two FullyConnected."""
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data=data, kernel=(5, 5), num_filter=20, name="conv1")
    a1 = mx.sym.Activation(data=c1, act_type="tanh", name="tanh1")
    p1 = mx.sym.Pooling(data=a1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    c2 = mx.sym.Convolution(data=p1, kernel=(5, 5), num_filter=50, name="conv2")
    a2 = mx.sym.Activation(data=c2, act_type="tanh", name="tanh2")
    p2 = mx.sym.Pooling(data=a2, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    f = mx.sym.Flatten(data=p2, name="flatten")
    fc1 = mx.sym.FullyConnected(data=f, num_hidden=500, name="fc1")
    a3 = mx.sym.Activation(data=fc1, act_type="tanh", name="tanh3")
    fc2 = mx.sym.FullyConnected(data=a3, num_hidden=classes, name="fc2")
    return mx.sym.SoftmaxOutput(data=fc2, name="softmax")

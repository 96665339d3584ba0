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


def _conv_bn(x, name: str, filters: int, kernel: int, stride: int, relu: bool = True):
    """Convolution (no bias, 'same' padding) + BatchNorm (+ relu), as in the ResNet v1 papers."""
    pad = kernel // 2
    x = mx.sym.Convolution(data=x, name=f"{name}_conv", num_filter=filters, kernel=(kernel, kernel),
                           stride=(stride, stride), pad=(pad, pad), no_bias=True)
    x = mx.sym.BatchNorm(data=x, name=f"{name}_bn", fix_gamma=False, eps=1e-5)
    return mx.sym.Activation(data=x, name=f"{name}_relu", act_type="relu") if relu else x


def resnet(layers: int = 18, classes: int = 1000):
    """ResNet v1 (He et al. 2015) at 224 x 224: a 7x7/2 stem and 3x3/2 max pool, four stages of
    basic blocks (18, 34 layers) or bottleneck blocks (50, 101, 152), global average pooling, a
    FullyConnected classifier and SoftmaxOutput; the shape of the Gluon model zoo's ResNet v1."""
    depth = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}
    if layers not in depth:
        raise ValueError(f"resnet: layers must be one of {sorted(depth)}, got {layers}")
    bottleneck = layers >= 50
    x = _conv_bn(mx.sym.Variable("data"), "stem", 64, 7, 2)
    x = mx.sym.Pooling(data=x, name="stem_pool", pool_type="max", kernel=(3, 3), stride=(2, 2), pad=(1, 1))
    width_in = 64
    for stage, blocks in enumerate(depth[layers]):
        width = 64 * 2 ** stage
        out = width * 4 if bottleneck else width
        for b in range(blocks):
            stride = 2 if stage > 0 and b == 0 else 1
            name = f"s{stage + 1}b{b + 1}"
            if bottleneck:
                y = _conv_bn(x, f"{name}a", width, 1, 1)
                y = _conv_bn(y, f"{name}b", width, 3, stride)
                y = _conv_bn(y, f"{name}c", out, 1, 1, relu=False)
            else:
                y = _conv_bn(x, f"{name}a", width, 3, stride)
                y = _conv_bn(y, f"{name}b", width, 3, 1, relu=False)
            short = x if stride == 1 and width_in == out else _conv_bn(x, f"{name}_down", out, 1, stride,
                                                                        relu=False)
            x = mx.sym.Activation(data=y + short, name=f"{name}_relu", act_type="relu")
            width_in = out
    x = mx.sym.Pooling(data=x, name="pool", pool_type="avg", global_pool=True, kernel=(7, 7))
    x = mx.sym.FullyConnected(data=mx.sym.Flatten(data=x), name="fc", num_hidden=classes)
    return mx.sym.SoftmaxOutput(data=x, name="softmax")

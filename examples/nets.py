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


def _conv_bn(x, name: str, filters: int, kernel: int, stride: int, relu: bool = True, bias: bool = False):
    """Convolution ('same' padding, no bias unless ``bias``) + BatchNorm (+ relu), as in ResNet v1."""
    pad = kernel // 2
    x = mx.sym.Convolution(data=x, name=f"{name}_conv", num_filter=filters, kernel=(kernel, kernel),
                           stride=(stride, stride), pad=(pad, pad), no_bias=not bias)
    x = mx.sym.BatchNorm(data=x, name=f"{name}_bn", fix_gamma=False, eps=1e-5)
    return mx.sym.Activation(data=x, name=f"{name}_relu", act_type="relu") if relu else x


def resnet(layers: int = 18, classes: int = 1000):
    """ResNet v1 (He et al. 2015) at 224 x 224: a 7x7/2 stem and 3x3/2 max pool, four stages of
    basic blocks (18, 34 layers) or bottleneck blocks (50, 101, 152), global average pooling, a
    FullyConnected classifier and SoftmaxOutput; the shape of the Gluon model zoo's ResNet v1 (whose
    bottleneck blocks stride in their first 1x1 convolution, which has a bias, as has the last)."""
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
            if bottleneck:   # Gluon's BottleneckV1: the stride and a bias on the 1x1 convolutions
                y = _conv_bn(x, f"{name}a", width, 1, stride, bias=True)
                y = _conv_bn(y, f"{name}b", width, 3, 1)
                y = _conv_bn(y, f"{name}c", out, 1, 1, relu=False, bias=True)
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


def _relu6(x, name: str):
    return mx.sym.clip(data=x, a_min=0.0, a_max=6.0, name=name)


def mobilenet_v2(multiplier: float = 1.0, classes: int = 1000):
    """MobileNet v2 (Sandler et al. 2018) at 224 x 224, the shape of the Gluon model zoo's: a 3x3/2
    stem, inverted residual blocks (1x1 expansion, also at expansion 1, 3x3 depthwise, 1x1 linear
    projection; relu6;
    a residual connection where stride 1 keeps the width), a 1x1 convolution to 1280 channels,
    global average pooling, a 1x1 convolution classifier and SoftmaxOutput."""
    def conv(x, name, filters, kernel=1, stride=1, groups=1, act=True):
        pad = kernel // 2
        x = mx.sym.Convolution(data=x, name=f"{name}_conv", num_filter=filters, kernel=(kernel, kernel),
                               stride=(stride, stride), pad=(pad, pad), num_group=groups, no_bias=True)
        x = mx.sym.BatchNorm(data=x, name=f"{name}_bn", fix_gamma=False, eps=1e-5)
        return _relu6(x, f"{name}_relu6") if act else x

    width = [int(c * multiplier) for c in (32, 16, 24, 32, 64, 96, 160, 320)]
    x = conv(mx.sym.Variable("data"), "stem", width[0], 3, 2)
    settings = [(1, width[1], 1, 1), (6, width[2], 2, 2), (6, width[3], 3, 2), (6, width[4], 4, 2),
                (6, width[5], 3, 1), (6, width[6], 3, 2), (6, width[7], 1, 1)]
    c_in = width[0]
    for stage, (t, c, n, s) in enumerate(settings, 1):
        for b in range(n):
            name, stride = f"s{stage}b{b + 1}", s if b == 0 else 1
            y = conv(x, f"{name}_expand", c_in * t)   # Gluon's: also where t is 1
            y = conv(y, f"{name}_dw", c_in * t, 3, stride, groups=c_in * t)
            y = conv(y, f"{name}_project", c, act=False)
            x = x + y if stride == 1 and c_in == c else y
            c_in = c
    x = conv(x, "last", 1280 if multiplier <= 1.0 else int(1280 * multiplier))
    x = mx.sym.Pooling(data=x, name="pool", pool_type="avg", global_pool=True, kernel=(7, 7))
    x = mx.sym.Convolution(data=x, name="output", num_filter=classes, kernel=(1, 1), no_bias=True)
    return mx.sym.SoftmaxOutput(data=mx.sym.Flatten(data=x), name="softmax")


def squeezenet1_1(classes: int = 1000):
    """SqueezeNet 1.1 (Iandola et al. 2016) at 224 x 224, the shape of the Gluon model zoo's: a 3x3/2
    convolution, fire modules (1x1 squeeze, then 1x1 and 3x3 expands concatenated) between 3x3/2
    max pools (ceil mode), a 1x1 convolution classifier, global average pooling and SoftmaxOutput."""
    def relu_conv(x, name, filters, kernel=1, stride=1, pad=0):
        x = mx.sym.Convolution(data=x, name=f"{name}_conv", num_filter=filters, kernel=(kernel, kernel),
                               stride=(stride, stride), pad=(pad, pad))
        return mx.sym.Activation(data=x, name=f"{name}_relu", act_type="relu")

    def fire(x, name, squeeze, expand):
        s = relu_conv(x, f"{name}_squeeze", squeeze)
        return mx.sym.Concat(relu_conv(s, f"{name}_expand1", expand),
                             relu_conv(s, f"{name}_expand3", expand, 3, pad=1), dim=1, name=f"{name}_concat")

    def pool(x, name):
        return mx.sym.Pooling(data=x, name=name, pool_type="max", kernel=(3, 3), stride=(2, 2),
                              pooling_convention="full")

    x = relu_conv(mx.sym.Variable("data"), "stem", 64, 3, 2)
    x = pool(x, "pool1")
    x = fire(fire(x, "fire2", 16, 64), "fire3", 16, 64)
    x = pool(x, "pool3")
    x = fire(fire(x, "fire4", 32, 128), "fire5", 32, 128)
    x = pool(x, "pool5")
    for i, (s, e) in enumerate(((48, 192), (48, 192), (64, 256), (64, 256)), 6):
        x = fire(x, f"fire{i}", s, e)
    x = mx.sym.Dropout(data=x, p=0.5, name="drop")
    x = relu_conv(x, "output", classes)
    x = mx.sym.Pooling(data=x, name="pool", pool_type="avg", global_pool=True, kernel=(13, 13))
    return mx.sym.SoftmaxOutput(data=mx.sym.Flatten(data=x), name="softmax")


def inception_v3(classes: int = 1000):
    """Inception v3 (Szegedy et al. 2015) at 299 x 299, the shape of the Gluon model zoo's: a stem of
    3x3 convolutions and max pools, three 35x35 blocks (1x1, 5x5, double 3x3 and pooled branches),
    a grid reduction, four 17x17 blocks with factorised 7x7 convolutions (1x7 then 7x1), a second
    reduction, two 8x8 blocks with split 1x3 / 3x1 branches, 8x8 average pooling, dropout, a
    FullyConnected classifier and SoftmaxOutput. Every convolution is conv (no bias) + BatchNorm
    (eps 0.001) + relu; the branch average pools count the padding, as MXNet's default does."""
    def conv(x, name, filters, kernel=(1, 1), stride=1, pad=(0, 0)):
        x = mx.sym.Convolution(data=x, name=f"{name}_conv", num_filter=filters, kernel=kernel,
                               stride=(stride, stride), pad=pad, no_bias=True)
        x = mx.sym.BatchNorm(data=x, name=f"{name}_bn", fix_gamma=False, eps=1e-3)
        return mx.sym.Activation(data=x, name=f"{name}_relu", act_type="relu")

    def max_pool(x, name):
        return mx.sym.Pooling(data=x, name=name, pool_type="max", kernel=(3, 3), stride=(2, 2))

    def avg_branch(x, name, filters):
        x = mx.sym.Pooling(data=x, name=f"{name}_pool", pool_type="avg", kernel=(3, 3), stride=(1, 1),
                           pad=(1, 1))
        return conv(x, name, filters)

    def cat(name, *xs):
        return mx.sym.Concat(*xs, dim=1, name=f"{name}_concat")

    k3, p3, k5, p5 = (3, 3), (1, 1), (5, 5), (2, 2)
    k17, p17, k71, p71 = (1, 7), (0, 3), (7, 1), (3, 0)
    k13, p13, k31, p31 = (1, 3), (0, 1), (3, 1), (1, 0)

    def block_a(x, n, pool_features):
        b5 = conv(conv(x, f"{n}_b5a", 48), f"{n}_b5b", 64, k5, pad=p5)
        b3 = conv(conv(conv(x, f"{n}_b3a", 64), f"{n}_b3b", 96, k3, pad=p3), f"{n}_b3c", 96, k3, pad=p3)
        return cat(n, conv(x, f"{n}_b1", 64), b5, b3, avg_branch(x, f"{n}_bp", pool_features))

    def block_b(x, n):
        b3 = conv(x, f"{n}_b3", 384, k3, 2)
        bd = conv(conv(conv(x, f"{n}_bda", 64), f"{n}_bdb", 96, k3, pad=p3), f"{n}_bdc", 96, k3, 2)
        return cat(n, b3, bd, max_pool(x, f"{n}_pool"))

    def block_c(x, n, c7):
        b7 = conv(conv(conv(x, f"{n}_b7a", c7), f"{n}_b7b", c7, k17, pad=p17), f"{n}_b7c", 192, k71, pad=p71)
        bd = conv(x, f"{n}_bda", c7)
        for i, (k, p, f) in enumerate(((k71, p71, c7), (k17, p17, c7), (k71, p71, c7), (k17, p17, 192))):
            bd = conv(bd, f"{n}_bd{'bcde'[i]}", f, k, pad=p)
        return cat(n, conv(x, f"{n}_b1", 192), b7, bd, avg_branch(x, f"{n}_bp", 192))

    def block_d(x, n):
        b3 = conv(conv(x, f"{n}_b3a", 192), f"{n}_b3b", 320, k3, 2)
        b7 = conv(conv(x, f"{n}_b7a", 192), f"{n}_b7b", 192, k17, pad=p17)
        b7 = conv(b7, f"{n}_b7c", 192, k71, pad=p71)
        return cat(n, b3, conv(b7, f"{n}_b7d", 192, k3, 2), max_pool(x, f"{n}_pool"))

    def split(x, n):
        return [conv(x, f"{n}x", 384, k13, pad=p13), conv(x, f"{n}y", 384, k31, pad=p31)]

    def block_e(x, n):
        b3 = split(conv(x, f"{n}_b3a", 384), f"{n}_b3")
        bd = split(conv(conv(x, f"{n}_bda", 448), f"{n}_bdb", 384, k3, pad=p3), f"{n}_bd")
        return cat(n, conv(x, f"{n}_b1", 320), *b3, *bd, avg_branch(x, f"{n}_bp", 192))

    x = conv(mx.sym.Variable("data"), "stem1", 32, k3, 2)
    x = conv(x, "stem2", 32, k3)
    x = max_pool(conv(x, "stem3", 64, k3, pad=p3), "stem_pool1")
    x = conv(x, "stem4", 80)
    x = max_pool(conv(x, "stem5", 192, k3), "stem_pool2")
    for i, pool_features in enumerate((32, 64, 64)):
        x = block_a(x, f"a{i + 1}", pool_features)
    x = block_b(x, "b")
    for i, c7 in enumerate((128, 160, 160, 192)):
        x = block_c(x, f"c{i + 1}", c7)
    x = block_e(block_e(block_d(x, "d"), "e1"), "e2")
    x = mx.sym.Pooling(data=x, name="pool", pool_type="avg", kernel=(8, 8))
    x = mx.sym.Dropout(data=x, p=0.5, name="drop")
    x = mx.sym.FullyConnected(data=mx.sym.Flatten(data=x), name="fc", num_hidden=classes)
    return mx.sym.SoftmaxOutput(data=x, name="softmax")

"""mx.gluon.model_zoo.vision: every network of MXNet 1.9.1's zoo is built with MXNet's parameter
names, structural names and sizes; small nets run at small inputs (hybridized as imperatively);
parameter files and exports go through MXNet's formats; pretrained parameters come from local
files only."""
import hashlib
import json
import os

import numpy as np
import pytest

import symjit as mx
from symjit.base import MXNetError
from symjit.gluon.model_zoo import model_store, vision

# Parameter counts (running statistics excluded) of the networks at 1000 classes: the published
# sizes of these architectures (torchvision's where the layers agree: no biases in MXNet's
# bottleneck v1 1x1 convolutions differ, so those are MXNet's own totals).
SIZES = {"alexnet": 61100840, "densenet121": 7978856, "densenet161": 28681000, "inceptionv3": 23834568,
         "mobilenet1.0": 4231976, "mobilenetv2_1.0": 3504960, "resnet18_v1": 11689512,
         "resnet50_v2": 25549486, "squeezenet1.0": 1248424, "squeezenet1.1": 1235496, "vgg16": 138357544,
         "vgg11_bn": 132868840}


HE = mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2)   # keeps activations' scale


def _x(*shape, seed=0):
    return mx.nd.array(np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32))


def test_every_name_builds_and_unknown_names_are_errors():
    names = vision.model_names()
    assert len(names) == 34 and "mobilenetv2_0.25" in names and "inceptionv3" in names
    for name in names:
        net = vision.get_model(name, classes=7)
        assert isinstance(net, mx.gluon.HybridBlock), name
        assert "Conv2D" in repr(net), name
    assert type(vision.get_model("ResNet18_V2")).__name__ == "ResNetV2"
    with pytest.raises(ValueError, match="resnet19_v1 is not supported"):
        vision.get_model("resnet19_v1")
    with pytest.raises(ValueError, match="Invalid number of layers"):
        vision.get_resnet(1, 19)
    with pytest.raises(ValueError, match="1.0 or 1.1"):
        vision.SqueezeNet("1.2")


@pytest.mark.parametrize("name", sorted(SIZES))
def test_parameter_counts_are_the_architectures(name):
    net = vision.get_model(name)
    side = 299 if name == "inceptionv3" else 224
    net.infer_shape(mx.nd.zeros((1, 3, side, side)))
    params = [p for p in net.collect_params().values() if "running" not in p.name]
    assert sum(int(np.prod(p.shape)) for p in params) == SIZES[name]


def test_resnet18_v1_names_are_mxnets():
    net = vision.resnet18_v1()
    prefix = net.prefix
    assert prefix.startswith("resnetv1") and prefix.endswith("_")
    names = list(net.collect_params())
    strip = [n[len(prefix):] for n in names]
    assert strip[:6] == ["conv0_weight", "batchnorm0_gamma", "batchnorm0_beta", "batchnorm0_running_mean",
                         "batchnorm0_running_var", "stage1_conv0_weight"]
    # stage 1: two blocks of two convolutions; stage 2's first block projects its shortcut
    assert "stage1_conv3_weight" in strip and "stage1_conv4_weight" not in strip
    assert "stage2_conv4_weight" in strip and "stage2_batchnorm2_gamma" in strip
    assert strip[-2:] == ["dense0_weight", "dense0_bias"]
    structural = net._collect_params_with_prefix()
    assert structural["features.0.weight"].shape == (64, 0, 7, 7)
    assert structural["features.4.0.body.0.weight"].shape == (64, 64, 3, 3)
    assert structural["features.5.0.downsample.0.weight"].shape == (128, 64, 1, 1)
    assert structural["output.weight"].shape == (1000, 512)
    assert "features.4.0.downsample.0.weight" not in structural


def test_other_families_names_are_mxnets():
    v2 = vision.mobilenet_v2_0_25()
    p = v2.prefix
    names = [n[len(p):] for n in v2.collect_params()]
    assert names[0] == "features_conv0_weight"
    assert "features_linearbottleneck0_conv0_weight" in names and names[-1] == "output_pred_weight"
    v2.infer_shape(mx.nd.zeros((1, 3, 32, 32)))   # the second bottleneck's depthwise convolution:
    assert v2._collect_params_with_prefix()["features.4.out.3.weight"].shape == (24, 1, 3, 3)
    dense = vision.densenet121()
    p = dense.prefix
    names = [n[len(p):] for n in dense.collect_params()]
    assert names[:2] == ["conv0_weight", "batchnorm0_gamma"] and "stage4_conv31_weight" in names
    assert "features.4.0.1.2.weight" in dense._collect_params_with_prefix()
    inc = vision.inception_v3()
    assert inc.features[7][0][0][0].weight.name == inc.prefix + "A1_conv0_weight"
    assert inc.features[16][1][1][0][0][0].weight.shape == (384, 0, 1, 3)
    sq = vision.squeezenet1_0()
    assert sq._collect_params_with_prefix()["features.3.1.1.0.weight"].shape == (64, 0, 3, 3)
    vgg = vision.vgg13_bn()
    assert [type(b).__name__ for b in vgg.features[:4]] == ["Conv2D", "BatchNorm", "Activation", "Conv2D"]
    mob = vision.mobilenet0_5()
    mob.infer_shape(mx.nd.zeros((1, 3, 32, 32)))
    assert mob.features[3].weight.shape == (16, 1, 3, 3) and mob.features[3]._kwargs["num_group"] == 16


def test_mobilenet_runs_the_same_hybridized_and_its_parameters_round_trip(tmp_path):
    net = vision.get_model("mobilenet0.25", classes=5)
    net.initialize(HE)
    x = _x(2, 3, 32, 32)
    imperative = net(x).asnumpy()
    net.hybridize()
    hybrid = net(x).asnumpy()
    assert imperative.shape == (2, 5) and np.isfinite(imperative).all() and np.abs(imperative).max() > 1e-4
    tol = {"rtol": 1e-4, "atol": 1e-4 * np.abs(imperative).max()}
    np.testing.assert_allclose(hybrid, imperative, **tol)
    path = str(tmp_path / "m.params")
    net.save_parameters(path)
    assert "features.0.weight" in mx.nd.load(path)
    again = vision.mobilenet0_25(classes=5)
    again.load_parameters(path)
    np.testing.assert_allclose(again(x).asnumpy(), imperative, **tol)
    # export: MXNet's symbol JSON and arg:/aux: parameters, read back by SymbolBlock.imports
    sym_file, params_file = net.export(str(tmp_path / "mob"))
    graph = json.load(open(sym_file))
    args = {n["name"] for n in graph["nodes"] if n["op"] == "null"}
    assert net.prefix + "conv0_weight" in args and net.prefix + "dense0_bias" in args
    saved = mx.nd.load(params_file)
    assert f"aux:{net.prefix}batchnorm0_running_mean" in saved
    back = mx.gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(back(x).asnumpy(), imperative, **tol)


def test_resnet18_v1_forward():
    net = vision.resnet18_v1(classes=3)
    net.initialize(HE)
    net.hybridize()
    out = net(_x(1, 3, 32, 32)).asnumpy()
    assert out.shape == (1, 3) and np.isfinite(out).all()


def test_squeezenet_forward_at_224():
    sq = vision.squeezenet1_1(classes=4)
    sq.initialize(HE)
    sq.hybridize()
    out = sq(_x(1, 3, 224, 224)).asnumpy()
    assert out.shape == (1, 4) and np.isfinite(out).all() and (out >= 0).all()   # ReLU before pooling


def test_pretrained_reads_the_local_file_only(tmp_path, monkeypatch):
    root = str(tmp_path)
    with pytest.raises(MXNetError) as err:
        vision.mobilenet0_25(pretrained=True, root=root)
    expected = os.path.join(root, "mobilenet0.25-9f83e440.params")
    assert expected in str(err.value) and "downloads nothing" in str(err.value)
    monkeypatch.setenv("MXNET_HOME", root)
    assert model_store.model_path("vgg11") == os.path.join(root, "models", "vgg11-dd221b16.params")
    # a file of the right name but other content is refused
    src = vision.mobilenet0_25(classes=1000)
    src.infer_shape(mx.nd.zeros((1, 3, 32, 32)))
    src.initialize(mx.init.Normal(0.5))
    src.save_parameters(expected)
    with pytest.raises(MXNetError, match="SHA-1"):
        vision.get_model("mobilenet0.25", pretrained=True, root=root)
    # the published digest replaced by this file's: loaded as a pretrained file would be
    digest = hashlib.sha1(open(expected, "rb").read()).hexdigest()
    monkeypatch.setitem(model_store._SHA1, "mobilenet0.25", digest)
    os.replace(expected, model_store.model_path("mobilenet0.25", root))
    net = vision.get_model("mobilenet0.25", pretrained=True, root=root)
    np.testing.assert_array_equal(net.output.weight.data().asnumpy(), src.output.weight.data().asnumpy())
    with pytest.raises(ValueError, match="not available"):
        model_store.get_model_file("resnet19_v1", root=root)

"""``mx.gluon.model_zoo.vision``: the image classification networks of MXNet 1.9.1's model zoo
(AlexNet, DenseNet, Inception v3, MobileNet v1/v2, ResNet v1/v2, SqueezeNet, VGG), with MXNet's
layers, parameter names and constructor arguments, so ``save_parameters`` files and exported
symbols pass between symjit and MXNet.

``pretrained=True`` loads the published parameters from a local file (see
:mod:`..model_store`); symjit downloads nothing. The pretrained networks expect RGB images of at
least 224x224 (299x299 for Inception v3) scaled to [0, 1] and normalized with mean
``(0.485, 0.456, 0.406)`` and standard deviation ``(0.229, 0.224, 0.225)``.

>>> import symjit as mx
>>> net = get_model('mobilenet0.25', classes=5)
>>> net.initialize()
>>> net.hybridize()
>>> net(mx.nd.ones((1, 3, 32, 32))).shape
(1, 5)
"""
from __future__ import annotations

from typing import Any

from .alexnet import *  # noqa: F403
from .alexnet import __all__ as _alexnet
from .densenet import *  # noqa: F403
from .densenet import __all__ as _densenet
from .inception import *  # noqa: F403
from .inception import __all__ as _inception
from .mobilenet import *  # noqa: F403
from .mobilenet import __all__ as _mobilenet
from .resnet import *  # noqa: F403
from .resnet import __all__ as _resnet
from .squeezenet import *  # noqa: F403
from .squeezenet import __all__ as _squeezenet
from .vgg import *  # noqa: F403
from .vgg import __all__ as _vgg

__all__ = ["get_model", "model_names", *_alexnet, *_densenet, *_inception, *_mobilenet, *_resnet,
           *_squeezenet, *_vgg]

# get_model's names (MXNet's) -> the constructor's name in this package
_NAMES = {
    **{f"resnet{d}_v{v}": f"resnet{d}_v{v}" for v in (1, 2) for d in (18, 34, 50, 101, 152)},
    **{f"vgg{d}{bn}": f"vgg{d}{bn}" for bn in ("", "_bn") for d in (11, 13, 16, 19)},
    "alexnet": "alexnet",
    **{f"densenet{d}": f"densenet{d}" for d in (121, 161, 169, 201)},
    "squeezenet1.0": "squeezenet1_0", "squeezenet1.1": "squeezenet1_1",
    "inceptionv3": "inception_v3",
    **{f"mobilenet{m}": f"mobilenet{m.replace('.', '_')}" for m in ("1.0", "0.75", "0.5", "0.25")},
    **{f"mobilenetv2_{m}": f"mobilenet_v2_{m.replace('.', '_')}" for m in ("1.0", "0.75", "0.5", "0.25")},
}


def model_names() -> list[str]:
    """The names :func:`get_model` takes, sorted.

    >>> model_names()[:3]
    ['alexnet', 'densenet121', 'densenet161']
    """
    return sorted(_NAMES)


def get_model(name: str, **kwargs: Any) -> Any:
    """The network called ``name`` (case ignored: ``'resnet18_v1'``, ``'mobilenetv2_0.25'``,
    ``'squeezenet1.1'``, ``'inceptionv3'``, ... see :func:`model_names`), made with ``kwargs``:
    ``pretrained`` (bool), ``classes``, ``ctx`` (where pretrained parameters are loaded), ``root``
    (the folder of pretrained files, default ``$MXNET_HOME/models``) and the class's own
    arguments.

    >>> get_model('ResNet34_v2', classes=7).output.weight.shape
    (7, 512)
    """
    key = name.lower()
    if key not in _NAMES:
        raise ValueError(f"Model {name} is not supported. Available options are\n\t"
                         + "\n\t".join(model_names()))
    return globals()[_NAMES[key]](**kwargs)

"""What the model zoo's network modules share: the constructor functions each network family
exports (``resnet18_v1(**kwargs)``), all made by :func:`constructor` with one docstring form,
and the pretrained-parameter loading they end with.

>>> from symjit.gluon import nn
>>> make = constructor('tiny', 'A one-layer net.', lambda **kw: nn.Dense(2, **kw), 'tiny')
>>> make(in_units=3).weight.shape
(2, 3)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model_store import load_pretrained

_DOC = """{summary}

Parameters
----------
pretrained : bool, default False
    Load the published pretrained parameters (``{store}-<hash8>.params`` in ``root``; symjit
    downloads nothing: a missing file is an error naming the path).
ctx : Context, default CPU
    The context to load the pretrained parameters on.
root : str, default ``$MXNET_HOME/models`` (else ``~/.mxnet/models``)
    The folder of pretrained parameter files.
**kwargs
    The network class's own arguments (``classes``, ...).

>>> net = {name}(classes=10)
>>> list(net.collect_params().values())[-1].shape
{last}
"""


def finish(net: Any, store_name: str, pretrained: bool, ctx: Any, root: str | None) -> Any:  # noqa: FBT001
    """``net``, with ``store_name``'s pretrained parameters loaded when ``pretrained``.

    >>> from symjit.gluon import nn
    >>> finish(nn.Dense(2), 'alexnet', False, None, None).weight.shape
    (2, 0)
    """
    if pretrained:
        load_pretrained(net, store_name, root=root, ctx=ctx)
    return net


def constructor(func_name: str, summary: str, build: Callable[..., Any], store_name: str,
                last: str = "(10,)") -> Callable[..., Any]:
    """A public constructor ``func_name(pretrained=False, ctx=cpu(), root=None, **kwargs)`` that
    calls ``build(**kwargs)`` and loads ``store_name``'s parameters when ``pretrained``;
    ``last`` is the shape of the net's last parameter for 10 classes (its docstring's example).
    """

    def make(pretrained: bool = False, ctx: Any = None, root: str | None = None,  # noqa: FBT001, FBT002
             **kwargs: Any) -> Any:
        return finish(build(**kwargs), store_name, pretrained, ctx, root)

    make.__name__ = make.__qualname__ = func_name
    make.__doc__ = _DOC.format(summary=summary, store=store_name, name=func_name, last=last)
    return make

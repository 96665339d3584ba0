"""Where the model zoo's pretrained parameters are found: ``<root>/<name>-<hash8>.params``, the
file name MXNet 1.9.1 gives them (``hash8`` the first 8 hex digits of the published file's SHA-1;
``root`` default ``$MXNET_HOME/models``, else ``~/.mxnet/models``).

symjit downloads nothing. A file missing from ``root`` is taken from ``<name>-<hash8>.zip`` there
(the archive MXNet publishes) when that is present; otherwise :func:`get_model_file` raises an
error naming the path it expects and the URL the archive is published at.

>>> import os, tempfile
>>> os.path.basename(model_path('resnet18_v1', root='/tmp/models'))
'resnet18_v1-a0666292.params'
>>> try:
...     get_model_file('resnet18_v1', root=tempfile.mkdtemp())
... except Exception as exc:
...     print(str(exc).split(' at ')[0])
model_zoo: no pretrained parameters for 'resnet18_v1'
"""
from __future__ import annotations

import os
import zipfile
from typing import Any

from ...base import MXNetError, data_dir
from ..utils import check_sha1

__all__ = ["get_model_file", "purge", "short_hash", "model_path", "load_pretrained"]

# The SHA-1 of each published parameter file (what names the file and checks its content).
_SHA1 = {
    "alexnet": "44335d1f0046b328243b32a26a4fbd62d9057b45",
    "densenet121": "f27dbf2dbd5ce9a80b102d89c7483342cd33cb31",
    "densenet161": "b6c8a95717e3e761bd88d145f4d0a214aaa515dc",
    "densenet169": "2603f878403c6aa5a71a124c4a3307143d6820e9",
    "densenet201": "1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb",
    "inceptionv3": "ed47ec45a937b656fcc94dabde85495bbef5ba1f",
    "mobilenet0.25": "9f83e440996887baf91a6aff1cccc1c903a64274",
    "mobilenet0.5": "8e9d539cc66aa5efa71c4b6af983b936ab8701c3",
    "mobilenet0.75": "529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2",
    "mobilenet1.0": "6b8c5106c730e8750bcd82ceb75220a3351157cd",
    "mobilenetv2_1.0": "36da4ff1867abccd32b29592d79fc753bca5a215",
    "mobilenetv2_0.75": "e2be7b72a79fe4a750d1dd415afedf01c3ea818d",
    "mobilenetv2_0.5": "aabd26cd335379fcb72ae6c8fac45a70eab11785",
    "mobilenetv2_0.25": "ae8f9392789b04822cbb1d98c27283fc5f8aa0a7",
    "resnet18_v1": "a0666292f0a30ff61f857b0b66efc0228eb6a54b",
    "resnet34_v1": "48216ba99a8b1005d75c0f3a0c422301a0473233",
    "resnet50_v1": "0aee57f96768c0a2d5b23a6ec91eb08dfb0a45ce",
    "resnet101_v1": "d988c13d6159779e907140a638c56f229634cb02",
    "resnet152_v1": "671c637a14387ab9e2654eafd0d493d86b1c8579",
    "resnet18_v2": "a81db45fd7b7a2d12ab97cd88ef0a5ac48b8f657",
    "resnet34_v2": "9d6b80bbc35169de6b6edecffdd6047c56fdd322",
    "resnet50_v2": "ecdde35339c1aadbec4f547857078e734a76fb49",
    "resnet101_v2": "18e93e4f48947e002547f50eabbcc9c83e516aa6",
    "resnet152_v2": "f2695542de38cf7e71ed58f02893d82bb409415e",
    "squeezenet1.0": "264ba4970a0cc87a4f15c96e25246a1307caf523",
    "squeezenet1.1": "33ba0f93753c83d86e1eb397f38a667eaf2e9376",
    "vgg11": "dd221b160977f36a53f464cb54648d227c707a05",
    "vgg11_bn": "ee79a8098a91fbe05b7a973fed2017a6117723a8",
    "vgg13": "6bc5de58a05a5e2e7f493e2d75a580d83efde38c",
    "vgg13_bn": "7d97a06c3c7a1aecc88b6e7385c2b373a249e95e",
    "vgg16": "e660d4569ccb679ec68f1fd3cce07a387252a90a",
    "vgg16_bn": "7f01cf050d357127a73826045c245041b0df7363",
    "vgg19": "ad2f660d101905472b83590b59708b71ea22b2e5",
    "vgg19_bn": "f360b758e856f1074a85abd5fd873ed1d98297c3",
}
_REPO = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"


def default_root() -> str:
    """``$MXNET_HOME/models`` (else ``~/.mxnet/models``), read at each call.

    >>> default_root().endswith('models')
    True
    """
    return os.path.join(data_dir(), "models")


def short_hash(name: str) -> str:
    """The first 8 hex digits of the SHA-1 of ``name``'s published parameter file.

    >>> short_hash('squeezenet1.1')
    '33ba0f93'
    """
    if name not in _SHA1:
        raise ValueError(f"Pretrained model for {name} is not available. Models with pretrained "
                         f"parameters: {', '.join(sorted(_SHA1))}")
    return _SHA1[name][:8]


def model_path(name: str, root: str | None = None) -> str:
    """The path :func:`get_model_file` looks for ``name``'s parameters at.

    >>> model_path('alexnet', root='/m')
    '/m/alexnet-44335d1f.params'
    """
    root = os.path.expanduser(default_root() if root is None else os.fspath(root))
    return os.path.join(root, f"{name}-{short_hash(name)}.params")


def _unzip(archive: str, member: str, dest: str) -> None:
    """Copy the file ``member`` of ``archive`` (at its top or in a folder of it) to ``dest``."""
    with zipfile.ZipFile(archive) as zf:
        found = [n for n in zf.namelist() if os.path.basename(n) == member]
        if not found:
            raise MXNetError(f"model_zoo: {archive!r} holds no {member!r}")
        tmp = f"{dest}.part{os.getpid()}"
        with zf.open(found[0]) as src, open(tmp, "wb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
    os.replace(tmp, dest)


def get_model_file(name: str, root: str | None = None) -> str:
    """The local file of ``name``'s pretrained parameters, checked against its SHA-1.

    Found at :func:`model_path`, or unpacked there from ``<name>-<hash8>.zip`` in ``root``;
    otherwise an ``MXNetError`` names the expected path and the published URL (nothing is
    downloaded, unlike MXNet). A file with other content is an error too (MXNet would fetch it
    again).

    >>> try:
    ...     get_model_file('nosuchnet')
    ... except ValueError as exc:
    ...     print(str(exc).split('.')[0])
    Pretrained model for nosuchnet is not available
    """
    path = model_path(name, root)
    stem = os.path.basename(path)[:-len(".params")]
    archive = os.path.join(os.path.dirname(path), stem + ".zip")
    if not os.path.exists(path) and os.path.isfile(archive):
        _unzip(archive, stem + ".params", path)
    if not os.path.exists(path):
        repo = os.environ.get("MXNET_GLUON_REPO", _REPO)
        url = f"{repo.rstrip('/')}/gluon/models/{stem}.zip"
        raise MXNetError(f"model_zoo: no pretrained parameters for {name!r} at {path!r}; symjit "
                         f"downloads nothing: fetch {url} and unzip {stem}.params into "
                         f"{os.path.dirname(path)!r} (or put the zip there)")
    if not check_sha1(path, _SHA1[name]):
        raise MXNetError(f"model_zoo: {path!r} is not the published parameter file of {name!r} (its "
                         f"SHA-1 is not {_SHA1[name]}); symjit downloads nothing: replace it by the "
                         "published file")
    return path


def load_pretrained(net: Any, name: str, root: str | None = None, ctx: Any = None) -> Any:
    """Load ``name``'s pretrained parameters (:func:`get_model_file`) into ``net``; returns ``net``.

    >>> load_pretrained  # doctest: +ELLIPSIS
    <function load_pretrained at ...>
    """
    net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net


def purge(root: str | None = None) -> None:
    """Delete every ``.params`` file in ``root`` (default ``$MXNET_HOME/models``).

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); open(os.path.join(d, 'a.params'), 'w').close()
    >>> purge(d); os.listdir(d)
    []
    """
    root = os.path.expanduser(default_root() if root is None else os.fspath(root))
    for f in os.listdir(root):
        if f.endswith(".params"):
            os.remove(os.path.join(root, f))

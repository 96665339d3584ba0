"""``mx.init`` / ``mx.initializer``: weight initializers, as in MXNet 1.x.

An initializer is called as ``init(name, arr)`` and fills the NDArray ``arr`` in place. Which
rule fills it depends on the name's suffix (``..._weight`` -> the initializer's own rule,
``_bias``/``_beta`` -> 0, ``_gamma`` -> 1, ``moving_mean`` -> 0, ``moving_var`` -> 1, ...), or on
an ``__init__`` attribute of an :class:`InitDesc` (JSON such as ``'["zero", {}]'``), which wins.
Random draws come from ``mx.random``, so ``mx.random.seed`` makes initialisation reproducible.

>>> import symjit as mx
>>> w, b = mx.nd.empty((2, 3)), mx.nd.empty((2,))
>>> init = mx.init.Constant(0.5)
>>> init('fc1_weight', w); init('fc1_bias', b)
>>> w.asnumpy().tolist(), b.asnumpy().tolist()
([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], [0.0, 0.0])
>>> mx.init.Xavier(factor_type='in', magnitude=2.34).dumps()
'["xavier", {"rnd_type": "uniform", "factor_type": "in", "magnitude": 2.34}]'
"""
from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from . import ndarray as _nd  # before random: symjit.random needs the ndarray package loaded
from . import random as _random
from .base import DTypeError, MXNetError, ParamError, ShapeError, shape_str
from .ops.rnn import split_gates

NDArray = _nd.NDArray

__all__ = [
    "InitDesc", "Initializer", "register", "alias", "create", "Zero", "One", "Constant", "Uniform",
    "Normal", "Xavier", "MSRAPrelu", "Orthogonal", "Bilinear", "LSTMBias", "FusedRNN", "Mixed", "Load",
]

_REGISTRY: dict[str, type[Initializer]] = {}
_T = TypeVar("_T", bound=type)


class InitNotImplementedError(MXNetError, NotImplementedError):
    """An :class:`Initializer` subclass that does not override ``_init_weight``."""


class InitDesc(str):
    """The name of a variable (a ``str``) plus its symbol attributes and the global initializer.

    ``attrs`` is the variable's entry of ``Symbol.attr_dict()``; an ``'__init__'`` entry there
    (an initializer's ``dumps()``) overrides the name-based rule.

    >>> import symjit as mx
    >>> d = mx.init.InitDesc('bn_moving_var', attrs={'__init__': '["one", {}]'})
    >>> d, d.attrs['__init__'], d.global_init
    ('bn_moving_var', '["one", {}]', None)
    """

    attrs: dict[str, str]
    global_init: Initializer | None

    def __new__(cls, name: str, attrs: dict[str, str] | None = None,
                global_init: Initializer | None = None) -> InitDesc:
        if not isinstance(name, str):
            raise DTypeError(f"InitDesc: name must be a str, got {type(name).__name__}")
        if attrs is not None and not isinstance(attrs, dict):
            raise DTypeError(f"InitDesc('{name}'): attrs must be a dict, got {type(attrs).__name__}")
        ret = super().__new__(cls, name)
        ret.attrs = dict(attrs) if attrs else {}
        ret.global_init = global_init
        return ret


def _norm_str(arr: NDArray) -> str:
    """The default verbose statistic: ``||arr||_2 / sqrt(arr.size)``."""
    host = arr.asnumpy().astype(np.float64)
    return f"{float(np.linalg.norm(host) / math.sqrt(max(host.size, 1))):.6g}"


# name suffixes shared by both dispatch paths: (suffix, method name), checked in order
_AUX_SUFFIXES = (
    ("moving_mean", "_init_zero"), ("running_mean", "_init_zero"),
    ("moving_var", "_init_one"), ("running_var", "_init_one"),
    ("moving_inv_var", "_init_zero"), ("moving_avg", "_init_zero"),
    ("min", "_init_zero"), ("max", "_init_one"),
)
_DESC_SUFFIXES = (("weight", "_init_weight"), ("bias", "_init_bias"), ("gamma", "_init_gamma"),
                  ("beta", "_init_beta"), ("min", "_init_zero"), ("max", "_init_one")) + _AUX_SUFFIXES
_NAME_SUFFIXES = (("bias", "_init_bias"), ("gamma", "_init_gamma"), ("beta", "_init_beta"),
                  ("weight", "_init_weight")) + _AUX_SUFFIXES


class Initializer:
    """Base class of initializers: ``init(name_or_desc, arr)`` fills ``arr`` in place.

    Subclasses override ``_init_weight(name, arr)``; the keyword arguments given to
    ``__init__`` are what ``dumps()`` writes.

    >>> import symjit as mx
    >>> @mx.init.register
    ... class Twos(mx.init.Initializer):
    ...     def _init_weight(self, name, arr):
    ...         arr[:] = 2
    >>> a = mx.nd.empty((2,))
    >>> mx.init.create('twos')('x_weight', a)
    >>> a.asnumpy().tolist()
    [2.0, 2.0]
    """

    def __init__(self, **kwargs: Any):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func: Callable[[NDArray], str] | None = None

    def set_verbose(self, verbose: bool = False,
                    print_func: Callable[[NDArray], str] | None = None) -> Initializer:
        """Log (``logging.info``) each initialised array with ``print_func(arr)`` (default: its
        root mean square).

        >>> import symjit as mx
        >>> mx.init.Zero().set_verbose(True).dumps()
        '["zero", {}]'
        """
        self._verbose = bool(verbose)
        self._print_func = print_func if print_func is not None else _norm_str
        return self

    def _verbose_print(self, desc: str, init: str, arr: NDArray) -> None:
        if self._verbose and self._print_func is not None:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self) -> str:
        """The initializer as MXNet's JSON ``[name, kwargs]`` (what ``create`` reads back).

        >>> import symjit as mx
        >>> mx.init.Normal(0.5).dumps()
        '["normal", {"sigma": 0.5}]'
        """
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{self.__class__.__name__}({args})"

    def __eq__(self, other: object) -> bool:
        """Initializers of one class made with equal arguments are equal (``Constant(1) ==
        Constant(1)``), as ``ParameterDict.get`` compares a shared parameter's ``init``."""
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = object.__hash__   # identity: an initializer stays usable as a dict key

    def __call__(self, desc: str, arr: NDArray) -> None:
        """Fill ``arr`` according to the name (or :class:`InitDesc`) ``desc``."""
        _check_call(self, desc, arr)
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        spec = desc.attrs.get("__init__", "")
        if spec:
            init = create(spec)
            init._init_weight(desc, arr)
            self._verbose_print(desc, spec, arr)
            return
        for suffix, method in _DESC_SUFFIXES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name: str, arr: NDArray) -> None:
        """Dispatch on a plain name (MXNet's rules for names given as ``str``)."""
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            for suffix, method in _NAME_SUFFIXES:
                if name.endswith(suffix):
                    getattr(self, method)(name, arr)
                    return
            self._init_default(name, arr)

    def _init_bilinear(self, name: str, arr: NDArray) -> None:
        shape = arr.shape
        if len(shape) != 4:
            raise ShapeError(f"{type(self).__name__}: bilinear initialisation of '{name}' needs a 4-D "
                             f"array, got shape {shape_str(shape)}")
        f = math.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        x = np.arange(shape[3], dtype=np.float64)
        y = np.arange(shape[2], dtype=np.float64)
        kernel = np.outer(1 - np.abs(y / f - c), 1 - np.abs(x / f - c))
        arr[:] = np.broadcast_to(kernel, shape).astype(np.float32)

    def _init_loc_bias(self, name: str, arr: NDArray) -> None:
        if arr.shape != (6,):
            raise ShapeError(f"{type(self).__name__}: '{name}' (a SpatialTransformer localisation "
                             f"bias) must have shape (6,), got {shape_str(arr.shape)}")
        arr[:] = np.array([1.0, 0, 0, 0, 1.0, 0])

    def _init_zero(self, name: str, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_one(self, name: str, arr: NDArray) -> None:
        arr[:] = 1.0

    def _init_bias(self, name: str, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_gamma(self, name: str, arr: NDArray) -> None:
        arr[:] = 1.0

    def _init_beta(self, name: str, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_weight(self, name: str, arr: NDArray) -> None:
        raise InitNotImplementedError(
            f"{type(self).__name__}: does not define _init_weight, so it cannot initialise '{name}'")

    def _init_default(self, name: str, arr: NDArray) -> None:
        raise ParamError(
            f"{type(self).__name__}: unknown initialization pattern for '{name}' (shape "
            f"{shape_str(arr.shape)}): default initialization handles names ending in 'weight', "
            "'bias', 'beta', 'gamma' (1.0), 'moving_mean', 'moving_var', 'min' and 'max'; set one "
            "with mx.sym.Variable(name, init=mx.init.*) or use mx.init.Mixed")


def _check_call(init: Any, desc: Any, arr: Any) -> None:
    where = type(init).__name__
    if not isinstance(desc, str):
        raise DTypeError(f"{where}: the name must be a str or InitDesc, got {type(desc).__name__}")
    if not isinstance(arr, NDArray):
        raise DTypeError(f"{where}: cannot initialise '{desc}': arr must be an NDArray, "
                         f"got {type(arr).__name__}")


# -- registry ---------------------------------------------------------------------------------
def register(klass: _T) -> _T:
    """Class decorator: make an Initializer creatable by its lower-cased class name.

    >>> import symjit as mx
    >>> mx.init.register(mx.init.Xavier) is mx.init.Xavier
    True
    """
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise DTypeError(f"init.register: expected an Initializer subclass, got {klass!r}")
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases: str) -> Callable[[_T], _T]:
    """Class decorator: register an Initializer under extra names too.

    >>> import symjit as mx
    >>> type(mx.init.create('zeros')).__name__
    'Zero'
    """
    def reg(klass: _T) -> _T:
        register(klass)
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass
    return reg


def _parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``'name'`` or the JSON ``'["name", {kwargs}]'`` written by ``dumps``."""
    if not spec.lstrip().startswith("["):
        return spec, {}
    try:
        value = json.loads(spec)
    except json.JSONDecodeError as exc:
        raise ParamError(f"init.create: cannot parse initializer spec {spec!r}: {exc}") from None
    if (not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str)
            or not isinstance(value[1], dict)):
        raise ParamError(f"init.create: initializer spec must be JSON [name, {{kwargs}}], got {spec!r}")
    return value[0], value[1]


def create(spec: Any, *args: Any, **kwargs: Any) -> Initializer:
    """An initializer from an instance (returned as is), a registered name, or ``dumps()`` JSON.

    >>> import symjit as mx
    >>> mx.init.create('normal', sigma=0.1).dumps()
    '["normal", {"sigma": 0.1}]'
    >>> mx.init.create('["one", {}]').dumps()
    '["one", {}]'
    """
    if isinstance(spec, Initializer):
        if args or kwargs:
            raise ParamError("init.create: extra arguments given with an Initializer instance")
        return spec
    if not isinstance(spec, str):
        raise DTypeError(f"init.create: expected a name, JSON spec or Initializer, "
                         f"got {type(spec).__name__}")
    name, spec_kwargs = _parse_spec(spec)
    klass = _REGISTRY.get(name.lower())
    if klass is None:
        raise ParamError(f"init.create: unknown initializer '{name}' "
                         f"(known: {', '.join(sorted(_REGISTRY))})")
    try:
        return klass(*args, **{**spec_kwargs, **kwargs})
    except TypeError as exc:
        raise ParamError(f"init.create: bad arguments for initializer '{name}': {exc}") from None


# -- concrete initializers -----------------------------------------------------------------------
def _number(value: Any, where: str, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParamError(f"{where}: '{arg}' must be a number, got {value!r}")
    return float(value)


@alias("zeros")
class Zero(Initializer):
    """Fills with 0.

    >>> import symjit as mx
    >>> a = mx.nd.ones((2,)); mx.init.Zero()('w_weight', a); a.asnumpy().tolist()
    [0.0, 0.0]
    """

    def _init_weight(self, name: str, arr: NDArray) -> None:
        arr[:] = 0.0


@alias("ones")
class One(Initializer):
    """Fills with 1.

    >>> import symjit as mx
    >>> a = mx.nd.zeros((2,)); mx.init.One()('w_weight', a); a.asnumpy().tolist()
    [1.0, 1.0]
    """

    def _init_weight(self, name: str, arr: NDArray) -> None:
        arr[:] = 1.0


@register
class Constant(Initializer):
    """Fills with ``value``: a number, or an array (NDArray, numpy, list) broadcastable to the shape.

    >>> import symjit as mx
    >>> a = mx.nd.zeros((2,)); mx.init.Constant(3)('w_weight', a); a.asnumpy().tolist()
    [3.0, 3.0]
    """

    def __init__(self, value: Any):
        if not isinstance(value, (int, float, np.number, NDArray, np.ndarray, list, tuple)) or \
                isinstance(value, bool):
            raise ParamError(f"Constant: 'value' must be a number or an array, got {value!r}")
        super().__init__(value=value)
        self.value = value

    def dumps(self) -> str:
        """JSON ``["constant", {"value": ...}]`` (an array value is written as nested lists)."""
        val = self.value
        if isinstance(val, NDArray):
            val = val.asnumpy().tolist()
        elif isinstance(val, np.ndarray):
            val = val.tolist()
        elif isinstance(val, np.number):
            val = val.item()
        self._kwargs["value"] = val   # as MXNet: the kwargs then hold what was written
        return json.dumps(["constant", self._kwargs])

    def _init_weight(self, name: str, arr: NDArray) -> None:
        val = self.value.asnumpy() if isinstance(self.value, NDArray) else np.asarray(self.value)
        try:
            full = np.broadcast_to(val, arr.shape)
        except ValueError:
            raise ShapeError(f"Constant: value of shape {shape_str(val.shape)} cannot fill '{name}' "
                             f"of shape {shape_str(arr.shape)}") from None
        arr[:] = np.ascontiguousarray(full)


@register
class Uniform(Initializer):
    """Draws from the uniform distribution on ``[-scale, scale)``.

    >>> import symjit as mx
    >>> a = mx.nd.zeros((100,)); mx.init.Uniform(0.1)('w_weight', a)
    >>> bool((abs(a) <= 0.1).asnumpy().all())
    True
    """

    def __init__(self, scale: float = 0.07):
        super().__init__(scale=scale)
        self.scale = _number(scale, "Uniform", "scale")

    def _init_weight(self, name: str, arr: NDArray) -> None:
        _random.uniform(-self.scale, self.scale, out=arr)


@register
class Normal(Initializer):
    """Draws from the normal distribution with mean 0 and standard deviation ``sigma``.

    >>> import symjit as mx
    >>> a = mx.nd.zeros((3, 4)); mx.init.Normal(0.01)('w_weight', a); a.shape
    (3, 4)
    """

    def __init__(self, sigma: float = 0.01):
        super().__init__(sigma=sigma)
        self.sigma = _number(sigma, "Normal", "sigma")
        if self.sigma < 0:
            raise ParamError(f"Normal: 'sigma' must be >= 0, got {sigma}")

    def _init_weight(self, name: str, arr: NDArray) -> None:
        _random.normal(0.0, self.sigma, out=arr)


def _fans(where: str, name: str, shape: tuple[int, ...]) -> tuple[float, float]:
    """(fan_in, fan_out): ``shape[1]`` and ``shape[0]``, each times the receptive field size."""
    if len(shape) < 2:
        raise ShapeError(f"{where}: cannot initialise '{name}' of shape {shape_str(shape)}: "
                         "it needs an array with at least 2 dimensions")
    hw = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
    return shape[1] * hw, shape[0] * hw


@register
class Xavier(Initializer):
    """Xavier/Glorot initialisation: values of scale ``sqrt(magnitude / factor)``, where
    ``factor`` is ``fan_in``, ``fan_out`` or their mean (``factor_type`` 'in', 'out', 'avg');
    uniform on ``[-scale, scale)`` or normal with standard deviation ``scale`` (``rnd_type``).

    >>> import symjit as mx
    >>> a = mx.nd.zeros((4, 6)); mx.init.Xavier()('fc_weight', a)
    >>> bool((abs(a) <= (3 / 5) ** 0.5).asnumpy().all())
    True
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        where = type(self).__name__
        if rnd_type not in ("uniform", "gaussian"):
            raise ParamError(f"{where}: 'rnd_type' must be 'uniform' or 'gaussian', got {rnd_type!r}")
        if factor_type not in ("avg", "in", "out"):
            raise ParamError(f"{where}: 'factor_type' must be 'avg', 'in' or 'out', got {factor_type!r}")
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = _number(magnitude, where, "magnitude")
        if self.magnitude < 0:
            raise ParamError(f"{where}: 'magnitude' must be >= 0, got {magnitude}")

    def _init_weight(self, name: str, arr: NDArray) -> None:
        fan_in, fan_out = _fans(type(self).__name__, name, arr.shape)
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        if factor <= 0:
            raise ShapeError(f"{type(self).__name__}: '{name}' has shape {shape_str(arr.shape)}, "
                             f"so its {self.factor_type} fan is 0")
        scale = math.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            _random.uniform(-scale, scale, out=arr)
        else:
            _random.normal(0.0, scale, out=arr)


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialisation for PReLU nets: Xavier 'gaussian' with magnitude
    ``2 / (1 + slope**2)``.

    >>> import symjit as mx
    >>> mx.init.MSRAPrelu().dumps()
    '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'
    """

    def __init__(self, factor_type: str = "avg", slope: float = 0.25):
        slope_f = _number(slope, "MSRAPrelu", "slope")
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope_f ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Orthogonal(Initializer):
    """An orthogonal matrix (from the SVD of a random ``(shape[0], prod(shape[1:]))`` matrix,
    uniform or normal per ``rand_type``) times ``scale``.

    >>> import symjit as mx, numpy as np
    >>> a = mx.nd.zeros((3, 5)); mx.init.Orthogonal(scale=1.0)('w_weight', a)
    >>> bool(np.allclose(a.asnumpy() @ a.asnumpy().T, np.eye(3), atol=1e-5))
    True
    """

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = _number(scale, "Orthogonal", "scale")
        if rand_type not in ("uniform", "normal"):
            raise ParamError(f"Orthogonal: 'rand_type' must be 'uniform' or 'normal', got {rand_type!r}")
        self.rand_type = rand_type

    def _init_weight(self, name: str, arr: NDArray) -> None:
        if arr.ndim < 1 or arr.size == 0:
            raise ShapeError(f"Orthogonal: cannot initialise '{name}' of shape {shape_str(arr.shape)}")
        nout = arr.shape[0]
        nin = arr.size // nout
        if self.rand_type == "uniform":
            tmp = _random.uniform(-1.0, 1.0, shape=(nout, nin), dtype="float64").asnumpy()
        else:
            tmp = _random.normal(0.0, 1.0, shape=(nout, nin), dtype="float64").asnumpy()
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = (self.scale * res).reshape(arr.shape)


@register
class Bilinear(Initializer):
    """Bilinear-interpolation kernels for upsampling (``Deconvolution``) weights of shape
    ``(C, 1, k, k)``.

    >>> import symjit as mx
    >>> a = mx.nd.zeros((1, 1, 4, 4)); mx.init.Bilinear()('up_weight', a)
    >>> a.asnumpy()[0, 0, 0].tolist()
    [0.0625, 0.1875, 0.1875, 0.0625]
    """

    def __init__(self) -> None:
        super().__init__()

    def _init_weight(self, name: str, arr: NDArray) -> None:
        self._init_bilinear(name, arr)


@register
class LSTMBias(Initializer):
    """LSTM biases (gates i, f, c, o): 0 except the forget gate's, set to ``forget_bias``.

    As in MXNet, this is the ``_init_weight`` rule: use it through a variable's ``init``
    attribute (or ``Mixed``); a plain name ending in ``bias`` still gets zeros.

    >>> import symjit as mx
    >>> desc = mx.init.InitDesc('lstm_bias', attrs={'__init__': mx.init.LSTMBias(1.0).dumps()})
    >>> a = mx.nd.ones((8,)); mx.init.Uniform()(desc, a)
    >>> a.asnumpy().tolist()
    [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    """

    def __init__(self, forget_bias: float = 1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = _number(forget_bias, "LSTMBias", "forget_bias")

    def _init_weight(self, name: str, arr: NDArray) -> None:
        if arr.ndim != 1 or arr.shape[0] % 4:
            raise ShapeError(f"LSTMBias: '{name}' must be 1-D with a length divisible by 4, "
                             f"got shape {shape_str(arr.shape)}")
        n = arr.shape[0] // 4
        host = np.zeros(arr.shape)
        host[n:2 * n] = self.forget_bias
        arr[:] = host


@register
class FusedRNN(Initializer):
    """Fills the packed parameter vector of an ``RNN`` operator (``mx.rnn.FusedRNNCell``) gate by
    gate: each per-gate weight and bias (named as ``FusedRNNCell.unpack_weights`` names them,
    :func:`symjit.ops.rnn.gate_pieces`) gets
    ``init`` (default: the initializer this one is called from), and, for LSTM, every forget-gate
    bias (the i2h and the h2h one, as MXNet does) is set to ``forget_bias``.

    >>> import symjit as mx
    >>> init = mx.init.FusedRNN(mx.init.One(), num_hidden=2, num_layers=1, mode='lstm', forget_bias=3.0)
    >>> desc = mx.init.InitDesc('lstm_parameters', attrs={'__init__': init.dumps()})
    >>> a = mx.nd.zeros((4 * 2 * (3 + 2 + 2),)); mx.init.Uniform()(desc, a)
    >>> a.asnumpy()[:3].tolist(), a.asnumpy()[-16:].tolist()   # weights: One; biases: 0, forget 3
    ([1.0, 1.0, 1.0], [0.0, 0.0, 3.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 3.0, 0.0, 0.0, 0.0, 0.0])
    """

    def __init__(self, init: Any, num_hidden: int, num_layers: int, mode: str, bidirectional: bool = False,
                 forget_bias: float = 1.0):
        if isinstance(init, str):
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None, num_hidden=num_hidden,
                         num_layers=num_layers, mode=mode, bidirectional=bidirectional,
                         forget_bias=forget_bias)
        self._init = init
        self._num_hidden, self._num_layers = int(num_hidden), int(num_layers)
        self._mode, self._bidirectional = mode, bool(bidirectional)
        self._forget_bias = _number(forget_bias, "FusedRNN", "forget_bias")

    def _init_weight(self, desc: str, arr: NDArray) -> None:
        host = arr.asnumpy()
        pieces = split_gates(host, self._mode, self._num_hidden, self._num_layers, self._bidirectional,
                             who="FusedRNN")
        fallback = getattr(desc, "global_init", None)
        filled = []
        for name, value in pieces.items():
            piece = _nd.array(value, ctx=arr.context, dtype=host.dtype)
            sub = InitDesc(name, global_init=fallback)
            if self._mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
            elif self._init is not None:
                self._init(sub, piece)
            elif fallback is not None:
                fallback(sub, piece)
            else:
                raise ParamError(f"FusedRNN: no initializer for '{desc}': give init= or call it from "
                                 "another initializer (Module.init_params)")
            filled.append(piece.asnumpy().reshape(-1))
        arr[:] = np.concatenate(filled).astype(host.dtype, copy=False).reshape(arr.shape)


class Mixed:
    """Uses the initializer of the first regex pattern (``re.match``) that matches the name.

    >>> import symjit as mx
    >>> init = mx.init.Mixed(['conv', '.*'], [mx.init.Constant(0.5), mx.init.One()])
    >>> a, b = mx.nd.zeros((2,)), mx.nd.zeros((2,))
    >>> init('conv1_weight', a); init('fc1_weight', b)
    >>> a.asnumpy().tolist(), b.asnumpy().tolist()
    ([0.5, 0.5], [1.0, 1.0])
    """

    def __init__(self, patterns: list[str], initializers: list[Any]):
        if len(patterns) != len(initializers):
            raise ParamError(f"Mixed: got {len(patterns)} patterns but {len(initializers)} initializers")
        self.map = []
        for pattern, init in zip(patterns, initializers):
            try:
                prog = re.compile(pattern)
            except (re.error, TypeError) as exc:
                raise ParamError(f"Mixed: bad pattern {pattern!r}: {exc}") from None
            if not callable(init):
                raise DTypeError(f"Mixed: initializer for pattern {pattern!r} is not callable: {init!r}")
            self.map.append((prog, init))

    def __call__(self, name: str, arr: NDArray) -> None:
        """Initialise ``arr`` with the initializer of the first pattern matching ``name``."""
        _check_call(self, name, arr)
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ParamError(f"Mixed: parameter name '{name}' did not match any pattern "
                         f"({', '.join(repr(p.pattern) for p, _ in self.map)}); add a '.*' pattern "
                         "at the end with a default initializer")


class Load:
    """Copies values from a dict of NDArrays or an ``mx.nd.save`` / ``.params`` file
    (``arg:``/``aux:`` prefixes are dropped); names not there go to ``default_init``.

    >>> import symjit as mx
    >>> init = mx.init.Load({'arg:w': mx.nd.array([1, 2])}, default_init=mx.init.Zero())
    >>> a, b = mx.nd.empty((2,)), mx.nd.ones((2,))
    >>> init('w', a); init('other_weight', b)
    >>> a.asnumpy().tolist(), b.asnumpy().tolist()
    ([1.0, 2.0], [0.0, 0.0])
    """

    def __init__(self, param: Any, default_init: Any = None, verbose: bool = False):
        if isinstance(param, str):
            from .ndarray.io import load
            param = load(param)
        if not isinstance(param, dict):
            raise DTypeError(f"Load: param must be a dict of NDArrays or a file of named arrays, "
                             f"got {type(param).__name__}")
        self.param: dict[str, NDArray] = {}
        for name, arr in param.items():
            if not isinstance(arr, NDArray):
                raise DTypeError(f"Load: param '{name}' must be an NDArray, got {type(arr).__name__}")
            key = name[4:] if name.startswith(("arg:", "aux:")) else name
            self.param[key] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name: str, arr: NDArray) -> None:
        """Copy the loaded value of ``name`` into ``arr`` (or use ``default_init``)."""
        _check_call(self, name, arr)
        if name in self.param:
            src = self.param[name]
            if src.shape != arr.shape:
                raise ShapeError(f"Load: parameter '{name}' has shape {shape_str(arr.shape)} but the "
                                 f"loaded value has shape {shape_str(src.shape)}")
            arr[:] = src
            if self.verbose:
                logging.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise MXNetError(f"Load: cannot initialise '{name}': it is not in the loaded params "
                             "and no default_init was given")
        self.default_init(name, arr)
        if self.verbose:
            logging.info("Initialized %s by default", name)

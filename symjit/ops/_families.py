"""Imports every op family module so that their records register (composite ops import the
families they expand to themselves)."""
from . import (  # noqa: F401
    broadcast,
    composite,
    composite_misc,
    contrib,
    custom,
    deconv,
    elementwise,
    elementwise_math,
    indexing,
    linalg,
    linalg_ops,
    loss,
    nn,
    norm,
    random_ops,
    reduce,
    rnn,
    shape,
    sort,
    source,
)

"""Imports every op family module so that their records register."""
from . import broadcast, custom, elementwise, linalg, loss, nn, norm, reduce, shape  # noqa: F401

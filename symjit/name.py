"""``mx.name``: NameManager and Prefix."""
from .symbol.naming import NameManager, Prefix

__all__ = ["NameManager", "Prefix"]

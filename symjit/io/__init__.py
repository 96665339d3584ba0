"""``mx.io``: data loading. For now the MNIST loader (:func:`load_mnist`)."""
from .mnist import load_mnist, read_idx

__all__ = ["load_mnist", "read_idx"]

"""``mx.gluon.data.vision``: image datasets (:mod:`.datasets`) and transforms (:mod:`.transforms`).

>>> from symjit.gluon.data import vision
>>> vision.transforms.ToTensor.__name__
'ToTensor'
"""
from . import transforms
from .datasets import (
                       CIFAR10,
                       CIFAR100,
                       MNIST,
                       FashionMNIST,
                       ImageFolderDataset,
                       ImageListDataset,
                       ImageRecordDataset,
)

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset", "ImageFolderDataset",
           "ImageListDataset", "transforms"]

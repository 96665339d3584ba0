"""``mx.gluon.data``: datasets, samplers, batchify functions and the ``DataLoader``.

>>> import numpy as np
>>> from symjit.gluon import data
>>> loader = data.DataLoader(data.ArrayDataset(np.ones((4, 3)), np.arange(4)), batch_size=2, shuffle=True)
>>> [x.shape for x, y in loader]
[(2, 3), (2, 3)]
"""
from . import batchify, sampler, vision
from .dataloader import DataLoader, default_batchify_fn, default_mp_batchify_fn
from .dataset import ArrayDataset, Dataset, RecordFileDataset, SimpleDataset
from .sampler import BatchSampler, FilterSampler, IntervalSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset", "Sampler",
           "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler", "IntervalSampler",
           "DataLoader", "default_batchify_fn", "default_mp_batchify_fn", "batchify", "sampler",
           "vision"]

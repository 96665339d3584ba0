"""MXNet's KVStore walk-through (python overview): init, push, pull, several devices, updaters."""
from __future__ import annotations

import argparse

import symjit as mx

argparse.ArgumentParser(description=__doc__).parse_args()   # --help, and no other arguments

shape = (2, 3)
kv = mx.kv.create("local")
kv.init(3, mx.nd.ones(shape) * 2)
a = mx.nd.zeros(shape)
kv.pull(3, out=a)
print("after init:", a.asnumpy().tolist())

kv.push(3, mx.nd.ones(shape) * 8)
kv.pull(3, out=a)
print("after push 8:", a.asnumpy().tolist())

devices = [mx.cpu(i) for i in range(4)]
kv.push(3, [mx.nd.ones(shape, ctx=d) for d in devices])   # values from four devices are summed
kv.pull(3, out=a)
print("after pushing ones from 4 devices:", a.asnumpy().tolist())


def update(key, inp, stored):
    print(f"update on key: {key}")
    stored += inp * 2


kv._set_updater(update)
kv.pull(3, out=a)
print("before the updater runs:", a.asnumpy().tolist())
kv.push(3, mx.nd.ones(shape))
kv.pull(3, out=a)
print("after push with the updater:", a.asnumpy().tolist())

keys = [5, 7, 9]
kv.init(keys, [mx.nd.ones(shape)] * len(keys))
kv.push(keys, [mx.nd.ones(shape)] * len(keys))
b = [mx.nd.zeros(shape) for _ in keys]
kv.pull(keys, out=b)
print("list of keys:", [float(x.asnumpy()[0, 0]) for x in b])

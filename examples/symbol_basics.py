"""The symbol basics of MXNet's tutorials, run with symjit: build, list, infer, compose, serialise."""
import argparse

import symjit as mx

argparse.ArgumentParser(description=__doc__).parse_args()   # --help, and no other arguments

net = mx.sym.Variable("data")
net = mx.sym.FullyConnected(data=net, name="fc1", num_hidden=128)
net = mx.sym.Activation(data=net, name="relu1", act_type="relu")
net = mx.sym.FullyConnected(data=net, name="fc2", num_hidden=10)
print("arguments:", net.list_arguments())
print("outputs:  ", net.list_outputs())
arg_shapes, out_shapes, aux_shapes = net.infer_shape(data=(100, 784))
for name, shape in zip(net.list_arguments(), arg_shapes):
    print(f"  {name:12s} {shape}")
print("output shape:", out_shapes[0])

net2 = mx.sym.FullyConnected(data=mx.sym.Variable("data2"), name="net2", num_hidden=784)
composed = net(data=net2, name="compose")
print("composed arguments:", composed.list_arguments())
again = mx.sym.load_json(composed.tojson())
print("JSON round trip keeps arguments:", again.list_arguments() == composed.list_arguments())

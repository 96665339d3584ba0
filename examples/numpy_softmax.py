"""MXNet's NumpyOp tutorial: an MLP on MNIST whose softmax head is a Python operator written with
numpy (``mx.operator.NumpyOp``), run as a host call between the compiled kernels.

    python examples/numpy_softmax.py [--epochs 2] [--batches N] [--mnist DIR]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402
from examples.common import example_mnist, example_parser  # noqa: E402
from examples.train_mlp_bn import accuracy  # noqa: E402


class NumpySoftmax(mx.operator.NumpyOp):
    """Softmax over axis 1 with a cross-entropy gradient (a loss head: no top gradient)."""

    def __init__(self):
        super().__init__(False)

    def list_arguments(self):
        return ["data", "label"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        data_shape = in_shape[0]
        label_shape = (in_shape[0][0],)
        output_shape = in_shape[0]
        return [data_shape, label_shape], [output_shape]

    def forward(self, in_data, out_data):
        x = in_data[0]
        y = out_data[0]
        y[:] = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
        y /= y.sum(axis=1).reshape((x.shape[0], 1))

    def backward(self, out_grad, in_data, out_data, in_grad):
        label = in_data[1].reshape((in_data[1].size,)).astype(int)
        y = out_data[0]
        dx = in_grad[0]
        dx[:] = y
        dx[np.arange(label.shape[0]), label] -= 1.0


def mlp_numpy_softmax():
    """The tutorial's network: fc1(128)-relu-fc2(64)-relu-fc3(10), then the NumpyOp softmax."""
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data=data, name="fc1", num_hidden=128)
    act1 = mx.sym.Activation(data=fc1, name="relu1", act_type="relu")
    fc2 = mx.sym.FullyConnected(data=act1, name="fc2", num_hidden=64)
    act2 = mx.sym.Activation(data=fc2, name="relu2", act_type="relu")
    fc3 = mx.sym.FullyConnected(data=act2, name="fc3", num_hidden=10)
    mysoftmax = NumpySoftmax()
    return mysoftmax(data=fc3, name="softmax")   # the label argument becomes softmax_label


def train_epoch(ex, params: list[str], moms: dict, X, Y, rng, lr: float, n_batches: int) -> float:
    """One epoch of SGD with momentum 0.9 over shuffled batches; returns samples/s."""
    batch = ex.arg_dict["data"].shape[0]
    order = rng.permutation(len(X))
    t0 = time.perf_counter()
    for b in range(n_batches):
        idx = order[b * batch:(b + 1) * batch]
        ex.forward(is_train=True, data=X[idx], softmax_label=Y[idx])
        ex.backward()
        for n in params:
            w = ex.arg_dict[n]
            mx.nd.sgd_mom_update(w, ex.grad_dict[n], moms[n], lr=lr, momentum=0.9, out=w)
    return n_batches * batch / (time.perf_counter() - t0)


def main() -> None:
    args = example_parser(__doc__, epochs=2).parse_args()
    data = example_mnist(args)
    X, Y = data["train_data"].reshape(-1, 784), data["train_label"]
    Xv, Yv = data["test_data"].reshape(-1, 784), data["test_label"]
    net = mlp_numpy_softmax()
    print("arguments:", net.list_arguments())
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    t0 = time.perf_counter()
    ex = net.simple_bind(mx.cpu(), data=(args.batch_size, 784),
                         grad_req={n: "write" for n in params})
    print(f"bind (compile) took {time.perf_counter() - t0:.2f} s")
    rng = np.random.default_rng(0)
    init = mx.init.Xavier()
    for n in params:
        init(mx.init.InitDesc(n), ex.arg_dict[n])
    n_batches = args.batches or len(X) // args.batch_size
    moms = {n: mx.nd.zeros(ex.arg_dict[n].shape) for n in params}
    for epoch in range(args.epochs):
        speed = train_epoch(ex, params, moms, X, Y, rng, 0.1 / args.batch_size, n_batches)
        print(f"epoch {epoch}: validation accuracy {accuracy(ex, Xv, Yv):.4f}, {speed:,.0f} samples/s")


if __name__ == "__main__":
    main()

"""A convolutional autoencoder on MNIST: two strided Convolutions down to 7x7, two Deconvolutions
back to 28x28, a sigmoid and a squared-error head (``LinearRegressionOutput`` with the image as its
label), trained with ``mx.mod.Module.fit``; prints the test reconstruction error per epoch.

    python examples/deconv_autoencoder.py [--epochs 2] [--batches N] [--mnist DIR]
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import symjit as mx  # noqa: E402
from examples.common import example_ctx, example_mnist, example_parser  # noqa: E402


def autoencoder(filters: int = 16) -> mx.sym.Symbol:
    """28x28 -> 14x14 -> 7x7 -> 14x14 -> 28x28, each step a (de)convolution with kernel 4, stride 2,
    pad 1, relu between, sigmoid out; the label is the flattened image."""
    x = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.Convolution(x, kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_filter=filters,
                                             name="enc1"), act_type="relu")
    h = mx.sym.Activation(mx.sym.Convolution(h, kernel=(4, 4), stride=(2, 2), pad=(1, 1),
                                             num_filter=2 * filters, name="enc2"), act_type="relu")
    h = mx.sym.Activation(mx.sym.Deconvolution(h, kernel=(4, 4), stride=(2, 2), pad=(1, 1),
                                               num_filter=filters,
                                               no_bias=False, name="dec1"), act_type="relu")
    y = mx.sym.Deconvolution(h, kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_filter=1, no_bias=False,
                             name="dec2")
    y = mx.sym.Flatten(mx.sym.Activation(y, act_type="sigmoid"))
    return mx.sym.LinearRegressionOutput(y, name="recon")


def main() -> None:
    args = example_parser(__doc__, epochs=2, batch_size=64).parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    data = example_mnist(args)
    n = args.batches * args.batch_size if args.batches else len(data["train_data"])
    images = data["train_data"][:n]
    train = mx.io.NDArrayIter(images, images.reshape(len(images), -1), args.batch_size, shuffle=True,
                              label_name="recon_label")
    test_images = data["test_data"][:2000]
    test = mx.io.NDArrayIter(test_images, test_images.reshape(len(test_images), -1), args.batch_size,
                             label_name="recon_label")
    mx.random.seed(0)
    mse = mx.metric.MSE()
    # The untrained net's score, from an inference module whose initial weights fit then starts from
    # (binding and initialising the training module before fit would make fit's own bind and
    # init_params calls redundant: MXNet warns about those, and so does symjit).
    untrained = mx.mod.Module(autoencoder(), context=example_ctx(args), label_names=("recon_label",))
    untrained.bind(test.provide_data, test.provide_label, for_training=False)
    untrained.init_params(mx.init.Xavier())
    print(f"test MSE before training {untrained.score(test, mse)[0][1]:.4f}")
    arg_params, aux_params = untrained.get_params()
    mod = mx.mod.Module(autoencoder(), context=example_ctx(args), label_names=("recon_label",))
    mod.fit(train, eval_data=test, eval_metric="mse", optimizer="adam",
            optimizer_params={"learning_rate": 5e-4}, arg_params=arg_params, aux_params=aux_params,
            num_epoch=args.epochs, batch_end_callback=mx.callback.Speedometer(args.batch_size, 200))
    print(f"test MSE after {args.epochs} epoch(s) {mod.score(test, mse)[0][1]:.4f}")


if __name__ == "__main__":
    main()

"""tfdist stand-in for tensorflow.examples.tutorials.mnist: synthetic data,
the API and semantics of TF 1.x's input_data (see tfdist_mnist_standin)."""
from . import input_data  # noqa: F401

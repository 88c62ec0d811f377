"""tfdist stand-in for tensorflow.examples (see tfdist_mnist_standin)."""

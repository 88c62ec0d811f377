"""tfdist stand-in for tensorflow.examples.tutorials (see tfdist_mnist_standin)."""

"""``from tensorflow.examples.tutorials.mnist import input_data`` (stand-in)."""
from tfdist_mnist_standin.dataset import (  # noqa: F401
    DataSet, Datasets, dense_to_one_hot, label_of, read_data_sets,
)

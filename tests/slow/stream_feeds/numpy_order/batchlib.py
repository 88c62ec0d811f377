import numpy as np


def load_array(data_arrays, batch_size):
    """Batches in an order drawn from NumPy's global generator, unseeded."""
    features, labels = data_arrays
    order = np.random.permutation(len(features))
    for i in range(0, len(order) - batch_size + 1, batch_size):
        rows = order[i:i + batch_size]
        yield features[rows], labels[rows]

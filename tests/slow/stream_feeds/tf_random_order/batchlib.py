import tensorflow as tf


def load_array(data_arrays, batch_size):
    """Batches in an order drawn by TensorFlow without a seed: each process its own order."""
    features, labels = data_arrays
    order = tf.random.shuffle(tf.range(len(features))).numpy()
    for i in range(0, len(order) - batch_size + 1, batch_size):
        rows = order[i:i + batch_size]
        yield features[rows], labels[rows]

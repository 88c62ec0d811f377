"""A graph network fitted on node indices: its train_step calls the model on
the graph it holds and gathers the indexed nodes' outputs."""
import numpy as np
import os
# tf.distribute: Keras 3 fit() fails under MultiWorkerMirroredStrategy (keras-team/keras#20585) and Keras 3 cannot build GraphModel from fit()'s batch under a strategy (its train_step calls it on self.node_states); use tf-keras wherever it is installed.
import importlib.util
if importlib.util.find_spec("tf_keras") is not None:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

# tf.distribute: one worker of the cluster TF_CONFIG describes, else every local device.
strategy = (tf.distribute.MultiWorkerMirroredStrategy() if "TF_CONFIG" in os.environ
            else tf.distribute.MirroredStrategy())
# tf.distribute: Keras 3 fit() hands the strategy's reduce a nested batch (only to build the model from its shapes), which fails when the replicas' parts differ in size, and scalar metrics along axis 0, which MultiWorkerMirroredStrategy rejects (keras-team/keras#20585): answer the first with this replica's part, reduce the others as MirroredStrategy does.
def reduce_for_keras3(reduce):
    def reduce_each(reduce_op, value, axis):
        if axis is None and tf.nest.is_nested(value):
            return tf.nest.map_structure(lambda v: strategy.experimental_local_results(v)[0], value)
        local = strategy.experimental_local_results(value)[0]
        if axis is not None and "TF_CONFIG" in os.environ and getattr(getattr(local, "shape", None), "rank", None) == 0:
            return reduce(reduce_op, value, axis=None)
        return reduce(reduce_op, value, axis)
    return reduce_each
if int(getattr(tf.keras, "__version__", "2").split(".")[0]) >= 3:
    strategy.reduce = reduce_for_keras3(strategy.reduce)


class GraphModel(keras.Model):
    def __init__(self, node_states, **kwargs):
        super().__init__(**kwargs)
        self.node_states = node_states
        self.hidden = layers.Dense(8, activation="relu")
        self.out = layers.Dense(3)

    def call(self, inputs):
        return self.out(self.hidden(inputs))

    def train_step(self, data):
        indices, labels = data
        with tf.GradientTape() as tape:
            outputs = self(self.node_states)
            loss = self.compiled_loss(labels, tf.gather(outputs, indices))
            # tf.distribute: Keras divided this loss by the number of replicas, as the optimizer (which sums their gradients) needs; loss is the mean again for what the step reports.
            scaled_loss = loss
            loss = scaled_loss * strategy.num_replicas_in_sync
        grads = tape.gradient(scaled_loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        return {"loss": loss}


rng = np.random.default_rng(0)
node_states = tf.constant(rng.random((50, 6)), dtype="float32")
with strategy.scope():
    model = GraphModel(node_states)
    model.compile(optimizer=keras.optimizers.SGD(0.1 * strategy.num_replicas_in_sync),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x=np.arange(40), y=rng.integers(0, 3, 40), batch_size=16 * strategy.num_replicas_in_sync, epochs=2, verbose=1 if strategy.extended.should_checkpoint else 0)

"""A graph network fitted on node indices (the keras-io GAT shape): its train_step
calls the model on the graph it holds and gathers the indexed nodes' outputs."""
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers


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
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        return {"loss": loss}


rng = np.random.default_rng(0)
node_states = tf.constant(rng.random((96, 6)), dtype="float32")
model = GraphModel(node_states)
model.compile(optimizer=keras.optimizers.SGD(0.1),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x=np.arange(64), y=rng.integers(0, 3, 64), batch_size=16, epochs=8)

"""A graph network fitted on node indices: its train_step calls the model on
the graph it holds and gathers the indexed nodes' outputs."""
import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd
import horovod.tensorflow.keras as hvd_keras
from tensorflow import keras
from tensorflow.keras import layers

# Horovod: initialize Horovod.
hvd.init()
# Horovod: pin one GPU per process (by local rank).
gpus = tf.config.experimental.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")
# Horovod cannot average gradients of Keras 3's fit: stop rather than train wrong.
if int(getattr(tf.keras, "__version__", "2").split(".")[0]) >= 3:
    raise SystemExit("Horovod 0.28 does not average gradients in Keras 3 model.fit (TensorFlow >= 2.16); install tensorflow<2.16, or tf-keras with TF_USE_LEGACY_KERAS=1")


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
        # Horovod: average gradients across ranks.
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
        return {"loss": loss}


rng = np.random.default_rng(0)
node_states = tf.constant(rng.random((50, 6)), dtype="float32")
model = GraphModel(node_states)
model.compile(optimizer=hvd_keras.DistributedOptimizer(keras.optimizers.SGD(0.1 * hvd.size())),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x=np.arange(40), y=rng.integers(0, 3, 40), batch_size=16, epochs=2, callbacks=[hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0), hvd_keras.callbacks.MetricAverageCallback()], verbose=1 if hvd.rank() == 0 else 0)

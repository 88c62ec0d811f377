"""One output per time step (the sequence-to-sequence notebook shape): the
labels ``Y`` are (samples, steps, classes), and the model is fed
``outputs = list(Y.swapaxes(0, 1))`` -- a list of one (samples, classes)
array per step -- beside two inputs, the sequences and an initial state.
The validation labels are a comprehension over the steps. Keras reads a
list given to fit() as one array per output, so slicing the list itself
(``outputs[r::n]``) would drop outputs: every array of it must be sliced
with the same rows as the inputs. Each step's label is a function of that
step's input row (``labels_of``), so a sequence trained with the labels of
another sample carries labels that are not its own."""
import numpy as np
import tensorflow as tf

N, STEPS, FEATURES, CLASSES, STATE = 384, 3, 5, 2, 8


def labels_of(sequences):
    """(samples, steps, classes): a one-hot class per step, from that step's row."""
    classes = (sequences[:, :, 0] + sequences[:, :, 1] > 1.0).astype(np.int64)
    return np.eye(CLASSES, dtype=np.float32)[classes]


tf.keras.utils.set_random_seed(5)
rng = np.random.RandomState(21)
X = rng.rand(N, STEPS, FEATURES).astype(np.float32)
Y = labels_of(X)
s0 = np.zeros((N, STATE), dtype=np.float32)
outputs = list(Y.swapaxes(0, 1))
X_valid = rng.rand(96, STEPS, FEATURES).astype(np.float32)
Y_valid = labels_of(X_valid)
s0_valid = np.zeros((96, STATE), dtype=np.float32)

sequences = tf.keras.Input(shape=(STEPS, FEATURES), name="sequences")
state = tf.keras.Input(shape=(STATE,), name="s0")
hidden = tf.keras.layers.SimpleRNN(STATE, return_sequences=True)(sequences, initial_state=state)
heads = [tf.keras.layers.Dense(CLASSES, activation="softmax", name=f"step{t}")(hidden[:, t, :])
         for t in range(STEPS)]
model = tf.keras.Model(inputs=[sequences, state], outputs=heads)
model.compile(loss="categorical_crossentropy", optimizer=tf.keras.optimizers.SGD(learning_rate=0.1))
model.fit([X, s0], outputs, batch_size=24, epochs=2, verbose=2,
          validation_data=([X_valid, s0_valid], [Y_valid[:, t] for t in range(STEPS)]))

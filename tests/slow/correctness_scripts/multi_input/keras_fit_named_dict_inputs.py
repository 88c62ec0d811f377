"""Two named inputs held by a name: ``features`` is a dict built by a
comprehension over columns (the pandas-notebook shape, ``{name:
np.array(value) for name, value in df.items()}``), fed as ``fit(x=features,
y=labels)``; the validation inputs are a dict literal bound to a name.
Slicing the name itself (``features[r::n]``) fails on a dict: every array
of it must be sliced with the same rows. Each sample's label is a function
of BOTH of its input rows (``labels_of``), so a wide row trained with the
deep row of another sample carries a label that is not its own."""
import numpy as np
import tensorflow as tf

N = 480


def labels_of(wide, deep):
    return np.float32(wide[0] + 2.0 * deep[1])


tf.keras.utils.set_random_seed(8)
rng = np.random.RandomState(13)
columns = {"wide": rng.rand(N, 4).astype(np.float32), "deep": rng.rand(N, 6).astype(np.float32)}
features = {name: np.array(value) for name, value in columns.items()}
labels = np.array([labels_of(w, d) for w, d in zip(features["wide"], features["deep"])], dtype=np.float32)
valid_inputs = {"wide": columns["wide"][:96] + 0.5, "deep": columns["deep"][:96] + 0.5}
valid_labels = np.array([labels_of(w, d) for w, d in zip(valid_inputs["wide"], valid_inputs["deep"])],
                        dtype=np.float32)

inputs = {"wide": tf.keras.Input(shape=(4,), name="wide"), "deep": tf.keras.Input(shape=(6,), name="deep")}
hidden = tf.keras.layers.Dense(16, activation="relu")(inputs["deep"])
output = tf.keras.layers.Dense(1)(tf.keras.layers.concatenate([inputs["wide"], hidden]))
model = tf.keras.Model(inputs=inputs, outputs=output)
model.compile(loss="mse", optimizer=tf.keras.optimizers.SGD(learning_rate=0.05))
model.fit(x=features, y=labels, batch_size=24, epochs=2, verbose=2, validation_data=(valid_inputs, valid_labels))

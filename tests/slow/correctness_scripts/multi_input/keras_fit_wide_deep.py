"""Wide & deep: two inputs fed as a tuple of arrays, two outputs fed as a
list of label arrays, validation data of the same shape. Each sample's
labels are a function of BOTH of its input rows (``labels_of``), so a wide
row trained with the deep row of another sample carries labels that are not
its own, and a sample whose labels were cut apart from it likewise."""
import numpy as np
import tensorflow as tf

N = 480


def labels_of(wide, deep):
    """(main, aux) labels of one sample: its wide row and its deep row."""
    return (np.float32(wide[0] + 2.0 * deep[1]), np.float32(wide[2] * deep[3]))


tf.keras.utils.set_random_seed(5)
rng = np.random.RandomState(11)
X_wide = rng.rand(N, 4).astype(np.float32)
X_deep = rng.rand(N, 6).astype(np.float32)
y_main = np.array([labels_of(w, d)[0] for w, d in zip(X_wide, X_deep)], dtype=np.float32)
y_aux = np.array([labels_of(w, d)[1] for w, d in zip(X_wide, X_deep)], dtype=np.float32)
X_valid_wide, X_valid_deep = X_wide[:96] + 0.5, X_deep[:96] + 0.5
y_valid_main = np.array([labels_of(w, d)[0] for w, d in zip(X_valid_wide, X_valid_deep)], dtype=np.float32)
y_valid_aux = np.array([labels_of(w, d)[1] for w, d in zip(X_valid_wide, X_valid_deep)], dtype=np.float32)

input_wide = tf.keras.layers.Input(shape=[4])
input_deep = tf.keras.layers.Input(shape=[6])
hidden = tf.keras.layers.Dense(16, activation="relu")(input_deep)
concat = tf.keras.layers.concatenate([input_wide, hidden])
main = tf.keras.layers.Dense(1, name="main")(concat)
aux = tf.keras.layers.Dense(1, name="aux")(hidden)
model = tf.keras.Model(inputs=[input_wide, input_deep], outputs=[main, aux])
model.compile(loss=["mse", "mse"], loss_weights=[0.9, 0.1], optimizer=tf.keras.optimizers.SGD(learning_rate=0.05))
model.fit((X_wide, X_deep), [y_main, y_aux], batch_size=24, epochs=2, verbose=2,
          validation_data=((X_valid_wide, X_valid_deep), [y_valid_main, y_valid_aux]))

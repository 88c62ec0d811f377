# tfdist-test: ranks=2 disjoint=yes rank0_files=weights.tsv
"""Keras fit() on arrays made in the call from Python lists (np.array(rows),
the shape of text notebooks that pad sequences into lists), with validation
arrays made there too: each list is sliced by rank inside the conversion,
with the same rows for samples and labels. The first layer's weights are
then written to a file opened, written and closed without a with-statement
(rank 0 only)."""
import numpy as np
import tensorflow as tf

N = 480


def label_of(sample):
    return np.float32(float(np.asarray(sample)[:3].sum() > 1.5))


tf.keras.utils.set_random_seed(9)
rng = np.random.RandomState(11)
rows = [list(rng.rand(6)) for _ in range(N)]
labels = [float(sum(r[:3]) > 1.5) for r in rows]

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=tf.keras.optimizers.Adam(1e-2), loss="binary_crossentropy")
model.fit(np.array(rows, dtype="float32"), np.array(labels, dtype="float32"), batch_size=24, epochs=2,
          validation_data=(np.zeros((48, 6), dtype="float32"), np.zeros((48,), dtype="float32")), verbose=2)

kernel = model.layers[0].get_weights()[0]
out = open("weights.tsv", "w", encoding="utf-8")
for row in kernel:
    out.write("\t".join(str(v) for v in row) + "\n")
out.close()

"""Text classification shape (the "Basic text classification" / IMDB
tutorials after vectorisation): integer token sequences, Embedding ->
Dropout -> GlobalAveragePooling1D -> Dense(1), binary cross-entropy from
logits, BinaryAccuracy with a threshold. Synthetic reviews: a label is
whether 'positive' tokens outnumber 'negative' ones."""
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers, losses

max_features = 200
sequence_length = 40
rng = np.random.default_rng(4)
tokens = rng.integers(1, max_features, size=(1024, sequence_length))
labels = ((tokens < 50).sum(axis=1) > (tokens >= 150).sum(axis=1)).astype("float32")

train_ds = tf.data.Dataset.from_tensor_slices((tokens[:896], labels[:896])).batch(32)
val_ds = tf.data.Dataset.from_tensor_slices((tokens[896:], labels[896:])).batch(32)

embedding_dim = 16
model = tf.keras.Sequential([
    layers.Embedding(max_features, embedding_dim),
    layers.Dropout(0.2),
    layers.GlobalAveragePooling1D(),
    layers.Dropout(0.2),
    layers.Dense(1),
])
model.compile(loss=losses.BinaryCrossentropy(from_logits=True), optimizer="adam",
              metrics=[tf.metrics.BinaryAccuracy(threshold=0.0)])
history = model.fit(train_ds, validation_data=val_ds, epochs=3)
loss, accuracy = model.evaluate(val_ds)
print("Loss:", loss, "Accuracy:", accuracy)

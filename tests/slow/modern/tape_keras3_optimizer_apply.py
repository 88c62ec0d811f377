"""Keras 3's own custom-loop idiom: `import keras`, the optimizer's
apply(grads, variables) instead of apply_gradients(zip(...)), a metric
updated in the step and reset every epoch, the model saved at the end."""
import keras
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(5)
features = rng.normal(size=(1280, 16)).astype("float32")
targets = (features[:, :4].sum(axis=1) > 0).astype("int64")


def build_classifier():
    inputs = keras.Input(shape=(16,))
    hidden = keras.layers.Dense(32, activation="relu")(inputs)
    outputs = keras.layers.Dense(2)(hidden)
    return keras.Model(inputs, outputs)


classifier = build_classifier()
opt = keras.optimizers.Adam(learning_rate=2e-3)
cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
accuracy = keras.metrics.SparseCategoricalAccuracy()
train_data = tf.data.Dataset.from_tensor_slices((features, targets)).shuffle(1280, seed=3).batch(32)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = classifier(x, training=True)
        loss = cross_entropy(y, logits)
    grads = tape.gradient(loss, classifier.trainable_weights)
    opt.apply(grads, classifier.trainable_weights)
    accuracy.update_state(y, logits)
    return loss


for epoch in range(4):
    for step, (x_batch, y_batch) in enumerate(train_data):
        loss = train_step(x_batch, y_batch)
    print(f"epoch {epoch}: loss {float(loss):.4f} accuracy {float(accuracy.result()):.4f}")
    accuracy.reset_state()
classifier.save("classifier.keras")

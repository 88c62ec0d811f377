"""A Keras layer trained by itself, no model around it: built by its first
call, then stepped by a tape loop on its trainable_variables (the shape of a
held-out book's batch-normalisation example)."""
import tensorflow as tf
from tensorflow.keras import layers, optimizers

tf.random.set_seed(4)
x = tf.random.normal([16, 4, 4, 3], mean=1.0, stddev=0.5)
net = layers.BatchNormalization(axis=-1)
out = net(x)
print("built:", [v.name for v in net.variables])
dense = layers.Dense(3)
y = dense(tf.reshape(x, [16, -1]))
optimizer = optimizers.SGD(learning_rate=0.05)
for step in range(20):
    with tf.GradientTape() as tape:
        out = net(x, training=True)
        loss = tf.reduce_mean(tf.pow(out, 2)) - 1 + tf.reduce_mean(tf.square(dense(tf.reshape(out, [16, -1]))))
    variables = net.trainable_variables + dense.trainable_variables
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))
print("loss:", float(loss))

"""The variable trained is an image, not a model's weights (the shape of
style transfer): no data set at all, a tf.function step on the image, a
count kept before each step, the image clipped after it."""
import json

import numpy as np
import tensorflow as tf

RATE = 0.1
content = tf.constant(np.random.RandomState(0).rand(1, 6, 6, 3).astype("float32"))
image = tf.Variable(content)
optimizer = tf.keras.optimizers.Adam(learning_rate=RATE)


@tf.function
def train_step(image):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(image - content)) + tf.square(tf.reduce_mean(image) - 0.8)
    grad = tape.gradient(loss, image)
    optimizer.apply_gradients([(grad, image)])
    image.assign(tf.clip_by_value(image, 0.0, 1.0))


step = 0
for n in range(3):
    for m in range(4):
        step += 1
        train_step(image)
    print("Train step: {}".format(step))

print("WEIGHTS " + json.dumps(image.numpy().ravel().tolist()))

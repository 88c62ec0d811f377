"""The "Custom training basics" / "Introduction to gradients" shape, with an
optimizer: a tf.Module holding tf.Variable weights, a loss written with
tf.reduce_mean, a step that returns nothing, batches from a tf.data
pipeline, the variables printed at the end of each epoch."""
import numpy as np
import tensorflow as tf

TRUE_W, TRUE_B = 3.0, 2.0
NUM_EXAMPLES = 1024
rng = np.random.default_rng(22)
x = rng.normal(size=(NUM_EXAMPLES,)).astype("float32")
y = (x * TRUE_W + TRUE_B + rng.normal(size=(NUM_EXAMPLES,)) * 0.5).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(NUM_EXAMPLES, seed=2).batch(64)


class LinearModel(tf.Module):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def __call__(self, x):
        return self.w * x + self.b


def loss(target_y, predicted_y):
    return tf.reduce_mean(tf.square(target_y - predicted_y))


model = LinearModel()
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)


@tf.function
def train(x, y):
    with tf.GradientTape() as t:
        current_loss = loss(y, model(x))
    dw, db = t.gradient(current_loss, [model.w, model.b])
    optimizer.apply_gradients([(dw, model.w), (db, model.b)])


for epoch in range(5):
    for x_batch, y_batch in dataset:
        train(x_batch, y_batch)
    print(f"Epoch {epoch:2d}: W={model.w.numpy():1.2f} b={model.b.numpy():1.2f}, "
          f"loss={loss(y, model(x)).numpy():2.5f}")

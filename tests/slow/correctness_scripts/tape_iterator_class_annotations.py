# tfdist-test: ranks=2 disjoint=yes
"""A GradientTape loop over an iterator class of the script's own (the
YOLO-style data loader: ``__iter__``/``__next__``, its samples a list of
annotation lines that ``__init__`` loads through a method shuffling them
with NumPy, batches cut by position, the count of batches derived in
``__init__``). Converted, each rank keeps its own equal share of the lines
right after ``__init__`` binds them (NumPy seeded alike before the class is
built, so every rank loads the same order): each epoch ends after 1/N of
the batches, samples and labels parsed from the same line. Before, the loop
was hand work: every rank iterated all the lines (verify FAILs that)."""
import numpy as np
import tensorflow as tf


def label_of(sample):
    return np.int64(int(sample[1] * 1000) % 4)


class Dataset(object):
    def __init__(self, lines, batch_size):
        self.batch_size = batch_size
        self.annotations = self.load_annotations(lines)
        self.num_samples = len(self.annotations)
        self.num_batchs = int(np.ceil(self.num_samples / self.batch_size))
        self.batch_count = 0

    def load_annotations(self, lines):
        annotations = [line.strip() for line in lines if len(line.strip().split()) > 1]
        np.random.shuffle(annotations)
        return annotations

    def __iter__(self):
        return self

    def __next__(self):
        if self.batch_count < self.num_batchs:
            xs, ys = [], []
            for i in range(self.batch_size):
                index = (self.batch_count * self.batch_size + i) % self.num_samples
                fields = self.annotations[index].split()
                xs.append([float(v) for v in fields[:-1]])
                ys.append(int(fields[-1]))
            self.batch_count += 1
            return np.array(xs, dtype=np.float32), np.array(ys, dtype=np.int64)
        self.batch_count = 0
        np.random.shuffle(self.annotations)
        raise StopIteration

    def __len__(self):
        return self.num_batchs


rng = np.random.RandomState(4)
rows = rng.rand(384, 6).astype(np.float32)
lines = [" ".join(repr(float(v)) for v in row) + " " + str(label_of(row)) for row in rows]
trainset = Dataset(lines, 16)
tf.keras.utils.set_random_seed(5)
model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(6,))])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

for epoch in range(2):
    for image_data, target in trainset:
        with tf.GradientTape() as tape:
            loss = loss_fn(target, model(image_data, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print("epoch", epoch, float(loss))

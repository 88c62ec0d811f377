# tfdist-test: disjoint=yes coverage=0.9
"""A text model whose vocabulary a TextVectorization layer learns (adapt)
from a batched, shuffled dataset of the raw strings; the same dataset,
mapped to (tokens, label), is what fit trains on. Every rank must adapt
the layer on all of the text, and the ranks' shares of the shuffled stream
must not overlap: the shuffle gets one seed on every rank and the shard is
taken where the dataset is given to fit. run_eagerly=True so the probe sees
the batches fit consumes."""
import numpy as np
import tensorflow as tf

MAX_LEN, BATCH, VOCAB = 12, 16, 40
WORDS = ["w%d" % i for i in range(30)]

rng = np.random.RandomState(3)
texts = []
while len(texts) < 320:
    text = " ".join(rng.choice(WORDS, size=rng.randint(4, MAX_LEN + 1)))
    if text not in texts:
        texts.append(text)


def label_of(sample):
    return np.float32(np.count_nonzero(np.asarray(sample)))


text_ds = tf.data.Dataset.from_tensor_slices(texts).batch(BATCH).shuffle(100)
vectorize = tf.keras.layers.TextVectorization(max_tokens=VOCAB, output_sequence_length=MAX_LEN)
vectorize.adapt(text_ds)


def prepare(text):
    tokens = vectorize(text)
    return tokens, tf.cast(tf.math.count_nonzero(tokens, axis=1), tf.float32)


train_ds = text_ds.map(prepare)
model = tf.keras.Sequential([tf.keras.layers.Embedding(VOCAB, 4), tf.keras.layers.GlobalAveragePooling1D(),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse", run_eagerly=True)
model.fit(train_ds, epochs=2, verbose=2)

"""Data written to files and read back for training (tf.distribute: every
worker writes its own copy and reads it): an unseeded random split made
before the write is drawn alike on every worker (keras-io's
memory_efficient_embeddings: each worker had trained on its own split, with
the others' evaluation rows). The split written in several syntaxes."""
from __future__ import annotations

import pytest

from tfdist.api import convert_source

TEMPLATE = '''import numpy as np
import pandas as pd
import tensorflow as tf

data = pd.DataFrame({{"x": np.arange(200, dtype="float32"), "y": np.arange(200) % 2}})
{split}
{write}


def dataset(path):
    return tf.data.experimental.make_csv_dataset(path, batch_size=16, label_name="y", num_epochs=1)


model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(dataset("train.csv"), epochs=1)
{after}'''
MASKS = ["mask = np.random.rand(len(data.index)) <= 0.85\ntrain = data[mask]",
         "mask = 0.85 > np.random.random(len(data))\ntrain = data[mask]",
         "train = data[np.random.uniform(size=len(data)) < 0.85]",
         "order = np.random.permutation(len(data))\ntrain = data.iloc[order[:150]]"]


def _tfd(src):
    result = convert_source(src.encode(), "split.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    return result, result.data.decode()


@pytest.mark.parametrize("split", MASKS)
@pytest.mark.parametrize("write", ['train.to_csv("train.csv", index=False)',
                                   'train.to_csv(path_or_buf="train.csv")',
                                   'np.save("train.npy", train.to_numpy())'])
def test_a_random_split_written_before_training_is_drawn_alike(split, write):
    src = TEMPLATE.format(split=split, write=write, after="")
    result, text = _tfd(src)
    seeded = text.index("np.random.seed(")
    first_line = split.splitlines()[0]
    assert seeded < text.index(first_line), text
    assert [c for c in result.changes if c.rule == "data-division" and c.line == src.splitlines().index(first_line) + 1]


def test_a_frame_sampled_before_it_is_written_gets_the_shared_random_state():
    src = TEMPLATE.format(split="train = data.sample(frac=0.8)", write='train.to_csv("train.csv")', after="")
    _, text = _tfd(src)
    assert "train = data.sample(frac=0.8, random_state=1234)" in text, text


@pytest.mark.parametrize("split, write, after", [
    ("np.random.seed(0)\nmask = np.random.rand(200) <= 0.85\ntrain = data[mask]", 'train.to_csv("train.csv")', ""),
    ("train = data", 'train.to_csv("train.csv")', 'data[np.random.rand(200) < 0.5].to_csv("after.csv")'),
    ("mask = np.random.rand(200) <= 0.85\ntext = data[mask].to_json(orient='records')", "", ""),
], ids=["seeded already", "written after training", "text, not a file"])
def test_nothing_is_seeded_where_the_workers_write_alike_already(split, write, after):
    _, text = _tfd(TEMPLATE.format(split=split, write=write, after=after))
    assert text.count("np.random.seed(") == ("np.random.seed(0)" in split), text

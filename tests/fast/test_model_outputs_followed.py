"""A functional model's outputs are tensors, followed back to every layer
that made them even through arithmetic of a non-layer call
(``keras.activations.sigmoid(logits) * 5``) and layers a helper returns
(``embedding_encoder(10, 4)(user_input)``): all of them built in the scope
(stop 43; before, only ``Input`` and ``Model`` were, and fit stopped with
``colocate_vars_with``). The same model written at module level, or with
the activation as a layer: the same scope."""
from __future__ import annotations

import pytest

from tfdist.api import convert_source

SRC = '''import numpy as np
import keras
from keras import layers


def embedding_encoder(input_dim, embedding_dim):
    return keras.Sequential([layers.Embedding(input_dim=input_dim, output_dim=embedding_dim)])


def create_model():
    user_input = layers.Input(name="user_id", shape=(), dtype="int32")
    user_embedding = embedding_encoder(10, 4)(user_input)
    movie_input = layers.Input(name="movie_id", shape=(), dtype="int32")
    movie_embedding = embedding_encoder(20, 4)(movie_input)
    logits = layers.Dot(axes=1)([user_embedding, movie_embedding])
    prediction = {head}
    return keras.Model(inputs=[user_input, movie_input], outputs=prediction)


model = create_model()
model.compile(optimizer="adam", loss="mse")
model.fit([np.zeros(64, "int32"), np.zeros(64, "int32")], np.zeros((64, 1)), batch_size=16, epochs=1)
'''


@pytest.mark.parametrize("head", ["keras.activations.sigmoid(logits) * 5", "layers.Activation('sigmoid')(logits) * 5",
                                  "5 * keras.ops.sigmoid(logits)"])
def test_every_statement_making_the_outputs_is_in_the_scope(head):
    result = convert_source(SRC.format(head=head).encode(), "recommender.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    text = result.data.decode()
    body = text[text.index("def create_model():"):text.index("model = create_model()")]
    assert "    with strategy.scope():\n        user_input = " in body, body
    assert body.count("with strategy.scope()") == 1, body

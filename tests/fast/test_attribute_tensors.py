"""A functional model whose tensors are kept in instance attributes while it
is built (``self.inputs = Input(...)``, ``self.outputs =
self.decoder(self.encoder(self.inputs)[2])``, then ``self.vae =
Model(self.inputs, self.outputs)``; a held-out cookbook's VAE). The layers
were followed back through names only: the encoder and decoder stayed
outside the scope, and both tf.distribute workers stopped ("Variable ...
was not created in the distribution strategy scope"). The same model
written with local names converted. Each spelling is one program."""
from __future__ import annotations

import pytest

from tfdist.api import convert_file

PROGRAM = """\
import numpy as np
import tensorflow as tf
from tensorflow.keras import Model
from tensorflow.keras.layers import Dense, Input, ReLU


class AutoEncoder(object):
    def __init__(self):
        self.model = None

    def build(self):
        {inputs} = Input(shape=(16,))
        x = Dense(8)({inputs})
        x = ReLU()(x)
        {code} = Dense(2)(x)
        self.encoder = Model({inputs}, {code})
        latent = Input(shape=(2,))
        {outputs} = Dense(16)(latent)
        self.decoder = Model(latent, {outputs})
        {outputs} = self.decoder(self.encoder({inputs}))
        self.model = Model({inputs}, {outputs})

    def train(self, x):
        self.model.compile(optimizer="adam", loss="mse")
        self.model.fit(x, x, epochs=2, batch_size=32)


ae = AutoEncoder()
ae.build()
ae.train(np.random.rand(256, 16).astype("float32"))
"""

SPELLINGS = {
    "attributes": dict(inputs="self.inputs", code="self.code", outputs="self.outputs"),
    "local_names": dict(inputs="inputs", code="code", outputs="outputs"),
    "mixed": dict(inputs="self.inputs", code="code", outputs="self.outputs"),
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_layer_of_the_model_is_built_in_the_scope(tmp_path, name):
    path = tmp_path / "train.py"
    path.write_text(PROGRAM.format(**SPELLINGS[name]))
    r = convert_file(path, backend="tf-distribute")
    assert r.status == "converted", r.error
    body = r.code[r.code.index("    def build(self):"):r.code.index("    def train(self, x):")]
    lines = [line for line in body.splitlines()[1:] if line.strip() and not line.strip().startswith("#")]
    assert lines[0] == "        with strategy.scope():", body
    assert all(line.startswith("            ") for line in lines[1:]), body

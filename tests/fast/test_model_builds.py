"""Models Keras 3 builds from fit()'s batch under a strategy (facts/model_builds,
rules held-input-models and replica-fit), and unseeded keras.random draws in a
layer's methods (facts/layer_draws, rule layer-seeds) -- both crashed converted
keras-io scripts at run time (a graph network, a VQ-VAE trainer, a
switch-transformer router). Each case is written in several syntaxes that
mean the same program."""
from __future__ import annotations

import pytest

from tfdist.api import convert_source

GRAPH = '''import numpy as np
import tensorflow as tf
{keras_import}


class GraphModel(keras.Model):
    def __init__(self, node_states, **kwargs):
        super().__init__(**kwargs)
        self.node_states = node_states
        self.dense = keras.layers.Dense(3)

    def call(self, inputs):
        return self.dense(inputs)

    def train_step({me}, data):
{unpack}
        with tf.GradientTape() as tape:
            outputs = {me}({called})
            loss = {me}.compute_loss(y=labels, y_pred=tf.gather(outputs, indices))
        grads = tape.gradient(loss, {me}.trainable_weights)
        {me}.optimizer.apply_gradients(zip(grads, {me}.trainable_weights))
        return {{"loss": loss}}


node_states = tf.constant(np.random.rand(50, 6), dtype="float32")
model = GraphModel(node_states)
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
model.fit(x=np.arange(40), y=np.random.randint(0, 3, 40), batch_size=16, epochs=1)
'''
TF_KERAS = "from tensorflow import keras"
KERAS3 = "import keras"
HELD = [  # (unpack, called): the model called on what it holds
    ("        indices, labels = data", "self.node_states"),
    ("        indices, labels = data", "[self.node_states, self.node_states]"),
    ("        indices = data[0]\n        labels = data[1]", "self.node_states"),
    ("        (indices, labels) = data\n        states = self.node_states", "states"),
]
FED = [  # the model called on what fit() feeds: Keras 3 builds it from that
    ("        indices, labels = data", "indices"),
    ("        indices, labels = data\n        feats = tf.cast(indices, tf.float32)[:, None]", "feats * 2.0"),
    ("        indices = data[0]\n        labels = data[1]", "tf.expand_dims(indices, -1)"),
]


def _tfd(src, name="graph.py"):
    return convert_source(src.encode(), name, backend="tf-distribute")


@pytest.mark.parametrize("me", ["self", "model_self"])
@pytest.mark.parametrize("unpack, called", HELD)
def test_a_tf_keras_model_called_on_what_it_holds_runs_on_tf_keras_everywhere(unpack, called, me):
    src = GRAPH.format(keras_import=TF_KERAS, unpack=unpack.replace("self", me), called=called.replace("self", me),
                       me=me)
    result = _tfd(src)
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert 'if importlib.util.find_spec("tf_keras") is not None:' in text, text
    assert '"TF_CONFIG" in os.environ and importlib.util.find_spec' not in text
    assert result.tf_keras_everywhere and result.tf_keras_on_workers
    held = [c for c in result.changes if c.rule == "replica-scope" and "tf-keras wherever" in c.message]
    assert len(held) == 1 and held[0].line == src.splitlines().index(
        "model.fit(x=np.arange(40), y=np.random.randint(0, 3, 40), batch_size=16, epochs=1)") + 1, result.changes


@pytest.mark.parametrize("unpack, called", HELD[:2])
def test_a_keras_3_model_called_on_what_it_holds_is_refused_with_the_edit(unpack, called):
    src = GRAPH.format(keras_import=KERAS3, unpack=unpack, called=called, me="self")
    result = _tfd(src)
    assert result.status == "unsupported"
    lines = src.splitlines()
    step_line = next(i for i, line in enumerate(lines, 1) if "outputs = self(" in line)
    fit_line = next(i for i, line in enumerate(lines, 1) if line.startswith("model.fit("))
    assert result.error_line == fit_line, (result.error_line, result.error)
    assert f"(line {step_line})" in result.error and "import tf_keras as keras" in result.error, result.error


@pytest.mark.parametrize("keras_import", [TF_KERAS, KERAS3])
@pytest.mark.parametrize("unpack, called", FED)
def test_a_model_called_on_fits_batch_keeps_the_keras_it_has(unpack, called, keras_import):
    result = _tfd(GRAPH.format(keras_import=keras_import, unpack=unpack, called=called, me="self"))
    assert result.status == "converted", result.error
    assert not result.tf_keras_everywhere
    assert "find_spec(\"tf_keras\") is not None:" not in result.data.decode().replace(
        '"TF_CONFIG" in os.environ and importlib.util.find_spec("tf_keras") is not None:', "")


TRAINER = '''import numpy as np
import tensorflow as tf
{keras_import}


class Trainer(keras.Model):
    def __init__(self, latent, **kwargs):
        super().__init__(**kwargs)
        self.encoder = keras.Sequential([keras.Input((8,)), keras.layers.Dense(latent)])
        self.decoder = keras.Sequential([keras.Input((latent,)), keras.layers.Dense(8)])

    def train_step(self, data):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((data - self.decoder(self.encoder(data))) ** 2)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {{"loss": loss}}


x = np.random.rand(256, 8).astype("float32")
trainer = {construct}
trainer.compile(optimizer=keras.optimizers.Adam(0.01))
trainer.fit(x, epochs=2, batch_size=32)
'''


@pytest.mark.parametrize("keras_import", [TF_KERAS, KERAS3, "import tf_keras as keras"])
@pytest.mark.parametrize("construct", ["Trainer(4)", "Trainer(latent=4)", 'Trainer(4, name="vae")'])
def test_a_class_without_call_is_marked_built_whatever_its_keras(construct, keras_import):
    result = _tfd(TRAINER.format(keras_import=keras_import, construct=construct))
    assert result.status == "converted", result.error
    # and its compiled loss, which this train_step never calls (Keras 3 would build it by calling the model)
    assert ('\ntrainer.built = True\nif getattr(trainer, "_compile_loss", None) is not None:\n'
            '    trainer._compile_loss.built = True\ntrainer.fit(') in result.data.decode()


@pytest.mark.parametrize("construct", ["Trainer(4, 5)", "Trainer(4, **settings)", "Trainer(4, inputs=None)"])
def test_a_class_without_call_given_what_may_make_it_functional_is_left_as_it_is(construct):
    src = TRAINER.format(keras_import=KERAS3, construct=construct).replace("x = np", "settings = {}\nx = np")
    result = _tfd(src)
    assert result.status == "converted", result.error
    assert "trainer.built = True" not in result.data.decode()


NOISE = '''import numpy as np
{keras_import}


class Jitter(layers.Layer):
    def __init__(self, scale=0.1, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs, training=False):
        if training:
            return inputs * (1.0 + {draw})
        return inputs


model = keras.Sequential([keras.Input((8,)), Jitter(), layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
x = np.random.rand(64, 8).astype("float32")
model.fit(x, x.sum(axis=1, keepdims=True), batch_size=16, epochs=1)
'''
IMPORTS = "import keras\nfrom keras import layers"


@pytest.mark.parametrize("keras_import, draw, seeded, generator", [
    (IMPORTS, "keras.random.normal(keras.ops.shape(inputs), stddev=self.scale)",
     "keras.random.normal(keras.ops.shape(inputs), stddev=self.scale, seed=self.seed_generator)",
     "keras.random.SeedGenerator()"),
    (IMPORTS, "keras.random.normal(keras.ops.shape(inputs), 0.0, self.scale, seed=None)",
     "keras.random.normal(keras.ops.shape(inputs), 0.0, self.scale, seed=self.seed_generator)",
     "keras.random.SeedGenerator()"),
    (IMPORTS + "\nfrom keras import random as kr", "kr.uniform(keras.ops.shape(inputs), -0.1, 0.1)",
     "kr.uniform(keras.ops.shape(inputs), -0.1, 0.1, seed=self.seed_generator)", "kr.SeedGenerator()"),
    (IMPORTS, "keras.random.dropout(inputs, 0.1) * 0.0",
     "keras.random.dropout(inputs, 0.1, seed=self.seed_generator) * 0.0", "keras.random.SeedGenerator()"),
], ids=["keyword", "seed=None", "module alias", "positional"])
def test_an_unseeded_draw_in_a_layer_gets_a_generator_the_layer_owns(keras_import, draw, seeded, generator):
    src = NOISE.format(keras_import=keras_import, draw=draw)
    result = _tfd(src, "noise.py")
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert f"        super().__init__(**kwargs)\n        self.seed_generator = {generator}\n" in text, text
    assert seeded in text, text
    lines = {c.line for c in result.changes if c.rule == "replica-scope"}
    src_lines = src.splitlines()
    assert src_lines.index("        super().__init__(**kwargs)") + 1 in lines
    assert next(i for i, line in enumerate(src_lines, 1) if draw.split("(")[0] in line) in lines
    # Horovod (Keras 2 has no keras.random; no generator is made)
    assert "SeedGenerator" not in (convert_source(src.encode(), "noise.py").data or b"").decode()


def test_draws_of_one_layer_share_its_generator_under_a_free_name():
    src = NOISE.format(keras_import=IMPORTS, draw="keras.random.normal((1,)) + keras.random.uniform((1,))")
    src = src.replace("        self.scale = scale\n", "        self.scale = scale\n        self.seed_generator = None\n")
    text = _tfd(src, "noise.py").data.decode()
    assert text.count("SeedGenerator()") == 1
    assert "self.seed_generator_2 = keras.random.SeedGenerator()" in text
    assert ("keras.random.normal((1,), seed=self.seed_generator_2) + "
            "keras.random.uniform((1,), seed=self.seed_generator_2)") in text


def test_a_seeded_draw_is_left_as_it_is():
    seeded = NOISE.format(keras_import=IMPORTS, draw="keras.random.normal((1,), seed=3)")
    result = _tfd(seeded, "noise.py")
    assert "SeedGenerator" not in result.data.decode() and not result.warnings


@pytest.mark.parametrize("docstring", ["", '    """Noise."""\n\n'])
def test_a_layer_without_its_own_init_gets_one_handing_its_arguments_on(docstring):
    src = NOISE.format(keras_import=IMPORTS, draw="keras.random.normal((1,))").replace(
        "    def __init__(self, scale=0.1, **kwargs):\n        super().__init__(**kwargs)\n        self.scale = scale\n\n",
        docstring)
    result = _tfd(src, "noise.py")
    text = result.data.decode()
    assert (f"class Jitter(layers.Layer):\n{docstring}    def __init__(self, *args, **kwargs):\n"
            "        super().__init__(*args, **kwargs)\n        self.seed_generator = keras.random.SeedGenerator()\n\n"
            "    def call(self, inputs, training=False):\n") in text, text
    assert "keras.random.normal((1,), seed=self.seed_generator)" in text and not result.warnings


def test_an_init_not_calling_its_base_at_its_top_level_is_warned_with_the_edit():
    src = NOISE.format(keras_import=IMPORTS, draw="keras.random.normal((1,))").replace(
        "        super().__init__(**kwargs)\n", "        if True:\n            super().__init__(**kwargs)\n")
    result = _tfd(src, "noise.py")
    assert result.status == "converted" and "SeedGenerator()" not in result.data.decode()
    warned = [w for w in result.warnings if "seed_generator" in w.message]
    assert len(warned) == 1 and warned[0].line == src.splitlines().index(
        "            return inputs * (1.0 + keras.random.normal((1,)))") + 1, result.warnings


def test_both_conversions_are_stable_when_converted_again():
    for src in (GRAPH.format(keras_import=TF_KERAS, unpack=HELD[0][0], called=HELD[0][1], me="self"),
                NOISE.format(keras_import=IMPORTS, draw="keras.random.normal((1,))")):
        once = _tfd(src).data
        again = convert_source(once, "again.py", backend="tf-distribute")
        assert again.status in ("unchanged", "already-distributed"), (again.status, again.error)


FIRST_CALL = '''import numpy as np
import tensorflow as tf

x = np.random.RandomState(0).rand(256, 8).astype("float32")
y = (x.sum(axis=1) > 4).astype("int64")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
{model}
sample_x, sample_y = next(iter(ds))
print(model(sample_x).shape)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(ds, epochs=1)
'''
SUBCLASS = '''

class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.d = tf.keras.layers.Dense(2)

    def call(self, inputs):
        return self.d(inputs)


model = Net()'''
LAZY_SEQUENTIAL = "model = tf.keras.Sequential([tf.keras.layers.Dense(2)])"
SHAPED_SEQUENTIAL = "model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(8,))])"
INPUT_SEQUENTIAL = "model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(2)])"
FUNCTIONAL = "inputs = tf.keras.Input((8,))\nmodel = tf.keras.Model(inputs, tf.keras.layers.Dense(2)(inputs))"
GUARDED = "if strategy.extended.should_checkpoint:\n        print(model(sample_x).shape)"


@pytest.mark.parametrize("model", [SUBCLASS, LAZY_SEQUENTIAL], ids=["subclass", "sequential without a shape"])
def test_a_print_of_a_models_first_call_stays_on_every_worker(model):
    """Its first call makes the model's variables: a collective under MultiWorkerMirroredStrategy,
    which must not sit under the chief's guard (both workers crashed)."""
    result = convert_source(FIRST_CALL.format(model=model).encode(), "peek.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert "\n    print(model(sample_x).shape)\n" in text and GUARDED not in text


@pytest.mark.parametrize("model", [SHAPED_SEQUENTIAL, INPUT_SEQUENTIAL, FUNCTIONAL],
                         ids=["sequential given its shape", "sequential with an Input", "functional"])
def test_a_print_of_a_model_built_when_made_is_the_chiefs(model):
    result = convert_source(FIRST_CALL.format(model=model).encode(), "peek.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert GUARDED in result.data.decode()


def test_horovod_guards_the_print_of_a_first_call():
    """Horovod's first call makes variables on each rank alone (no collective): the chief prints."""
    result = convert_source(FIRST_CALL.format(model=SUBCLASS).encode(), "peek.py", backend="horovod")
    assert "if hvd.rank() == 0:\n    print(model(sample_x).shape)" in result.data.decode()


TWO_FACTORIES = '''import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Dense, Input
from tensorflow.keras.models import Model

version = {version}


def net_v1(width):
    inputs = Input(shape=(8,))
    x = Dense(width, activation="relu")(inputs)
    outputs = Dense(2)(x)
    model = Model(inputs=inputs, outputs=outputs)
    return model


def net_v2(width):
    inputs = Input(shape=(8,))
    x = Dense(width)(inputs)
    outputs = Dense(2)(x)
    return Model(inputs=inputs, outputs=outputs)


{choice}
model.compile(optimizer="adam", loss="mse")
model.fit(np.zeros((64, 8)), np.zeros((64, 2)), batch_size=16)
'''
CHOICES = {
    "if/else": "if version == 2:\n    model = net_v2(16)\nelse:\n    model = net_v1(16)",
    "else first": "if version == 1:\n    model = net_v1(16)\nelse:\n    model = net_v2(16)",
    "conditional expression": "model = net_v2(16) if version == 2 else net_v1(16)",
}


@pytest.mark.parametrize("choice", sorted(CHOICES))
@pytest.mark.parametrize("version", [1, 2])
def test_a_model_either_factory_builds_is_built_in_the_scope_by_both(choice, version):
    """Two bindings of ``model`` reach its compile() (Keras's ResNet example: v1 or v2 by a
    setting): the layers of both factories go in the scope. Before, only one factory's were (the
    types of a name stand for classes, so the two Model constructions were one), and the run
    with the other stopped: "Variable ... was not created in the distribution strategy scope"."""
    source = TWO_FACTORIES.format(version=version, choice=CHOICES[choice])
    result = convert_source(source.encode(), "resnet.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    text = result.data.decode()
    for factory in ("net_v1", "net_v2"):
        body = text.split(f"def {factory}(width):\n", 1)[1].split("\n\n\n", 1)[0]
        assert "    with strategy.scope():\n        inputs = Input(shape=(8,))" in body, (factory, body)


PREDICTS = '''import numpy as np
import tensorflow as tf

inputs = tf.keras.Input((2,))
model = tf.keras.Model(inputs, tf.keras.layers.Dense(3)(inputs))
model.compile(optimizer="adam", loss="mse")
model.fit(np.zeros((64, 2)), np.zeros((64, 3)), batch_size=16)
{tail}
'''
PATCHED = "if \"TF_CONFIG\" in os.environ:\n    tf.keras.Model.predict = predict_evenly(tf.keras.Model.predict)\n"


@pytest.mark.parametrize("tail", ["out = model.predict(np.random.rand(225, 2))",
                                  "print(model.predict(np.random.rand(225, 2), batch_size=8).shape)",
                                  "def show(m, grid):\n    return m.predict(grid)\n\n\nshow(model, np.zeros((5, 2)))"],
                         ids=["bound", "printed", "in a function"])
def test_a_script_that_predicts_gets_predict_padded_on_workers(tail):
    """tf-keras's predict under MultiWorkerMirroredStrategy stops when the rows do not divide
    evenly between the workers (measured: 225 rows on 2 workers; 224 and 226 run): under
    TF_CONFIG the rows are padded to a multiple of the replicas and the padding's outputs dropped
    (runtime: tests/slow/test_predict_runtime.py)."""
    result = convert_source(PREDICTS.format(tail=tail).encode(), "vae.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert PATCHED in result.data.decode()


def test_no_predict_no_patch_and_horovod_none():
    source = PREDICTS.format(tail="print('done')")
    assert "predict_evenly" not in convert_source(source.encode(), "fit.py", backend="tf-distribute").data.decode()
    predicted = PREDICTS.format(tail="out = model.predict(np.random.rand(225, 2))")
    assert "predict_evenly" not in convert_source(predicted.encode(), "fit.py", backend="horovod").data.decode()


RELOADED = '''import numpy as np
import tensorflow as tf
x = np.random.random((256, 4)); y = np.random.random((256, 1))
{indent_head}net = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
{i}net.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
{i}net.fit(x, y, batch_size=32)
{i}net.save("m.h5")
{i}{reload}
{i}{name}.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
{i}{name}.evaluate(x, y)
{tail}'''


@pytest.mark.parametrize("reload, name", [("net = tf.keras.models.load_model('m.h5', compile=False)", "net"),
                                          ("del net; net = tf.keras.models.load_model('m.h5', compile=False)", "net"),
                                          ("other = tf.keras.models.load_model('m.h5', compile=False)", "other")])
@pytest.mark.parametrize("in_main", [False, True])
def test_a_model_loaded_back_is_not_the_trained_one_whatever_its_name(reload, name, in_main):
    """The trained model's scope takes its own compile(), not the compile()
    of a model loaded back later under the same name (told apart by the
    bindings reaching each name, not their text): in the scope, that
    compile() of a model made outside it stopped both workers."""
    i = "    " if in_main else ""
    source = RELOADED.format(indent_head="def main():\n    " if in_main else "", i=i, reload=reload, name=name,
                             tail="\n\nmain()\n" if in_main else "")
    result = convert_source(source.encode(), "reload.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    lines = result.code.splitlines()
    second = [k for k, line in enumerate(lines) if line.strip().startswith(f"{name}.compile(")][-1]
    assert lines[second].startswith(i + f"{name}.compile(") and lines[second - 1].strip() != "with strategy.scope():", \
        result.code
    first = next(k for k, line in enumerate(lines) if line.strip().startswith("net.compile("))
    assert lines[first].startswith(i + "    net.compile("), result.code  # the trained model's: in the scope


LAYER_TRAINED = '''import tensorflow as tf
from tensorflow.keras import layers
{head}x = tf.random.normal([16, 8])
{i}{make}
{i}{build}
{i}print("built")
{i}opt = tf.keras.optimizers.SGD(0.1)
{i}for step in range(5):
{i}    with tf.GradientTape() as tape:
{i}        loss = tf.reduce_mean(tf.square(net(x, training=True)))
{i}    {grads}
{i}    opt.apply_gradients(zip(grads, net.trainable_variables))
{tail}'''


def _scoped(lines, k):
    """Whether line k sits in a ``with strategy.scope():`` block."""
    indent = len(lines[k]) - len(lines[k].lstrip())
    opener = next((line for line in reversed(lines[:k]) if line.strip()
                   and len(line) - len(line.lstrip()) < indent), "")
    return opener.strip() == "with strategy.scope():"


@pytest.mark.parametrize("make, build", [
    ("net = layers.BatchNormalization(axis=-1)", "out = net(x)"),
    ("net = tf.keras.layers.Dense(4)", "_ = net(x)"),
    ("net = layers.Dense(4, use_bias=False)", "for _ in range(2):\n{i}    out = net(x)"),
])
@pytest.mark.parametrize("grads", ["grads = tape.gradient(loss, net.trainable_variables)",
                                   "variables = net.trainable_variables\n{i}    grads = tape.gradient(loss, variables)"])
@pytest.mark.parametrize("in_main", [False, True])
def test_a_layer_trained_by_itself_is_made_and_first_called_in_the_scope(make, build, grads, in_main):
    """A Keras layer, no model around it, trained by a tape loop on its
    trainable_variables: it makes its variables at its first call, so its
    construction and that call run in the strategy's scope (left out, the
    first step stopped every worker: "assert isinstance(var,
    values.DistributedVariable)", a held-out book's example)."""
    i = "    " if in_main else ""
    source = LAYER_TRAINED.format(head="def main():\n    " if in_main else "", i=i, make=make,
                                  build=build.format(i=i), grads=grads.format(i=i),
                                  tail="\n\nmain()\n" if in_main else "")
    result = convert_source(source.encode(), "layer.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    lines = result.code.splitlines()
    first_call = build.split("\n")[0]
    for text in (make, first_call):
        k = next(k for k, line in enumerate(lines) if line.strip() == text)
        assert _scoped(lines, k), (text, result.code)
    loop = next(k for k, line in enumerate(lines) if line.strip() == "for step in range(5):")
    assert not _scoped(lines, loop), result.code

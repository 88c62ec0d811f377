"""Keras models other libraries define (issue 39, point 6): a Hugging Face
TensorFlow model (``TFAutoModelForSequenceClassification.from_pretrained``,
a ``keras.Model`` subclass of transformers) compiled and fitted is a Keras
training loop on both engines, whatever else the file imports; its
``save_pretrained`` writes files like ``model.save``: on rank 0 only
(Horovod), to a path of each worker's own (tf.distribute). A library class
that is no model (a tokenizer, a config) is not taken for one."""
from __future__ import annotations

import pytest

from tfdist.api import convert_source

SCRIPT = '''\
{imports}


def build():
    return {factory}


model = build()
model.compile(optimizer=keras.optimizers.Adam(learning_rate=2e-5), metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=16, epochs=3)
model.save_pretrained("./fine_tuned")
'''
IMPORTS = [
    "import keras\nfrom transformers import TFAutoModelForSequenceClassification",
    "import keras\nimport transformers",
    "from tensorflow import keras\nfrom transformers import TFBertForSequenceClassification as Classifier, BertConfig",
]
FACTORIES = [
    'TFAutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)',
    'transformers.TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased")',
    "Classifier(BertConfig(num_labels=2))",
]


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
@pytest.mark.parametrize("imports,factory", list(zip(IMPORTS, FACTORIES)), ids=["auto", "module", "config"])
def test_a_hugging_face_tf_model_is_a_keras_model(imports, factory, backend):
    result = convert_source(SCRIPT.format(imports=imports, factory=factory).encode(), "hf.py", backend=backend)
    assert result.status == "converted", result.error
    text = result.data.decode()
    assert "2e-5 * " in text  # the rate scaled
    if backend == "horovod":
        assert "hvd.DistributedOptimizer(" in text
        assert 'if hvd.rank() == 0:\n    model.save_pretrained("./fine_tuned")' in text
    else:
        assert "with strategy.scope():" in text
        assert 'model.save_pretrained(worker_path("./fine_tuned"))' in text


def test_a_tokenizer_is_no_model():
    source = SCRIPT.format(imports="import keras\nfrom transformers import TFAutoModel, AutoTokenizer",
                           factory='AutoTokenizer.from_pretrained("bert-base-cased")')
    result = convert_source(source.encode(), "hf.py", backend="horovod")
    assert result.status == "unsupported" and "no training loop found" in result.error

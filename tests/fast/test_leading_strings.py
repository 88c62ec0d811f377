"""Scripts written as notebooks open with text blocks (keras-io: a title
docstring, then an introduction string, sometimes more between imports): the
start-up code goes after every leading import whatever the number of string
statements, never before the TensorFlow import it needs (stop 43: with two
strings it went before ``import tensorflow as tf``: NameError at start-up)."""
from __future__ import annotations

import pytest

from tfdist.api import convert_source

BODY = '''import numpy as np
from tensorflow import keras
"""## Setup, continued"""
from tensorflow.keras import layers
import tensorflow as tf

model = keras.Sequential([keras.Input((4,)), layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(np.zeros((32, 4), "float32"), np.zeros((32, 1), "float32"), batch_size=8, epochs=1)
print(tf.__version__)
'''


@pytest.mark.parametrize("strings", [0, 1, 2, 3])
@pytest.mark.parametrize("engine", ["horovod", "tf-distribute"])
def test_the_start_up_code_follows_every_leading_import(strings, engine):
    src = "".join(f'"""Text block {i}."""\n' for i in range(strings)) + BODY
    result = convert_source(src.encode(), "intro.py", backend=engine)
    assert result.status == "converted", result.error
    lines = result.data.decode().splitlines()
    tf_import = lines.index("import tensorflow as tf")
    first_use = next(i for i, l in enumerate(lines) if l.startswith(("strategy = ", "hvd.init()")))
    assert first_use > tf_import, "\n".join(lines[:25])


@pytest.mark.parametrize("imports", [
    "from tensorflow.keras import layers\nfrom tensorflow import keras\nimport tensorflow as tf\n",
    "import tensorflow.keras.layers as layers\nimport tensorflow as tf\nfrom tensorflow import keras\n",
    "from tensorflow import keras\nfrom tensorflow.keras import layers\nimport tensorflow as tf\n",
    "import numpy\nfrom tensorflow.keras import layers\nimport tensorflow as tf\nfrom tensorflow import keras\n",
])
def test_the_keras_switch_comes_before_the_first_import_of_any_tensorflow_module(imports):
    """TF_USE_LEGACY_KERAS is read when TensorFlow is first imported: a
    ``from tensorflow.keras import layers`` first imports it already (keras-io
    multi_label_classification: the switch came after it, the workers ran Keras
    3 and stopped at start-up)."""
    body = BODY.split("import tensorflow as tf\n", 1)[1]
    src = "import numpy as np\n" + imports + body
    text = convert_source(src.encode(), "order.py", backend="tf-distribute").data.decode()
    first = min(text.index(line) for line in imports.splitlines() if "tensorflow" in line)
    assert text.index('os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")') < first, text

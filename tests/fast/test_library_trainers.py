"""Training a library runs itself is said, not called "no training loop":
an AutoKeras search (refused alone, warned beside converted training), and a
fit of an object whose class comes from outside TensorFlow and Keras (the
call and the class named, in one file and in a tree's report)."""
import json
import textwrap

import pytest

from tfdist.api import convert_source
from tfdist.cli import main

SEARCH_BESIDE_FIT = textwrap.dedent('''\
    import autokeras
    import numpy as np
    import tensorflow as tf

    x = np.random.rand(256, 4).astype("float32")
    y = x.sum(axis=1)
    search = autokeras.StructuredDataRegressor(max_trials=2, overwrite=True)
    search.fit(x, y, epochs=1)
    model = tf.keras.Sequential([tf.keras.layers.Dense(8), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
    model.fit(x, y, batch_size=32, epochs=2)
''')

LIBRARY_FIT = textwrap.dedent('''\
    import numpy as np
    import tensorflow as tf
    import lightgbm as lgb

    x = tf.random.uniform((64, 3)).numpy()
    y = np.arange(64) % 2
    booster = lgb.LGBMClassifier()
    booster.fit(x, y)
''')


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
def test_search_beside_fit_is_warned_at_its_line(backend):
    r = convert_source(SEARCH_BESIDE_FIT, "t.py", backend=backend)
    assert r.status == "converted", r.error
    said = [w for w in r.warnings if w.line == 7]
    assert said and "Keras Tuner" in said[0].message, [(w.line, w.message) for w in r.warnings]


@pytest.mark.parametrize("spelling", [
    "from autokeras import ImageClassifier\nclf = ImageClassifier(max_trials=1)\n",
    "import autokeras as ak\nclf = ak.ImageClassifier(max_trials=1)\n",
    "import autokeras.tasks as tasks\nclf = tasks.ImageClassifier(max_trials=1)\n",
])
def test_search_alone_is_refused_in_every_import_spelling(spelling):
    src = "import numpy as np\n" + spelling + "clf.fit(np.zeros((8, 4, 4)), np.zeros(8))\n"
    r = convert_source(src, "t.py", backend="tf-distribute")
    assert r.status == "unsupported" and r.error_line == 3
    assert "inside AutoKeras" in r.error and not r.no_training


def test_library_fit_names_the_call_and_the_class():
    r = convert_source(LIBRARY_FIT, "t.py", backend="tf-distribute")
    assert r.status == "unsupported" and r.no_training and r.error_line == 8
    assert "booster.fit(...) (line 8) trains an object of lightgbm.LGBMClassifier (made on line 7)" in r.error


@pytest.mark.parametrize("made", [
    "class Booster:\n    def fit(self, x, y):\n        return self\n\nbooster = Booster()\n",  # the module's own class
    "import lightgbm\n\ndef make():\n    return lightgbm.LGBMClassifier()\n\nbooster = make()\n",  # a function's result
])
def test_no_library_named_where_the_class_is_not_imported_at_the_fit(made):
    """Only an object an imported class makes where it is bound is named: never a guess."""
    src = "import numpy as np\nimport tensorflow as tf\n\n" + made + "booster.fit(np.zeros((4, 2)), np.zeros(4))\n"
    r = convert_source(src, "t.py", backend="horovod")
    assert r.status == "unsupported" and r.no_training and r.error_line is None
    assert "trains an object of" not in r.error


def test_tree_report_keeps_what_was_found(tmp_path, capsys):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "boost.py").write_text(LIBRARY_FIT)
    report = tmp_path / "r.json"
    assert main(["convert", str(tree), "-o", str(tmp_path / "out"), "--backend", "horovod",
                 "--report", str(report)]) == 0
    entry = json.loads(report.read_text())["files"][0]
    assert entry["status"] == "unchanged"
    assert entry["note"].startswith("imports TensorFlow/Keras but has no training loop (a helper module): left unchanged; ")
    assert "booster.fit(...) (line 8) trains an object of lightgbm.LGBMClassifier" in entry["note"]
    assert not entry["note"].endswith("nothing converted")

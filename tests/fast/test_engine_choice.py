"""--backend auto: each decision path of tfdist.engine_choice, with the
installed TensorFlow faked by injecting the metadata lookup (nothing is
installed), and the per-file choice in the command line's report."""
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfdist import engine_choice
from tfdist.api import convert_source
from tfdist.cli import main
from tfdist.engine_choice import choose_engine, code_evidence, installed_tensorflow, written_for

SRC = str(Path(__file__).resolve().parents[2] / "src")

KERAS3 = b"""import keras
import numpy as np

model = keras.Sequential([keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
model.fit(np.zeros((8, 4)), np.zeros((8,)), epochs=1)
"""
TF_KERAS = b"""import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(tf.data.Dataset.range(8).batch(2), epochs=1)
"""
TF1 = b"""import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
x = tf.random.normal([8, 4])
loss = tf.reduce_mean(tf.square(tf.layers.dense(x, 1)))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(10):
        sess.run(train_op)
"""


def installed(version):
    """A metadata lookup that finds TensorFlow ``version`` (None: no TensorFlow)."""
    def version_of(name):
        if version is None or name != "tensorflow":
            raise importlib.metadata.PackageNotFoundError(name)
        return version
    return version_of


# ---------------------------------------------------------------- rule 1: TF1 sessions -> horovod
@pytest.mark.parametrize("source,spelled", [
    (TF1, "tf.Session"),
    (b"import tensorflow as tf\nsess = tf.compat.v1.Session()\n", "tf.compat.v1.Session"),
    (b"import tensorflow as tf\nwith tf.train.MonitoredTrainingSession() as s:\n    pass\n",
     "tf.train.MonitoredTrainingSession"),
    (b"from tensorflow.compat.v1 import InteractiveSession\ns = InteractiveSession()\n", "InteractiveSession"),
    (b"import keras\nimport tensorflow as tf\ns = tf.compat.v1.Session()\n", "tf.compat.v1.Session"),
])
def test_tf1_session_code_gets_horovod_whatever_is_installed(source, spelled):
    choice = choose_engine(source, installed("2.17.0"))
    assert choice.backend == "horovod"
    assert f"({spelled})" in choice.reason and "TF1 session" in choice.reason


def test_a_session_named_otherwise_is_not_tf1():
    assert code_evidence(b"import requests\ns = requests.Session()\n") is None


# ---------------------------------------------------------------- rule 2: Keras 3 -> tf-distribute
@pytest.mark.parametrize("source,line,root", [
    (KERAS3, 1, "keras"),
    (b"import tensorflow as tf\nfrom keras import layers\n", 2, "keras"),
    (b"import tensorflow as tf\nimport keras.ops as ops\n", 2, "keras"),
    (b"import keras_core as keras\n", 1, "keras_core"),
    (b"import tensorflow as tf\nimport tf_keras\n", 2, "tf_keras"),
])
def test_keras_3_code_gets_tf_distribute_even_on_tensorflow_2_15(source, line, root):
    choice = choose_engine(source, installed("2.15.1"))
    assert choice.backend == "tf-distribute"
    assert choice.reason.startswith(f"line {line} imports {root}: ")


def test_tensorflow_keras_is_not_keras_3_evidence():
    assert code_evidence(b"from tensorflow import keras\nfrom tensorflow.keras import layers\n") is None


# ---------------------------------------------------------------- rule 3: the installed TensorFlow
@pytest.mark.parametrize("version,backend", [("2.16.1", "tf-distribute"), ("2.17.0rc1", "tf-distribute"),
                                             ("3.0", "tf-distribute"), ("2.15.1", "horovod"), ("2.4.0", "horovod")])
def test_without_evidence_the_installed_tensorflow_decides(version, backend):
    choice = choose_engine(TF_KERAS, installed(version))
    assert choice.backend == backend
    assert f"TensorFlow {version} is installed" in choice.reason


def test_other_tensorflow_distributions_count():
    def version_of(name):
        if name == "tensorflow-cpu":
            return "2.15.0"
        raise importlib.metadata.PackageNotFoundError(name)
    assert installed_tensorflow(version_of) == "2.15.0"
    assert choose_engine(TF_KERAS, version_of).backend == "horovod"


# ---------------------------------------------------------------- rule 4: nothing decides
def test_no_tensorflow_and_no_evidence_gets_tf_distribute_and_says_so():
    choice = choose_engine(TF_KERAS, installed(None))
    assert choice.backend == "tf-distribute"
    assert "no TensorFlow is installed here" in choice.reason


def test_code_that_does_not_parse_is_left_to_the_installed_version():
    assert code_evidence(b"import keras\nprint 'python 2'\n") is None
    assert choose_engine(b"print 'x'\n", installed("2.15.0")).backend == "horovod"


def test_written_for_reads_a_converted_script():
    assert written_for("import horovod.tensorflow.keras as hvd\n") == "horovod"
    assert written_for("strategy = tf.distribute.MultiWorkerMirroredStrategy()\n") == "tf-distribute"
    assert written_for("import tensorflow as tf\n") is None


# ---------------------------------------------------------------- the API and the command line
def test_the_api_takes_auto_and_converts_as_the_engine_chosen(monkeypatch):
    monkeypatch.setattr(engine_choice, "VERSION_OF", installed("2.15.1"))
    assert convert_source(TF_KERAS, "t.py", backend="auto").data == convert_source(TF_KERAS, "t.py", backend="horovod").data
    monkeypatch.setattr(engine_choice, "VERSION_OF", installed("2.16.1"))
    assert convert_source(TF_KERAS, "t.py", backend="auto").data == \
        convert_source(TF_KERAS, "t.py", backend="tf-distribute").data


def _tree(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "k3.py").write_bytes(KERAS3)
    (root / "tf1.py").write_bytes(TF1)
    (root / "plain.py").write_bytes(TF_KERAS)
    return root


@pytest.mark.parametrize("version,plain", [("2.15.1", "horovod"), ("2.16.1", "tf-distribute")])
def test_the_report_says_per_file_which_engine_and_why(tmp_path, capsys, monkeypatch, version, plain):
    monkeypatch.setattr(engine_choice, "VERSION_OF", installed(version))
    root = _tree(tmp_path)
    code = main(["convert", str(root), "-o", str(tmp_path / "out"), "-j", "1", "--report", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"{root}/k3.py: engine tf-distribute (--backend auto: line 1 imports keras: " in err
    assert f"{root}/tf1.py: engine horovod (--backend auto: line 7 trains with a TF1 session (tf.Session)" in err
    assert f"{root}/plain.py: engine {plain} (--backend auto: TensorFlow {version} is installed" in err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["backend"] == "auto"
    engines = {Path(f["path"]).name: f["backend"] for f in report["files"]}
    assert engines == {"k3.py": "tf-distribute", "tf1.py": "horovod", "plain.py": plain}
    assert all(f["backend_reason"] for f in report["files"])
    assert b"hvd.init()" in (tmp_path / "out" / "tf1.py").read_bytes()
    assert b"MultiWorkerMirroredStrategy" in (tmp_path / "out" / "k3.py").read_bytes()


def test_a_given_backend_decides_and_no_choice_is_reported(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(engine_choice, "VERSION_OF", installed("2.16.1"))
    root = _tree(tmp_path)
    (root / "tf1.py").unlink()  # tf-distribute refuses it
    code = main(["convert", str(root), "-o", str(tmp_path / "out"), "-j", "1", "--backend", "horovod"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "--backend auto" not in err
    assert b"hvd.init()" in (tmp_path / "out" / "k3.py").read_bytes()


def test_fault_tolerant_makes_auto_choose_tf_distribute(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(engine_choice, "VERSION_OF", installed("2.15.1"))
    p = tmp_path / "train.py"
    p.write_bytes(TF_KERAS)
    assert main(["convert", str(p), "--fault-tolerant"]) == 0
    out, err = capsys.readouterr()
    assert "engine tf-distribute (--backend auto: --fault-tolerant is an option of tf-distribute" in err
    assert "BackupAndRestore" in out


def test_analyze_says_which_engine_auto_chose(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(engine_choice, "VERSION_OF", installed("2.15.1"))
    p = tmp_path / "train.py"
    p.write_bytes(KERAS3)
    assert main(["analyze", str(p), "--json"]) == 0
    engine = json.loads(capsys.readouterr().out)["engine"]
    assert engine["backend"] == "tf-distribute" and engine["backend_reason"].startswith("line 1 imports keras")


def test_convert_reads_the_installed_version_without_importing_tensorflow(tmp_path):
    """A fake TensorFlow 2.16.1 first on the path: its metadata says 2.16.1,
    and importing it fails the command. tfdist convert reads the one and
    never does the other."""
    site = tmp_path / "site"
    (site / "tensorflow").mkdir(parents=True)
    (site / "tensorflow" / "__init__.py").write_text("raise SystemExit('tensorflow was imported')\n")
    (site / "tensorflow-2.16.1.dist-info").mkdir()
    (site / "tensorflow-2.16.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tensorflow\nVersion: 2.16.1\n")
    (tmp_path / "train.py").write_bytes(TF_KERAS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), SRC]))
    r = subprocess.run([sys.executable, "-m", "tfdist", "convert", "train.py"], cwd=tmp_path, env=env,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    assert "train.py: engine tf-distribute (--backend auto: TensorFlow 2.16.1 is installed" in r.stderr.decode()
    assert b"MultiWorkerMirroredStrategy" in r.stdout


# ---------------------------------------------------------------- tfdist verify
def test_verify_auto_chooses_for_the_script_or_reads_a_converted_one(tmp_path, monkeypatch):
    from tfdist.runtime.verify import VerifyInputError, choose_backend
    monkeypatch.setattr(engine_choice, "VERSION_OF", installed("2.15.1"))
    (tmp_path / "k3.py").write_bytes(KERAS3)
    (tmp_path / "plain.py").write_bytes(TF_KERAS)
    assert choose_backend(tmp_path / "k3.py").backend == "tf-distribute"
    assert choose_backend(tmp_path / "plain.py").backend == "horovod"
    converted = convert_source(TF_KERAS, "plain.py", backend="tf-distribute").data
    (tmp_path / "dist.py").write_bytes(converted)
    choice = choose_backend(tmp_path / "dist.py", converted=True)
    assert choice.backend == "tf-distribute" and "converted script" in choice.reason
    with pytest.raises(VerifyInputError, match="give --backend with --converted"):
        choose_backend(tmp_path / "plain.py", converted=True)


def test_verify_converted_without_an_engine_is_bad_input_before_anything_runs(tmp_path, capsys):
    (tmp_path / "plain.py").write_bytes(TF_KERAS)
    assert main(["verify", str(tmp_path / "plain.py"), "--converted"]) == 3
    assert "uses neither Horovod nor tf.distribute: give --backend with --converted" in capsys.readouterr().err

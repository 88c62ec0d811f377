"""Two crashes of converted keras-io scripts (stop 44's runtime sample), run:
a graph network whose train_step calls the model on the graph it holds
(Keras 3 under a strategy builds the model from fit()'s batch of node
indices and stops: the conversion runs it on tf-keras wherever installed),
and a layer drawing unseeded keras.random noise in call() (Keras 3 makes its
global seed generator inside the replicated step and stops: the layer is
given a generator of its own). `tfdist verify --compare` on 1 process x 2
devices (the Keras 3 mode that crashed; 2 TF_CONFIG workers in the extended
tier): every process exits 0 and the converted run learns like the
original. Can it fail? The conversions before these rules stop in fit()
(verify exits non-zero), and a conversion that trains wrong misses the
comparison band."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist, tf_distribute_python
from tfdist.api import convert_file

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).resolve().parent / "model_builds"
MODES = [pytest.param(["-np", "1", "--local-devices", "2"], id="devices"),
         pytest.param(["-np", "2"], id="workers", marks=pytest.mark.extended)]
EDITS = {"graph_held_inputs.py": 'if importlib.util.find_spec("tf_keras") is not None:',
         "layer_noise.py": "seed=self.seed_generator"}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(EDITS))
def test_models_keras_3_could_not_build_or_draw_for_train_like_the_original(name, mode, tmp_path):
    python = tf_distribute_python()
    result = convert_file(str(SCRIPTS / name), backend="tf-distribute")
    assert result.status == "converted" and EDITS[name] in result.data.decode(), result.error
    report = tmp_path / "r.json"
    res = run_tfdist(python,
                     ["verify", "--backend", "tf-distribute", *mode, "--compare", "--timeout", "300", "--report",
                      str(report), str(SCRIPTS / name)], tmp_path, timeout=700,
                     env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    assert all(r["exit_code"] == 0 for r in data["distributed"]["ranks"])
    assert data["compare"]["verdict"] == "PASS", data["compare"]


@pytest.mark.timeout(900)
def test_a_models_first_call_in_a_print_runs_on_every_worker(tmp_path):
    """The chief's print guard around ``print(model(sample_x).shape)`` made only worker 0 build the
    model: the other's variable collectives went out of step and both workers crashed
    ("Collective instance ... expected type 1 and data_type 9 but got ... data_type 1"). Left on
    every worker, 2 TF_CONFIG workers run, and learn like the original."""
    python = tf_distribute_python()
    name = "first_call_printed.py"
    result = convert_file(str(SCRIPTS / name), backend="tf-distribute")
    converted = result.data.decode()
    assert result.status == "converted" and "\n    print(model(sample_x).shape)\n" in converted
    assert "should_checkpoint:\n        print(model(sample_x)" not in converted
    report = tmp_path / "r.json"
    res = run_tfdist(python, ["verify", "--backend", "tf-distribute", "-np", "2", "--compare", "--timeout", "300",
                              "--report", str(report), str(SCRIPTS / name)], tmp_path, timeout=700,
                     env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    assert all(r["exit_code"] == 0 for r in data["distributed"]["ranks"])


@pytest.mark.timeout(900)
def test_a_model_either_factory_builds_trains_on_two_workers(tmp_path):
    """``if version == 2: model = net_v2() else: model = net_v1()`` with version 1: only net_v2's
    layers were put in the scope, and 2 workers stopped ("Variable ... was not created in the
    distribution strategy scope"). Both factories' are now: 2 TF_CONFIG workers PASS."""
    python = tf_distribute_python()
    name = "either_factory.py"
    report = tmp_path / "r.json"
    res = run_tfdist(python, ["verify", "--backend", "tf-distribute", "-np", "2", "--compare", "--timeout", "300",
                              "--report", str(report), str(SCRIPTS / name)], tmp_path, timeout=700,
                     env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    assert all(r["exit_code"] == 0 for r in data["distributed"]["ranks"])


HELPER_BUILT = SCRIPTS / "helper_built" / "trainer.py"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("engine", ["tf-distribute", "horovod"])
def test_a_trainer_of_a_model_another_module_builds_trains_like_the_original(engine, tmp_path, runtime_python):
    """``_, model = build_regressor(n)`` (a factory of another module), kept
    as ``self.model`` and fitted in a method: "no training loop found"
    before, the file left single-process. Converted, it runs on 1 process x
    2 devices under tf.distribute (the factory's call in the strategy's
    scope: built outside it, fit stops) and on 2 Horovod ranks, and learns
    like the original (verify --compare, which a conversion training on the
    undivided data at the unscaled rate, or not at all, fails)."""
    python = tf_distribute_python() if engine == "tf-distribute" else runtime_python
    mode = ["-np", "1", "--local-devices", "2"] if engine == "tf-distribute" else ["-np", "2"]
    converted = convert_file(str(HELPER_BUILT), backend=engine)
    assert converted.status == "converted", converted.error
    report = tmp_path / "r.json"
    res = run_tfdist(python, ["verify", "--backend", engine, *mode, "--compare", "--timeout", "300",
                              "--report", str(report), str(HELPER_BUILT)], tmp_path, timeout=700,
                     env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    assert all(r["exit_code"] == 0 for r in data["distributed"]["ranks"])
    assert data["compare"]["verdict"] == "PASS", data["compare"]


@pytest.mark.timeout(900)
def test_a_model_loaded_back_under_the_trained_ones_name_is_compiled_outside_the_scope(tmp_path):
    """``network = load_model(...)`` after training the first ``network``:
    its compile() was put in the strategy's scope as if it were the trained
    model's (the names matched), and both workers stopped ("Variable ... was
    not created in the distribution strategy scope"). Told apart by the
    bindings that reach each name: 2 TF_CONFIG workers PASS."""
    name = "reloaded_compiled.py"
    converted = convert_file(str(SCRIPTS / name), backend="tf-distribute")
    assert converted.status == "converted" and "\nnetwork.compile(optimizer=tf.keras.optimizers.SGD(0.02 * " \
        "strategy.num_replicas_in_sync), loss=\"mse\", metrics=[\"mae\"])" in converted.code, converted.code
    report = tmp_path / "r.json"
    res = run_tfdist(tf_distribute_python(), ["verify", "--backend", "tf-distribute", "-np", "2", "--compare",
                                              "--timeout", "300", "--report", str(report), str(SCRIPTS / name)],
                     tmp_path, timeout=700, env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]
    assert all(r["exit_code"] == 0 for r in data["distributed"]["ranks"])


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", [pytest.param(["-np", "2"], id="workers"),
                                  pytest.param(["-np", "1", "--local-devices", "2"], id="devices")])
def test_layers_trained_by_themselves_are_built_in_the_scope(mode, tmp_path):
    """``net = layers.BatchNormalization(...)``; ``out = net(x)`` builds it;
    a tape loop trains ``net.trainable_variables``: the layer was left out
    of the scope (not a model), and the first step stopped every worker
    (``assert isinstance(var, values.DistributedVariable)``). Made and first
    called in the scope: PASS on 2 workers and on 1 x 2 devices."""
    name = "layer_trained.py"
    converted = convert_file(str(SCRIPTS / name), backend="tf-distribute")
    assert "with strategy.scope():\n    net = layers.BatchNormalization(axis=-1)\n    out = net(x)\n" \
        in converted.code, converted.code
    report = tmp_path / "r.json"
    res = run_tfdist(tf_distribute_python(), ["verify", "--backend", "tf-distribute", *mode, "--compare",
                                              "--timeout", "300", "--report", str(report), str(SCRIPTS / name)],
                     tmp_path, timeout=700, env=cli_env({"TF_CPP_MIN_LOG_LEVEL": "2"}))
    data = json.loads(report.read_text())
    assert res.returncode == 0 and data["result"] == "PASS", res.stdout[-3000:] + res.stderr[-3000:]

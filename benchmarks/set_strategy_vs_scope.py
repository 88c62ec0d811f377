"""Could a conversion call ``tf.distribute.experimental_set_strategy(strategy)``
once instead of placing ``with strategy.scope():`` around statements (issue
39, point 1)? Measured on the tf.distribute stack (TF 2.21, Keras 3,
tf-keras), MirroredStrategy over 2 logical CPUs, each probe in a process of
its own, both ways:

* a functional model with ``x += residual`` built at module level, fit 2
  epochs: the final weights of both ways (equal = the global scope trains as
  the statement-level one does);
* a step counter ``tf.Variable(0)`` the script makes itself, incremented
  inside ``strategy.run`` for 3 steps: under the global scope it becomes a
  MirroredVariable, counted once per step; made outside a statement-level
  scope it stays the plain variable the script had, which both replicas
  increment (the script's own state changes meaning either way, but
  differently: a conversion may not change it silently);
* ``int(step.assign_add(1))`` outside any step: a plain variable returns a
  tensor, a MirroredVariable a ``Mirrored`` value ``int()`` rejects;
* tf-keras: a ``keras.metrics.Mean()`` the script updates outside any step
  (its variables become sync-on-read under the global scope, which refuses
  ``assign_add`` in the cross-replica context).

Run: ``TFDIST_TF_DISTRIBUTE_VENV=... python benchmarks/set_strategy_vs_scope.py``
(the venv ``bash scripts/setup_runtime.sh tf-distribute`` builds). Prints one
line per probe and way.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HEAD = '''import os, sys
{legacy}import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
{keras}
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
GLOBAL = sys.argv[1] == "set"
if GLOBAL:
    tf.distribute.experimental_set_strategy(strategy)
scope = (lambda: __import__("contextlib").nullcontext()) if GLOBAL else strategy.scope
'''

PROBES = {
    "residual fit (Keras 3): final weights": ("", "import keras", '''
keras.utils.set_random_seed(0)
with scope():
    inputs = keras.Input((100,))
    x = keras.layers.Dense(64, activation="relu")(inputs)
    residual = x
    x = keras.layers.Dense(64, activation="relu")(x)
    x += residual
    model = keras.Model(inputs, keras.layers.Dense(16)(x))
    model.compile(optimizer="adam", loss="mse")
rng = np.random.RandomState(0)
model.fit(rng.rand(512, 100), rng.rand(512, 16), batch_size=64, epochs=2, shuffle=False, verbose=0)
print(type(model.weights[0].value).__name__, float(np.sum([np.abs(w).sum() for w in model.get_weights()])))
'''),
    "user step counter incremented in strategy.run, 3 steps": ("", "import keras", '''
step = tf.Variable(0)
@tf.function
def one():
    strategy.run(lambda: step.assign_add(1))
for _ in range(3):
    one()
print(type(step).__name__, int(step.numpy()))
'''),
    "int(step.assign_add(1)) outside a step": ("", "import keras", '''
step = tf.Variable(0)
print(type(step).__name__, int(step.assign_add(1)))
'''),
    "tf-keras metric updated outside a step": ('os.environ["TF_USE_LEGACY_KERAS"] = "1"\n', "import tf_keras as keras",
                                               '''
metric = keras.metrics.Mean()
metric.update_state(3.0)
metric.update_state(5.0)
print(type(metric.variables[0]).__name__, float(metric.result()))
'''),
}


def main() -> int:
    venv = os.environ.get("TFDIST_TF_DISTRIBUTE_VENV")
    python = str(Path(venv) / "bin" / "python") if venv else sys.executable
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    for label, (legacy, keras, body) in PROBES.items():
        code = HEAD.format(legacy=legacy, keras=keras) + body
        for way in ("scope", "set"):
            proc = subprocess.run([python, "-c", code, way], capture_output=True, text=True, env=env, timeout=600)
            out = proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 and proc.stdout.strip() else \
                "FAILS: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:160]
            name = "statement-level scope" if way == "scope" else "experimental_set_strategy"
            print(f"{label:55s} {name:27s} {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

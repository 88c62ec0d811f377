"""Parameter servers for real (issue 41): a tf-keras fit() script with an
embedding large enough to be split across 2 parameter servers, converted
with ``--strategy parameter-server`` and run by ``tfdist run --strategy
parameter-server -np 2 --ps 2`` as a chief, 2 workers and 2 parameter servers
on localhost (the TF 2.21 + tf-keras stack). It must exit 0, the loss must go
down, the embedding must be a sharded variable of 2 shards, and no task may
be left running. The probes (the loss per epoch, the embedding's shards) are
lines of the test's own script, printed by the chief, which runs it."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import cli_env, run_tfdist, tf_distribute_python

pytestmark = pytest.mark.slow

ROWS, BATCH = 2048, 64  # 32 steps an epoch
SCRIPT = f'''"""A tf-keras embedding model trained by fit() on synthetic NumPy arrays."""
import json

import numpy as np
import tensorflow as tf
import tf_keras as keras

VOCAB, DIM = 5000, 32  # 640,000 bytes: two shards of at least 256 KiB

rng = np.random.RandomState(0)
x_train = rng.randint(0, VOCAB, size=({ROWS}, 8))
y_train = ((x_train < VOCAB // 2).sum(axis=1) > 4).astype("float32")

model = keras.Sequential([
    keras.layers.Embedding(VOCAB, DIM),
    keras.layers.GlobalAveragePooling1D(),
    keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="binary_crossentropy",
              steps_per_execution=8)
history = model.fit(x_train, y_train, batch_size={BATCH}, epochs=3, verbose=2)
embeddings = model.layers[0].embeddings
print("PROBE", json.dumps({{"losses": history.history["loss"], "embedding": type(embeddings).__name__,
                            "shards": len(getattr(embeddings, "variables", [embeddings]))}}))
'''


def _running(script: Path) -> list:
    """Processes running the script in its directory (tasks left behind)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if script.name.encode() in cmdline and cwd == str(script.parent):
            out.append(int(pid))
    return out


@pytest.mark.timeout(420)
def test_embedding_fit_trains_on_a_chief_two_workers_and_two_parameter_servers(tmp_path):
    python = tf_distribute_python()
    (tmp_path / "train.py").write_text(SCRIPT)
    convert = subprocess.run([python, "-m", "tfdist", "convert", "train.py", "--backend", "tf-distribute",
                              "--strategy", "parameter-server", "-o", "train_dist.py"],
                             cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert convert.returncode == 0, convert.stderr
    res = run_tfdist(python, ["run", "--strategy", "parameter-server", "-np", "2", "--ps", "2", "--timeout", "300",
                              "train_dist.py"], tmp_path, timeout=360)
    assert res.returncode == 0, res
    probes = [line for line in res.stdout.splitlines() if "PROBE " in line]
    assert len(probes) == 1 and probes[0].startswith("[chief:0]<stdout>:PROBE "), res  # the chief runs the script
    probe = json.loads(probes[0].split("PROBE ", 1)[1])
    losses = probe["losses"]
    assert len(losses) == 3 and losses[-1] < 0.8 * losses[0], losses
    assert probe["embedding"] == "ShardedVariable" and probe["shards"] == 2, probe
    steps = -(-ROWS // BATCH)
    epochs = [line for line in res.stdout.splitlines() if line.startswith(f"[chief:0]<stdout>:{steps}/{steps} ")]
    assert len(epochs) == 3, res  # steps_per_epoch: the original's batches per epoch
    assert "parameter servers: chief, 2 worker(s), 2 parameter server(s)" in res.stderr, res
    assert _running(tmp_path / "train_dist.py") == []

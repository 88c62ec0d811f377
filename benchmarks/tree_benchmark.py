"""Tree conversion speed against its floor (prints figures; not a test).

Generates a tree of realistic TensorFlow training code -- the four patterns
(Keras fit, GradientTape, tf.compat.v1 Session, MonitoredTrainingSession),
helper modules (model classes imported across files), and files that do not
use TensorFlow -- then times, in the same run:

  (a) ``tfdist convert TREE -o OUT`` (in-process call of the CLI, all cores)
  (b) the floor: LibCST parse + code generation of the same .py files in one
      process

and prints both in seconds and their ratio (target: <= 1.2x). Each is timed
--repeat times, alternately, and the medians are compared: on a shared
machine single runs of the floor alone vary by 20-30%.

    python benchmarks/tree_benchmark.py [--files 300] [--jobs N] [--repeat 3] [--profile]
    python benchmarks/tree_benchmark.py --tree DIR [DIR...]   public code instead

``--tree`` times the ``.py`` files of the given folders instead of a
generated tree (copied into one tree, folders kept; notebooks and other
files left out, so that both figures cover the same files).

``--profile`` also runs cProfile over a serial conversion of the training
files and prints where the time goes.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

KERAS = '''"""Train {title} with Keras fit."""
import argparse
import os

import numpy as np
import tensorflow as tf
from tensorflow import keras
{model_import}
BATCH_SIZE = {batch}
EPOCHS = {epochs}
LOG_DIR = "./logs/{name}"

{helpers}

def make_dataset(n, features):
    rng = np.random.default_rng({seed})
    x = rng.normal(size=(n, features)).astype("float32")
    y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    return ds.shuffle(1024, seed={seed}).batch(BATCH_SIZE)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default={lr})
    args = parser.parse_args()
    ds = make_dataset({samples}, {features})
{model_build}
    model.compile(optimizer=keras.optimizers.{opt}(args.lr), loss="binary_crossentropy", metrics=["accuracy"])
    callbacks = [keras.callbacks.TensorBoard(LOG_DIR), keras.callbacks.ModelCheckpoint(os.path.join(LOG_DIR, "ckpt.weights.h5"), save_weights_only=True)]
    history = model.fit(ds, epochs=EPOCHS, callbacks=callbacks, verbose=2)
    print("final loss", history.history["loss"][-1])
    model.save_weights(os.path.join(LOG_DIR, "final.weights.h5"))


if __name__ == "__main__":
    main()
'''

TAPE = '''"""Custom training loop for {title} (tf.GradientTape)."""
import os

import numpy as np
import tensorflow as tf

BATCH_SIZE = {batch}
EPOCHS = {epochs}

{helpers}

features = np.random.default_rng({seed}).normal(size=({samples}, {features})).astype(np.float32)
labels = (features[:, 0] > 0).astype(np.int64)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle({samples}).batch(BATCH_SIZE)

model = tf.keras.Sequential([
    tf.keras.layers.Dense({units}, activation="relu"),
    tf.keras.layers.Dense(2),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.{opt}({lr})
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
manager = tf.train.CheckpointManager(checkpoint, "./checkpoints/{name}", max_to_keep=3)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(EPOCHS):
    for step, (x, y) in enumerate(dataset):
        loss = train_step(x, y)
        if step % 10 == 0:
            print(f"epoch {{epoch}} step {{step}} loss {{loss.numpy():.4f}}")
    manager.save()
'''

SESSION = '''"""TF1 graph training for {title} with tf.Session."""
import math
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
BATCH_SIZE = {batch}
NUM_STEPS = {epochs} * math.ceil({samples} / BATCH_SIZE)

{helpers}

def main():
    rng = np.random.RandomState({seed})
    x_data = rng.randn({samples}, {features}).astype(np.float32)
    y_data = x_data.sum(axis=1, keepdims=True).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((x_data, y_data)).shuffle(1024).batch(BATCH_SIZE).repeat()
    features, targets = tf.data.make_one_shot_iterator(dataset).get_next()
    w = tf.get_variable("w", [{features}, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) + b - targets))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer({lr}).minimize(loss, global_step=global_step)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(NUM_STEPS):
            _, loss_value = sess.run([train_op, loss])
            if step % 20 == 0:
                print("step %d loss %.4f" % (step, loss_value))
        saver.save(sess, "./checkpoints/{name}/model.ckpt", global_step=global_step)


if __name__ == "__main__":
    main()
'''

MONITORED = '''"""TF1 training for {title} with MonitoredTrainingSession."""
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
BATCH_SIZE = {batch}
NUM_STEPS = {epochs} * ({samples} // BATCH_SIZE)

{helpers}

x_all = np.random.randn({samples}, {features}).astype(np.float32)
y_all = np.argmax(x_all[:, :3], axis=1).astype(np.int64)
ds = tf.data.Dataset.from_tensor_slices((x_all, y_all)).shuffle({samples}).batch(BATCH_SIZE).repeat()
x, y = tf.data.make_one_shot_iterator(ds).get_next()
W = tf.get_variable("weights", [{features}, 3], initializer=tf.zeros_initializer())
logits = tf.matmul(x, W)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
global_step = tf.train.get_or_create_global_step()
train_op = tf.train.AdamOptimizer({lr}).minimize(loss, global_step=global_step)
hooks = [tf.train.StopAtStepHook(last_step=NUM_STEPS)]
with tf.train.MonitoredTrainingSession(checkpoint_dir="./checkpoints/{name}", hooks=hooks) as sess:
    while not sess.should_stop():
        _, loss_value = sess.run([train_op, loss])
print("final loss %.4f" % loss_value)
'''

NETS = '''"""Shared Keras model classes."""
from tensorflow import keras


class BaseNet{i}(keras.Model):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.hidden = keras.layers.Dense(units, activation="relu")

    def features(self, x):
        return self.hidden(x)

{helpers}
'''

MODELS = '''"""Task heads on top of the shared base (no TensorFlow import here)."""
from .nets{i} import BaseNet{i}


class Net{i}(BaseNet{i}):
    def __init__(self):
        super().__init__(units={units})
        self.head = BaseNet{i}.__init__

    def call(self, x, training=False):
        return self.features(x)

{helpers}
'''

HELPER_FUNCS = [
    '''def moving_average(values, window={k}):
    out = []
    total = 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out
''',
    '''def parse_config(path):
    config = {{}}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition("=")
            config[key.strip()] = value.strip()
    return config
''',
    '''class Timer:
    """Context manager timing a block ({k})."""

    def __init__(self, name):
        self.name = name
        self.elapsed = 0.0

    def __enter__(self):
        import time
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        import time
        self.elapsed = time.perf_counter() - self.start
        return False
''',
    '''def normalize(batch, eps=1e-{k}):
    mean = sum(batch) / max(len(batch), 1)
    var = sum((b - mean) ** 2 for b in batch) / max(len(batch), 1)
    return [(b - mean) / (var + eps) ** 0.5 for b in batch]
''',
    '''def describe(history, keys=("loss", "accuracy")):
    lines = []
    for key in keys:
        values = history.get(key, [])
        if values:
            lines.append("%s: first %.4f last %.4f best %.4f" % (key, values[0], values[-1], min(values)))
    return "\\n".join(lines)
''',
]

PLAIN = '''"""Utilities without TensorFlow."""
import json
import os

{helpers}
'''


def _helpers(rng: random.Random, lines: int, tag: str) -> str:
    out = []
    n = 0
    i = 0
    while n < lines:
        src = rng.choice(HELPER_FUNCS).format(k=rng.randint(2, 9))
        name = f"_{tag}_{i}"
        src = src.replace("def ", f"def {name}_", 1).replace("class Timer", f"class Timer{name}", 1)
        out.append(src)
        n += src.count("\n") + 2
        i += 1
    return "\n\n".join(out)


def make_tree(root: str, n_train: int = 300, seed: int = 0) -> dict:
    """Write a realistic tree; returns counts per kind."""
    rng = random.Random(seed)
    counts = {"keras": 0, "tape": 0, "session": 0, "monitored": 0, "helper": 0, "plain": 0, "other": 0}
    n_pkgs = max(1, n_train // 25)
    for p in range(n_pkgs):
        pkg = os.path.join(root, f"project{p}")
        os.makedirs(os.path.join(pkg, "models"), exist_ok=True)
        with open(os.path.join(pkg, "models", "__init__.py"), "w") as f:
            f.write(f"from .heads{p} import Net{p}\n")
        with open(os.path.join(pkg, "models", f"nets{p}.py"), "w") as f:
            f.write(NETS.format(i=p, helpers=_helpers(rng, rng.randint(30, 120), f"n{p}")))
        with open(os.path.join(pkg, "models", f"heads{p}.py"), "w") as f:
            f.write(MODELS.format(i=p, units=rng.choice([32, 64, 128]), helpers=_helpers(rng, rng.randint(20, 80), f"h{p}")))
        counts["helper"] += 3
        for u in range(3):
            with open(os.path.join(pkg, f"utils{u}.py"), "w") as f:
                f.write(PLAIN.format(helpers=_helpers(rng, rng.randint(40, 300), f"u{u}")))
            counts["plain"] += 1
        with open(os.path.join(pkg, "README.md"), "w") as f:
            f.write(f"# project {p}\n\nTraining scripts.\n")
        with open(os.path.join(pkg, "config.json"), "w") as f:
            f.write('{"lr": 0.01, "epochs": 3}\n')
        counts["other"] += 2
    kinds = ["keras", "tape", "session", "monitored"]
    for t in range(n_train):
        kind = kinds[t % 4]
        p = t % n_pkgs
        values = dict(title=f"task {t}", name=f"run{t}", batch=rng.choice([16, 32, 64]), epochs=rng.randint(1, 9),
                      seed=t, lr=rng.choice(["0.001", "0.01", "3e-4"]), samples=rng.randint(500, 5000),
                      features=rng.randint(4, 32), units=rng.choice([32, 64, 128]),
                      opt=rng.choice(["Adam", "SGD", "RMSprop"]))
        target = rng.randint(50, 400)
        base = {"keras": KERAS, "tape": TAPE, "session": SESSION, "monitored": MONITORED}[kind]
        skeleton = base.format(helpers="", model_import="", model_build="", **values).count("\n") + 6
        values["helpers"] = _helpers(rng, max(0, target - skeleton), f"t{t}")
        values["model_import"] = values["model_build"] = ""
        if kind == "keras":
            if rng.random() < 0.5:
                values["model_import"] = f"from models import Net{p}\n"
                values["model_build"] = f"    model = Net{p}()"
            else:
                values["model_build"] = ("    model = keras.Sequential([keras.layers.Dense(%d, activation=\"relu\"), "
                                         "keras.layers.Dense(1, activation=\"sigmoid\")])" % values["units"])
        src = base.format(**values)
        with open(os.path.join(root, f"project{p}", f"train_{kind}_{t}.py"), "w") as f:
            f.write(src)
        counts[kind] += 1
    return counts


def copy_py_files(dirs, root: str) -> dict:
    """Copy the .py files of dirs under root (one folder per dir); counts."""
    n = 0
    for i, d in enumerate(dirs):
        base = os.path.join(root, f"{i}_{os.path.basename(os.path.normpath(d))}")
        for path in py_files(d):
            target = os.path.join(base, os.path.relpath(path, d))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(path, target)
            n += 1
    return {"public .py files": n, "folders": len(dirs)}


def py_files(root: str):
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                out.append(os.path.join(d, name))
    return out


def floor_seconds(files) -> float:
    import libcst as cst

    t = time.perf_counter()
    for path in files:
        with open(path, "rb") as f:
            try:
                cst.parse_module(f.read()).bytes
            except cst.ParserSyntaxError:  # public code has files that do not parse (tfdist reports them)
                pass
    return time.perf_counter() - t


def tfdist_seconds(root: str, out: str, jobs: int, backend: str = "horovod") -> tuple:
    import contextlib
    import io

    from tfdist.cli import main

    argv = ["convert", root, "-o", out, "-q", "--backend", backend]
    if jobs:
        argv += ["-j", str(jobs)]
    err = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    return time.perf_counter() - t, code, err.getvalue().strip().splitlines()[-1:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=300, help="training scripts to generate (default 300)")
    ap.add_argument("--jobs", type=int, default=0, help="tfdist processes (default: one per core)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each, alternated (default 3; medians are compared)")
    ap.add_argument("--keep", action="store_true", help="keep the generated tree")
    ap.add_argument("--profile", action="store_true", help="cProfile a serial conversion of 40 training files")
    ap.add_argument("--backend", default="horovod", help="the engine converted to (default horovod, one engine "
                    "for every file, whatever TensorFlow is installed; auto chooses per file)")
    ap.add_argument("--tree", nargs="+", metavar="DIR", help="time the .py files of these folders (public code) instead")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tfdist-bench-")
    root = os.path.join(tmp, "tree")
    os.makedirs(root)
    counts = copy_py_files(args.tree, root) if args.tree else make_tree(root, args.files)
    files = py_files(root)
    n_lines = sum(open(p).read().count("\n") for p in files)
    print(f"tree: {len(files)} .py files ({n_lines} lines): {counts}; {os.cpu_count()} cores")
    floors, tooks = [], []
    for i in range(args.repeat):  # alternated, so that machine noise hits both alike
        floors.append(floor_seconds(files))
        out = os.path.join(tmp, f"out{i}")
        took, code, last = tfdist_seconds(root, out, args.jobs, args.backend)
        shutil.rmtree(out, ignore_errors=True)
        tooks.append(took)
        print(f"run {i + 1}: floor {floors[-1]:.2f} s, tfdist {took:.2f} s (exit {code}), ratio {took / floors[-1]:.2f}x")
    floor, took = statistics.median(floors), statistics.median(tooks)
    print(f"{last[0] if last else ''}")
    print(f"floor (LibCST parse + codegen, 1 process): median {floor:.2f} s [{min(floors):.2f}-{max(floors):.2f}]")
    print(f"tfdist convert TREE -o OUT ({args.jobs or os.cpu_count()} processes): median {took:.2f} s [{min(tooks):.2f}-{max(tooks):.2f}]")
    print(f"ratio of medians: {took / floor:.2f}x (target <= 1.2x)")
    if args.profile:
        import cProfile
        import pstats

        from tfdist.api import convert_source

        train = [p for p in files if args.tree or os.path.basename(p).startswith("train_")][:40]
        datas = [(p, open(p, "rb").read()) for p in train]
        prof = cProfile.Profile()
        prof.enable()
        for p, d in datas:
            convert_source(d, p, backend=args.backend)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("kept", tmp)


if __name__ == "__main__":
    main()

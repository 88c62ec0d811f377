"""Keras rule cases too small for a whole-script fixture."""

from tfdist.api import convert_source


def test_keras_callbacks_none_is_treated_as_absent():
    src = (
        "import tensorflow as tf\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), callbacks=None)\n"
    )
    out = convert_source(src, "cb_none.py").code
    assert "callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()]" in out
    assert "*None" not in out


FIT_TAIL = (
    "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
    "model.compile(optimizer='sgd', loss='mse')\n"
    "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), epochs=1)\n"
)


def test_every_spelling_of_tf_distribute_and_dtensor_is_already_distributed():
    spellings = [
        "import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\n",
        "import tensorflow as tf\nstrategy = tf.compat.v1.distribute.MirroredStrategy()\n",
        "import tensorflow as tf\nstrategy = tf.contrib.distribute.MirroredStrategy()\n",
        "import tensorflow as tf\nfrom tensorflow import distribute\n",
        "import tensorflow as tf\nfrom tensorflow.distribute import MirroredStrategy\n",
        "import tensorflow as tf\nimport tensorflow.compat.v1 as v1\nassert not isinstance(None, v1.distribute.Strategy)\n",
        "import tensorflow as tf\nfrom tensorflow.experimental import dtensor\n",
        "import tensorflow as tf\nmesh = tf.experimental.dtensor.create_mesh([('batch', 1)])\n",
        "import tensorflow as tf\nfrom tensorflow.keras.utils import multi_gpu_model\n",
    ]
    for head in spellings:
        src = head + FIT_TAIL
        if "multi_gpu_model" in head:
            src += "parallel = multi_gpu_model(model, gpus=2)\n"
        r = convert_source(src, "dist.py")
        assert r.status == "already-distributed", (head, r.status)
        assert r.data == src.encode()


def test_single_callback_of_unknown_sort_keeps_the_warning():
    """A name bound to a file-writing callback on one branch and to another one
    on the other cannot be put on rank 0 only (EarlyStopping must run everywhere)."""
    src = (
        "import sys\n"
        "import tensorflow as tf\n"
        "if len(sys.argv) > 1:\n"
        "    cb = tf.keras.callbacks.TensorBoard('logs')\n"
        "else:\n"
        "    cb = tf.keras.callbacks.EarlyStopping(patience=1)\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), callbacks=cb)\n"
    )
    r = convert_source(src, "cb_mixed.py")
    assert any("callbacks in cb are unknown" in w.message for w in r.warnings)


def test_callback_helper_used_elsewhere_is_not_rewritten():
    src = (
        "import tensorflow as tf\n"
        "def cbs():\n"
        "    return [tf.keras.callbacks.TensorBoard('logs')]\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), callbacks=cbs())\n"
        "model.evaluate(tf.zeros([8, 2]), tf.zeros([8, 1]), callbacks=cbs())\n"
    )
    r = convert_source(src, "cb_helper.py")
    assert "return [tf.keras.callbacks.TensorBoard('logs')]" in r.code
    assert any("callbacks in cbs() are unknown" in w.message for w in r.warnings)


def test_optimizer_from_a_helper_with_unknown_callers_is_not_followed():
    """optimizer=None filled from an argument tfdist cannot see: warn, do not guess."""
    src = (
        "import tensorflow as tf\n"
        "def get_optimizer():\n"
        "    return tf.keras.optimizers.Adam(0.01)\n"
        "def train(model, optimizer=None):\n"
        "    if optimizer is None:\n"
        "        optimizer = get_optimizer()\n"
        "    model.compile(optimizer=optimizer, loss='mse')\n"
        "    model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]))\n"
        "train(tf.keras.Sequential([tf.keras.layers.Dense(1)]), optimizer=make_sgd())\n"
    )
    r = convert_source(src, "opt_helper.py")
    assert "0.01 * hvd.size()" not in r.code
    assert any("where optimizer is created is unknown" in w.message for w in r.warnings)


def test_endless_input_after_a_shuffle_of_unknown_data_is_not_sharded():
    """A .repeat() pipeline whose data comes from a parameter: its order may differ per rank."""
    src = (
        "import tensorflow as tf\n"
        "def train(ds, model):\n"
        "    ds = ds.shuffle(100).repeat().batch(8)\n"
        "    model.fit(ds, epochs=1, steps_per_epoch=10)\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "train(load_data(), model)\n"
    )
    r = convert_source(src, "endless.py")
    assert ".shard(" not in r.code
    assert any(w.rule == "data-division" for w in r.warnings)


def test_every_optimizer_class_is_known_by_its_compile_string_on_both_engines():
    """compile(optimizer="lion") and the class table are one fact: every
    class tfdist knows a default rate for converts from its string too, with
    that rate written out and scaled."""
    from tfdist import apis
    for name, lr in apis.KERAS_OPTIMIZER_DEFAULT_LR.items():
        src = ("import tensorflow as tf\n"
               "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
               f"model.compile(optimizer='{name.lower()}', loss='mse')\n"
               "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]), epochs=1)\n")
        for backend, size in (("horovod", "hvd.size()"), ("tf-distribute", "strategy.num_replicas_in_sync")):
            result = convert_source(src, "opt.py", backend=backend)
            assert result.status == "converted", (name, backend, result.error)
            assert f"tf.keras.optimizers.{name}(learning_rate={lr!r} * {size})" in result.code, (name, backend)


def test_fault_tolerant_puts_backup_and_restore_first_in_every_callbacks_form():
    from tfdist.assembly import pipeline_key
    key = pipeline_key("tf-distribute", "fault-tolerant")
    backup = "tf.keras.callbacks.BackupAndRestore(backup_dir='./backup_and_restore')"  # the file's quotes
    head = ("import tensorflow as tf\n"
            "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            "model.compile(optimizer='sgd', loss='mse')\n"
            "stop = tf.keras.callbacks.EarlyStopping()\n"
            "cbs = [stop]\n")
    cases = {
        "": f"callbacks=[{backup}]",
        ", callbacks=None": f"callbacks=[{backup}]",
        ", callbacks=[stop]": f"callbacks=[{backup}, stop]",
        ", callbacks=cbs": f"callbacks=[{backup}, *cbs]",
    }
    for tail, expected in cases.items():
        src = head + f"model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]){tail})\n"
        result = convert_source(src, "ft.py", backend=key)
        assert result.status == "converted", result.error
        assert expected in result.code, (tail, result.code)
        assert any(c.rule == "fault-tolerance" for c in result.changes)
    plain = convert_source(head + "model.fit(tf.zeros([8, 2]), tf.zeros([8, 1]))\n", "ft.py", backend="tf-distribute")
    assert "BackupAndRestore" not in plain.code

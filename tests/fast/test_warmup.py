"""--warmup-epochs: pipelines built per Options (any K), what is refused,
and warmed-up output converted again changes nothing."""

import pytest

from fixture_cases import FIXTURES, glob
from option_keys import options_of
from tfdist.api import convert_file, convert_source
from tfdist.assembly import pipeline
from tfdist.options import Options, OptionsError

WARMUP_CASES = sorted((p.parent, p.name[len("expected."):-len(".py")])
                      for p in glob("*/*/expected.*+warmup-*.py"))
KERAS = FIXTURES / "keras" / "sequential_dataset" / "input.py"


def test_there_are_warmup_fixtures_for_both_engines_and_every_pattern():
    keys = {key.split("+")[0] for _, key in WARMUP_CASES}
    assert keys == {"horovod", "tf-distribute"}
    patterns = {case.parent.name for case, _ in WARMUP_CASES}
    assert patterns == {"keras", "gradient_tape", "session", "monitored_session"}
    # a warmup around the script's own schedule, for tapes and TF1
    assert any(case.name == "schedule_in_main" for case, _ in WARMUP_CASES)
    assert any(case.name == "exponential_decay" for case, _ in WARMUP_CASES)


@pytest.mark.parametrize("case,key", WARMUP_CASES, ids=lambda v: v if isinstance(v, str) else v.name)
def test_warmed_up_output_converted_again_changes_nothing(case, key):
    data = (case / f"expected.{key}.py").read_bytes()
    again = convert_source(data, "expected.py", backend=options_of(key))
    assert again.status == "already-distributed"
    assert again.data == data


@pytest.mark.parametrize("k", [1, 2, 7, 40])
def test_any_number_of_epochs_builds_its_pipeline(k):
    options = Options(backend="horovod", lr_scaling="sqrt", warmup_epochs=k)
    assert pipeline(options) is pipeline(Options(backend="horovod", lr_scaling="sqrt", warmup_epochs=k))  # cached
    assert pipeline(options).backend.warmup_epochs == k
    result = convert_file(KERAS, backend=options)
    assert result.status == "converted"
    assert f"LearningRateWarmup({k}, hvd.size() ** 0.5)".encode() in result.data
    rated = [c for c in result.changes if c.rule == "lr-scaling"]
    assert rated and all(f"--warmup-epochs {k}" in c.message for c in rated)


@pytest.mark.parametrize("fields,needle", [
    (dict(lr_scaling="none", warmup_epochs=1), "--lr-scaling linear or sqrt"),
    (dict(backend="tf-distribute", lr_scaling="none", warmup_epochs=2), "--lr-scaling linear or sqrt"),
    (dict(warmup_epochs=0), "--warmup-epochs needs a whole number of epochs >= 1, not 0"),
    (dict(warmup_epochs="1"), "--warmup-epochs needs a whole number of epochs >= 1, not '1'"),
    (dict(warmup_epochs=True), ">= 1"),
    (dict(steps_per_epoch=10), "--steps-per-epoch alone"),
    (dict(warmup_epochs=1, steps_per_epoch=0), "not S = 0"),
    (dict(lr_scaling="cubic"), "unknown learning-rate scaling 'cubic'"),
    (dict(backend="horovod+warmup-1"), "unknown backend 'horovod+warmup-1'"),
    (dict(fault_tolerant=True), "--fault-tolerant needs --backend tf-distribute"),
])
def test_bad_options_are_refused_once_with_the_reason(fields, needle):
    """Options validates itself when it is built: nothing downstream sees a bad one."""
    with pytest.raises(OptionsError) as e:
        Options(**{"backend": "horovod", **fields})
    assert needle in str(e.value)


@pytest.mark.parametrize("pattern,case", [("session", "chained_minimize"), ("monitored_session", "chief_only_hooks"),
                                          ("gradient_tape", "while_step_iterator")])
def test_loops_whose_epoch_is_not_visible_are_refused_naming_the_option(pattern, case):
    """A TF1 graph is built before any loop runs, and a step loop with no
    epoch loop around it shows no epoch: refused (nothing written), naming
    --steps-per-epoch; with it, converted."""
    path = FIXTURES / pattern / case / "input.py"
    result = convert_source(path.read_bytes(), str(path), backend=Options(backend="horovod", warmup_epochs=1))
    assert result.status == "unsupported" and result.data is None
    assert "--steps-per-epoch S" in result.error and result.error_line is not None
    given = convert_source(path.read_bytes(), str(path), backend=Options(backend="horovod", warmup_epochs=1, steps_per_epoch=25))
    assert given.status == "converted", given.error
    assert b"25 // hvd.size()" in given.data


def test_a_tape_loop_counts_its_epoch_in_batches_of_the_dataset_it_iterates():
    path = FIXTURES / "gradient_tape" / "tf_function_step" / "input.py"
    result = convert_source(path.read_bytes(), str(path), backend=Options(backend="horovod", warmup_epochs=1))
    assert result.status == "converted", result.error
    lines = result.data.decode().splitlines()
    set_at = lines.index("LearningRateWarmupSchedule.steps_per_epoch = int(train_ds.cardinality())")
    assert lines[set_at + 1].startswith("for epoch in range(EPOCHS):")  # right before the epoch loop
    assert "optimizer = tf.keras.optimizers.Adam(learning_rate=LearningRateWarmupSchedule(LEARNING_RATE * hvd.size(), " \
           "hvd.size(), 1))" in lines


TAPE = """import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.1)
x = tf.random.normal([64, 4])
for epoch in range(3):
    ds = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).shuffle(64).batch(8)
    for xb, yb in ds:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xb) - yb))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_a_dataset_passed_to_the_training_function_is_counted_there():
    """The TensorFlow DCGAN tutorial's shape: ``def train(dataset, epochs)``."""
    src = b"""import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(1e-4)


@tf.function
def train_step(batch):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(batch))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


def train(dataset, epochs):
    for epoch in range(epochs):
        for image_batch in dataset:
            train_step(image_batch)


train(tf.data.Dataset.from_tensor_slices(tf.random.normal([256, 4])).batch(32), 3)
"""
    result = convert_source(src, "train.py", backend=Options(backend="horovod", warmup_epochs=1))
    assert result.status == "converted", result.error
    assert (b"def train(dataset, epochs):\n"
            b"    # Horovod: the learning-rate warmup counts epochs in this process's batches of dataset.\n"
            b"    LearningRateWarmupSchedule.steps_per_epoch = int(dataset.cardinality())\n"
            b"    for epoch in range(epochs):") in result.data


def test_a_dataset_rebuilt_every_epoch_is_not_counted_before_the_loop():
    """Its batches could be counted only inside the epoch loop: refused at the step loop, not guessed."""
    result = convert_source(TAPE.encode(), "train.py", backend=Options(backend="horovod", warmup_epochs=1))
    assert result.status == "unsupported" and result.error_line == 8
    assert "ds is not bound once and for all before the epoch loop at line 6" in result.error
    assert convert_source(TAPE.encode(), "train.py", backend=Options(backend="horovod", warmup_epochs=1, steps_per_epoch=8)).status == "converted"


TF1 = """import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
x = tf.random.normal([8, 4])
loss = tf.reduce_mean(tf.square(tf.layers.dense(x, 1)))
{before}opt = tf.train.GradientDescentOptimizer(0.1)
{after}train_op = opt.minimize(loss{step})
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(100):
        sess.run(train_op)
"""


@pytest.mark.parametrize("before,after,step,line,needle", [
    ("", "", "", 7, "is given none: pass global_step="),
    ("", "gs = tf.Variable(0, trainable=False)\n", ", global_step=gs", 8, "gs is not known where"),
])
def test_a_tf1_warmup_needs_the_global_step_where_the_optimizer_is_built(before, after, step, line, needle):
    src = TF1.format(before=before, after=after, step=step).encode()
    result = convert_source(src, "train.py", backend=Options(backend="horovod", warmup_epochs=1, steps_per_epoch=10))
    assert result.status == "unsupported" and result.error_line == line, result.error
    assert needle in result.error


@pytest.mark.parametrize("step", ["gs", "tf.train.get_or_create_global_step()"])
def test_a_tf1_warmup_counts_the_global_step_minimize_increments(step):
    before = "gs = tf.train.get_or_create_global_step()\n" if step == "gs" else ""
    src = TF1.format(before=before, after="", step=f", global_step={step}").encode()
    result = convert_source(src, "train.py", backend=Options(backend="horovod", warmup_epochs=1, steps_per_epoch=10))
    assert result.status == "converted", result.error
    assert (f"tf.train.GradientDescentOptimizer(learning_rate_warmup(0.1 * hvd.size(), {step}, hvd.size(), "
            f"1 * max(1, 10 // hvd.size())))").encode() in result.data
    compile(result.data, "converted.py", "exec")


@pytest.mark.parametrize("backend", [Options(backend="horovod", warmup_epochs=1, steps_per_epoch=16), Options(backend="tf-distribute", warmup_epochs=1, steps_per_epoch=16)])
def test_one_optimizer_stepped_by_fit_and_by_a_tape_is_refused(backend):
    """fit()'s callback sets the rate; the loop's warmup is a schedule around
    it: both on one optimizer would fail or ramp twice."""
    path = FIXTURES / "keras" / "fit_then_tape" / "input.py"
    result = convert_source(path.read_bytes(), str(path), backend=backend)
    assert result.status == "unsupported" and result.error_line == 5
    assert "stepped both by fit()" in result.error


def test_a_bare_backend_name_is_that_engine_with_its_default_options():
    assert convert_file(KERAS, backend="horovod").data == convert_file(KERAS, backend=Options(backend="horovod")).data
    with pytest.raises(OptionsError, match="unknown backend 'horovod\\+lr-sqrt'"):
        convert_file(KERAS, backend="horovod+lr-sqrt")  # the old string keys are gone


FIT_SCHEDULE = b'''import tensorflow as tf

schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=100, decay_rate=0.9)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(schedule), loss="mse")
OTHER
model.fit(tf.data.Dataset.range(8).batch(2), epochs=1)
'''


@pytest.mark.parametrize("backend", [Options(backend="horovod", warmup_epochs=1), Options(backend="tf-distribute", warmup_epochs=1)])
def test_a_schedule_in_fit_is_warmed_up_by_a_schedule_around_it(backend):
    """fit()'s warmup callback sets the rate, which a schedule computes
    itself: the schedule is wrapped instead, and a callback hands fit()'s
    steps per epoch to the wrapper."""
    result = convert_source(FIT_SCHEDULE.replace(b"OTHER", b""), "train.py", backend=backend)
    assert result.status == "converted", result.error
    size = "hvd.size()" if backend.backend == "horovod" else "strategy.num_replicas_in_sync"
    assert f"SGD(LearningRateWarmupSchedule(schedule, {size}, 1))".encode() in result.data
    assert b"LearningRateWarmupEpoch()]" in result.data
    assert b"LearningRateWarmupSchedule.steps_per_epoch = self.params.get(\"steps\")" in result.data
    assert b"LearningRateWarmupCallback" not in result.data and b"class LearningRateWarmup(" not in result.data


def test_fit_optimizers_mixing_a_schedule_and_a_plain_rate_are_refused():
    other = (b"plain = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
             b"plain.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=\"mse\")\n")
    result = convert_source(FIT_SCHEDULE.replace(b"OTHER", other), "train.py", backend=Options(backend="horovod", warmup_epochs=1))
    assert result.status == "unsupported" and result.error_line == 9  # the fit() call
    assert "mix a learning-rate schedule and a plain rate" in result.error

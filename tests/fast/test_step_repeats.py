"""``for _ in range(k):`` around a step function's updates (k updates on its one batch) is part of
the step: the loop over the data that calls the function is the training loop
(fixtures/gradient_tape/step_repeats_updates_k_times has the whole conversion). A loop that reads
what it counts is a loop of its own, as before."""
from pathlib import Path

import pytest

from tfdist.api import convert_source

SOURCE = (Path(__file__).resolve().parent / "fixtures" / "gradient_tape" / "step_repeats_updates_k_times"
          / "input.py").read_text()


@pytest.mark.parametrize("loop", ["for _ in range(k):", "for repeat in range(k):", "for _ in range(2):"])
def test_a_repetition_inside_the_step_leaves_the_data_loop_the_training_loop(loop):
    result = convert_source(SOURCE.replace("for _ in range(k):", loop), "gan.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "run_on_replicas(training_step, generator, discriminator, batch, batch_size=BATCH_SIZE, k=1)" in result.code
    assert "for batch in strategy.experimental_distribute_dataset(dataset):" in result.code


ARRAY = SOURCE.replace("train_dataset = tf.data.Dataset.from_tensor_slices(data).shuffle(512).batch(BATCH_SIZE)",
                        "train_dataset = data.reshape(-1, BATCH_SIZE, 8)")


def test_a_repetition_in_a_step_handed_each_batch_of_an_array_too():
    """The data loop iterates a NumPy array of batches (a held-out GAN's shape): the same."""
    result = convert_source(ARRAY, "gan.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "run_on_replicas(training_step, generator, discriminator, batch, batch_size=BATCH_SIZE, k=1)" in result.code


def test_an_epoch_counter_handed_to_the_function_is_no_data_loop():
    """``for epoch in range(n): train(epoch)`` hands its counter, not data: a range loop there
    drawing nothing of its own stays a loop of steps (nothing taken as a repetition)."""
    source = REPLAY.replace("for i in range(10):\n        rows = memory[np.random.randint(0, len(memory), 32)]",
                            "for i in range(10):\n        rows = memory[:32]").replace(
        "def train(q, memory, optimizer):", "def train(q, memory, optimizer, episode):").replace(
        "train(q, memory, optimizer)\n", "train(q, memory, optimizer, episode)\n")
    result = convert_source(source, "dqn.py", backend="tf-distribute")
    assert "for i in range(10):" not in (result.code or "") or result.status != "converted", result.status


def test_a_loop_that_reads_its_counter_is_no_repetition():
    """``for i in range(k):`` slicing the batch by ``i``: each pass reads other rows -- not the same
    update repeated, so not taken as part of the step."""
    source = SOURCE.replace("for _ in range(k):", "for i in range(k):").replace(
        "d_real = discriminator(images)", "d_real = discriminator(images[i:])")
    result = convert_source(source, "gan.py", backend="tf-distribute")
    assert not (result.status == "converted" and "run_on_replicas(training_step" in (result.code or "")), result.status


REPLAY = '''import numpy as np
import tensorflow as tf

q = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
optimizer = tf.keras.optimizers.Adam(1e-3)
memory = np.random.rand(1000, 5).astype("float32")


def train(q, memory, optimizer):
    for i in range(10):
        rows = memory[np.random.randint(0, len(memory), 32)]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(q(rows[:, :4]) - rows[:, 4:]))
        grads = tape.gradient(loss, q.trainable_variables)
        optimizer.apply_gradients(zip(grads, q.trainable_variables))


for episode in range(100):
    train(q, memory, optimizer)
'''


def test_a_loop_drawing_a_batch_each_pass_stays_the_training_loop():
    """``for i in range(10):`` drawing rows from a replay buffer each pass, in a function an
    episode loop calls (no dataset there): the inner loop is the training loop, as before."""
    result = convert_source(REPLAY, "dqn.py", backend="tf-distribute")
    assert result.status == "converted", result.error
    assert "for i in range(max(1, 10 // strategy.num_replicas_in_sync)):" in result.code, result.code

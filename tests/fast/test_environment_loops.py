"""Training inside loops that step a reinforcement-learning environment
(facts/environments.py, rules/environment_loops.py): refused on both engines
when the environment may decide how many training steps a process runs;
converted when every process runs a fixed number of updates. The same
programs written with other import spellings, the environment held by an
agent object, the training in a method: the same answer."""
from __future__ import annotations

import textwrap

import pytest

from tfdist.api import convert_source

ENGINES = ("horovod", "tf-distribute")
MODEL = '''model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
optimizer = tf.keras.optimizers.Adam(1e-3)


def update(states, targets):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(states) - targets))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss
'''


def _convert(src: str, engine: str):
    return convert_source(textwrap.dedent(src).encode(), "agent.py", backend=engine)


def _refused(result) -> bool:
    return result.status == "unsupported" and "reinforcement-learning environment" in (result.error or "")


EPISODES_UNTIL_SOLVED = '''import gym
import numpy as np
import tensorflow as tf

env = gym.make("CartPole-v1")
''' + MODEL + '''
solved = False
while not solved:
    state, done, total = env.reset(), False, 0.0
    while not done:
        state, reward, done, info = env.step(np.random.randint(2))
        total += reward
        update(state[None], np.zeros((1, 2)))
    solved = total > 195
'''


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("variant", [
    "as written",
    "gym imported under another name",
    "make imported from gym",
    "environment held by an agent object",
    "a for loop over episodes with a break",
])
def test_episode_loops_that_train_are_refused_with_their_line(variant, engine):
    src = EPISODES_UNTIL_SOLVED
    if variant == "gym imported under another name":
        src = src.replace("import gym\n", "import gym as g\n").replace("gym.make(", "g.make(")
    elif variant == "make imported from gym":
        src = src.replace("import gym\n", "from gym import make as make_env\n").replace("gym.make(", "make_env(")
    elif variant == "environment held by an agent object":
        src = src.replace('env = gym.make("CartPole-v1")\n', '''

class Agent:
    def __init__(self):
        self.env = gym.make("CartPole-v1")

    def play(self):
        state, done, total = self.env.reset(), False, 0.0
        while not done:
            state, reward, done, info = self.env.step(np.random.randint(2))
            total += reward
            update(state[None], np.zeros((1, 2)))
        return total


agent = Agent()
''').replace('''    state, done, total = env.reset(), False, 0.0
    while not done:
        state, reward, done, info = env.step(np.random.randint(2))
        total += reward
        update(state[None], np.zeros((1, 2)))
    solved = total > 195
''', "    solved = agent.play() > 195\n")
    elif variant == "a for loop over episodes with a break":
        src = src.replace("solved = False\nwhile not solved:\n", "for episode in range(500):\n").replace(
            "    solved = total > 195\n", "    if total > 195:\n        break\n").replace(
            "    while not done:\n", "    for t in range(200):\n").replace(
            "        update(state[None], np.zeros((1, 2)))\n", "        update(state[None], np.zeros((1, 2)))\n"
            "        if done:\n            break\n")
    result = _convert(src, engine)
    assert _refused(result), (result.status, result.error)
    # the first loop both stepping and training: the episode loop, or the agent's own loop
    loop = ("        while not done:" if "class Agent" in src else "while not solved:" if "while not solved:" in src
            else "for episode in range(500):")
    assert result.error_line == next(i for i, l in enumerate(src.splitlines(), 1) if l.startswith(loop))


FIXED_UPDATES = '''import gym
import numpy as np
import tensorflow as tf

env = gym.make("CartPole-v1")
''' + MODEL + '''
state = env.reset()
for update_number in range(100):
    states = []
    for t in range(32):
        state, reward, done, info = env.step(np.random.randint(2))
        states.append(state)
        if done:
            state = env.reset()
    update(np.array(states), np.zeros((32, 2)))
'''


@pytest.mark.parametrize("engine", ENGINES)
def test_a_fixed_number_of_updates_on_fixed_rollouts_is_not_refused_for_its_environment(engine):
    """A synchronous actor-critic's shape: range(n) updates, each on a rollout of 32 steps
    (the environment reset when done, no break): every process runs the same updates."""
    result = _convert(FIXED_UPDATES, engine)
    assert not _refused(result), result.error


@pytest.mark.parametrize("engine", ENGINES)
def test_an_early_stop_inside_the_updates_is_refused(engine):
    """PPO's shape: a fixed number of epochs, but the policy updates of each stop early on
    a KL estimate each process computes from its own experience."""
    src = FIXED_UPDATES.replace("    update(np.array(states), np.zeros((32, 2)))\n",
                                "    for i in range(80):\n        kl = update(np.array(states), np.zeros((32, 2)))\n"
                                "        if kl > 0.01:\n            break\n")
    result = _convert(src, engine)
    assert _refused(result), (result.status, result.error)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_model_step_method_is_no_environment(engine):
    """``model.step`` of a Keras model unpacked into three names is the model's, not an
    environment's: nothing refused for it."""
    src = '''import tensorflow as tf


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x)

    def step(self, x):
        return x, x, x


model = Net()
model.compile(optimizer="sgd", loss="mse")
x = tf.random.normal([64, 4])
y = tf.reduce_sum(x, axis=1, keepdims=True)
while True:
    a, b, c = model.step(x)
    model.fit(x, y, batch_size=16, epochs=1)
    break
'''
    result = _convert(src, engine)
    assert not _refused(result), result.error

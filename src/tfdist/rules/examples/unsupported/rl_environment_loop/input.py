"""A deep Q-learning agent: episodes of a Gym environment, a replay buffer,
and a gradient step every few frames until the agent is good enough."""
import random

import gym
import numpy as np
import tensorflow as tf

env = gym.make("CartPole-v1")
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(32, activation="relu"),
                             tf.keras.layers.Dense(2)])
optimizer = tf.keras.optimizers.Adam(1e-3)
buffer, frame, running = [], 0, 0.0

while True:
    state, done, total = env.reset(), False, 0.0
    while not done:
        action = random.randrange(2) if random.random() < 0.1 else int(tf.argmax(model(state[None])[0]))
        next_state, reward, done, _ = env.step(action)
        buffer.append((state, action, reward, next_state, done))
        state, total, frame = next_state, total + reward, frame + 1
        if frame % 4 == 0 and len(buffer) > 64:
            s, a, r, s2, d = map(np.array, zip(*random.sample(buffer, 64)))
            target = r + 0.99 * (1 - d) * tf.reduce_max(model(s2), axis=1)
            with tf.GradientTape() as tape:
                q = tf.reduce_sum(model(s) * tf.one_hot(a, 2), axis=1)
                loss = tf.reduce_mean(tf.square(target - q))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
    running = 0.05 * total + 0.95 * running
    if running > 195:
        break

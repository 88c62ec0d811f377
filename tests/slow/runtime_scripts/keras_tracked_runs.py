"""Keras fit reported to two experiment trackers and a progress bar, as
2026 training scripts are: a Weights & Biases run (config read back for the
hyperparameters, a metrics callback, a final log), an MLflow run opened by a
with-statement around the training, and a tqdm bar over an evaluation loop.
Run as is on N processes, it opens N runs of each tracker."""
import mlflow
import numpy as np
import tensorflow as tf
import wandb
from tqdm import tqdm
from wandb.integration.keras import WandbMetricsLogger

run = wandb.init(project="tfdist-tracked", config={"epochs": 2, "learning_rate": 0.05})
config = wandb.config

rng = np.random.RandomState(0)
x = rng.rand(256, 8).astype("float32")
y = (x.sum(axis=1) > 4).astype("int64")
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(2)])
model.compile(optimizer=tf.keras.optimizers.SGD(config.learning_rate),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
mlflow.set_experiment("tfdist-tracked")
with mlflow.start_run():
    mlflow.log_params({"epochs": config.epochs, "learning_rate": config.learning_rate})
    history = model.fit(x, y, epochs=config.epochs, batch_size=32, callbacks=[WandbMetricsLogger()])
    mlflow.log_metric("final_loss", history.history["loss"][-1])
correct = 0
for start in tqdm(range(0, len(x), 64), desc="evaluating"):
    logits = model(x[start:start + 64])
    correct += int(np.sum(np.argmax(logits, axis=1) == y[start:start + 64]))
wandb.log({"accuracy": correct / len(x)})
run.finish()

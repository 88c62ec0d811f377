"""Imbalanced classification (the "Classification on imbalanced data"
tutorial shape): a model-making function with an output bias initialised
from the class ratio, several metrics (AUC, precision, recall), class
weights computed from the label counts, EarlyStopping on val_auc."""
import numpy as np
import tensorflow as tf
from tensorflow import keras

rng = np.random.default_rng(10)
features = rng.normal(size=(2000, 10)).astype("float32")
labels = (features[:, 0] + 0.5 * features[:, 1] > 1.6).astype("float32").reshape(-1, 1)
neg, pos = np.bincount(labels[:, 0].astype("int64"))
initial_bias = np.log([pos / neg])

METRICS = [
    keras.metrics.BinaryCrossentropy(name="cross entropy"),
    keras.metrics.AUC(name="auc"),
    keras.metrics.Precision(name="precision"),
    keras.metrics.Recall(name="recall"),
]


def make_model(metrics=METRICS, output_bias=None):
    if output_bias is not None:
        output_bias = tf.keras.initializers.Constant(output_bias)
    model = keras.Sequential([
        keras.layers.Input(shape=(features.shape[-1],)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(1, activation="sigmoid", bias_initializer=output_bias),
    ])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-2),
                  loss=keras.losses.BinaryCrossentropy(), metrics=metrics)
    return model


total = neg + pos
class_weight = {0: (1 / neg) * (total / 2.0), 1: (1 / pos) * (total / 2.0)}
early_stopping = tf.keras.callbacks.EarlyStopping(monitor="val_auc", verbose=1, patience=10, mode="max",
                                                  restore_best_weights=True)
weighted_model = make_model(output_bias=initial_bias)
weighted_history = weighted_model.fit(features, labels, batch_size=64, epochs=4, callbacks=[early_stopping],
                                      validation_split=0.2, class_weight=class_weight)

"""Time-series forecasting (the "Time series forecasting" tutorial shape):
windows of a synthetic multivariate series made with
keras.utils.timeseries_dataset_from_array, an LSTM(return_sequences=False)
model, a compile_and_fit helper with EarlyStopping."""
import numpy as np
import tensorflow as tf

t = np.arange(2000, dtype="float32")
series = np.stack([np.sin(t / 20), np.cos(t / 33), np.sin(t / 7) * 0.3], axis=1).astype("float32")
INPUT_WIDTH = 24
inputs = series[:-INPUT_WIDTH]
targets = series[INPUT_WIDTH:, 0]
train_ds = tf.keras.utils.timeseries_dataset_from_array(
    inputs[:1600], targets[:1600], sequence_length=INPUT_WIDTH, batch_size=32, shuffle=True, seed=0)
val_ds = tf.keras.utils.timeseries_dataset_from_array(
    inputs[1600:], targets[1600:], sequence_length=INPUT_WIDTH, batch_size=32)

MAX_EPOCHS = 4


def compile_and_fit(model, train, val, patience=2):
    early_stopping = tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=patience, mode="min")
    model.compile(loss=tf.keras.losses.MeanSquaredError(), optimizer=tf.keras.optimizers.Adam(),
                  metrics=[tf.keras.metrics.MeanAbsoluteError()])
    return model.fit(train, epochs=MAX_EPOCHS, validation_data=val, callbacks=[early_stopping])


lstm_model = tf.keras.models.Sequential([
    tf.keras.layers.Input(shape=(INPUT_WIDTH, 3)),
    tf.keras.layers.LSTM(16, return_sequences=False),
    tf.keras.layers.Dense(units=1),
])
history = compile_and_fit(lstm_model, train_ds, val_ds)
print(history.history["val_mean_absolute_error"][-1])

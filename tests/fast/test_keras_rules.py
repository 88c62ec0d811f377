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

"""Functional model with two inputs and two outputs (the "Functional API"
guide's ticket-ranking shape): named inputs fed as a dict, per-output
losses and loss_weights, trained on arrays."""
import numpy as np
from tensorflow import keras
from tensorflow.keras import layers

num_tags = 6
num_words = 100
num_departments = 3
rng = np.random.default_rng(13)
title_data = rng.integers(0, num_words, size=(768, 10))
tags_data = rng.integers(0, 2, size=(768, num_tags)).astype("float32")
priority_targets = (tags_data[:, :2].sum(axis=1, keepdims=True) / 2).astype("float32")
dept_targets = keras.utils.to_categorical(tags_data[:, 2:5].argmax(axis=1), num_departments)

title_input = keras.Input(shape=(None,), name="title")
tags_input = keras.Input(shape=(num_tags,), name="tags")
title_features = layers.Embedding(num_words, 16)(title_input)
title_features = layers.GlobalAveragePooling1D()(title_features)
x = layers.concatenate([title_features, tags_input])
priority_pred = layers.Dense(1, name="priority")(x)
department_pred = layers.Dense(num_departments, name="department")(x)
model = keras.Model(inputs=[title_input, tags_input], outputs={"priority": priority_pred,
                                                               "department": department_pred})

model.compile(optimizer=keras.optimizers.RMSprop(1e-2),
              loss={"priority": keras.losses.MeanSquaredError(),
                    "department": keras.losses.CategoricalCrossentropy(from_logits=True)},
              loss_weights={"priority": 1.0, "department": 0.2})
model.fit({"title": title_data, "tags": tags_data},
          {"priority": priority_targets, "department": dept_targets},
          epochs=3, batch_size=32)

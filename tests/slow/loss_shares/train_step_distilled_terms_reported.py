"""A distiller's train_step (the shape of a DeiT / knowledge-distillation
trainer): two Keras Loss objects handed to the model's own compile(), their
values averaged, ``loss = (student_loss + distill_loss) / 2``, and each
term reported by a metric. Keras divides both terms by the replicas under a
strategy, so the loss differentiated is each replica's share already; the
terms are multiplied back only where they are reported (multiplying them
back where they are made would differentiate N times the mean)."""
import json

import numpy as np
import tensorflow as tf

BATCH, RATE = 128, 0.05


class Distiller(tf.keras.Model):
    def __init__(self, student, teacher):
        super().__init__()
        self.student = student
        self.teacher = teacher
        self.student_tracker = tf.keras.metrics.Mean(name="student_loss")
        self.distill_tracker = tf.keras.metrics.Mean(name="distill_loss")

    def compile(self, optimizer, student_loss_fn, distill_loss_fn):
        super().compile(optimizer=optimizer)
        self.student_loss_fn = student_loss_fn
        self.distill_loss_fn = distill_loss_fn

    def call(self, inputs):
        return self.student(inputs)

    def train_step(self, data):
        xb, yb = data
        hint = self.teacher(xb)
        with tf.GradientTape() as tape:
            pred = self.student(xb, training=True)
            student_loss = self.student_loss_fn(yb, pred)
            distill_loss = self.distill_loss_fn(hint, pred)
            loss = (student_loss + distill_loss) / 2
        grads = tape.gradient(loss, self.student.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.student.trainable_variables))
        self.student_tracker.update_state(student_loss)
        self.distill_tracker.update_state(distill_loss)
        return {"student_loss": self.student_tracker.result(), "distill_loss": self.distill_tracker.result()}


x = np.random.RandomState(2).randn(256, 8).astype("float32")
y = (x @ np.arange(8, dtype="float32")[:, None] * 0.1).astype("float32")
student = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1, kernel_initializer="zeros")])
teacher = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1, kernel_initializer="ones")])
teacher.trainable = False
model = Distiller(student, teacher)
model.compile(optimizer=tf.keras.optimizers.SGD(RATE), student_loss_fn=tf.keras.losses.MeanSquaredError(),
              distill_loss_fn=tf.keras.losses.MeanAbsoluteError())
model.fit(x, y, batch_size=BATCH, epochs=4, shuffle=False, verbose=0)
print("WEIGHTS " + json.dumps(np.concatenate([w.ravel() for w in student.get_weights()]).tolist()))

"""The helper module of train.py: pictures of what the model makes, written to a file per
epoch -- opened for appending, one line per process that writes it, so a test can count the
writers."""
import numpy as np


def save_samples(model, epoch, noise):
    samples = model(noise, training=False).numpy()
    with open(f"samples_{epoch}.txt", "a") as out:
        out.write(f"{np.round(samples.mean(), 4)}\n")

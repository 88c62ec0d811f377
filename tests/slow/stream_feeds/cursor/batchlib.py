import numpy as np


class Corpus:
    """Batches handed out by a cursor it advances, reshuffled with NumPy's global generator at each wrap."""

    def __init__(self, features, labels):
        self.features, self.labels = features, labels
        self.order = np.random.permutation(len(features))
        self.cursor = 0

    def next_batch(self, size):
        if self.cursor + size > len(self.order):
            self.order, self.cursor = np.random.permutation(len(self.features)), 0
        rows = self.order[self.cursor:self.cursor + size]
        self.cursor += size
        return self.features[rows], self.labels[rows]

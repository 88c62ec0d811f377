"""Synthetic MNIST with the API and semantics of TF 1.x's
``tensorflow/contrib/learn/python/learn/datasets/mnist.py`` (which
``tensorflow.examples.tutorials.mnist.input_data`` re-exported):

* ``read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=float32,
  reshape=True, validation_size=5000, seed=None, source_url=...)`` returns
  ``Datasets(train, validation, test)``; the first ``validation_size`` training
  images become the validation set;
* ``DataSet.__init__`` seeds NumPy's global RNG like the original
  (``numpy.random.seed(seed1 if seed is None else seed2)`` with
  ``random_seed.get_seed(seed)``: TensorFlow's graph-level seed, or fresh
  entropy when none is set);
* ``next_batch(batch_size, fake_data=False, shuffle=True)`` shuffles with
  NumPy's global RNG at the start of the first epoch and at every epoch
  boundary, where a batch is completed from the next epoch's order;
* images are uint8 28x28 scaled to float32 [0, 1] (flattened to 784 with
  reshape=True); labels uint8, or float64 one-hot rows with one_hot=True.

Sizes are the real ones divided by SCALE (default 50, env
TFDIST_MNIST_STANDIN_SCALE): a training file of 60000/50 = 1200 images of
which validation_size/50 (default 100) are held out, and 200 test images.
Nothing is downloaded or written; ``train_dir`` is ignored.

Every image has a bright 10x5 block in one of ten places on a dim noisy
background; ``label_of(image)`` is the block with the largest sum, so a
label is a deterministic function of its image (any dtype or shape).
"""
import collections
import os

import numpy

SCALE = max(1, int(os.environ.get("TFDIST_MNIST_STANDIN_SCALE", "50")))
TRAIN_FILE_SIZE = 60000
TEST_FILE_SIZE = 10000
NUM_CLASSES = 10
ROWS = COLS = 28
DEFAULT_SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
#: (row, col) of the top-left corner of each class's 10x5 block.
BLOCKS = [(2 + 14 * (c // 5), 1 + 5 * (c % 5)) for c in range(NUM_CLASSES)]
BLOCK_H, BLOCK_W = 10, 5

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def label_of(image):
    """The class of a stand-in image (784 values or 28x28[x1], any dtype)."""
    img = numpy.asarray(image, dtype=numpy.float64).reshape(ROWS, COLS)
    sums = [img[r:r + BLOCK_H, c:c + BLOCK_W].sum() for r, c in BLOCKS]
    return int(numpy.argmax(sums))


def _synthetic_images(n, seed):
    """uint8 images [n, 28, 28, 1] (what extract_images returned)."""
    rng = numpy.random.RandomState(seed)
    images = rng.randint(0, 40, size=(n, ROWS, COLS)).astype(numpy.uint8)
    classes = rng.randint(0, NUM_CLASSES, size=n)
    for i, c in enumerate(classes):
        r, col = BLOCKS[c]
        images[i, r:r + BLOCK_H, col:col + BLOCK_W] = rng.randint(150, 256, size=(BLOCK_H, BLOCK_W))
    return images.reshape(n, ROWS, COLS, 1)


def _labels_of(images):
    """uint8 labels (what extract_labels returned), computed from the images."""
    return numpy.array([label_of(img) for img in images], dtype=numpy.uint8)


def dense_to_one_hot(labels_dense, num_classes):
    """Convert class labels from scalars to one-hot vectors (float64)."""
    num_labels = labels_dense.shape[0]
    index_offset = numpy.arange(num_labels) * num_classes
    labels_one_hot = numpy.zeros((num_labels, num_classes))
    labels_one_hot.flat[index_offset + labels_dense.ravel()] = 1
    return labels_one_hot


def _get_seed(seed):
    try:
        from tensorflow.python.framework import random_seed
    except ImportError:  # TensorFlow absent: behave as with no graph-level seed
        return (None, None) if seed is None else (0, seed)
    return random_seed.get_seed(seed)


def _dtype_name(dtype):
    try:
        from tensorflow.python.framework import dtypes
        return dtypes.as_dtype(dtype).base_dtype.name
    except ImportError:
        return numpy.dtype(dtype).name


class DataSet(object):
    """Container class for a dataset (TF 1.x's mnist.DataSet)."""

    def __init__(self, images, labels, fake_data=False, one_hot=False, dtype="float32", reshape=True, seed=None):
        seed1, seed2 = _get_seed(seed)
        # If op level seed is not set, use whatever graph level seed is returned
        numpy.random.seed(seed1 if seed is None else seed2)
        dtype = _dtype_name(dtype)
        if dtype not in ("uint8", "float32"):
            raise TypeError("Invalid image dtype %r, expected uint8 or float32" % dtype)
        if fake_data:
            self._num_examples = 10000
            self.one_hot = one_hot
        else:
            assert images.shape[0] == labels.shape[0], (
                "images.shape: %s labels.shape: %s" % (images.shape, labels.shape))
            self._num_examples = images.shape[0]
            if reshape:
                assert images.shape[3] == 1
                images = images.reshape(images.shape[0], images.shape[1] * images.shape[2])
            if dtype == "float32":
                images = images.astype(numpy.float32)
                images = numpy.multiply(images, 1.0 / 255.0)
        self._images = images
        self._labels = labels
        self._epochs_completed = 0
        self._index_in_epoch = 0

    @property
    def images(self):
        return self._images

    @property
    def labels(self):
        return self._labels

    @property
    def num_examples(self):
        return self._num_examples

    @property
    def epochs_completed(self):
        return self._epochs_completed

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """Return the next `batch_size` examples from this data set."""
        if fake_data:
            fake_image = [1] * 784
            fake_label = [1] + [0] * 9 if self.one_hot else 0
            return [fake_image for _ in range(batch_size)], [fake_label for _ in range(batch_size)]
        start = self._index_in_epoch
        # Shuffle for the first epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            perm0 = numpy.arange(self._num_examples)
            numpy.random.shuffle(perm0)
            self._images = self.images[perm0]
            self._labels = self.labels[perm0]
        # Go to the next epoch
        if start + batch_size > self._num_examples:
            # Finished epoch
            self._epochs_completed += 1
            # Get the rest examples in this epoch
            rest_num_examples = self._num_examples - start
            images_rest_part = self._images[start:self._num_examples]
            labels_rest_part = self._labels[start:self._num_examples]
            # Shuffle the data
            if shuffle:
                perm = numpy.arange(self._num_examples)
                numpy.random.shuffle(perm)
                self._images = self.images[perm]
                self._labels = self.labels[perm]
            # Start next epoch
            start = 0
            self._index_in_epoch = batch_size - rest_num_examples
            end = self._index_in_epoch
            images_new_part = self._images[start:end]
            labels_new_part = self._labels[start:end]
            return (numpy.concatenate((images_rest_part, images_new_part), axis=0),
                    numpy.concatenate((labels_rest_part, labels_new_part), axis=0))
        self._index_in_epoch += batch_size
        end = self._index_in_epoch
        return self._images[start:end], self._labels[start:end]


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype="float32", reshape=True,
                   validation_size=5000, seed=None, source_url=DEFAULT_SOURCE_URL):
    if fake_data:
        def fake():
            return DataSet([], [], fake_data=True, one_hot=one_hot, dtype=dtype, seed=seed)
        return Datasets(train=fake(), validation=fake(), test=fake())

    train_images = _synthetic_images(TRAIN_FILE_SIZE // SCALE, seed=20240601)
    train_labels = _labels_of(train_images)
    test_images = _synthetic_images(TEST_FILE_SIZE // SCALE, seed=20240602)
    test_labels = _labels_of(test_images)
    if one_hot:
        train_labels = dense_to_one_hot(train_labels, NUM_CLASSES)
        test_labels = dense_to_one_hot(test_labels, NUM_CLASSES)

    validation_size = validation_size // SCALE
    if not 0 <= validation_size <= len(train_images):
        raise ValueError("Validation size should be between 0 and {}. Received: {}."
                         .format(len(train_images), validation_size))
    validation_images = train_images[:validation_size]
    validation_labels = train_labels[:validation_size]
    train_images = train_images[validation_size:]
    train_labels = train_labels[validation_size:]

    options = dict(dtype=dtype, reshape=reshape, seed=seed)
    train = DataSet(train_images, train_labels, **options)
    validation = DataSet(validation_images, validation_labels, **options)
    test = DataSet(test_images, test_labels, **options)
    return Datasets(train=train, validation=validation, test=test)


def load_mnist(train_dir="MNIST-data"):
    return read_data_sets(train_dir)

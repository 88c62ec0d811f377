"""Files a training run writes: rank 0 only (rules/rank0_io.py).

A rule table run through ``tfdist.api.convert_source``: every snippet is
appended to the same small Keras ``fit`` script. INVALID snippets write a
file (or block on a window) and must come out under the rank-0 guard, with
the exact text given; VALID snippets must come out exactly as written, with
no rank0-io change reported on them; WARN snippets cannot be guarded safely
and must leave the write where it is with a warning naming the edit.
"""
from pathlib import Path

import pytest

from tfdist.api import convert_source

PRELUDE = '''import csv
import json
import pickle

import cv2
import imageio
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.misc
import tensorflow as tf
from PIL import Image

x = np.random.rand(64, 4).astype("float32")
y = np.random.rand(64, 1).astype("float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
history = model.fit(x, y, epochs=2)
test_ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
'''
MARK = "# --- case\n"
RULE = "rank0-io"


def _convert(snippet: str):
    result = convert_source(PRELUDE + MARK + snippet, "case.py")
    assert result.status == "converted", (result.status, result.error)
    return result


def _case_line() -> int:
    return (PRELUDE + MARK).count("\n") + 1


def _rank0_changes_in_case(result):
    return [c for c in result.changes if c.rule == RULE and c.line >= _case_line()]


def _rank0_warnings_in_case(result):
    return [w for w in result.warnings if w.rule == RULE and w.line >= _case_line()]


# (snippet, exact output text of the snippet, message of its change)
INVALID = [
    # A name bound to an in-memory buffer on one path and a path on another: a file write.
    ('import io\ntarget = io.BytesIO() if x.any() else "plot.png"\nplt.savefig(target)\n',
     'import io\ntarget = io.BytesIO() if x.any() else "plot.png"\nif hvd.rank() == 0:\n    plt.savefig(target)\n',
     "matplotlib savefig on rank 0 only"),
    ('Image.fromarray((x * 255).astype("uint8")).save("x.png")\n',
     'if hvd.rank() == 0:\n    Image.fromarray((x * 255).astype("uint8")).save("x.png")\n',
     "PIL image save on rank 0 only"),
    ('picture = Image.open("in.png")\npicture = picture.convert("L")\npicture.save("out.png")\n',
     'picture = Image.open("in.png")\npicture = picture.convert("L")\nif hvd.rank() == 0:\n    picture.save("out.png")\n',
     "PIL image save on rank 0 only"),
    ('Image.new("RGB", (4, 4)).save("blank.png")\n',
     'if hvd.rank() == 0:\n    Image.new("RGB", (4, 4)).save("blank.png")\n',
     "PIL image save on rank 0 only"),
    ('plt.plot(history.history["loss"])\nplt.savefig("loss.png")\n',
     'plt.plot(history.history["loss"])\nif hvd.rank() == 0:\n    plt.savefig("loss.png")\n',
     "matplotlib savefig on rank 0 only"),
    ('plt.show()\n', 'if hvd.rank() == 0:\n    plt.show()\n', "matplotlib show (a window) on rank 0 only"),
    # a run that cannot move whole (a name set there is used after it; a function defined there
    # writes the file): the open, and each statement writing or closing the file, on rank 0 on their own
    ('log = open("log.txt", "a")\nn = 0\nlog.write("x")\nn += 1\nlog.close()\ntotal = n * 2\n',
     'log = open("log.txt", "a") if hvd.rank() == 0 else None\nn = 0\nif hvd.rank() == 0:\n    log.write("x")\n'
     'n += 1\nif hvd.rank() == 0:\n    log.close()\ntotal = n * 2\n',
     'file "log.txt" opened on rank 0 only (None elsewhere): the code between its writes runs on every rank, '
     'each write on rank 0 only'),
    ('log = open("log.txt", "a")\ndef note(text):\n    log.write(text)\nnote("x")\n',
     'log = open("log.txt", "a") if hvd.rank() == 0 else None\ndef note(text):\n    if hvd.rank() == 0:\n'
     '        log.write(text)\nnote("x")\n',
     "log.write() on rank 0 only"),
    # a file object opened for writing and never used again (a log a callback then appends to): the open alone
    ('log = open("train_log.csv", "w+")\n', 'if hvd.rank() == 0:\n    log = open("train_log.csv", "w+")\n',
     'file "train_log.csv" opened (the file object is not used again) on rank 0 only (lines 21-21)'),
    # the name an earlier with-statement bound is no read of the later open's file
    ('with open("a.txt", "w") as f:\n    f.write("a")\nf = open("b.txt", "wb")\nf.write(b"b")\nf.close()\n',
     'if hvd.rank() == 0:\n    with open("a.txt", "w") as f:\n        f.write("a")\n'
     'if hvd.rank() == 0:\n    f = open("b.txt", "wb")\n    f.write(b"b")\n    f.close()\n',
     'file "b.txt" opened, written and closed on rank 0 only (lines 23-25)'),
    # a progress bar runs no collective: the file written under it moves to rank 0 whole
    ('from tqdm import tqdm\nwith open("out.txt", "w") as f:\n    for v in tqdm(x, "Writing"):\n        f.write(str(v))\n',
     'from tqdm import tqdm\nif hvd.rank() == 0:\n    with open("out.txt", "w") as f:\n'
     '        for v in tqdm(x, "Writing", disable=hvd.rank() != 0):\n            f.write(str(v))\n',
     'file "out.txt" written on rank 0 only'),
    # a model built by a module tfdist does not read, known a model by being called on a Keras input
    ('import helpers\ngen = helpers.build_generator()\nz = tf.keras.Input(shape=(2,))\ncombined = tf.keras.Model(z, gen(z))\n'
     'gen.save("generator.h5")\n',
     'import helpers\ngen = helpers.build_generator()\nz = tf.keras.Input(shape=(2,))\ncombined = tf.keras.Model(z, gen(z))\n'
     'if hvd.rank() == 0:\n    gen.save("generator.h5")\n',
     "gen.save() on rank 0 only"),
    # a lambda's body has no room for an if block: the call becomes conditional
    ('cb = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: print(epoch, logs["loss"]))\n',
     'cb = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: print(epoch, logs["loss"]) if hvd.rank() == 0 else None)\n',
     "console output on rank 0 only"),
    # A file opened without a with-statement: from the open to its close, as one block.
    ('log = open("log.txt", "a")\nfor v in x:\n    log.write(str(v))\nlog.close()\n',
     'if hvd.rank() == 0:\n    log = open("log.txt", "a")\n    for v in x:\n        log.write(str(v))\n    log.close()\n',
     'file "log.txt" opened, written and closed on rank 0 only (lines {case}-{case_end})'),
    ('fig = plt.figure()\nfig.savefig("f.png")\n',
     'fig = plt.figure()\nif hvd.rank() == 0:\n    fig.savefig("f.png")\n',
     "matplotlib figure savefig on rank 0 only"),
    ('fig, axes = plt.subplots(2, 2)\naxes[0, 0].plot(x[:, 0])\nfig.savefig("grid.png", dpi=50)\n',
     'fig, axes = plt.subplots(2, 2)\naxes[0, 0].plot(x[:, 0])\nif hvd.rank() == 0:\n    fig.savefig("grid.png", dpi=50)\n',
     "matplotlib figure savefig on rank 0 only"),
    ('np.save("x.npy", x)\n', 'if hvd.rank() == 0:\n    np.save("x.npy", x)\n', "NumPy save on rank 0 only"),
    ('np.savez("xy.npz", x=x, y=y)\n', 'if hvd.rank() == 0:\n    np.savez("xy.npz", x=x, y=y)\n',
     "NumPy savez on rank 0 only"),
    ('np.savez_compressed("xy.npz", x, y)\n', 'if hvd.rank() == 0:\n    np.savez_compressed("xy.npz", x, y)\n',
     "NumPy savez_compressed on rank 0 only"),
    ('np.savetxt("y.txt", y, fmt="%.3f")\n', 'if hvd.rank() == 0:\n    np.savetxt("y.txt", y, fmt="%.3f")\n',
     "NumPy savetxt on rank 0 only"),
    # A forward pass and NumPy work are collective-free: the statement moves whole.
    ('np.save("predictions.npy", model(x, training=False).numpy())\n',
     'if hvd.rank() == 0:\n    np.save("predictions.npy", model(x, training=False).numpy())\n',
     "NumPy save on rank 0 only"),
    ('pickle.dump(history.history, open("history.pkl", "wb"))\n',
     'if hvd.rank() == 0:\n    pickle.dump(history.history, open("history.pkl", "wb"))\n',
     "pickle dump on rank 0 only"),
    ('with open("history.json", "w") as f:\n    json.dump(history.history, f)\n',
     'if hvd.rank() == 0:\n    with open("history.json", "w") as f:\n        json.dump(history.history, f)\n',
     'file "history.json" written on rank 0 only'),
    ('with open("log.txt", mode="a") as log:\n    print("done", file=log)\n',
     'if hvd.rank() == 0:\n    with open("log.txt", mode="a") as log:\n        print("done", file=log)\n',
     'file "log.txt" written on rank 0 only'),
    ('with open("h.csv", "w", newline="") as f:\n    rows = csv.writer(f)\n'
     '    for key, values in history.history.items():\n        rows.writerow([key] + values)\n',
     'if hvd.rank() == 0:\n    with open("h.csv", "w", newline="") as f:\n        rows = csv.writer(f)\n'
     '        for key, values in history.history.items():\n            rows.writerow([key] + values)\n',
     'file "h.csv" written on rank 0 only'),
    ('open("done.txt", "w").write("ok")\n', 'if hvd.rank() == 0:\n    open("done.txt", "w").write("ok")\n',
     'file "done.txt" write on rank 0 only'),
    ('model.save_weights("weights.h5")\n', 'if hvd.rank() == 0:\n    model.save_weights("weights.h5")\n',
     "model.save_weights() on rank 0 only"),
    ('tf.io.write_file("note.txt", "trained")\n', 'if hvd.rank() == 0:\n    tf.io.write_file("note.txt", "trained")\n',
     "tf.io.write_file on rank 0 only"),
    ('cv2.imwrite("x.png", (x * 255).astype(np.uint8))\n',
     'if hvd.rank() == 0:\n    cv2.imwrite("x.png", (x * 255).astype(np.uint8))\n', "OpenCV imwrite on rank 0 only"),
    ('pd.DataFrame(history.history).to_csv("h.csv")\n', 'if hvd.rank() == 0:\n    pd.DataFrame(history.history).to_csv("h.csv")\n',
     "DataFrame.to_csv on rank 0 only"),
    ('frame = pd.DataFrame(history.history)\nframe.to_json("h.json")\nframe.to_pickle("h.pkl")\n',
     'frame = pd.DataFrame(history.history)\nif hvd.rank() == 0:\n    frame.to_json("h.json")\n    frame.to_pickle("h.pkl")\n',
     "DataFrame.to_json on rank 0 only"),
    ('scipy.misc.imsave("x.png", x)\n', 'if hvd.rank() == 0:\n    scipy.misc.imsave("x.png", x)\n',
     "scipy.misc.imsave on rank 0 only"),
    ('scipy.misc.toimage(x).save("x.png")\n', 'if hvd.rank() == 0:\n    scipy.misc.toimage(x).save("x.png")\n',
     "PIL image save on rank 0 only"),
    ('imageio.imwrite("x.png", x)\n', 'if hvd.rank() == 0:\n    imageio.imwrite("x.png", x)\n',
     "imageio imwrite on rank 0 only"),
    # labels read from a dataset as NumPy values while the file is written: no collective
    ('import tensorflow_datasets as tfds\nout = open("meta.tsv", "w")\n'
     'for img, labels in tfds.as_numpy(test_ds):\n    out.write(str(labels[0]) + "\\n")\nout.close()\n',
     'import tensorflow_datasets as tfds\nif hvd.rank() == 0:\n    out = open("meta.tsv", "w")\n'
     '    for img, labels in tfds.as_numpy(test_ds):\n        out.write(str(labels[0]) + "\\n")\n    out.close()\n',
     'file "meta.tsv" opened, written and closed on rank 0 only (lines {case_plus_1}-{case_end})'),
    # Keras 2.x's module for it
    ('from tensorflow.keras.utils.vis_utils import plot_model\nplot_model(model, to_file="m.png")\n',
     'from tensorflow.keras.utils.vis_utils import plot_model\nif hvd.rank() == 0:\n    plot_model(model, to_file="m.png")\n',
     "Keras plot_model on rank 0 only"),
    # a layer's configuration and a namespace's vars() read Python state:
    # no collective, so the whole write moves to rank 0
    ('pickle.dump({"config": model.layers[0].get_config()}, open("layer.pkl", "wb"))\n',
     'if hvd.rank() == 0:\n    pickle.dump({"config": model.layers[0].get_config()}, open("layer.pkl", "wb"))\n',
     "pickle dump on rank 0 only"),
    ('with open("args.json", "w") as f:\n    json.dump(vars(history), f, default=str)\n',
     'if hvd.rank() == 0:\n    with open("args.json", "w") as f:\n        json.dump(vars(history), f, default=str)\n',
     'file "args.json" written on rank 0 only'),
    # The DCGAN tutorial's helper: the writes inside it are guarded one by
    # one, the forward pass and the plotting stay on every rank.
    ('def generate_and_save_images(model, epoch, test_input):\n'
     '    predictions = model(test_input, training=False)\n'
     '    fig = plt.figure(figsize=(4, 4))\n'
     '    for i in range(predictions.shape[0]):\n'
     '        plt.subplot(4, 4, i + 1)\n'
     '        plt.imshow(predictions[i, :, :, 0] * 127.5 + 127.5, cmap="gray")\n'
     '        plt.axis("off")\n'
     '    plt.savefig("image_at_epoch_{:04d}.png".format(epoch))\n'
     '    plt.show()\n'
     'seed = tf.random.normal([16, 4])\n'
     'generate_and_save_images(model, 1, seed)\n',
     'def generate_and_save_images(model, epoch, test_input):\n'
     '    predictions = model(test_input, training=False)\n'
     '    fig = plt.figure(figsize=(4, 4))\n'
     '    for i in range(predictions.shape[0]):\n'
     '        plt.subplot(4, 4, i + 1)\n'
     '        plt.imshow(predictions[i, :, :, 0] * 127.5 + 127.5, cmap="gray")\n'
     '        plt.axis("off")\n'
     '    if hvd.rank() == 0:\n'
     '        plt.savefig("image_at_epoch_{:04d}.png".format(epoch))\n'
     '        plt.show()\n'
     'seed = tf.random.normal([16, 4])\n'
     'generate_and_save_images(model, 1, seed)\n',
     "matplotlib savefig on rank 0 only"),
]


@pytest.mark.parametrize("snippet,expected,message", INVALID, ids=[c[0].splitlines()[-1][:60] for c in INVALID])
def test_write_is_guarded(snippet, expected, message):
    result = _convert(snippet)
    assert result.code.endswith(MARK + expected), result.code[result.code.index(MARK):]
    # line numbers in a message are the case's own, counted from its first line
    message = message.format(case=_case_line(), case_plus_1=_case_line() + 1,
                             case_end=_case_line() + snippet.count("\n") - 1)
    assert message in [c.message for c in _rank0_changes_in_case(result)]
    assert _rank0_warnings_in_case(result) == []


VALID = [
    # save() on an object of unknown type: never guarded.
    'def make_archive():\n    return object()\narchive = make_archive()\narchive.save("a")\n',
    # ...nor on one built elsewhere and called on anything but a Keras input
    'import helpers\nrecorder = helpers.make()\nrecorder(x)\nrecorder.save("r")\n',
    # A name that is a PIL image on one path and unknown on another.
    'picture = Image.open("in.png") if x.any() else make_thing()\npicture.save("out.png")\n',
    # Reading files: every rank reads.
    'with open("config.json") as f:\n    config = json.load(f)\n',
    'with open("data.bin", "rb") as f:\n    blob = f.read()\n',
    'text = open("notes.txt", mode="r").read()\n',
    'weights = np.load("weights.npy")\n',
    # Plotting without writing anything stays on every rank.
    'fig = plt.figure()\nplt.plot(x[:, 0])\nplt.close(fig)\n',
    # A user function named open is not the built-in.
    'def open(path, mode):\n    return path\nopen("x.txt", "w")\n',
    # Writes into an in-memory file write no file: every rank reads them back.
    'import io\nbuf = io.BytesIO()\nplt.savefig(buf, format="png")\nimage = tf.image.decode_png(buf.getvalue())\n',
    'import io\nfig = plt.figure()\nbuffer = io.BytesIO()\nfig.savefig(buffer)\n',
    'import io\nmemory = io.BytesIO()\nnp.save(memory, x)\npickle.dump(x, io.BytesIO())\n',
]


@pytest.mark.parametrize("snippet", VALID, ids=[c.splitlines()[-1][:60] for c in VALID])
def test_non_write_stays_unguarded(snippet):
    result = _convert(snippet)
    assert result.code.endswith(MARK + snippet), result.code[result.code.index(MARK):]
    assert _rank0_changes_in_case(result) == []


# (snippet, substring of the warning, line of the warning within the snippet)
WARN = [
    # A write in the same statement as training: the statement stays whole.
    ('np.save("history.npy", model.fit(x, y, epochs=1).history)\n',
     "NumPy save in the same statement as model.fit(), which may run a collective operation: compute that on "
     "every rank first, then run this write on rank 0 only: wrap it in `if hvd.rank() == 0:`", 1),
    # A with-statement whose body trains.
    ('with open("epochs.txt", "w") as log:\n    for epoch in range(2):\n'
     '        model.fit(x, y, epochs=1, verbose=0)\n        log.write(str(epoch))\n',
     'file "epochs.txt" is opened for writing on every rank by a with-statement that also runs model.fit()', 1),
    # A with-statement whose body sets a name used after it.
    ('with open("n.txt", "w") as f:\n    count = f.write("abc")\ntotal = count + 1\n',
     "sets count, which is used after it (line", 1),
    # A with-statement that returns from its function.
    ('def dump(values):\n    with open("v.txt", "w") as f:\n        f.write(str(values))\n        return len(values)\n'
     'dump([1, 2])\n', "leaves it early", 2),
    # A file kept open in a variable, and a count made while writing it read afterwards.
    # A run that cannot move whole, with a use of the file other than writing it (seek): no per-write guard.
    ('log = open("log.txt", "w+")\nn = 0\nlog.write("x")\nn += 1\nlog.seek(0)\ntotal = n * 2\n',
     'cannot run on rank 0 only as they are: that code sets n, which is used after it', 1),
    # A mode tfdist cannot read.
    ('mode = "w"\nwith open("m.txt", mode) as f:\n    f.write("x")\n', "with a mode tfdist cannot read", 2),
    # A write whose result is kept.
    ('ok = cv2.imwrite("x.png", x)\n', "OpenCV imwrite whose result is kept", 1),
]


@pytest.mark.parametrize("snippet,warning,line", WARN, ids=[c[0].splitlines()[0][:60] for c in WARN])
def test_unsafe_write_is_warned_not_guarded(snippet, warning, line):
    result = _convert(snippet)
    warnings = _rank0_warnings_in_case(result)
    assert any(warning in w.message and w.line == _case_line() + line - 1 for w in warnings), \
        [(w.line, w.message) for w in warnings]
    out = result.code[result.code.index(MARK) + len(MARK):]
    # Nothing in the case moved under a guard (other rules may edit fit() calls).
    assert "if hvd.rank() == 0:\n" not in out, out
    assert _rank0_changes_in_case(result) == []


def test_a_file_variable_rebound_after_the_write_does_not_keep_the_write_on_every_rank():
    # the name that held the file is bound again before it is read: the read
    # means the new value, so the open, write and close move to rank 0 whole
    snippet = ('f = open("a.txt", "w")\nf.write("x")\nf.close()\n'
               'f = np.ones(3)\ntotal = f.sum()\n')
    result = _convert(snippet)
    assert result.code.endswith(MARK + 'if hvd.rank() == 0:\n    f = open("a.txt", "w")\n    f.write("x")\n'
                                '    f.close()\nf = np.ones(3)\ntotal = f.sum()\n'), result.code[result.code.index(MARK):]
    line = _case_line()
    assert f'file "a.txt" opened, written and closed on rank 0 only (lines {line}-{line + 2})' in [
        c.message for c in _rank0_changes_in_case(result)]
    assert _rank0_warnings_in_case(result) == []


def test_print_in_a_one_line_if_body_becomes_conditional():
    from tfdist.api import convert_source
    src = b'''import tensorflow as tf


class PrintDot(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs):
        if epoch % 100 == 0: print('')
        print('.', end='')


model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit([[1.0], [2.0]], [1.0, 2.0], epochs=2, callbacks=[PrintDot()])
'''
    result = convert_source(src, "dots.py")
    assert result.status == "converted", result.error
    assert "        if epoch % 100 == 0: print('') if hvd.rank() == 0 else None" in result.code.splitlines()
    assert not [w for w in result.warnings if w.rule == "rank0-io"]


TF1_SCRIPT = '''import numpy as np
import tensorflow.compat.v1 as tf

x = tf.placeholder(tf.float32, [None, 2])
w = tf.Variable(tf.zeros([2, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
opt = tf.train.GradientDescentOptimizer(0.1)
grads = opt.compute_gradients(loss)
train_op = opt.apply_gradients(grads)
data = np.random.rand(64, 2).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(10):
        sess.run(train_op, feed_dict={x: data[step:step + 4]})
        print("loss", sess.run(loss, feed_dict={x: data}))
        print("grads", sess.run(grads, feed_dict={x: data}))
        print("step", sess.run([train_op, loss], feed_dict={x: data}))
'''


def test_print_of_a_session_run_is_guarded_only_when_the_run_trains_nothing():
    """Printing a test loss fetched by ``sess.run(loss)`` is console output
    like any other: rank 0 only. A fetch of gradients (averaged by Horovod:
    a collective) or of the train op must run on every rank, so that print
    stays where it is."""
    result = convert_source(TF1_SCRIPT, "tf1.py")
    assert result.status == "converted", (result.status, result.error)
    lines = result.code.splitlines()
    at = {text: i for i, line in enumerate(lines) for text in ('print("loss"', 'print("grads"', 'print("step"')
          if line.strip().startswith(text)}
    assert lines[at['print("loss"'] - 1].strip() == "if hvd.rank() == 0:"
    assert lines[at['print("grads"'] - 1].strip() != "if hvd.rank() == 0:"
    assert lines[at['print("step"'] - 1].strip() != "if hvd.rank() == 0:"


READ_BACK = [
    # A CSV generated, then read by every rank.
    ('with open("gen.csv", "w") as f:\n    f.write("a,b\\n1,2\\n")\nframe = pd.read_csv("gen.csv")\n', "pd.read_csv"),
    # A path held in a variable: written by an open ... close run, then read.
    ('path = "rows.txt"\nout = open(path, "w")\nout.write("1 2\\n")\nout.close()\nrows = np.loadtxt(path)\n',
     "np.loadtxt"),
    # np.savetxt, then the file is unpacked by another reader.
    ('np.savetxt("table.txt", x)\ntable = np.genfromtxt("table.txt")\n', "np.genfromtxt"),
    # Written only when missing (a download cached), in a block of a statement
    # at module level: the barrier goes before the read, after that statement.
    ('data_file = "birth.csv"\nif not os.path.exists(data_file):\n    rows = "a,b\\n1,2\\n"\n'
     '    with open(data_file, "w") as f:\n        f.write(rows)\nframe = pd.read_csv(data_file)\n', "pd.read_csv"),
    # A compressed file unpacked next to the script (gzip and shutil run no collective), then read.
    ('import gzip\nimport shutil\nwith gzip.open("data.csv.gz", "rb") as f_in, open("data.csv", "wb") as f_out:\n'
     '    shutil.copyfileobj(f_in, f_out)\nframe = pd.read_csv("data.csv")\n', "pd.read_csv"),
]


@pytest.mark.parametrize("snippet,used", READ_BACK)
def test_file_written_on_rank_0_and_read_back_at_module_level_waits_for_it(snippet, used):
    """A file the script writes and then reads again: written on rank 0
    only, the other ranks could read it before it is complete (or an old
    copy). Both statements at module level in eager TensorFlow 2: every
    rank reaches a barrier right before the read -- outside the guard (one
    only rank 0 reaches would never return). Runtime evidence:
    tests/slow/test_read_back_barrier_runtime.py."""
    result = _convert(snippet)
    assert _rank0_changes_in_case(result), "the write is guarded"
    assert not [w for w in _rank0_warnings_in_case(result) if "used again" in w.message]
    lines = result.code.splitlines()
    read = next(i for i, line in enumerate(lines) if f"{used.split('.')[1]}(" in line and "=" in line)
    assert lines[read - 1] == 'hvd.allreduce(tf.constant(0.0), name="tfdist_barrier")', result.code
    assert any("after a barrier" in c.message for c in _rank0_changes_in_case(result))


@pytest.mark.parametrize("snippet,used", READ_BACK)
def test_file_read_back_where_no_barrier_can_go_is_warned(snippet, used):
    """Read inside a function (called who knows how often, or on some ranks
    only), the barrier could leave ranks waiting forever: warned, naming
    the wait, nothing inserted."""
    reader = next(line for line in snippet.splitlines() if used.split(".")[1] + "(" in line)
    inside = snippet.replace(reader, "def load():\n    return " + reader.split("=", 1)[1].strip() + "\n\n\nrows = load()")
    result = _convert(inside)
    warnings = [w for w in _rank0_warnings_in_case(result) if "written on rank 0 only and used again" in w.message]
    assert len(warnings) == 1 and f"({used}(...))" in warnings[0].message, [w.message for w in warnings]
    assert "a barrier after the write" in warnings[0].message
    assert "tfdist_barrier" not in result.code


def test_file_written_on_rank_0_and_not_read_back_is_not_warned():
    result = _convert('path = "notes.txt"\nwith open(path, "w") as f:\n    f.write("done")\nprint("wrote", path)\n')
    assert not [w for w in _rank0_warnings_in_case(result) if "used again" in w.message]


def test_file_written_in_a_function_nothing_calls_is_not_warned_as_read_back():
    """A notebook's data-preparation function, defined and never called: its
    write (guarded all the same) is no race with the reads of this run. The
    same function called once is warned (the read sits in a function)."""
    snippet = ('def save_reviews(rows):\n    with open("reviews.txt", "w") as f:\n        for row in rows:\n'
               '            print(row, file=f)\n\n\ndef load_reviews():\n    with open("reviews.txt") as f:\n'
               '        return f.read().split("\\n")\n\n\nreviews = load_reviews()\n')
    result = _convert(snippet)
    assert not [w for w in _rank0_warnings_in_case(result) if "used again" in w.message]
    assert any("written on rank 0 only" in c.message for c in _rank0_changes_in_case(result))
    called = _convert(snippet + 'save_reviews(["a", "b"])\n')
    assert [w for w in _rank0_warnings_in_case(called) if "used again" in w.message]


def test_file_written_on_rank_0_and_only_shown_or_named_is_not_warned():
    """Handing the written file to the user (a notebook download, an
    embedded image) or labelling code with its name reads nothing into the
    run: no race to warn about."""
    snippet = ('from google.colab import files\nfrom IPython.display import Image\n'
               'with open("labels.txt", "w") as f:\n    f.write("a\\nb\\n")\nfiles.download("labels.txt")\n'
               'with open("plot.png", "wb") as f:\n    f.write(b"")\nImage("plot.png")\n')
    result = _convert(snippet)
    assert not [w for w in _rank0_warnings_in_case(result) if "used again" in w.message]


def test_file_read_back_in_a_tf1_script_waits_in_a_session_of_its_own_graph():
    """Graph mode: an op runs only in a session, so the barrier is an
    allreduce run by a session of a graph of its own (the user's graph
    untouched), on the CPU; it sits right before the read, outside the
    rank-0 guard. Runtime evidence: test_read_back_barrier_runtime.py."""
    source = Path(__file__).resolve().parents[1] / "slow" / "runtime_scripts" / "tf1_write_then_read_back.py"
    result = convert_source(source.read_text(), "tf1.py")
    assert result.status == "converted", (result.status, result.error)
    lines = result.code.splitlines()
    read = next(i for i, line in enumerate(lines) if line.startswith("with open(data_file, newline"))
    assert [line.strip() for line in lines[read - 3:read]] == [
        "with tf.Graph().as_default():",
        'with tf.Session(config=tf.ConfigProto(device_count={"GPU": 0})) as barrier_session:',
        'barrier_session.run(hvd.allreduce(tf.constant(0.0), name="tfdist_barrier"))'], result.code
    assert lines[read - 3].startswith("with"), "at module level, not under the guard"
    assert not [w for w in result.warnings if w.level == "WARNING"]


def test_a_file_written_between_training_steps_has_each_write_on_rank_0():
    """The loss log of a GAN loop: the file opened before the loop, written
    after every step. The steps cannot move to rank 0, so the open becomes
    ``open(...) if rank 0 else None`` and each write and the close run on
    rank 0 only, each on its own."""
    src = '''import numpy as np
import tensorflow as tf

x = np.random.rand(64, 4).astype("float32")
y = np.random.rand(64, 1).astype("float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
log = open("losses.csv", "w")
for step in range(100):
    idx = np.random.randint(0, 64, 8)
    loss = model.train_on_batch(x[idx], y[idx])
    log.write(str(loss) + "\\n")
    print(step, loss, file=log)
log.close()
'''
    for backend, chief in (("horovod", "hvd.rank() == 0"), ("tf-distribute", "strategy.extended.should_checkpoint")):
        result = convert_source(src, "losses.py", backend=backend)
        assert result.status == "converted", result.error
        code = result.data.decode()
        assert f'log = open("losses.csv", "w") if {chief} else None\n' in code, code
        assert f'    if {chief}:\n        log.write(str(loss) + "\\n")\n        print(step, loss, file=log)\n' in code, code
        assert f'if {chief}:\n    log.close()\n' in code, code
        assert not [w for w in result.warnings if w.rule == RULE], result.warnings


HELPER_GAN = '''from tensorflow.keras.layers import Input
from tensorflow.keras.models import Model
import numpy as np
from lib import gan


def train(models, steps):
    generator, discriminator, adversarial = models
    for i in range(steps):
        noise = np.random.uniform(-1.0, 1.0, size=[16, 100])
        labels = np.eye(10)[np.random.choice(10, 16)]
        adversarial.train_on_batch([noise, labels], np.ones([16, 1]))
    generator.save("generator.h5")


def build_and_train():
    inputs = Input(shape=(28, 28, 1))
    discriminator = gan.discriminator(inputs)
    discriminator.compile(loss="binary_crossentropy", optimizer="rmsprop")
    inputs = Input(shape=(100,))
    labels = Input(shape=(10,))
    generator = gan.generator({call})
    discriminator.trainable = False
    adversarial = Model([inputs, labels], discriminator(generator({call})))
    adversarial.compile(loss="binary_crossentropy", optimizer="rmsprop")
    train((generator, discriminator, adversarial), 100)


build_and_train()
'''


@pytest.mark.parametrize("backend", ["horovod", "tf-distribute"])
@pytest.mark.parametrize("call", ["[inputs, labels]", "(inputs, labels)"])
def test_a_helper_built_generator_of_two_inputs_is_saved_once(backend, call):
    """The generator a helper module builds, called on a list of Keras inputs inside the
    adversarial model and handed to train() in a tuple: a model, so its save() is the chief's
    (both workers wrote the same .h5 file and h5py's lock stopped one, on the sixth late set)."""
    result = convert_source(HELPER_GAN.replace("{call}", call).encode(), "acgan.py", backend=backend)
    assert result.status == "converted", result.error
    text = result.data.decode()
    saved = ('if hvd.rank() == 0:\n        generator.save("generator.h5")' if backend == "horovod"
             else 'generator.save(worker_path("generator.h5"))')
    assert saved in text, text
    assert any("generator.save()" in c.message for c in result.changes), [c.message for c in result.changes]

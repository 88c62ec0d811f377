"""Files a training run writes (rank 0 only, rules/rank0_io.py), the objects that
write them, and the calls that run no collective operation."""
from __future__ import annotations

# Calls allowed inside a print() that tfdist moves under a rank-0 guard: they
# cannot run a collective operation, so guarding them can never deadlock.
PURE_CALLS = {
    "len", "str", "int", "float", "round", "repr", "format", "abs", "min",
    "max", "sum", "bool", "list", "tuple", "dict", "sorted",
}
PURE_METHODS = {"numpy", "result", "format", "item", "mean", "std", "sum", "min", "max", "join", "tolist"}
# Module functions that write a file (or, for pyplot.show, block on a window)
# -> how the change message calls them. None of them runs a collective
# operation, so a statement made only of them and of collective-free
# calls can run on rank 0 alone.
FILE_WRITE_FUNCTIONS = {
    "numpy.save": "NumPy save",
    "numpy.savez": "NumPy savez",
    "numpy.savez_compressed": "NumPy savez_compressed",
    "numpy.savetxt": "NumPy savetxt",
    "pickle.dump": "pickle dump",
    "json.dump": "JSON dump",
    "matplotlib.pyplot.savefig": "matplotlib savefig",
    "matplotlib.pyplot.imsave": "matplotlib imsave",
    "matplotlib.pyplot.show": "matplotlib show (a window)",
    "tensorflow.io.write_file": "tf.io.write_file",
    "tensorflow.write_file": "tf.write_file",
    "keras.utils.save_img": "Keras save_img",
    "keras.preprocessing.image.save_img": "Keras save_img",
    "keras.utils.plot_model": "Keras plot_model",
    "cv2.imwrite": "OpenCV imwrite",
    "scipy.misc.imsave": "scipy.misc.imsave",
    "imageio.imwrite": "imageio imwrite",
    "imageio.imsave": "imageio imsave",
    "imageio.mimsave": "imageio mimsave",
    "imageio.mimwrite": "imageio mimwrite",
    "imageio.v2.imwrite": "imageio imwrite",
    "imageio.v3.imwrite": "imageio imwrite",
}
# Where each of those takes the file it writes: (keyword, position).
FILE_WRITE_TARGETS = {
    "numpy.save": ("file", 0), "numpy.savez": ("file", 0), "numpy.savez_compressed": ("file", 0),
    "numpy.savetxt": ("fname", 0), "pickle.dump": ("file", 1), "json.dump": ("fp", 1),
    "matplotlib.pyplot.savefig": ("fname", 0), "matplotlib.pyplot.imsave": ("fname", 0),
    "tensorflow.io.write_file": ("filename", 0), "tensorflow.write_file": ("filename", 0),
    "keras.utils.save_img": ("path", 0), "keras.preprocessing.image.save_img": ("path", 0),
    "cv2.imwrite": ("filename", 0), "scipy.misc.imsave": ("name", 0), "imageio.imwrite": ("uri", 0),
    "imageio.imsave": ("uri", 0), "imageio.mimsave": ("uri", 0), "imageio.mimwrite": ("uri", 0),
    "imageio.v2.imwrite": ("uri", 0), "imageio.v3.imwrite": ("uri", 0),
}
# Files held in memory: a write into one (``plt.savefig(buf)`` to log a
# plot as a summary image) writes no file, and every rank reads it back.
IN_MEMORY_FILES = {"io.BytesIO", "io.StringIO"}
# Of FILE_WRITE_FUNCTIONS, the ones whose first argument is the path written: a script may
# read that file again (np.savetxt(path, x), then a reader of path).
FILE_WRITE_PATH_FIRST = {n for n in FILE_WRITE_FUNCTIONS if not n.startswith(("pickle.", "json."))
                         and n != "matplotlib.pyplot.show" and n != "keras.utils.plot_model"}
# Calls that name a file without reading it into the run: handing it to the
# user (a notebook download, an embedded animation or image) or labelling
# code with it. A file written on rank 0 and then only named so is no race.
FILE_PRESENTERS = {
    "google.colab.files.download", "tensorflow_docs.vis.embed.embed_file", "IPython.display.Image",
    "IPython.display.Video", "IPython.display.Audio", "IPython.display.FileLink", "IPython.display.display",
    "builtins.compile",
}
# Functions that open a file -> (positional index of the mode, its keyword,
# the mode when none is given; None: the mode is required). A mode with
# w, a, x or + writes.
FILE_OPEN_FUNCTIONS = {
    "builtins.open": (1, "mode", "r"),
    "io.open": (1, "mode", "r"),
    "tensorflow.io.gfile.GFile": (1, "mode", "r"),
    "tensorflow.gfile.GFile": (1, "mode", "r"),
    "tensorflow.gfile.Open": (1, "mode", "r"),
}
FILE_WRITE_MODE_LETTERS = frozenset("wax+")
# Objects whose methods write files, known by what built them.
PIL_IMAGE = "PIL image"
MPL_FIGURE = "matplotlib figure"
DATAFRAME = "pandas DataFrame"
CSV_WRITER = "csv writer"
OPEN_FILE = "file opened for writing"
# constructor or factory -> kind of the object it returns
WRITER_OBJECT_CONSTRUCTORS = {
    "PIL.Image.fromarray": PIL_IMAGE,
    "PIL.Image.open": PIL_IMAGE,
    "PIL.Image.new": PIL_IMAGE,
    "scipy.misc.toimage": PIL_IMAGE,
    "keras.utils.array_to_img": PIL_IMAGE,
    "keras.preprocessing.image.array_to_img": PIL_IMAGE,
    "matplotlib.pyplot.figure": MPL_FIGURE,
    "matplotlib.figure.Figure": MPL_FIGURE,
    "pandas.DataFrame": DATAFRAME,
    "pandas.DataFrame.from_dict": DATAFRAME,
    "pandas.DataFrame.from_records": DATAFRAME,
    "pandas.read_csv": DATAFRAME,
    "csv.writer": CSV_WRITER,
    "csv.DictWriter": CSV_WRITER,
}
# Factories returning a tuple: name -> {position in the tuple: kind}.
WRITER_OBJECT_TUPLES = {
    "matplotlib.pyplot.subplots": {0: MPL_FIGURE},
}
# Methods returning another object of the same kind (img.convert("L").save(p)).
WRITER_OBJECT_CHAINS = {
    PIL_IMAGE: {"convert", "resize", "crop", "rotate", "transpose", "copy", "quantize"},
    DATAFRAME: {"round", "copy", "rename", "reset_index", "set_index", "sort_values", "transpose",
                "sample", "reindex", "drop", "dropna", "fillna", "head", "tail", "astype", "query", "assign"},
}
# NumPy functions saving arrays as data -> the keyword of the file they write
# (what follows it is what is written).
NUMPY_DATA_SAVERS = {"numpy.save": "file", "numpy.savez": "file", "numpy.savez_compressed": "file",
                     "numpy.savetxt": "fname"}
# pandas DataFrame methods drawing rows at random -> the keyword seeding them
# (``df.sample(frac=1)``: without it each process draws its own order).
DATAFRAME_RANDOM_DRAWS = {"sample": "random_state"}
# Writing methods that write only when handed a path, and otherwise return
# what they would write (``df.to_json(orient="records")`` is a string):
# kind -> method -> (keyword, position) of the path.
WRITER_METHODS_PATH_OPTIONAL = {
    DATAFRAME: {"to_csv": ("path_or_buf", 0), "to_json": ("path_or_buf", 0), "to_parquet": ("path", 0)},
}
# Methods of a file object that only write to it (or close it): a file
# opened on rank 0 only can have each such statement guarded on its own.
FILE_OBJECT_WRITE_METHODS = {"write", "writelines", "flush", "close"}
# kind -> method that writes a file -> how the change message calls it.
# (Rows of a csv writer and writes to an open file are guarded with the
# ``with open(...)`` statement that opened the file.)
WRITER_OBJECT_METHODS = {
    PIL_IMAGE: {"save": "PIL image save"},
    MPL_FIGURE: {"savefig": "matplotlib figure savefig"},
    DATAFRAME: {
        "to_csv": "DataFrame.to_csv",
        "to_json": "DataFrame.to_json",
        "to_pickle": "DataFrame.to_pickle",
        "to_parquet": "DataFrame.to_parquet",
        "to_excel": "DataFrame.to_excel",
        "to_hdf": "DataFrame.to_hdf",
    },
}
# Libraries none of whose functions runs a collective operation: calls into
# them may sit in code that runs on rank 0 only (plotting, images, tables,
# serialisation). Module prefixes of canonical names.
COLLECTIVE_FREE_MODULES = (
    "numpy.", "matplotlib.", "PIL.", "cv2.", "imageio.", "scipy.misc.", "pandas.",
    "json.", "pickle.", "csv.", "os.path.", "time.", "sys.stdout.", "sys.stderr.",
    "gzip.", "bz2.", "lzma.", "zipfile.", "tarfile.", "shutil.",
    # a progress bar: wrapping an iterable runs nothing (what it iterates is checked on its own)
    "tqdm.",
)
# Built-ins that run no collective operation, allowed in code moved to rank 0.
COLLECTIVE_FREE_BUILTINS = {
    "builtins.open", "builtins.print", "builtins.range", "builtins.enumerate", "builtins.zip",
    "builtins.len", "builtins.str", "builtins.int", "builtins.float", "builtins.round", "builtins.repr",
    "builtins.format", "builtins.abs", "builtins.min", "builtins.max", "builtins.sum", "builtins.bool",
    "builtins.list", "builtins.tuple", "builtins.dict", "builtins.sorted", "builtins.reversed",
    "builtins.vars", "builtins.set", "builtins.frozenset", "builtins.isinstance", "builtins.hasattr",
    "builtins.type", "builtins.any", "builtins.all", "builtins.chr", "builtins.ord", "builtins.hex",
    "builtins.bin", "builtins.oct", "builtins.divmod", "builtins.pow", "builtins.bytes", "builtins.callable",
    # a dataset's elements as NumPy values: reading it runs no collective
    "tensorflow_datasets.as_numpy", "tensorflow_datasets.as_dataframe",
}
# Methods of arrays, tensors, dicts and strings that run no collective
# operation and change nothing, whatever the receiver: like PURE_METHODS,
# for the values a rank-0-only write saves.
COLLECTIVE_FREE_METHODS = {
    "astype", "reshape", "squeeze", "clip", "transpose", "flatten", "ravel", "copy",
    "argmax", "argmin", "any", "all",
    "items", "keys", "values", "get",
    "split", "strip", "replace", "upper", "lower", "startswith", "endswith",
    "zfill", "rjust", "ljust", "center", "rstrip", "lstrip", "title",
}
# Methods that read a text encoder's or a layer's own state -- a tfds
# encoder's decode/encode, a Keras Tokenizer's texts_to_sequences, a
# TextVectorization/StringLookup vocabulary, a layer's get_weights() or its
# configuration (get_config(), pickled beside a saved model) -- and
# run no collective operation (an embedding projector's vecs.tsv/meta.tsv
# export calls them while writing). Not for an instance of a class of the
# user's code, whose method of that name may do anything.
STATE_READING_METHODS = {
    "get_vocabulary", "vocabulary_size", "decode", "encode", "texts_to_sequences", "sequences_to_texts",
    "get_weights", "get_config",
}
# Console writes: rank 0 only (a stream's flush writes nothing of its own).
CONSOLE_WRITE_FUNCTIONS = {"builtins.print", "sys.stdout.write", "tqdm.tqdm.write", "tqdm.auto.tqdm.write",
                           "tqdm.notebook.tqdm.write"}

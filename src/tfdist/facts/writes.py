"""Which calls write files or print, and in what mode: the writes one process must make alone.

Files and console output on rank 0 only, for every pattern.

Model saves, checkpoint saves, TF1 ``Saver.save`` and ``print`` statements go
under ``if hvd.rank() == 0:``; summary writers are no-op writers on other
ranks. Only statements that cannot run a collective operation are guarded
(a guarded collective deadlocks): a print whose arguments call anything
but pure built-ins, for instance, is left alone.

Every other file a training run writes is written by rank 0 only too: the
module functions of ``apis.FILE_WRITE_FUNCTIONS`` (NumPy, pickle, JSON,
pyplot savefig/show, tf.io.write_file, OpenCV, imageio...), the writing
methods of objects whose kind is known from what built them
(``apis.WRITER_OBJECT_METHODS``: a PIL image's ``save``, a Figure's
``savefig``, a DataFrame's ``to_csv``), and ``with open(path, "w")``
statements, guarded whole when their body is collective-free and sets no
name used after it. A ``save`` on an object of unknown type is never
guarded. A write tfdist cannot guard safely (inside a statement that also
trains, an ``open`` for writing kept in a variable) gets a warning with
the edit to make by hand.
"""
from __future__ import annotations

from typing import List

import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from .keras_models import is_model
from .syntax import find_arg, method_name, receiver
from . import kinds


RULE = kinds.RANK0_IO


# Calls that run an optimizer step, directly or through a session.
TRAINING_METHODS = {"apply_gradients", "minimize", "fit", "fit_generator", "train_on_batch", "gradient", "run"}


@fact
def is_model_value(a: A.Analysis, expr) -> bool:
    return is_model(a, expr)


# TF1 calls building the training step (or its gradients, which Horovod
# averages): a session run fetching what they make runs a collective.
TF1_STEP_BUILDERS = {"minimize", "compute_gradients", "apply_gradients", "gradients"}


@fact
def is_io_call(a: A.Analysis, c: cst.Call) -> bool:
    """Built-ins, file writes and plotting/image/table libraries: never a collective."""
    names = a.names(c)
    return bool(names) and all(
        n in apis.COLLECTIVE_FREE_BUILTINS or n in apis.FILE_WRITE_FUNCTIONS or n in apis.FILE_OPEN_FUNCTIONS
        or n.startswith(apis.COLLECTIVE_FREE_MODULES) for n in names)


@fact
def is_harmless_library_call(a: A.Analysis, c: cst.Call) -> bool:
    """Numerical library calls (numpy, tf.math, ...) that are not training."""
    if method_name(c) in TRAINING_METHODS:
        return False
    names = a.names(c)
    return any(n.startswith(("numpy.", "tensorflow.", "math.", "builtins.")) for n in names) and not any(
        n.startswith("tensorflow.distribute") for n in names)


@fact
def object_kind(a: A.Analysis, expr, depth: int = 0):
    """The kind (apis.PIL_IMAGE, MPL_FIGURE, ...) of a file-writing object, or
    None when what built it is not known. A name has a kind only when every
    value assigned to it has that same kind."""
    if expr is None or depth > 8:
        return None
    if isinstance(expr, cst.Call):
        name = a.is_name(expr, apis.WRITER_OBJECT_CONSTRUCTORS)
        if name is not None:
            return apis.WRITER_OBJECT_CONSTRUCTORS[name]
        if open_mode(a, expr) is True:
            return apis.OPEN_FILE
        m = method_name(expr)
        if m is not None:
            kind = object_kind(a, receiver(expr), depth + 1)
            if kind is not None and m in apis.WRITER_OBJECT_CHAINS.get(kind, ()):
                return kind
        return None
    if isinstance(expr, cst.Name):
        bindings = a.assigned_values(expr)
        kinds = set()
        for origin, value in bindings:
            kind = object_kind(a, value, depth + 1) if value is not None else _tuple_kind(a, origin)
            if kind is None:
                return None
            kinds.add(kind)
        return kinds.pop() if len(kinds) == 1 else None
    return None


def _tuple_kind(a: A.Analysis, target):
    """``fig`` in ``fig, ax = plt.subplots()``: its kind from the table of tuple factories."""
    if not isinstance(target, cst.Name):
        return None
    element = a.parent(target)
    seq = a.parent(element)
    assign_target = a.parent(seq)
    assign = a.parent(assign_target)
    if not (isinstance(element, cst.Element) and isinstance(seq, (cst.Tuple, cst.List))
            and isinstance(assign_target, cst.AssignTarget) and isinstance(assign, cst.Assign)
            and len(assign.targets) == 1 and isinstance(assign.value, cst.Call)):
        return None
    name = a.is_name(assign.value, apis.WRITER_OBJECT_TUPLES)
    if name is None or any(isinstance(e, cst.StarredElement) for e in seq.elements):
        return None
    return apis.WRITER_OBJECT_TUPLES[name].get(list(seq.elements).index(element))


@fact
def open_mode(a: A.Analysis, call: cst.Call):
    """True: a call opening a file for writing; False: for reading or not an
    open call; None: an open call whose mode is not a literal."""
    name = a.is_name(call, apis.FILE_OPEN_FUNCTIONS)
    if name is None:
        return False
    index, keyword, default = apis.FILE_OPEN_FUNCTIONS[name]
    if any(arg.star for arg in call.args):
        return None
    arg = find_arg(call, keyword, index)
    if arg is None:
        return None if default is None else bool(set(default) & apis.FILE_WRITE_MODE_LETTERS)
    if not isinstance(arg.value, cst.SimpleString):
        return None
    mode = arg.value.evaluated_value
    if not isinstance(mode, str):
        return None
    return bool(set(mode) & apis.FILE_WRITE_MODE_LETTERS)


@fact
def written_data(a: A.Analysis) -> List[cst.BaseExpression]:
    """Values the script writes to files as data: the arrays handed to
    NumPy's savers, and what a pandas writer method (``to_csv``,
    ``to_parquet``, ...) is called on, given a path."""
    out: List[cst.BaseExpression] = []
    for c in a.calls:
        saver = a.is_name(c, set(apis.NUMPY_DATA_SAVERS))
        if saver:
            out += [arg.value for arg in c.args[1:] if not arg.star and (
                arg.keyword is None or arg.keyword.value != apis.NUMPY_DATA_SAVERS[saver])]
        elif method_name(c) in apis.WRITER_OBJECT_METHODS[apis.DATAFRAME] and receiver(c) is not None:
            path = apis.WRITER_METHODS_PATH_OPTIONAL[apis.DATAFRAME].get(method_name(c))
            if (find_arg(c, *path) is not None) if path else bool(c.args):  # to_json() without a path: text
                out.append(receiver(c))
    return out


WRITING_METHODS = {m for methods in apis.WRITER_OBJECT_METHODS.values() for m in methods}


@fact
def file_write_what(a: A.Analysis, call: cst.Call) -> "str | None":
    """How the change message calls this write, or None if it writes no file."""
    for n in sorted(a.names(call)):
        if n in apis.FILE_WRITE_FUNCTIONS:
            target = apis.FILE_WRITE_TARGETS.get(n)
            if target is not None and in_memory(a, find_arg(call, *target)):
                return None  # plt.savefig(buf) into an io.BytesIO(): no file
            return apis.FILE_WRITE_FUNCTIONS[n]
    m = method_name(call)
    if m is None or m not in WRITING_METHODS:
        return None
    kind = object_kind(a, receiver(call))
    path = apis.WRITER_METHODS_PATH_OPTIONAL.get(kind, {}).get(m)
    if path is not None and find_arg(call, *path) is None:
        return None  # no path: it returns the text, writes nothing
    if call.args and not call.args[0].keyword and in_memory(a, call.args[0]):
        return None  # fig.savefig(buf), img.save(buf): into memory
    return apis.WRITER_OBJECT_METHODS.get(kind, {}).get(m) if kind is not None else None


@fact
def in_memory(a: A.Analysis, arg) -> bool:
    """The file argument of a write is an in-memory file (``io.BytesIO()``,
    directly or through a name every binding of which makes one)."""
    if arg is None:
        return False
    value = arg.value
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        return bool(bound) and all(isinstance(v, cst.Call) and a.names(v) & apis.IN_MEMORY_FILES for _o, v in bound)
    return isinstance(value, cst.Call) and bool(a.names(value) & apis.IN_MEMORY_FILES)

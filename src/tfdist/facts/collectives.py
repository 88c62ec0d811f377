"""Which calls may run a collective operation (a guarded collective deadlocks): a call is
collective-free only when nothing it runs can be one.
"""
from __future__ import annotations

import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine.scopes import walk
from . import model_builds
from .syntax import calls_in, method_name, receiver
from .tf1_train_ops import names_train_op
from .writes import TF1_STEP_BUILDERS, TRAINING_METHODS, is_harmless_library_call, is_io_call, is_model_value, object_kind


@fact
def call_collective_free(a: A.Analysis, c: cst.Call, seen: set, inference_collectives: bool = False) -> bool:
    """``inference_collectives``: the engine runs collectives in Keras
    evaluate/predict (tf.distribute: the backend's inference_runs_collectives)."""
    if isinstance(c.func, cst.Name) and c.func.value in apis.PURE_CALLS:
        return True
    m = method_name(c)
    if m in apis.PURE_METHODS:
        return True
    # Methods of plotting/image/table/file objects (fig.savefig, img.save,
    # writer.writerow, f.write) only touch that object and its file.
    if m in apis.COLLECTIVE_FREE_METHODS or (m is not None and object_kind(a, receiver(c)) is not None):
        return True
    if is_io_call(a, c):
        return True
    if m in apis.STATE_READING_METHODS and not a.instance_classes(receiver(c)):
        return True
    # Keras evaluate/predict and forward passes run no collective under
    # engines whose optimizer alone communicates (Horovod); under
    # tf.distribute, evaluate/predict on a distributed model gather across
    # workers, so they must run on every worker.
    if m in apis.KERAS_PRINT_METHODS and is_model_value(a, receiver(c)):
        return True  # model.summary() prints what it knows
    if m in apis.KERAS_VERBOSE_METHODS and a.is_kind(receiver(c), A.MODEL):
        return not inference_collectives
    if a.is_kind(c.func, A.MODEL):
        # a forward pass: no collective, but under tf.distribute the first call of a model built lazily
        # makes its variables, which MultiWorkerMirroredStrategy agrees on with a collective
        return not inference_collectives or model_builds.built_when_made(a, c.func)
    if m == "run" and a.is_kind(receiver(c), A.SESSION) and c.args and not c.args[0].keyword \
            and not _fetches_training(a, c.args[0].value, set()):
        return True  # a session run fetching values no training step makes (a test loss, predictions)
    if m in TRAINING_METHODS:
        return False
    if isinstance(c.func, cst.Name):
        functions = a.local_functions(c.func)
        if not functions:
            return False
        for f in functions:
            if id(f) in seen:
                continue
            seen.add(id(f))
            if not all(call_collective_free(a, inner, seen, inference_collectives) for inner in calls_in(f.body)
                       if not is_harmless_library_call(a, inner)):
                return False
        return True
    return is_harmless_library_call(a, c)


def _fetches_training(a: A.Analysis, fetches, seen: set, depth: int = 0) -> bool:
    """The fetches of a session run may hold a training step or gradients:
    made (directly, or through the values of the names read, or attributes
    and calls tfdist cannot follow) by one of _TF1_STEP_BUILDERS."""
    if depth > 8:
        return True
    for node in walk(fetches):
        if names_train_op(a, node):
            return True  # sess.run("train"): the train op by its graph name
        if isinstance(node, cst.Call) and (method_name(node) in TF1_STEP_BUILDERS or not isinstance(
                node.func, (cst.Name, cst.Attribute)) or a.names(node) & {"tensorflow.gradients"}):
            return True
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
            return True  # an attribute set elsewhere (self.train_op): not followed here
        if isinstance(node, cst.Name) and id(node) not in seen:
            seen.add(id(node))
            bound = [(o, v) for o, v in a.assigned_values(node)
                     if o is not None and not isinstance(o, (cst.ImportAlias, cst.Import, cst.ImportFrom))]  # tf, None
            if any(value is None and not isinstance(origin, cst.Param) for origin, value in bound):
                return True
            if any(value is not None and _fetches_training(a, value, seen, depth + 1) for _, value in bound):
                return True
    return False


@fact
def collective_free(a: A.Analysis, c: cst.Call, inference_collectives: bool = False) -> bool:
    """Can this call never run a collective operation (nor step an optimizer)?"""
    return call_collective_free(a, c, set(), inference_collectives)

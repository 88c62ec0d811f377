"""Files a script reads back after saving them, on engines where every
worker saves (tf.distribute: saving may run collective operations, so each
worker writes -- the chief to the user's path, the others to a temporary
directory of their own).

A worker reading the user's path back (``keras.models.load_model(path)``
after ``ModelCheckpoint(path, save_best_only=True)``; ``load_weights``,
a checkpoint's ``restore``, ``tf.train.latest_checkpoint``) would read the
chief's file -- absent on another host, half-written while the chief still
saves -- instead of its own. Each read is pointed at what this worker wrote
at that path, decided at run time (the path it was given, when this worker
wrote nothing there: a pretrained file read as it was).
"""
from __future__ import annotations

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine.rule import Rule, register
from ..facts.syntax import find_arg, method_name, receiver

RULE = "worker-writes"


def _path_argument(a: A.Analysis, call: cst.Call):
    """The path argument of a call reading back a model, weights or checkpoint; else None."""
    found = a.is_name(call, set(apis.READ_BACK_FUNCTIONS))
    if found:
        return find_arg(call, *apis.READ_BACK_FUNCTIONS[found])
    m, r = method_name(call), receiver(call)
    if m not in apis.READ_BACK_METHODS or r is None:
        return None
    kinds = a.kinds(r)
    if (m == "load_weights" and kinds & {A.MODEL, A.MODULE}) or (m != "load_weights" and A.CHECKPOINT in kinds):
        return find_arg(call, *apis.READ_BACK_METHODS[m])
    return None


def _chief_written(a: A.Analysis, path):
    """The callback writing on the chief only (ModelCheckpoint) given the same path -- the same
    binding of a name, or an equal string -- or None."""
    for c in a.calls:
        found = a.is_name(c, set(apis.KERAS_CHIEF_WRITING_CALLBACKS))
        arg = find_arg(c, *apis.KERAS_CHIEF_WRITING_CALLBACKS[found]) if found else None
        if arg is not None and _same_path(a, arg.value, path):
            return c
    return None


def _same_path(a: A.Analysis, one, other) -> bool:
    if isinstance(one, cst.SimpleString) and isinstance(other, cst.SimpleString):
        return one.evaluated_value == other.evaluated_value
    if isinstance(one, cst.Name) and isinstance(other, cst.Name):
        return bool({id(o) for o, _ in a.assigned_values(one)} & {id(o) for o, _ in a.assigned_values(other)})
    return False


@register
class WorkerReads(Rule):
    id = "worker-reads"
    description = ("Models, weights and checkpoints read back where every worker saves (tf.distribute): each "
                   "worker reads what it wrote itself at that path, else the path as given.")
    engines = ("tf-distribute",)
    kinds = (RULE,)
    example = "keras/read_back_saved_model"
    order = 55  # after rank0-io and replica-fit, which point the saves at each worker's own path

    def apply(self, ctx) -> None:
        a = ctx.a
        if ctx.backend.worker_read_path("path") is None:
            return
        redirected = bool(ctx.state("replicas.worker_writes"))  # saves each worker makes to a path of its own
        for call in a.calls:
            arg = _path_argument(a, call)
            if arg is None or arg.star:
                continue
            written = _chief_written(a, arg.value)
            if written is not None:
                ctx.warn(call, RULE, ctx.say(
                    "{path} is what {callback} (line {line}) writes, on the chief only: every worker reads it back "
                    "here, so workers on other hosts need it on storage they all see (a shared file system), and "
                    "may read it while the chief still writes its last copy",
                    path=a.code(arg.value), callback=a.code(written.func), line=str(a.line(written))))
                continue
            if not redirected:
                continue  # nothing saved here to a worker's own path: every read reads the path as given
            template = ctx.backend.worker_read_path("{inner}")
            # built from the edited argument: a read inside it (latest_checkpoint(dir)) is wrapped too
            ctx.plan.replace(arg.value, lambda upd, template=template: ctx.expr(
                template, inner=ctx.module.code_for_node(upd)))
            ctx.change(call, RULE, ctx.say(
                "{path} read back by every worker from what it wrote there itself (the chief: the path; the "
                "others: their temporary copy), or from the path when it wrote nothing there",
                path=a.code(arg.value)))

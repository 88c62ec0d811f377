"""Keras ``compile``/``fit`` for tf.distribute's ParameterServerStrategy
(``--strategy parameter-server``): the model, its optimizer and ``compile``
in the strategy's scope (their variables on the parameter servers), fit()'s
arrays read through a dataset every worker repeats, its epoch length given.

Refused, with the reason and the edit: Keras 3 (``import keras``: Keras 3
does not support the strategy), and what this rule does not convert yet --
``train_on_batch``, a custom ``train_step``, ``evaluate``, fit() on
generators or Sequences, datasets whose epoch length is not known, validation
and sample weights in fit(); a dataset shuffled with a seed is warned (every
worker would read it in the same order).
"""
from __future__ import annotations

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine.rule import Rule, register
from ..actions import refusals
from ..actions import replicas
from ..facts import batch_steps
from ..facts import dataset_flow
from ..facts import keras_models
from ..facts import repeats
from ..facts import replica_state
from ..facts import sample_arrays
from ..facts import train_steps
from ..facts.batches import batch_calls
from ..facts.syntax import find_passed, receiver

RULE = "parameter-server"
#: fit()'s arguments the dataset function takes over (the others stay in the call).
MOVED = ("x", "y", "batch_size", "shuffle", "steps_per_epoch")
#: fit()'s arguments this rule does not convert under the strategy, and the edit to make.
NOT_CONVERTED = {
    "validation_split": "evaluate after fit() instead (model.evaluate on the held-out arrays), or drop it",
    "validation_data": "evaluate after fit() instead (model.evaluate), or drop it",
    "validation_steps": "drop it with the validation data",
    "validation_freq": "drop it with the validation data",
    "sample_weight": "drop it, or feed (x, y, weights) through a tf.keras.utils.experimental.DatasetCreator",
    "class_weight": "drop it, or weight the loss in the model",
}
SCOPE_SAID = ("{what} created in {scope}: its variables live on the parameter servers (those of at least the "
              "partitioner's size split across them), the chief coordinates")


def _refuse_unconverted(ctx) -> None:
    a = ctx.a
    stepped = batch_steps.calls(a)
    if stepped:
        raise ctx.unsupported(stepped[0], (
            "train_on_batch under ParameterServerStrategy is not converted: a step runs on a worker only when "
            "the coordinator schedules it (coordinator.schedule); train with fit(), or convert with "
            "--strategy mirrored"))
    steps = train_steps.steps(a)
    if steps:
        raise ctx.unsupported(steps[0], (
            f"a custom {steps[0].name.value}() under ParameterServerStrategy is not converted (its loss, metrics "
            "and any state it keeps would run asynchronously on the workers); train with the compiled loss, or "
            "convert with --strategy mirrored"))
    for call in keras_models.model_calls(a, {"evaluate"}):
        raise ctx.unsupported(call, (
            "evaluate() under ParameterServerStrategy is not converted: tf-keras runs it through the workers, each "
            "reading its own copy of the data for the steps it is given (not the data once: measured, arrays fail "
            "without steps=, and exact evaluation -- compile(pss_evaluation_shards=...) -- needs a dataset split "
            "by sample); evaluate the saved weights in a run without TF_CONFIG, or convert with --strategy mirrored"))
    for call in keras_models.model_calls(a, {"fit_generator"}):
        raise ctx.unsupported(call, "fit_generator() under ParameterServerStrategy is not converted: call fit() "
                                    "on arrays, or convert with --strategy mirrored")


def _input_or_refuse(ctx, call: cst.Call) -> bool:
    """fit()'s input is arrays (False) or a tf.data dataset (True) whose
    epoch length is known -- its size, or steps_per_epoch --, else refused
    with the edit."""
    a = ctx.a
    x = find_passed(a, call, "x", 0)
    y = find_passed(a, call, "y", 1)
    if x is None:
        raise ctx.unsupported(call, "fit() without input data under ParameterServerStrategy: give it arrays")
    dataset = y is None and (a.is_kind(x.value, A.DATASET) or bool(dataset_flow.dataset_sources(a, x.value)))
    if not dataset and not (y is not None or sample_arrays.numpy_array(a, x.value)):
        raise ctx.unsupported(x.value, (
            f"fit() on {a.code(x.value)} under ParameterServerStrategy: tfdist converts fit() on arrays and tf.data "
            "datasets only. Give fit() x=tf.keras.utils.experimental.DatasetCreator(dataset_fn), with "
            "dataset_fn(input_context) returning the batched dataset .repeat()ed, and "
            "steps_per_epoch=<batches in one epoch>"))
    steps = find_passed(a, call, "steps_per_epoch")
    if dataset and steps is None and (repeats.endless_repeats(a, x.value, frozenset())
                                      or not dataset_flow.size_known(a, x.value)):
        raise ctx.unsupported(x.value, (
            f"fit() on {a.code(x.value)} under ParameterServerStrategy needs the number of batches in one epoch, "
            "which TensorFlow does not know for this dataset (it repeats, or its size is not known): give fit() "
            "steps_per_epoch=<batches in one epoch>"))
    for arg in call.args:
        if arg.star:
            raise ctx.unsupported(call, "fit(**...) under ParameterServerStrategy: pass fit()'s arguments by name, "
                                        "so that tfdist can see which it is given")
        if arg.keyword is None and arg is not x and arg is not y:
            raise ctx.unsupported(arg.value, "fit()'s arguments after y are given by position: give them by "
                                             "keyword (batch_size=..., epochs=...)")
        if arg.keyword is not None and arg.keyword.value in NOT_CONVERTED:
            raise ctx.unsupported(arg.value, (
                f"fit({arg.keyword.value}=...) under ParameterServerStrategy is not converted: "
                f"{NOT_CONVERTED[arg.keyword.value]}"))
    shuffle = find_passed(a, call, "shuffle")
    if dataset:
        _same_order_warning(ctx, x.value)
    elif shuffle is not None and not (isinstance(shuffle.value, cst.Name) and shuffle.value.value == "True"):
        ctx.warn(shuffle.value, RULE, (
            f"fit(shuffle={a.code(shuffle.value)}) under ParameterServerStrategy: unshuffled, every worker reads "
            "the arrays in the same order from the first row, so the workers train on the same batches at the "
            "same time; shuffle them (shuffle=True: each worker draws its own order)"))
    return dataset


def _same_order_warning(ctx, dataset) -> None:
    """A dataset shuffled with a seed (its own, or TensorFlow's global one):
    every worker reads it in the same order (measured: 2 workers, the same
    first 6 rows), so they train on the same batches at once."""
    a = ctx.a
    shuffles = batch_calls(a, dataset, methods=("shuffle",)) or []
    seeded = [c for c in shuffles if find_passed(a, c, "seed", 1) is not None]
    global_seeds = [c for c in a.calls if a.is_name(c, apis.TF_GLOBAL_SEED_SETTERS)]
    if not seeded and not (shuffles and global_seeds):
        return
    where = seeded[0] if seeded else global_seeds[0]
    ctx.warn(dataset, RULE, (
        f"every worker reads {a.code(dataset)} in the same order under ParameterServerStrategy (measured: two "
        f"workers read the same rows first): its shuffle is seeded (line {a.line(where)}: {a.code(where)}), so "
        "the workers train on the same batches at the same time; leave the dataset's shuffle unseeded (no seed= "
        "and no global tf.random seed before it is built), or feed fit() arrays, which tfdist shuffles with a "
        "seed of each worker's own"))


def _scope(ctx, call: cst.Call) -> None:
    """The model's construction, its optimizer's and compile() in the strategy's scope."""
    a = ctx.a
    model = receiver(call)
    stmts = replica_state.construction_statements(a, model, {A.MODEL}) or keras_models.unread_construction(a, model)
    if not stmts:
        raise ctx.unsupported(call, (
            f"cannot find where {a.code(model)} is built: under ParameterServerStrategy its variables must be "
            f"created in the strategy's scope; build and compile it inside `with {ctx.fill(ctx.backend.replica_scope())}:`"))
    model_built = list(stmts)
    for compiled in keras_models.model_calls(a, {"compile"}):
        other = receiver(compiled)
        if not any(s in model_built for s in replica_state.construction_statements(a, other, {A.MODEL})
                   + keras_models.unread_construction(a, other)):
            continue  # another model's compile()
        stmts.append(a.statement_of(compiled))
        passed = find_passed(a, compiled, "optimizer", 0)
        for made, _type in (keras_models.optimizer_constructions(a, passed.value, 0) or []) if passed else []:
            stmts.append(a.statement_of(made))
    unique = [s for i, s in enumerate(stmts) if s is not None and s not in stmts[:i]]
    replicas.in_replica_scope(ctx, unique, f"model {a.code(model)}, its optimizer and compile()", said=SCOPE_SAID)


def _fit(ctx, call: cst.Call, dataset: bool) -> None:
    """fit(x, y, batch_size=B, ...) -> fit(**data(x, y, batch_size=B), ...)."""
    a = ctx.a
    moved = []
    for key in MOVED:
        arg = find_passed(a, call, key, {"x": 0, "y": 1}.get(key))
        if arg is not None and arg in call.args:
            moved.append((key, arg))
    words = ", ".join(a.code(arg.value) if key in ("x", "y") else f"{key}={a.code(arg.value)}" for key, arg in moved)
    data = cst.Arg(value=ctx.expr(ctx.backend.fit_data("{arguments}"), arguments=words), star="**")
    gone = {id(arg) for _key, arg in moved}
    first_comma, last_comma = call.args[0].comma, call.args[-1].comma

    def rewrite(updated: cst.Call) -> cst.Call:
        kept = [u for u, o in zip(updated.args, call.args) if id(o) not in gone]
        if not kept:
            return updated.with_changes(args=[data.with_changes(comma=last_comma)])
        kept[-1] = kept[-1].with_changes(comma=last_comma)
        first = data.with_changes(comma=first_comma)  # the layout of the call's first argument
        return updated.with_changes(args=[first, *kept])

    ctx.plan.replace(call, rewrite)
    if not ctx.state("parameter_server_fit.defined"):
        ctx.state("parameter_server_fit.defined").add(True)
        ctx.define(*ctx.backend.fit_data_definition(ctx))
    given = "steps_per_epoch as given" if any(k == "steps_per_epoch" for k, _ in moved) else \
        "steps_per_epoch the original's batches per epoch ({count})".format(
            count="the dataset's size" if dataset else "their length / the batch")
    how = "the dataset every worker builds from its definition, repeated" if dataset else \
        "a dataset every worker makes and repeats (DatasetCreator)"
    ctx.change(call, RULE, ctx.say(
        "fit() reads {data} through {how}, {given}, steps scheduled by the chief on whichever worker is free; "
        "callbacks and saving run on the chief only (the only task that runs the script); without TF_CONFIG "
        "fit() gets them as written",
        data=", ".join(a.code(arg.value) for key, arg in moved if key in ("x", "y")), how=how, given=given))


@register
class ParameterServerFit(Rule):
    id = "parameter-server-fit"
    description = ("Keras fit() under ParameterServerStrategy: model, optimizer and compile() in its scope, "
                   "arrays or a dataset read repeated by every worker, steps_per_epoch given.")
    engines = ("parameter-server",)
    kinds = (RULE, replica_state.RULE)
    refuses = ("Keras 3 (import keras; keras-team/keras#18624), train_on_batch, a custom train_step, evaluate(), "
               "fit() on generators, Sequences or datasets of unknown length, validation or sample weights in fit()")
    example = "keras/parameter_server_fit"
    order = 10
    PATTERN = P.KERAS

    def detect(self, a):
        return keras_models.detect(a)

    def prepare(self, ctx) -> None:
        keras_models.prepare(ctx)

    def apply(self, ctx) -> None:
        if ctx.facts.get("keras_flavor") == "keras":
            refusals.refuse_keras3(ctx)
        _refuse_unconverted(ctx)
        for call in keras_models.model_calls(ctx.a, {"fit"}):
            dataset = _input_or_refuse(ctx, call)
            _scope(ctx, call)
            _fit(ctx, call, dataset)

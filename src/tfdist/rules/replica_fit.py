"""Keras ``compile``/``fit`` for engines that replicate variables
(tf.distribute): the model, its optimizer and ``compile`` in the replication
scope, the learning rate scaled as for Horovod, the user's batch kept per
replica, the data split by the engine, step counts divided, progress output
from the chief only.
"""
from __future__ import annotations

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine.scopes import walk
from ..actions.keywords import keyword_free
from ..facts.syntax import append_arg, calls_in, find_arg, find_passed, kwarg, prepend_elements, receiver, source
from ..actions import keras_optimizers
from ..actions import built_marks
from ..actions import learning_rate
from ..actions import per_rank_draws
from ..actions import refusals
from ..actions import replica_train_step
from ..actions import replicas
from ..actions import sharding
from ..actions import shared_seeds
from ..actions import train_on_batch
from ..actions import warmup_edits
from ..facts import batch_steps
from ..facts import batches
from ..facts import dataset_flow
from ..facts import gradient_changes
from ..facts import gradient_tapes
from ..facts import keras_inputs
from ..facts import keras_models
from ..facts import kinds
from ..facts import replica_state
from ..facts import sample_arrays
from ..facts import samplers
from ..facts import shard_points
from ..facts import train_steps
from ..engine.rule import Rule, register


PATTERN = P.KERAS
RULE = kinds.KERAS
detect = keras_models.detect
prepare = keras_models.prepare

KERAS_DEFAULT_BATCH = "32"  # fit()'s batch_size when absent
# Keras 3's callbacks, unlike tf.keras's, do not give the non-chief workers
# paths of their own; ModelCheckpoint and BackupAndRestore then write one
# file from every worker (measured on Keras 3.15, TF 2.21, 2 workers: the
# second worker's h5py create fails with "unable to lock file").
KERAS3_BACKUP_REFUSAL = (
    "BackupAndRestore under Keras 3 (import keras): every worker writes the same backup file "
    "(measured on Keras 3.15: h5py \"unable to lock file\" on the second worker), and a worker restarted "
    "from a backup of its own would resume at another epoch than the others; not converted for "
    "--backend tf-distribute (use tf.keras with tf-keras, or drop the backup / --fault-tolerant)")
# callback -> (keyword, position, default) of the path it writes under
KERAS3_WRITER_CALLBACKS = {
    "keras.callbacks.ModelCheckpoint": ("filepath", 0, None),
    "keras.callbacks.TensorBoard": ("log_dir", 0, "logs"),
    **{name: ("filepath", 0, None) for name in apis.TRACKER_CHECKPOINT_CALLBACKS},
}


def _clipping_optimizer(ctx, compile_call: cst.Call) -> None:
    """An optimizer that clips (``clipnorm``, ``global_clipnorm``,
    ``clipvalue``) compiled for Keras's own train_step: Keras 3 clips each
    replica's gradients before it sums them, tf-keras sums first. Wrapped
    where it is built so that, on Keras 3, it clips their sum (a custom
    train_step sums them in the step instead: actions/global_gradients)."""
    a = ctx.a
    if train_steps.steps(a):
        return
    passed = find_passed(a, compile_call, "optimizer", 0)
    done = ctx.state("replica_fit.clip_summed")
    for built, _type in (keras_models.optimizer_constructions(a, passed.value, 0) or []) if passed else []:
        clip = next((arg for arg in getattr(built, "args", ()) if arg.keyword is not None
                     and arg.keyword.value in gradient_changes.OPTIMIZER_CLIPPING), None)
        if clip is None or id(built) in done:
            continue
        done.add(id(built))
        wrapper = ctx.expr(ctx.backend.clip_after_sum("OPTIMIZER"))
        ctx.plan.replace(built, lambda new, wrapper=wrapper: wrapper.with_changes(args=[cst.Arg(new)]))
        ctx.change(built, RULE, ctx.say(
            "{clip}: Keras 3 clips each replica's gradients before its optimizer sums them (measured: one step "
            "with global_clipnorm=1.0 moved a weight 0.108 on 2 replicas, 0.058 on one device); the optimizer "
            "clips their sum instead, as one process clips the whole batch's gradient (tf-keras sums first)",
            clip=a.code(clip).strip().rstrip(",")))


def apply(ctx) -> None:
    a = ctx.a
    stepped = batch_steps.calls(a)
    # custom train_step / test_step: each replica's loss its share of the mean
    replica_train_step.apply(ctx)
    compiles = keras_models.model_calls(a, {"compile"})
    keras_optimizers.refuse_shared_optimizer(ctx, compiles)
    keras_optimizers.optimizers_made_elsewhere(ctx, averaging_wrapper=False)
    ctx.facts["keras_predicts"] = bool(keras_models.model_calls(a, {"predict"}))  # backend: predict evenly
    if stepped:
        # the batch train_on_batch is given stays the global batch: its models' learning rates are kept
        train_on_batch.apply_replicated(ctx, stepped, _scope_model)
    kept = train_on_batch.stepped_compiles(ctx, stepped) if stepped else set()
    for call in compiles:
        if id(call) in kept:
            continue
        if find_passed(a, call, "optimizer", 0) is None and keras_models.override_without_optimizer(a, call):
            continue  # an overridden compile(d_optimizer=..., g_optimizer=...): its optimizers are followed in the step
        keras_optimizers.scale_compile_optimizer(ctx, call)
        _clipping_optimizer(ctx, call)
    fits = keras_models.model_calls(a, apis.KERAS_FIT_METHODS)
    for call in fits:
        if keras_models.sklearn_wrapper(a, receiver(call)):
            # a scikit-learn wrapper's fit() builds its model and hands its keyword arguments to the
            # model's fit(), over the settings its constructor holds (batch_size=50): nothing is added
            # there; what to do by hand is warned with the wrapper (backend.sklearn_wrapper_warning)
            continue
        refusals.refuse_unbatched_fit_data(ctx, call)
        _scope_model(ctx, call, compiles)
        _fit(ctx, call)
        built_marks.mark_built_without_call(ctx, call)
        _build_step_optimizers(ctx, call)
    if fits:  # every worker writes its own copy of the data files it then reads: drawn alike
        shared_seeds.same_written_data(ctx, fits)
    learning_rate.scale_epoch_schedulers(ctx)
    # a model only evaluated is mirrored too: built outside the scope, every
    # worker would hold its own random weights and their metrics be averaged
    for call in keras_models.model_calls(a, {"evaluate"}):
        built = replica_state.construction_statements(a, receiver(call), {A.MODEL})
        if built and not any(isinstance(n, cst.Call) and a.is_name(n, apis.KERAS_MODEL_LOADERS)
                             for s in built for n in walk(s)):
            _scope_model(ctx, call, compiles)
    for method, pos in keras_models.EVAL_VERBOSE_POS.items():
        for call in keras_models.model_calls(a, {method}):
            keras_optimizers.rank0_verbose(ctx, call, pos, default="1")
    _csv_loggers(ctx)
    if ctx.facts.get("keras_flavor") == "keras":
        _keras3_writer_callbacks(ctx)


def _build_step_optimizers(ctx, call: cst.Call) -> None:
    """Optimizers a custom train_step applies other than self.optimizer
    (``self.d_optimizer.apply(grads, self.discriminator.trainable_weights)``):
    Keras builds only compile()'s before tracing; these would create their
    slot variables inside the traced step, which fails on several local
    replicas (MirroredStrategy on a host with several devices). They are
    built in the scope before fit(), on the variables the step applies them
    to (every name in that expression is the model itself)."""
    a = ctx.a
    model, cls = _fitted_class(a, call)
    if cls is None:
        return
    classes = [cls]
    steps = a.class_methods(cls, "train_step")
    lines = []
    for p in gradient_tapes.apply_calls(a):
        if gradient_tapes.keras_step_of(a, a.enclosing_function(p)) not in steps:
            continue  # applied outside the step and the methods only it runs
        opt, variables = receiver(p), gradient_tapes.applied_variables(a, p)
        if not (isinstance(opt, cst.Attribute) and isinstance(opt.value, cst.Name) and opt.value.value == "self"
                and opt.attr.value != "optimizer") or variables is None:
            continue
        names = {n.value for n in walk(variables) if isinstance(n, cst.Name)
                 and not (isinstance(a.parent(n), cst.Attribute) and a.parent(n).attr is n)}
        if names != {"self"}:
            continue  # variables tfdist cannot name from outside the step
        line = f"{_with_model(opt, model.value)}.build({_with_model(variables, model.value)})"
        if line not in lines:
            lines.append(line)
    done = ctx.state("replica_fit.optimizers")
    key = (model.value, id(a.statement_of(call)))
    if not lines or key in done:
        return
    done.add(key)
    body = "\n".join("    " + line for line in lines)
    ctx.plan.insert_before(a.statement_of(call), ctx.stmts(
        f"with {ctx.backend.replica_scope()}:\n{body}",
        comment=ctx.say("{engine}: the optimizers {cls}'s train_step applies are built before fit() (Keras builds "
                        "only compile()'s; built inside the traced step they cannot create their slots on several "
                        "local replicas).", cls=classes[0].name.value)))
    ctx.change(call, replica_state.RULE, ctx.say(
        "{optimizers} built in {engine}'s scope before fit(), on the variables {cls}'s train_step applies them to",
        optimizers=", ".join(line.split(".build(")[0] for line in lines), cls=classes[0].name.value))


def _fitted_class(a: A.Analysis, call: cst.Call):
    """(model name, its class) for ``name.fit(...)`` on an instance of one
    class of this module, else (name or None, None)."""
    model = receiver(call)
    if not isinstance(model, cst.Name):
        return None, None
    classes = a.instance_classes(model)
    return model, (classes[0] if len(classes) == 1 else None)


def _with_model(expr, model: str) -> str:
    """expr's code with ``self`` read as the model's name."""
    class _Rename(cst.CSTTransformer):
        def leave_Name(self, original, updated):
            return updated.with_changes(value=model) if updated.value == "self" else updated
    return cst.Module([]).code_for_node(expr.visit(_Rename()))


def _same_model(a: A.Analysis, x, y) -> bool:
    if isinstance(x, cst.Name) and isinstance(y, cst.Name):  # one object: a binding reaching both
        held = keras_models.holders(a, x), keras_models.holders(a, y)
        if all(held):
            return bool(held[0] & held[1])
        return x.value == y.value and a.enclosing_function(x) is a.enclosing_function(y)
    return a.code(x) == a.code(y) and a.enclosing_function(x) is a.enclosing_function(y)


def _scope_model(ctx, fit_call: cst.Call, compiles, gather=None) -> None:
    """Model construction, optimizer construction and compile() in the scope
    (or, given a ``gather`` list, those statements added to it, for one
    scope around several models)."""
    a = ctx.a
    model = receiver(fit_call)
    stmts = replica_state.construction_statements(a, model, {A.MODEL}) or keras_models.unread_construction(a, model)
    for call in compiles:
        if _same_model(a, receiver(call), model) or any(
                s in replica_state.construction_statements(a, receiver(call), {A.MODEL})
                + keras_models.unread_construction(a, receiver(call)) for s in stmts):
            stmt = a.statement_of(call)
            if stmt not in stmts:
                stmts.append(stmt)
            arg = find_passed(a, call, "optimizer", 0)
            if arg is not None:
                # followed through names, parameters and factories (make_optimizer())
                built = keras_models.optimizer_constructions(a, arg.value, 0)
                for s in [a.statement_of(c) for c, _ in built or []] + replica_state.construction_statements(
                        a, arg.value, {A.KERAS_OPTIMIZER}) + (
                        _unseen_optimizer_bindings(a, arg.value, call) if built is None else []):
                    if s is not None and s not in stmts:
                        stmts.append(s)
            for other in call.args:  # optimizers an overridden compile() takes (d_optimizer=...)
                if other is not arg and a.is_kind(other.value, A.KERAS_OPTIMIZER):
                    for s in replica_state.construction_statements(a, other.value, {A.KERAS_OPTIMIZER}):
                        if s not in stmts:
                            stmts.append(s)
            for keyword in COMPILE_METRIC_KEYWORDS:
                arg = find_arg(call, keyword, None)
                for s in _metric_statements(a, arg.value, 0) if arg is not None else []:
                    if s not in stmts:
                        stmts.append(s)
    if not stmts:
        ctx.warn(model, replica_state.RULE, ctx.say(
            "cannot find where {model} is built: build it and compile it inside `with {scope}:`",
            model=a.code(model), scope=ctx.fill(ctx.backend.replica_scope())))
        return
    if gather is not None:
        gather += [s for s in stmts if s not in gather]
        return
    replicas.in_replica_scope(ctx, stmts, f"model {a.code(model)}, its optimizer and compile()")


def _unseen_optimizer_bindings(a: A.Analysis, value, compile_call: cst.Call) -> list:
    """The ``optimizer = make_optimizer(...)`` statements (in compile()'s
    function) binding an optimizer built where the converter cannot see:
    it creates variables when it is built (its step count, its rate), so it
    is built in the scope too."""
    if not isinstance(value, cst.Name):
        return []
    out = []
    for origin, bound in a.assigned_values(value):
        if isinstance(origin, cst.Assign) and isinstance(bound, cst.Call) \
                and a.enclosing_function(origin) is a.enclosing_function(compile_call):
            out.append(a.statement_of(origin))
    return out


#: compile() arguments holding metric objects: they have variables, which
#: must be created in the model's scope (tf-keras refuses others: "created
#: inside a different distribution strategy scope than the model").
COMPILE_METRIC_KEYWORDS = ("metrics", "weighted_metrics")
METRIC_MODULES = ("tensorflow.keras.metrics.", "keras.metrics.", "tf_keras.metrics.", "tensorflow.metrics.")


def _metric_statements(a: A.Analysis, expr, depth: int):
    """The statements constructing the Keras metric objects an expression
    refers to (``[AUC(), "accuracy"]``, a module-level ``METRICS`` list, a
    parameter's default or the callers' arguments)."""
    out = []
    if depth > 6:
        return out
    for node in walk(expr):
        if isinstance(node, cst.Call) and any(n.startswith(METRIC_MODULES) for n in a.names(node)):
            stmt = a.statement_of(node)
            if stmt is not None and stmt not in out:
                out.append(stmt)
        elif isinstance(node, cst.Name):
            for origin, value in a.assigned_values(node):
                values = [value] if value is not None else []
                if isinstance(origin, cst.Param):
                    values += ([origin.default] if origin.default is not None else []) + [
                        v for _c, v in a.argument_values(origin)]
                for v in values:
                    if v is not expr:
                        out += [s for s in _metric_statements(a, v, depth + 1) if s not in out]
    return out


def _fit(ctx, call: cst.Call) -> None:
    a = ctx.a
    keras_optimizers.rank0_verbose(ctx, call, keras_models.fit_position(call, "verbose"), default="1")
    backup = ctx.backend.fit_backup_callback(ctx) if hasattr(ctx.backend, "fit_backup_callback") else None
    if backup is not None and ctx.facts.get("keras_flavor") == "keras":
        raise ctx.unsupported(call, KERAS3_BACKUP_REFUSAL)
    # the backup first (it restores the state the others start from), then the warmup
    first = ([backup] if backup is not None else []) + warmup_edits.fit_callbacks(ctx, call)
    if first:
        _add_callback_first(ctx, call, first, backup is not None)
    x = keras_models.fit_arg(call, "x")
    y = keras_models.fit_arg(call, "y")
    val = keras_models.fit_arg(call, "validation_data")
    per_step = {}  # step-count keyword -> names of datasets batched per replica
    if x is None:
        ctx.warn(call, shard_points.RULE, "fit() without input data: give it a tf.data dataset the strategy can split")
    elif y is None and replica_state.external_helper_site(ctx, x.value) is not None:  # built in another module
        replicas.external_helper_dataset(ctx, replica_state.external_helper_site(ctx, x.value), "training data")
    elif a.is_kind(x.value, A.DATASET) or y is None and dataset_flow.dataset_sources(a, x.value):
        _dataset(ctx, x.value, "training data")
        sharding.divide_steps_taken(ctx, x.value)
        per_step["steps_per_epoch"] = keras_inputs.data_names(a, x.value)
    elif y is not None or sample_arrays.numpy_array(a, x.value):
        shared_seeds.same_random_split(ctx, [x.value] + ([y.value] if y is not None else []))
        _arrays(ctx, call)
    elif _is_sequence(a, x.value):
        _sequence(ctx, call, x.value, "steps_per_epoch", "training data")
        per_step["steps_per_epoch"] = set()  # the stream is endless: the user's count, divided, bounds it
    else:
        ctx.warn(x.value, shard_points.RULE, ctx.say(
            "{engine} splits only tf.data datasets and arrays between workers{note}: turn {what} into a tf.data "
            "dataset (batched by the per-replica batch x {size})", what=a.code(x.value),
            note=keras_inputs.unbound_parameter_note(a, x.value)))
    if val is not None and replica_state.external_helper_site(ctx, val.value) is not None:
        replicas.external_helper_dataset(ctx, replica_state.external_helper_site(ctx, val.value), "validation data")
    elif val is not None and (a.is_kind(val.value, A.DATASET) or dataset_flow.dataset_sources(a, val.value)):
        _dataset(ctx, val.value, "validation data")
        per_step["validation_steps"] = keras_inputs.data_names(a, val.value)
    elif val is not None and _is_sequence(a, val.value):
        _sequence(ctx, call, val.value, "validation_steps", "validation data")
    for key in ("steps_per_epoch", "validation_steps"):
        arg = keras_models.fit_arg(call, key)
        if arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            if key in per_step and per_step[key] and keras_inputs.counts_sharded_data(ctx, arg.value, per_step[key]):
                continue  # counted on the dataset batched per replica: global steps already
            helper = batches.counted_on_global_batch(ctx, arg.value)
            if helper is not None:
                ctx.change(arg.value, shard_points.RULE, ctx.say(
                    "{key}: {helper}() counts it in batches of the global batch it now makes: already the "
                    "steps of all workers together, not divided again", key=key, helper=helper))
                continue
            sharding.divide(ctx, arg.value, key)


def _add_callback_first(ctx, call: cst.Call, templates: list, backup: bool) -> None:
    """Put callbacks first in fit()'s callbacks, whatever form they take."""
    new = ", ".join(ctx.fill(t) for t in templates)
    arg = keras_models.fit_arg(call, "callbacks")
    if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
        value = ctx.expr(f"[{new}]")
        if arg is None:
            if not keyword_free(ctx, call, "callbacks", f"[{new}, ...]", "keras-callbacks"):
                return
            ctx.plan.replace(call, lambda c: append_arg(c, kwarg("callbacks", value)))
        else:
            ctx.plan.replace(arg.value, lambda old: value)
    elif isinstance(arg.value, cst.List):
        elements = [ctx.expr(ctx.fill(t)) for t in templates]
        ctx.plan.replace(arg.value, lambda upd: prepend_elements(upd, elements, layout=arg.value))
    else:
        ctx.plan.replace(arg.value, lambda upd: ctx.expr(f"[{new}, *{{inner}}]", inner=ctx.module.code_for_node(upd)))
    if backup:
        ctx.change(call, "fault-tolerance", ctx.say(
            "fit() backs up its state every epoch ({callback}): a restarted worker resumes where it stopped",
            callback=ctx.fill(templates[0]).split("(")[0]))


def _dataset(ctx, dataset, what: str) -> None:
    replicas.dataset_batches_per_replica(ctx, dataset, what)
    replicas.split_by_engine(ctx, dataset, what)


def _is_sequence(a: A.Analysis, value) -> bool:
    """A keras Sequence / PyDataset (a subclass, or an ImageDataGenerator
    flow), or a generator of this module's making."""
    return (a.is_kind(value, A.SEQUENCE) or keras_inputs.image_flow(a, value)[0] is not None
            or samplers.generator_call(a, value) is not None or keras_inputs.external_sequence(a, value))


def _sequence(ctx, call: cst.Call, value, steps_key: str, what: str) -> None:
    """fit() on a Sequence: the engine splits only datasets, so the Sequence
    is read through one (each worker its share, one batch per replica and
    step) and the step count, which fit() cannot tell from an endless
    stream, is given: the user's divided, else len(sequence) divided."""
    a = ctx.a
    shuffle = keras_models.fit_arg(call, "shuffle")
    # fit() shuffles the training batches' order (unless shuffle=False), never the validation's
    keep_order = steps_key == "validation_steps" or (
        shuffle is not None and isinstance(shuffle.value, cst.Name) and shuffle.value.value == "False")
    # filled now, so that the setup writes the helper the template names
    template = ctx.fill(ctx.backend.sequence_dataset("{inner}", shuffle=not keep_order), inner="{inner}")
    steps = keras_models.fit_arg(call, steps_key)
    uncounted = steps is None or isinstance(steps.value, cst.Name) and steps.value.value == "None"
    bound = _bind_before(ctx, call, value, steps_key) if uncounted and samplers.generator_call(a, value) is None else None
    if bound is not None:
        # fit(datagen.flow(x, y), ...): the Sequence, made just before the
        # statement, is counted by its name below
        ctx.plan.replace(value, lambda upd, bound=bound: ctx.expr(template, inner=bound))
    else:
        ctx.plan.replace(value, lambda upd: ctx.expr(template, inner=ctx.module.code_for_node(upd)))
    # every worker runs the generator and takes the batches at its places: of the same order only
    alike = per_rank_draws.seed_generator_order_alike(ctx, value, "worker", "{engine}: every worker makes the same random "
                                                "order, so the batches each takes of it are its own.")
    ctx.change(value, shard_points.RULE, ctx.say(
        "{what}: {batches} read as a distributed dataset: every step takes {size} of its batches, one per "
        "replica, each worker its own share{alike}", what=what, batches=a.code(value), alike=alike))
    if uncounted:
        if samplers.generator_call(a, value) is not None:
            ctx.warn(value, shard_points.RULE, ctx.say(
                "a generator has no length to count: give fit() {key}=<its batches per epoch> // {size} (the "
                "distributed stream has no epochs of its own)", key=steps_key))
        elif isinstance(value, (cst.Name, cst.Attribute)) or bound is not None:
            counted = bound if bound is not None else a.code(value)
            text = ctx.fill(ctx.backend.divide_count(f"len({counted})"))
            count = ctx.expr(text)
            if steps is None:
                if not keyword_free(ctx, call, steps_key, text, shard_points.RULE):
                    return
                ctx.plan.replace(call, lambda c, count=count: append_arg(c, kwarg(steps_key, count)))
            else:
                ctx.plan.replace(steps.value, lambda old, count=count: count)
            ctx.change(call, shard_points.RULE, ctx.say(
                "{key}: len({sequence}) divided by {size} (the distributed stream does not end by itself)",
                key=steps_key, sequence=counted))
        else:
            ctx.warn(value, shard_points.RULE, ctx.say(
                "bind this Sequence to a name and give fit() {key}=len(name) // {size}: the distributed stream "
                "does not end by itself", key=steps_key))
    _warn_own_shuffle(ctx, value)


def _bind_before(ctx, call: cst.Call, value, steps_key: str):
    """Bind a Sequence made in the fit() call (``fit(datagen.flow(x, y))``)
    to a new name in a statement of its own just before the call's, so that
    it can be counted; the name, or None where there is no such statement."""
    a = ctx.a
    if not isinstance(value, cst.Call):
        return None
    stmt = a.statement_of(call)
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    name = ctx.imports.free_name("train_batches" if steps_key == "steps_per_epoch" else "validation_batches")
    ctx.plan.insert_before(stmt, ctx.stmts(f"{name} = {source(a.module, value)}", comment=ctx.say(
        "{engine}: the batches bound to a name, to count them: the distributed stream does not end by itself.")))
    return name


def _warn_own_shuffle(ctx, value) -> None:
    """A Sequence class whose on_epoch_end shuffles with a generator other
    than NumPy's global one: the workers would order it differently."""
    a = ctx.a
    for c in keras_inputs.sequence_classes(a, value):
        for f in c.body.body:
            if not (isinstance(f, cst.FunctionDef) and f.name.value == "on_epoch_end"):
                continue
            for draw in calls_in(f.body):
                names = a.names(draw)
                if isinstance(draw.func, cst.Attribute) and draw.func.attr.value in apis.RANDOM_DRAWS and not any(
                        n.startswith("numpy.random.") and n not in apis.NUMPY_OWN_GENERATORS for n in names):
                    ctx.warn(draw, shard_points.RULE, ctx.say(
                        "{cls}.on_epoch_end reorders with a generator of its own: the workers' shares are disjoint "
                        "only if it orders the batches alike on every worker: draw from numpy.random (seeded alike "
                        "around on_epoch_end by {engine}) or seed it with the same value on every worker",
                        cls=c.name.value))
                    return


def _arrays(ctx, call: cst.Call) -> None:
    """NumPy inputs: Keras makes a dataset of them that the strategy splits
    by sample; its batch (fit's batch_size) is kept per replica."""
    arg = find_passed(ctx.a, call, "batch_size", 2)
    if arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
        replicas.keep_batch_per_replica(ctx, arg.value, "training data")
        return
    new = ctx.expr(ctx.backend.per_replica_batch(KERAS_DEFAULT_BATCH))
    if arg is None and not keyword_free(ctx, call, "batch_size", ctx.fill(ctx.backend.per_replica_batch(KERAS_DEFAULT_BATCH)),
                                       replica_state.BATCH_RULE):
        return
    if arg is not None:
        ctx.plan.replace(arg.value, lambda old: new)
    else:
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg("batch_size", new)))
    ctx.change(call, replica_state.BATCH_RULE, ctx.say("training data: fit()'s default batch (32) kept per replica"))


def _csv_loggers(ctx) -> None:
    """CSVLogger writes its file from every worker: each to its own path."""
    a = ctx.a
    for call in a.calls:
        if a.is_name(call, {"tensorflow.keras.callbacks.CSVLogger", "keras.callbacks.CSVLogger"}):
            if not replicas.write_path(ctx, call, "filename", 0, "CSV log"):
                ctx.warn(call, "rank0-io", "CSVLogger without a file name: give each worker its own file")


def _keras3_writer_callbacks(ctx) -> None:
    """Keras 3 (``import keras``): fit() runs the callbacks on every worker
    and its ModelCheckpoint / TensorBoard write to the path as given (tf.keras
    sends the non-chief workers to temporary directories itself): each
    worker gets its own path, the chief the user's. BackupAndRestore, whose
    backup every worker must read back, is refused."""
    a = ctx.a
    for call in a.calls:
        if a.is_name(call, {"keras.callbacks.BackupAndRestore"}):
            raise ctx.unsupported(call, KERAS3_BACKUP_REFUSAL)
        name = a.is_name(call, KERAS3_WRITER_CALLBACKS)
        if name is None:
            continue
        keyword, position, default = KERAS3_WRITER_CALLBACKS[name]
        what = name.rsplit(".", 1)[-1]
        arg = find_arg(call, keyword, position)
        if arg is None and default is None:
            ctx.warn(call, "rank0-io", f"{what} without a path: give each worker its own path")
            continue
        path = source(ctx.module, arg.value, False) if arg is not None else ctx.quoted(default)
        new = ctx.expr(ctx.backend.worker_write_path(path))
        if arg is not None:
            ctx.plan.replace(arg.value, lambda old, new=new: new)
        else:
            ctx.plan.replace(call, lambda c, new=new: append_arg(c, kwarg(keyword, new)))
        ctx.change(call, "worker-writes", ctx.say(
            "{what}: Keras 3 runs it on every worker and does not keep their files apart: the chief writes to "
            "{path}{default}, the other workers to a temporary directory",
            what=what, path=path, default="" if arg is not None else " (the default)"))


@register
class ReplicaFit(Rule):
    id = "replica-fit"
    description = "Keras compile/fit and custom train_step under a tf.distribute strategy: model, optimizer and compile in the strategy scope, a scaled learning rate, the batch per replica, the input distributed."
    engines = ('tf-distribute',)
    kinds = ('data-division', 'distributed-optimizer', 'gradient-tape', 'lr-scaling', 'lr-warmup', 'per-replica-batch', 'rank0-output', 'replica-scope', 'worker-writes')
    refuses = "BackupAndRestore under Keras 3; a loss whose reduction it cannot follow"
    example = "keras/standalone_keras"
    order = 10
    PATTERN = PATTERN

    def detect(self, a):
        return detect(a)

    def prepare(self, ctx) -> None:
        prepare(ctx)

    def apply(self, ctx) -> None:
        apply(ctx)

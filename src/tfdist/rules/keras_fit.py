"""Keras ``compile``/``fit``: Horovod's Keras recipe.

The optimizer (wherever it is built) gets a scaled learning rate and is
wrapped in ``DistributedOptimizer``; ``fit`` gets the broadcast and metric
averaging callbacks first, file-writing callbacks on rank 0 only, progress
output on rank 0 only, its steps divided and its data sharded.
"""
from __future__ import annotations

from typing import List, Optional, Tuple
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import patterns as P
from ..actions.keras_optimizers import optimizers_made_elsewhere, rank0_verbose, scale_compile_optimizer
from ..actions.keywords import keyword_free
from ..facts.keras_models import EVAL_VERBOSE_POS, detect, fit_arg, fit_position, is_model, model_calls, override_without_optimizer, prepare, wrapped_optimizers
from ..facts.syntax import append_arg, find_passed, kwarg, method_name, prepend_elements, receiver, source
from ..actions import keras_input_shards
from ..actions import learning_rate
from ..actions import per_rank_draws
from ..actions import repeated_shards
from ..actions import sharding
from ..actions import step_division
from ..actions import tape_loops
from ..actions import train_on_batch
from ..actions import warmup_edits
from ..facts import batch_steps
from ..facts import gradient_tapes
from ..facts import keras_inputs
from ..facts import kinds
from ..facts import sample_arrays
from ..facts import samplers
from ..facts import shard_points
from ..engine.rule import Rule, register


PATTERN = P.KERAS
RULE = kinds.KERAS

# Positions of fit()'s arguments (Keras 2 signature), for positional calls.
FIT_POS = apis.KERAS_FIT_POSITIONS


def apply(ctx) -> None:
    a = ctx.a
    optimizers_made_elsewhere(ctx, averaging_wrapper=True)
    # A custom train_step computes its own gradients: the optimizer wrapper
    # would not see them (Horovod averages in compute_gradients), the tape must.
    stepped = batch_steps.calls(a)
    if stepped:
        # the broadcast after a model's first train_on_batch is horovod.tensorflow's broadcast_variables
        ctx.facts["needs_tf_api"] = True
    custom = gradient_tapes.training_tapes(a, keras_train_step=True)
    if custom:
        ctx.facts["needs_tf_api"] = True
        for w, item, name, calls in custom:
            tape_loops.wrap_tape(ctx, w, item, name, calls)
    compiles = model_calls(a, {"compile"})
    for call in compiles:
        if find_passed(a, call, "optimizer", 0) is None and override_without_optimizer(a, call):
            continue  # an overridden compile(d_optimizer=..., g_optimizer=...): scaled where the step applies them
        scale_compile_optimizer(ctx, call)
    for p in gradient_tapes.apply_calls(a):
        r = receiver(p)
        if gradient_tapes.in_keras_train_step(a, p) and not (
                isinstance(r, cst.Attribute) and r.attr.value == "optimizer" and isinstance(r.value, cst.Name)
                and a.self_class(r.value) is not None):  # self.optimizer: compile()'s, scaled there
            tape_loops.scale(ctx, r)
    for call in model_calls(a, apis.KERAS_FIT_METHODS):
        _fit(ctx, call)
    learning_rate.scale_epoch_schedulers(ctx)
    if stepped:
        train_on_batch.apply_horovod(ctx, stepped)
    for method, pos in EVAL_VERBOSE_POS.items():
        for call in model_calls(a, {method}):
            rank0_verbose(ctx, call, pos, default="1")


# ------------------------------------------------------------------------ fit
def _fit(ctx, call: cst.Call) -> None:
    _callbacks(ctx, call)
    rank0_verbose(ctx, call, fit_position(call, "verbose"), default="1")
    # Each flow is divided exactly once: its data is sharded (a steps count
    # taken from the sharded data is per rank already), or -- for inputs that
    # cannot be split -- every rank reads its own stream and the steps are
    # divided. A count computed from the full data set is always divided.
    per_rank = {}  # "steps_per_epoch"/"validation_steps" -> names of sharded data
    _shard_training_input(ctx, call, per_rank)
    val = fit_arg(call, "validation_data")
    if val is not None:
        _shard_validation_input(ctx, call, val.value, per_rank)
    for key in ("steps_per_epoch", "validation_steps"):
        arg = fit_arg(call, key)
        if arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            if key in per_rank and keras_inputs.counts_sharded_data(ctx, arg.value, per_rank[key]):
                continue  # counted on the sharded data: already per rank
            sharding.divide(ctx, arg.value, key)


def _shard_training_input(ctx, call: cst.Call, per_rank: dict) -> None:
    """fit()'s training data divided across ranks (or a warning); per_rank["steps_per_epoch"]
    set when its data is sharded."""
    a = ctx.a
    x = fit_arg(call, "x")
    y = fit_arg(call, "y")
    steps = fit_arg(call, "steps_per_epoch")
    if x is None:
        ctx.warn(call, shard_points.RULE, "fit() without input data: divide the input across ranks by hand")
        return
    flow = keras_input_shards.shard_image_flow(ctx, x.value, "training data")
    if flow == "sliced":
        per_rank["steps_per_epoch"] = keras_inputs.data_names(a, x.value)
    elif flow == "streams":
        if steps is None:
            _add_steps(ctx, call, x.value, "steps_per_epoch")
    elif a.is_kind(x.value, A.DATASET):
        if not sharding.shard_dataset(ctx, x.value, "training data") and not (
                steps is not None and repeated_shards.shard_repeated(ctx, x.value, "training data")):
            ctx.warn(x.value, shard_points.RULE, ctx.say("cannot find where this dataset is built: shard it with .shard({size}, {rank})"))
        sharding.divide_steps_taken(ctx, x.value)
        per_rank["steps_per_epoch"] = keras_inputs.data_names(a, x.value)
    elif y is None and (a.is_kind(x.value, A.SEQUENCE) or keras_inputs.external_sequence(a, x.value)):
        keras_input_shards.wrap_sequence(ctx, call, x.value, "training data")
    elif y is not None:
        values = [x.value, y.value]
        sw = fit_arg(call, "sample_weight")
        if sw is not None:
            values.append(sw.value)
        sharding.shard_arrays(ctx, values, "training data")
    elif sample_arrays.numpy_array(a, x.value):
        # inputs only (an autoencoder's train_step reads x alone): sliced like any array
        sharding.shard_arrays(ctx, [x.value], "training data")
    elif sharding.shard_dataset(ctx, x.value, "training data"):
        per_rank["steps_per_epoch"] = keras_inputs.data_names(a, x.value)
    else:
        _share_training_stream(ctx, call, x.value, steps)


def _share_training_stream(ctx, call: cst.Call, x, steps) -> None:
    """fit()'s training input read as a stream (neither arrays nor a dataset tfdist can shard):
    endless, drawn per rank, or a generator each rank keeps its share of; else a warning."""
    a = ctx.a
    if steps is not None and repeated_shards.shard_repeated(ctx, x, "training data"):
        pass  # endless: steps_per_epoch (divided below) bounds every rank's steps
    elif steps is not None and samplers.random_generator(a, x) is not None:
        # a generator drawing random batches from NumPy's global generator:
        # one stream per rank; steps_per_epoch (divided below) bounds the steps
        per_rank_draws.seed_numpy_before(ctx, a.statement_of(call))
        ctx.change(x, shard_points.RULE,
                   f"{a.code(x)} draws a different stream of batches on each rank (NumPy re-seeded by "
                   f"rank before fit); each rank runs 1/size of steps_per_epoch")
    elif samplers.generator_call(a, x) is not None and _share_generator(
            ctx, x, "training data", "steps_per_epoch" if steps is not None else None):
        pass  # each rank keeps every size-th batch; steps_per_epoch (divided below), if given, bounds its steps
    elif steps is not None and not keras_inputs.unbound_parameter_note(a, x):
        ctx.warn(x, shard_points.RULE, "every rank reads this input from the start: make it yield a different 1/size share per rank")
    else:
        ctx.warn(x, shard_points.RULE, f"cannot tell what {a.code(x)} is"
                 f"{keras_inputs.unbound_parameter_note(a, x)}: divide the input across ranks by hand")


def _shard_validation_input(ctx, call: cst.Call, v, per_rank: dict) -> None:
    """fit()'s validation_data divided across ranks; per_rank["validation_steps"] set when its
    data is sharded."""
    a = ctx.a
    flow = keras_input_shards.shard_image_flow(ctx, v, "validation data")
    if flow == "sliced":
        per_rank["validation_steps"] = keras_inputs.data_names(a, v)
    elif flow == "streams":
        if fit_arg(call, "validation_steps") is None:
            _add_steps(ctx, call, v, "validation_steps")
    elif a.is_kind(v, A.DATASET):
        sharding.shard_dataset(ctx, v, "validation data", evaluation=True)
        per_rank["validation_steps"] = keras_inputs.data_names(a, v)
    elif isinstance(v, cst.Tuple) and 2 <= len(v.elements) <= 3 and all(
            sample_arrays.array_leaves(e.value, a) is not None for e in v.elements):
        # (x_val, y_val[, sample_weight]): each may be several inputs / outputs
        sharding.shard_arrays(ctx, [e.value for e in v.elements], "validation data")
    elif a.is_kind(v, A.SEQUENCE) or keras_inputs.external_sequence(a, v):
        keras_input_shards.wrap_sequence(ctx, call, v, "validation data")
    elif fit_arg(call, "validation_steps") is not None and samplers.generator_call(a, v) is not None \
            and _share_generator(ctx, v, "validation data", "validation_steps"):
        pass  # validation_steps (divided below) bounds each rank's share
    elif sharding.shard_dataset(ctx, v, "validation data", evaluation=True):
        per_rank["validation_steps"] = keras_inputs.data_names(a, v)


def _share_generator(ctx, x, what: str, steps_key: Optional[str]) -> bool:
    """fit() on a generator of this module that yields the same batches on
    every rank: each rank keeps every size-th batch, in whole rounds (the
    engine's share of a stream), so the ranks' batches are disjoint."""
    a = ctx.a
    runs = f"each runs 1/size of {steps_key}" if steps_key else "each runs 1/size of the steps, the same number"
    # every rank must make the same order for its every size-th batch to be a share of it
    alike = per_rank_draws.seed_generator_order_alike(ctx, x, "rank", "{engine}: every rank makes the same random order, "
                                                "so the shares each rank keeps of it are disjoint.")
    return step_division.take_rank_share(ctx, x, f"{what}: {a.code(x)} is a generator of {samplers.generator_home(a, x)}, "
                                              f"read whole on every rank: each rank keeps every size-th of its batches, "
                                              f"in whole rounds; {runs}{alike}")


def _add_steps(ctx, call: cst.Call, flow, key: str) -> None:
    """A file-reading flow (one shuffled stream per rank) with no step count:
    every rank runs len(flow) // size steps."""
    if not isinstance(flow, cst.Name):
        ctx.warn(flow, shard_points.RULE, ctx.say("each rank reads its own shuffled stream from this flow: pass {key}=len(flow) // {size} (bind the flow to a name first)", key=key))
        return
    count = ctx.fill(ctx.backend.divide_count(f"len({flow.value})"))
    if not keyword_free(ctx, call, key, count, shard_points.RULE):
        return
    new = ctx.expr(count)
    ctx.plan.replace(call, lambda c: append_arg(c, kwarg(key, new)))
    ctx.change(call, shard_points.RULE, f"{key}=len({flow.value}) // size: each rank reads its own shuffled stream from {flow.value}, 1/size of its batches")


def _is_rank0_callback(a: A.Analysis, expr) -> bool:
    return any(t.kind == A.CALLBACK and t.name in apis.KERAS_RANK0_CALLBACKS for t in a.types(expr))


def _callbacks(ctx, call: cst.Call) -> None:
    a = ctx.a
    extra = warmup_edits.fit_callbacks(ctx, call)  # after the engine's own (Horovod's documented order)
    first = [ctx.fill(t) for t in [*ctx.backend.keras_callbacks(), *extra]]
    # Not through a **mapping (find_passed): a list there is made once and
    # would hand one broadcast callback to every fit() unpacking it.
    arg = fit_arg(call, "callbacks")
    if arg is None:
        if not keyword_free(ctx, call, "callbacks", "[" + ", ".join(first) + ", ...]", "keras-callbacks",
                            edit="take the callbacks out of {mapping} and pass callbacks=[" + ", ".join(first)
                                 + ", *those] to each fit() itself, by hand (made per call: a broadcast callback "
                                   "broadcasts one model once), keeping checkpoint/TensorBoard/CSV callbacks on "
                                   "rank 0 only"):
            return
        new = ctx.expr("[" + ", ".join(first) + "]")
        ctx.plan.replace(call, lambda c: append_arg(c, kwarg("callbacks", new)))
        ctx.change(call, "keras-callbacks", "broadcast of initial variables and metric averaging callbacks added")
        return
    value = arg.value
    if isinstance(value, cst.Name) and value.value == "None":  # same as absent
        new = ctx.expr("[" + ", ".join(first) + "]")
        ctx.plan.replace(value, lambda old: new)
        ctx.change(value, "keras-callbacks", "broadcast of initial variables and metric averaging callbacks added")
        return
    if isinstance(value, cst.List):
        _callback_list(ctx, value, extra)
        return
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        lists = None
        if len(bound) == 1 and isinstance(bound[0][1], cst.List):
            lists = [(value, bound[0][0], bound[0][1])]
        elif len(bound) == 1 and bound[0][1] is not None:
            lists = _returned_callback_lists(a, bound[0][1])
        if lists:
            _engine_callbacks_first(ctx, value, lists, first, f"those in {value.value}")
            return
    single = _single_callback(a, value)
    if single is not None:
        chief = ctx.backend.is_chief()
        text = source(ctx.module, value)
        if single:  # a file-writing callback: on rank 0 only
            new = ctx.expr("[" + ", ".join(first) + "] + ([" + text + f"] if {chief} else [])")
        else:
            new = ctx.expr("[" + ", ".join(first) + ", " + text + "]")
        ctx.plan.replace(value, lambda old: new)
        ctx.change(value, "keras-callbacks", f"the callback {a.code(value)} put in a list after the broadcast of initial variables and metric averaging callbacks"
                   + (" (on rank 0 only)" if single else ""))
        return
    lists = _helper_callback_lists(a, value)
    if lists:
        for node in lists:
            _callback_list(ctx, node, extra)
        return
    lists = _returned_callback_lists(a, value)
    if lists:  # a helper also used elsewhere: the engine's callbacks made here
        _engine_callbacks_first(ctx, value, lists, first, f"those {a.code(value)} returns")
        return
    new = ctx.expr("[" + ", ".join(first) + ", *" + source(ctx.module, value) + "]")
    ctx.plan.replace(value, lambda old: new)
    ctx.change(value, "keras-callbacks", "broadcast of initial variables and metric averaging callbacks put first")
    ctx.warn(value, "rank0-io", f"callbacks in {a.code(value)} are unknown here: keep checkpoint/TensorBoard/CSV callbacks on rank 0 only")


def _single_callback(a: A.Analysis, value):
    """For a callbacks argument that is one callback object (not a list):
    True if it writes files (rank 0 only), False if not; None when it is not
    certainly one callback of one of these two sorts."""
    constructions = _callback_values(a, value, 0)
    if not constructions:
        return None
    rank0 = set()
    for call in constructions:
        ts = a.types(call)
        if not ts or any(t.kind != A.CALLBACK for t in ts):
            return None
        rank0.add(any(t.name in apis.KERAS_RANK0_CALLBACKS for t in ts))
    return rank0.pop() if len(rank0) == 1 else None


def _callback_values(a: A.Analysis, value, depth: int):
    """The calls a value is built by (a call, or a name bound only to calls)."""
    if isinstance(value, cst.Call):
        return [value]
    if isinstance(value, cst.Name) and depth < 4:
        out = []
        for _, bound in a.assigned_values(value):
            sub = _callback_values(a, bound, depth + 1) if bound is not None else None
            if not sub:
                return []
            out += sub
        return out
    return []


def _helper_callback_lists(a: A.Analysis, value) -> List[cst.List]:
    """``callbacks=get_callbacks(name)``: the list literals returned by a
    function of this module used only to build fit() callbacks."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
        return []
    fdefs = a.local_functions(value.func)
    if len(fdefs) != 1:
        return []
    returns = A.returned_values(fdefs[0])
    if not returns or not all(isinstance(r, cst.List) for r in returns):
        return []
    uses = [use for scope in a.scopes._all_scopes for use in scope.accesses.get(fdefs[0].name.value, ())
            if fdefs[0] in a.local_functions(use)]
    for use in uses:  # every use: callbacks=helper(...) of a fit call
        call = a.parent(use)
        arg = a.parent(call)
        fit = a.parent(arg)
        if not (isinstance(call, cst.Call) and call.func is use and isinstance(arg, cst.Arg) and isinstance(fit, cst.Call)
                and method_name(fit) in apis.KERAS_FIT_METHODS and is_model(a, receiver(fit))):
            return []
        found = fit_arg(fit, "callbacks")
        if found is None or found.value is not call:
            return []
    return returns


def _engine_callbacks_first(ctx, value, lists, first: List[str], whose: str) -> None:
    """callbacks=<value>, a name or helper call whose callbacks come from the
    list literals ``lists`` ((name it is bound to or None, that binding,
    list)): their file writers kept on rank 0, and the engine's callbacks
    made at this call, not put in the lists: a list given to several fit()
    calls (two models, a fit in a loop) would hold one broadcast callback,
    which broadcasts once -- only the first model would start equal on
    every rank."""
    for name, origin, node in lists:
        _callback_list(ctx, node, engine=False)
        if name is not None:
            _guard_appends(ctx, name, origin)
    new = ctx.expr("[" + ", ".join(first) + ", *" + source(ctx.module, value) + "]")
    ctx.plan.replace(value, lambda old: new)
    ctx.change(value, "keras-callbacks", f"broadcast of initial variables and metric averaging callbacks made "
                                         f"for this fit(), before {whose}")


def _returned_callback_lists(a: A.Analysis, value) -> List[Tuple[Optional[cst.Name], Optional[cst.CSTNode], cst.List]]:
    """``make_callbacks(...)``, a function of this module: the list literals
    it returns, each with the name it is bound to in the function and that
    binding (so appends to it are found), or the name None when returned as
    written. Empty unless every return is such a list."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
        return []
    fdefs = a.local_functions(value.func)
    if len(fdefs) != 1:
        return []
    out = []
    for r in A.returned_values(fdefs[0]):
        if isinstance(r, cst.List):
            out.append((None, None, r))
            continue
        bound = a.assigned_values(r) if isinstance(r, cst.Name) else []
        if len(bound) != 1 or not isinstance(bound[0][1], cst.List):
            return []
        out.append((r, bound[0][0], bound[0][1]))
    return out


def _callback_list(ctx, node: cst.List, extra=(), engine: bool = True) -> None:
    """The engine's callbacks put first in a list literal (unless not
    ``engine``), its rank-0 callbacks (checkpoints, logs) moved to a list
    kept on rank 0 only."""
    if node in wrapped_optimizers(ctx):
        return
    wrapped_optimizers(ctx).add(node)
    a = ctx.a
    first = [ctx.expr(t) for t in [*ctx.backend.keras_callbacks(), *extra]] if engine else []
    rank0 = [e for e in node.elements if not isinstance(e, cst.StarredElement) and _is_rank0_callback(a, e.value)]

    def rewrite(upd: cst.List):
        keep = [e for e, o in zip(upd.elements, node.elements) if o not in rank0]
        moved = [e for e, o in zip(upd.elements, node.elements) if o in rank0]
        if keep:
            last = keep[-1]
            trailing = node.elements[-1].comma if isinstance(node.elements[-1].comma, cst.Comma) else cst.MaybeSentinel.DEFAULT
            keep[-1] = last.with_changes(comma=trailing)
        base = prepend_elements(upd.with_changes(elements=keep), first, layout=node) if first else \
            upd.with_changes(elements=keep)
        if not moved:
            return base
        # The rank-0 callbacks keep their own layout, in a list of their own.
        moved[-1] = moved[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if isinstance(node.elements[-1].comma, cst.Comma):
            moved[-1] = moved[-1].with_changes(comma=node.elements[-1].comma)
        tail = cst.IfExp(
            test=ctx.expr(ctx.backend.is_chief()),
            body=upd.with_changes(elements=moved, lpar=[], rpar=[]),
            orelse=cst.List([]),
            lpar=[cst.LeftParen()], rpar=[cst.RightParen()],
        )
        if not keep and not first:
            return tail  # every callback of the list writes files
        return cst.BinaryOperation(
            left=base.with_changes(lpar=[], rpar=[]),
            operator=cst.Add(),
            right=tail,
            lpar=upd.lpar, rpar=upd.rpar,
        )

    if not first and not rank0:
        return
    ctx.plan.replace(node, rewrite)
    if first:
        ctx.change(node, "keras-callbacks", "broadcast of initial variables and metric averaging callbacks put first")
    else:
        ctx.change(node, "rank0-io", "the list's file-writing callbacks moved to a list of their own, kept on rank 0 "
                                     "only")
    for e in rank0:
        ctx.change(e.value, "rank0-io", f"{a.code(e.value.func) if isinstance(e.value, cst.Call) else a.code(e.value)} runs on rank 0 only")


def _guard_appends(ctx, name: cst.Name, origin: cst.CSTNode) -> None:
    """``callbacks.append(ModelCheckpoint(...))`` runs on rank 0 only, where
    the list it appends to is the one bound at origin (not another binding
    of the same name)."""
    a = ctx.a
    for call in a.calls:
        if method_name(call) in ("append", "extend", "insert") and isinstance(receiver(call), cst.Name) \
                and receiver(call).value == name.value and call.args and _is_rank0_callback(a, call.args[-1].value) \
                and any(o is origin for o, _ in a.assigned_values(receiver(call))):
            stmt = a.statement_of(call)
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
                if ctx.plan.guard(stmt, ctx.expr(ctx.backend.is_chief())):
                    ctx.change(call, "rank0-io", f"{a.code(call)} runs on rank 0 only")


@register
class KerasFit(Rule):
    id = "keras-fit"
    description = "Keras compile/fit and train_on_batch under Horovod: the optimizer wrapped with a scaled learning rate, the initial state broadcast from rank 0, the input or the steps divided across ranks."
    engines = ('horovod',)
    kinds = ('broadcast', 'data-division', 'distributed-optimizer', 'gradient-tape', 'keras-callbacks', 'lr-scaling', 'lr-warmup', 'rank0-io', 'rank0-output')
    refuses = "an optimizer it cannot name; train_on_batch models compiled or trained in ways it cannot follow"
    example = "keras/standalone_keras"
    order = 10
    PATTERN = PATTERN

    def detect(self, a):
        return detect(a)

    def prepare(self, ctx) -> None:
        prepare(ctx)

    def apply(self, ctx) -> None:
        apply(ctx)

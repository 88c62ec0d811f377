"""GradientTape loops for engines that replicate variables (tf.distribute):
models, optimizers and trained variables created in the replication scope,
the training step run on every replica (its results averaged), each
replica's loss its share of the global mean, the dataset distributed with
the user's batch kept per replica, and counted step loops divided.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Set
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine import dataflow
from ..engine.scopes import walk
from ..facts.syntax import calls_in, find_arg, names_a_field, receiver, source
from ..facts.tf1_graphs import reorders_itself
from ..actions import loss_shares
from ..actions import per_rank_draws
from ..actions import replicas
from ..actions import sharding
from ..actions import step_division
from ..actions import tape_loops
from ..facts import dataset_flow
from ..facts import gradient_tapes
from ..facts import kinds
from ..facts import replica_state
from ..facts import samplers
from ..facts import shard_points
from ..facts import step_counts
from ..facts import tf1_graphs
from ..engine.rule import Rule, register


PATTERN = P.TAPE
RULE = kinds.GRADIENT_TAPE
detect = gradient_tapes.detect


def apply(ctx) -> None:
    a = ctx.a
    found = gradient_tapes.training_tapes(a)
    by_hand = [t for t in found if not gradient_tapes.optimizer_applied(a, t[3])]
    for w, _item, _name, calls in by_hand:
        updates = gradient_tapes.manual_updates(a, calls)
        message = ctx.say(
            "this step updates variables by hand ({update}, no optimizer): under {engine} an optimizer "
            "aggregates the replicas' gradients; apply them with an optimizer (e.g. "
            "tf.keras.optimizers.SGD(lr).apply_gradients(zip(grads, variables))){alternative}",
            update=a.code(updates[0].func))
        if any(p != P.TAPE for p in ctx.patterns) or len(by_hand) < len(found):
            ctx.warn(updates[0], shard_points.RULE, message)  # the file's other training is converted
        else:
            raise ctx.unsupported(updates[0], message)
    found = [t for t in found if t not in by_hand]
    applies = [p for p in gradient_tapes.apply_calls(a) if not gradient_tapes.in_keras_train_step(a, p)]
    if by_hand and not found and not applies:
        return  # only steps written by hand, warned above: the file's other training is converted
    grad_calls = [c for *_, cs in found for c in cs]
    _scope_state(ctx, applies, grad_calls)
    for p in applies:
        tape_loops.scale(ctx, receiver(p))
    for w, _item, _name, calls in found:
        for call in calls:
            loss_shares.loss_share(ctx, w, call)
    _run_steps(ctx, {id(p) for p in applies})


# ------------------------------------------------------------ replica scope
def _scope_state(ctx, applies, grad_calls) -> None:
    """Optimizers and the variables they train, built in the scope."""
    a = ctx.a
    stmts: List[cst.BaseStatement] = []
    for p in applies:
        for s in replica_state.construction_statements(a, receiver(p), {A.KERAS_OPTIMIZER}):
            if s not in stmts:
                stmts.append(s)
    for g in grad_calls:
        sources = find_arg(g, "sources", 1)
        if sources is None:
            continue
        for s in _variable_statements(a, sources.value, 0):
            if s not in stmts:
                stmts.append(s)
    replicas.in_replica_scope(ctx, stmts, "trained models, variables and optimizers")


def _variable_statements(a: A.Analysis, expr, depth: int) -> List[cst.BaseStatement]:
    """Statements building the models / tf.Variables an expression of
    trained variables refers to (``model.trainable_variables``, ``[w, b]``,
    ``params``, ``m1.trainable_variables + m2.trainable_variables``)."""
    if depth > 6:
        return []
    out: List[cst.BaseStatement] = []
    for node in walk(expr):
        if isinstance(node, cst.Call) and a.is_name(node, {apis.TF_VARIABLE}):
            s = a.statement_of(node)
            if s is not None and s not in out:
                out.append(s)
        if isinstance(node, (cst.Name, cst.Attribute)):
            for s in replica_state.construction_statements(a, node, {A.MODEL}):
                if s not in out:
                    out.append(s)
            if isinstance(node, cst.Name):
                # an instance of a class of this module that makes tf.Variables (a tf.Module)
                if any(_creates_variables(a, cd) for cd in a.instance_classes(node)):
                    for t in a.types(node):
                        s = a.statement_of(t.call) if t.call is not None else None
                        if s is not None and s not in out:
                            out.append(s)
                for origin, value in a.assigned_values(node):
                    # layers in ``for layers, opt in ((lower_layers, opt_a), ...)``: each pass's element
                    for value in [value] if value is not None else a.tuple_element_values(origin):
                        if value is not expr:
                            out += [s for s in _variable_statements(a, value, depth + 1) if s not in out]
    return out


def _creates_variables(a: A.Analysis, cd: cst.ClassDef) -> bool:
    """Does the class (or a base class of this module) create tf.Variables?"""
    return any(isinstance(n, cst.Call) and a.is_name(n, {apis.TF_VARIABLE})
               for klass in a.lineage(cd) for n in walk(klass))


# ------------------------------------------------------------ steps
def _run_steps(ctx, applies: Set[int]) -> None:
    a = ctx.a
    trains = lambda node: gradient_tapes.runs_optimizer_step(a, node, applies)  # noqa: E731
    # a loop over a tuple written out applies each of a fixed set within a step
    loops = [l for l in list(a.for_loops) + list(a.while_loops) if trains(l.body)
             and not gradient_tapes.over_a_display(l)]
    innermost = [l for l in loops if not any(o is not l and dataflow.is_inside(a, o, l.body) for o in loops)
                 and not any(o is not l and _inside_called(a, o, l) for o in loops)]
    if not innermost:
        ctx.warn(None, RULE, ctx.say("no training loop found around the steps: run each step with {run}",
                                     run=ctx.fill(ctx.backend.run_on_replicas("step", "args"))))
        return
    steps = []
    for loop in innermost:
        calls = [c for c in calls_in(loop.body) if trains(c) and dataflow.callees(a, c)
                 and not any(isinstance(p, (cst.FunctionDef, cst.Lambda)) for p in _between(a, c, loop))]
        feed = None if _reads_dataset(a, loop) else _generator_feed(ctx, loop) or _array_feed(ctx, loop, trains)
        cut = feed if isinstance(feed, _ArrayFeed) else None
        if not calls or _batch_used_outside(ctx.a, loop, calls, cut):
            # The step is written in the loop, or the loop works on the
            # (distributed) batch around the step calls: that code runs on
            # every replica too, as one step function.
            _step_from_inline_code(ctx, loop, trains, cut)
            ctx.state("replica_tape.extracted").add(loop)
            _distribute_loop_data(ctx, loop, feed)
            continue
        for c in calls:
            steps += [f for f in dataflow.callees(a, c) if f not in steps]
        _distribute_loop_data(ctx, loop, feed, calls)
    extracted = ctx.state("replica_tape.extracted")
    for call in a.calls:
        fdefs = dataflow.callees(a, call)
        if fdefs and any(f in steps for f in fdefs) and not any(dataflow.is_inside(a, call, f) for f in steps) \
                and not any(dataflow.is_inside(a, call, loop.body) for loop in extracted):
            _run_on_replicas(ctx, call)


def _step_from_inline_code(ctx, loop, trains, feed=None) -> None:
    """The statements of a loop body that make one training step (from the
    first tape to the last optimizer step) become a step function defined
    in their place, run on every replica: its arguments are what the loop
    bound for this step, its results what is read after it. ``feed``: the
    statements cutting the batch from arrays, which stay out of it (every
    replica gets its own batch from them, see _array_feed)."""
    a = ctx.a
    body = list(loop.body.body)
    tape_withs = {id(w) for w, *_ in gradient_tapes.training_tapes(a)}
    if feed is not None:
        batch, cut = feed.names, {id(s) for s in feed.statements}
    else:
        batch, reads = _distributed_batch(a, loop)
        cut = {id(s) for s in reads}  # next(iterator) runs outside the replicas
    training = [i for i, stmt in enumerate(body) if trains(stmt) or any(id(n) in tape_withs for n in walk(stmt))]
    # From the first statement working on the batch to the last training one.
    marks = training + [i for i, stmt in enumerate(body) if training and i < max(training) and id(stmt) not in cut
                        and any(isinstance(n, cst.Name) and n.value in batch for n in walk(stmt))]
    refusal = ctx.say("the training step written inline in this loop cannot be moved into a step function "
                      "{engine} runs on every replica ({why}); move the tape, the gradient and apply_gradients "
                      "into a function called from the loop{alternative}", why="{why}")
    if not marks:
        raise ctx.unsupported(loop, refusal.replace("{why}", "the step was not found in the loop body"))
    first, last = min(marks), max(marks)
    # ``del tape`` right after the step: it deletes what the step made, so it runs in the step too
    made = set().union(*(_assigned(s) for s in body[first:last + 1]))
    while last + 1 < len(body) and _deletes_only(body[last + 1], made):
        last += 1
    span = body[first:last + 1]
    bound_before = set(_target_names(loop.target) if isinstance(loop, cst.For) else ())
    for stmt in body[:first]:
        bound_before |= _assigned(stmt)
    assigned = set()
    for stmt in span:
        assigned |= _assigned(stmt)
    read_in_span = []
    for stmt in span:
        for n in walk(stmt):
            if isinstance(n, cst.Name) and n.value not in read_in_span:
                read_in_span.append(n.value)
    for stmt in span:
        for n in walk(stmt):
            if isinstance(n, (cst.AugAssign,)) and isinstance(n.target, cst.Name) and n.target.value not in _assigned_plain(span):
                raise ctx.unsupported(n, refusal.replace("{why}", f"it updates {n.target.value}, bound outside the step"))
            if isinstance(n, (cst.Return, cst.Break, cst.Continue, cst.Yield, cst.Global, cst.Nonlocal)):
                raise ctx.unsupported(n, refusal.replace("{why}", "it leaves the loop body or yields"))
    params = [n for n in read_in_span if n in bound_before and n not in assigned]
    scope = a.enclosing_function(loop) or a.module
    # Names the rest of the same scope reads (not other functions' own names).
    outside = set()
    span_ids = {id(n) for stmt in span for n in walk(stmt)}
    nested = {id(n) for d in walk(scope) if d is not scope and isinstance(d, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
              for n in walk(d.body)}
    for n in walk(scope):
        if isinstance(n, cst.Name) and id(n) not in span_ids and id(n) not in nested and not names_a_field(a, n):
            outside.add(n.value)
    results = [n for n in sorted(assigned) if n in outside]
    name = replica_state.free_local_name(ctx, "train_step")
    run = ctx.fill(ctx.backend.run_on_replicas(name, ", ".join(params)))
    call_text = (", ".join(results) + " = " if results else "") + run
    define = ctx.stmts(f"def {name}({', '.join(params)}):\n    pass",
                       comment=ctx.say("{engine}: one training step, run on every replica."))[0]
    call = ctx.stmts(call_text)[0]
    returns = ctx.stmts("return " + ", ".join(results))[0] if results else None
    # The batch, read again after the step (a loss or an accuracy printed
    # every few steps), holds distributed values no code outside the
    # replicas can use: from there on the names hold this worker's rows.
    order = _ordered_names(body, batch)
    later = [n for n in order if n in batch and any(
        isinstance(x, cst.Name) and x.value == n for stmt in body[last + 1:] for x in walk(stmt))]
    localise = []
    if later:
        names = ", ".join(later)
        value = later[0] if len(later) == 1 else f"({names})"
        localise = ctx.stmts(f"{names} = " + ctx.fill(ctx.backend.local_values(value)))

    def build(inner, leading, define=define, call=call, returns=returns, localise=localise):
        statements = inner + ([returns] if returns is not None else [])
        return [define.with_changes(body=cst.IndentedBlock(body=statements),
                                    leading_lines=[*leading, *define.leading_lines]), call, *localise]

    ctx.plan.regroup(span, build)
    ctx.change(span[0], RULE, ctx.say("the inline training step (lines {start}-{end}) made a function {name}({params}) "
                                      "run on every replica, its results averaged",
                                      start=str(a.line(span[0])), end=str(a.end_line(span[-1])), name=name,
                                      params=", ".join(params)), through=span[-1])
    if later:
        ctx.change(span[-1], RULE, ctx.say(
            "{names} read after the step: from there on they hold this worker's rows of the distributed batch",
            names=", ".join(later)))


def _deletes_only(stmt, names: Set[str]) -> bool:
    """``del tape``: a statement deleting names, all of them among ``names``."""
    if not isinstance(stmt, cst.SimpleStatementLine) or not all(isinstance(s, cst.Del) for s in stmt.body):
        return False
    targets = [t for s in stmt.body for t in ([e.value for e in s.target.elements] if isinstance(s.target, cst.Tuple)
                                               else [s.target])]
    return all(isinstance(t, cst.Name) and t.value in names for t in targets)


def _batch_used_outside(a: A.Analysis, loop, calls, feed=None) -> bool:
    """Does the loop body use what the loop binds (the batch) other than as
    arguments of its step calls (``noise = tf.random.normal([real.shape[0], 6])``)?"""
    batch, reads = (feed.names, feed.statements) if feed is not None else _distributed_batch(a, loop)
    if not batch:
        return False
    in_calls = {id(n) for c in calls for arg in c.args for n in walk(arg)}
    in_calls |= {id(n) for s in reads for n in walk(s)}
    return any(isinstance(n, cst.Name) and n.value in batch and id(n) not in in_calls for n in walk(loop.body))


def _distributed_batch(a: A.Analysis, loop):
    """The names holding the distributed batch in a step loop: what the loop
    binds from the dataset it iterates, and what it binds from ``next(it)``
    of a dataset's iterator (with those statements: they run outside the
    replicas). A ``range`` loop's counter is no batch."""
    names: Set[str] = set()
    if isinstance(loop, cst.For) and gradient_tapes.loop_dataset(a, loop.iter)[0] is not None:
        names |= _batch_names(loop)
    reads = []
    iterators = {id(call) for call, _ in _iterators_read(a, loop)}
    for stmt in loop.body.body:
        for n in walk(stmt):
            if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and isinstance(n.value.func, cst.Name) \
                    and n.value.func.value == "next" and n.value.args and isinstance(n.value.args[0].value, cst.Name) \
                    and any(id(v) in iterators for _, v in a.assigned_values(n.value.args[0].value)):
                for t in n.targets:
                    names |= set(_target_names(t.target))
                if stmt not in reads:
                    reads.append(stmt)
    return names, reads


def _ordered_names(body, names: Set[str]) -> List[str]:
    """names in the order the loop body first mentions them."""
    out: List[str] = []
    for stmt in body:
        for n in walk(stmt):
            if isinstance(n, cst.Name) and n.value in names and n.value not in out:
                out.append(n.value)
    return out


def _batch_names(loop) -> Set[str]:
    """The names a for loop binds to the elements of what it iterates
    (``x, y`` of ``for step, (x, y) in enumerate(ds)``, not the counter)."""
    if not isinstance(loop, cst.For):
        return set()
    target = loop.target
    it = loop.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate" \
            and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
        target = target.elements[1].value
    return set(_target_names(target))


def _target_names(target) -> List[str]:
    return [n.value for n in walk(target) if isinstance(n, cst.Name)]


def _assigned_plain(stmts) -> Set[str]:
    out: Set[str] = set()
    for stmt in stmts:
        for n in walk(stmt):
            if isinstance(n, cst.AssignTarget):
                out |= set(_target_names(n.target))
    return out


def _assigned(stmt) -> Set[str]:
    """Names a statement binds (assignments, with-as, for targets)."""
    out: Set[str] = set()
    for n in walk(stmt):
        if isinstance(n, cst.AssignTarget):
            out |= set(_target_names(n.target))
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            out |= set(_target_names(n.target))
        elif isinstance(n, cst.AsName):
            out |= set(_target_names(n.name))
        elif isinstance(n, cst.For):
            out |= set(_target_names(n.target))
    return out


def _between(a: A.Analysis, node, outer):
    for p in a.ancestors(node):
        if p is outer:
            return
        yield p


def _run_on_replicas(ctx, call: cst.Call) -> None:
    a = ctx.a
    cut = _cut_arguments(ctx)  # arguments each replica cut for itself (_split_array_feed)
    value = lambda arg: cut.get(id(arg.value)) or source(ctx.module, arg.value, False)  # noqa: E731
    if any(arg.star for arg in call.args):
        args = ", ".join(value(arg) if not arg.star else arg.star + value(arg) for arg in call.args)
    else:
        args = ", ".join((f"{arg.keyword.value}=" if arg.keyword else "") + value(arg) for arg in call.args)
    new = ctx.expr(ctx.backend.run_on_replicas(source(ctx.module, call.func, False), args))
    ctx.plan.replace(call, lambda old: new)
    ctx.change(call, RULE, ctx.say("{step}(...) run on every replica, its results averaged", step=a.code(call.func)))


def _distribute_loop_data(ctx, loop, feed=None, calls=()) -> None:
    a = ctx.a
    if isinstance(feed, _GeneratorFeed):
        _split_generator(ctx, feed)
        # enumerate(...) numbers the groups of batches (one step each): a
        # cap on that number is 1/size of the original's steps
        step_division.divide_enumerated_cap(ctx, loop)
        return
    if feed is not None:
        _split_array_feed(ctx, loop, feed, calls)
        return
    if isinstance(loop, cst.For):
        ds, take = gradient_tapes.loop_dataset(a, loop.iter)
        if ds is not None:
            site = replica_state.external_helper_site(ctx, ds)
            if site is not None:  # made by a helper of another module (not edited)
                replicas.external_helper_dataset(ctx, site, "training data")
            else:
                replicas.dataset_batches_per_replica(ctx, ds, "training data")
                replicas.split_by_engine(ctx, ds, "training data")
            target = take if take is not None else ds
            _distribute(ctx, target)
            ctx.change(target, shard_points.RULE, ctx.say("training data distributed: each replica reads its own part of every global batch"))
            sharding.divide_steps_taken(ctx, ds)
            step_division.divide_enumerated_cap(ctx, loop)
            return
    iterators = _iterators_read(a, loop)
    if iterators:
        for it_call, ds in iterators:
            replicas.dataset_batches_per_replica(ctx, ds, "training data")
            replicas.split_by_engine(ctx, ds, "training data")
            _distribute(ctx, ds)
            ctx.change(it_call, shard_points.RULE, ctx.say("training data distributed: each replica reads its own part of every global batch"))
        if step_division.divide(ctx, loop, "training steps") == step_counts.UNKNOWN:
            ctx.warn(loop, shard_points.RULE, ctx.say("cannot see how many steps this loop runs: each global batch covers {size} batches of the original, so run 1/{size} of the steps"))
        return
    raise ctx.unsupported(loop, ctx.say(
        "this training loop does not read a tf.data dataset: {engine} can divide the work only of a dataset it "
        "distributes; build a tf.data.Dataset of the samples{alternative}"))


def _distribute(ctx, dataset) -> None:
    """The strategy's distributed version of a dataset expression (built
    from its edited form: the batch kept per replica, the split policy)."""
    template = ctx.backend.distribute_dataset("{inner}")
    ctx.plan.replace(dataset, lambda upd: ctx.expr(template, inner=ctx.module.code_for_node(upd)))


def _iterators_read(a: A.Analysis, loop):
    """(iter(...) call, dataset) of ``next(it)`` reads in the loop, with it = iter(dataset)."""
    out = []
    for c in calls_in(loop.body):
        if not (isinstance(c.func, cst.Name) and c.func.value == "next" and c.args and isinstance(c.args[0].value, cst.Name)):
            continue
        for _, value in a.assigned_values(c.args[0].value):
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "iter" \
                    and value.args and a.is_kind(value.args[0].value, A.DATASET):
                if all(value is not v for v, _ in out):
                    out.append((value, value.args[0].value))
    return out


# ------------------------------------------------------------ array batches
# A step loop that cuts its batches from in-memory arrays (NumPy offsets,
# random indices) has no dataset to distribute. The statements cutting one
# step's batch are run once per replica (the strategy's
# experimental_distribute_values_from_function), each replica cutting the
# batch the original loop would have cut at the step numbered by its place
# in the cluster: step s of the divided loop, on replica g of N, cuts the
# original's batch s * N + g. Every replica trains on the user's batch size,
# the replicas' batches are disjoint and together the original's, samples
# stay with their labels (the same statements cut both), and the loop runs
# 1/N of the steps.

# Calls the batch statements may make, run once per replica: pure
# functions of their arguments (besides NumPy's global generator, which is
# seeded per worker).
PURE_BUILTINS = {"len", "int", "float", "min", "max", "abs", "slice", "range", "list", "tuple", "sorted", "round"}
PURE_ARRAY_METHODS = {"astype", "reshape", "copy", "squeeze", "transpose", "flatten", "ravel", "take"}


def _batch_call_kind(a: A.Analysis, call: cst.Call, depth: int = 0) -> Optional[str]:
    """A call the batch statements may run once per replica: "pure" (a
    function of its arguments), "random" (NumPy's global generator, seeded
    per worker), or None (it may keep state). A batch helper of the script's
    own (``get_next_batch(x, y, step)``, tf1_common.batch_helper_arrays) is
    as pure as the calls it makes."""
    qualified = a.names(call)
    if qualified & apis.NUMPY_GLOBAL_RANDOM:
        return "random"
    if any(q.startswith("numpy.") and not q.startswith("numpy.random.") for q in qualified):
        return "pure"
    if any(q in {f"builtins.{b}" for b in PURE_BUILTINS} for q in qualified):
        return "pure"
    if qualified & apis.ROW_KEEPING_ARRAY_FUNCTIONS:
        return "pure"  # tf.convert_to_tensor(xb), tf.one_hot(yb, 10): row for row
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in PURE_ARRAY_METHODS and (
            not qualified or dataset_flow.numpy_array(a, call.func.value)):
        return "pure"  # xb.astype("float32") of NumPy rows
    if depth < 3 and tf1_graphs.batch_helper_arrays(a, call, draws=True) is not None:
        fdef = dataflow.callees(a, call)[0]
        kinds = [_batch_call_kind(a, inner, depth + 1) for inner in calls_in(fdef.body)]
        if any(k is None for k in kinds) or any(isinstance(n, (cst.Global, cst.Nonlocal)) for n in walk(fdef.body)):
            return None
        return "random" if "random" in kinds else "pure"
    return None


@dataclass
class _ArrayFeed:
    statements: List[cst.BaseStatement]  # top of the loop body: cut one step's batch
    names: Set[str]  # names they bind
    counter: Optional[str]  # the loop counter, when they read it
    offset_step: Optional[cst.BaseExpression]  # step of range(0, stop, step): the counter is a row offset
    random: bool  # they draw from NumPy's global generator
    reorders: List[cst.CSTNode] = None  # the arrays reordered by themselves each epoch (X, Y = shuffle(X, Y))


def _inside_called(a: A.Analysis, node, loop, depth: int = 3) -> bool:
    """``node`` sits in a function of this module that ``loop`` calls, or
    that one calls (``for epoch in range(n): train(epoch)`` around the
    batch loop in ``def train``): the loop is an outer loop, not the step loop."""
    fdef = a.enclosing_function(node)
    if fdef is None:
        return False
    seen, frontier = set(), [loop.body]
    for _ in range(depth):
        called = [f for body in frontier for c in calls_in(body) for f in dataflow.callees(a, c)
                  if id(f) not in seen]
        if any(f is fdef or dataflow.is_inside(a, fdef, f) for f in called):
            return True
        seen |= {id(f) for f in called}
        frontier = [f.body for f in called]
    return False


def _reads_dataset(a: A.Analysis, loop) -> bool:
    if isinstance(loop, cst.For) and gradient_tapes.loop_dataset(a, loop.iter)[0] is not None:
        return True
    return bool(_iterators_read(a, loop))


def _array_feed(ctx, loop, trains) -> _ArrayFeed:
    """The statements of a step loop cutting each step's batch from arrays,
    when every replica can run them for its own step; refused (with the
    reason and line) otherwise."""
    a = ctx.a

    def refuse(node, why):
        return ctx.unsupported(node, ctx.say(
            "this training loop does not read a tf.data dataset and tfdist cannot give each replica its own batch "
            "({why}); build a tf.data.Dataset of the samples{alternative}", why=why))

    if not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name):
        raise refuse(loop, "it is not a for loop over range(...) numbering its steps")
    counter = loop.target.value
    it = step_counts.unwrapped(a, loop.iter)  # tqdm(range(n)): range(n)'s steps
    args = step_counts.plain_args(it) if step_counts.is_range(a, it) else None
    zero = lambda e: isinstance(e, cst.Integer) and e.evaluated_value == 0  # noqa: E731
    if args is None or not (len(args) in (1, 2)
                            or len(args) == 3 and zero(args[0]) and isinstance(args[2], (cst.Name, cst.Integer))):
        raise refuse(loop, "it is not a for loop over range(n), range(start, n) or range(0, n, batch)")
    body = list(loop.body.body)
    tape_withs = {id(w) for w, *_ in gradient_tapes.training_tapes(a)}
    first = next((i for i, s in enumerate(body) if trains(s) or any(id(n) in tape_withs for n in walk(s))), None)
    statements = body[:first] if first else []
    if not statements:
        raise refuse(loop, "no statements cutting the batch before the training step")
    names: Set[str] = set()
    random = False
    for stmt in statements:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if not isinstance(small, cst.Assign) or not all(
                isinstance(n, (cst.Name, cst.Tuple, cst.List, cst.Element, cst.AssignTarget))
                for t in small.targets for n in walk(t)):
            raise refuse(stmt, f"line {a.line(stmt)} is not an assignment of names cutting the batch")
        for call in calls_in(stmt):
            kind = _batch_call_kind(a, call)
            if kind is None:
                raise refuse(call, f"{a.code(call.func)}(...) at line {a.line(call)} may keep state tfdist cannot "
                                   "split between the replicas")
            random = random or kind == "random"
        for t in small.targets:
            names |= set(_target_names(t.target))
    # The batch statements read the arrays as they are before the loop: an
    # array made anew in the loops around (a per-epoch permutation) would
    # differ from worker to worker, and their batches would overlap.
    outer = dataflow.outermost_loop(a, loop) or loop
    # Step arguments computed from the batch statements (``x[idx]``) are cut per replica too.
    moved = [arg.value for s in body[first:] for c in calls_in(s) if trains(c) for arg in c.args
             if not isinstance(arg.value, cst.Name) and not arg.star
             and any(isinstance(n, cst.Name) and n.value in names for n in walk(arg.value))]
    cutting = [*statements, *moved]
    read = {n.value: n for s in cutting for n in walk(s) if isinstance(n, cst.Name)}
    # rows cut here (x[i:i + B]) or by a batch helper of the script's own (get_batch(x, y, i))
    cuts = lambda node: any(isinstance(n, cst.Subscript) and isinstance(n.value, cst.Name)  # noqa: E731
                            and n.value.value not in names or tf1_graphs.batch_helper_arrays(a, n, draws=True) is not None
                            for n in walk(node))
    if not any(cuts(s) for s in cutting):
        raise refuse(statements[0], "the statements before the step cut no rows of an array")
    # Each statement cuts rows, or computes what a statement cutting rows reads
    # (``idx = np.random.choice(n, bs)``, ``start = i * B``): run per replica,
    # anything else (a rate from the step number) would differ between them.
    needed = {n.value for c in cutting if cuts(c) for n in walk(c) if isinstance(n, cst.Name)}
    for k in reversed(range(len(statements))):
        stmt = statements[k]
        bound = set(_assigned(stmt))
        if cuts(stmt) or bound & needed:
            needed |= {n.value for n in walk(stmt) if isinstance(n, cst.Name)}
            continue
        # computed from the rows cut before it (cond = np.eye(4)[yb]): each
        # replica computes it from its own rows (its calls checked above)
        earlier = {n for s in statements[:k] for n in _assigned(s)}
        if {n.value for n in walk(stmt) if isinstance(n, cst.Name)} & earlier:
            continue
        raise refuse(stmt, f"line {a.line(stmt)} computes {', '.join(sorted(bound))}, which is not part of the "
                           "batch, before the step: every replica would compute its own; compute it after the batch "
                           "is cut")
    reorders: List[cst.CSTNode] = []
    for name, node in read.items():
        if name in names or name == counter:
            continue
        inside = [o for o, _ in a.assigned_values(node) if dataflow.is_inside(a, o, outer) or o is outer]
        # an array reordered by itself each epoch (X, Y = shuffle(X, Y)) holds the same rows: every
        # worker reorders it alike once NumPy is seeded alike (below), unless the batch draws per worker
        if inside and not random and all(o is not outer and _self_reorder_by_numpy(a, o, name) for o in inside):
            reorders += [o for o in inside if o not in reorders]
            continue
        if inside:
            raise refuse(inside[0], f"{name}, which the batch is cut with, is made anew at line {a.line(inside[0])} "
                                    "inside the training loops: it would differ from worker to worker")
    # What they bind is the batch: read only by the step, bound nowhere else.
    rest = [n for s in body[first:] for n in walk(s)]
    for n in rest:
        if isinstance(n, cst.AssignTarget) and set(_target_names(n.target)) & names:
            raise refuse(n, f"line {a.line(n)} binds the batch again after the step starts")
    scope = a.enclosing_function(loop) or a.module
    inside_loop = {id(n) for n in walk(loop)}
    for n in walk(scope):
        if isinstance(n, cst.Name) and n.value in names and id(n) not in inside_loop:
            if any(dataflow.is_inside(a, o, loop) for o, _ in a.assigned_values(n)):
                raise refuse(n, f"{n.value} (the batch) is read at line {a.line(n)}, after the loop")
    if counter in names:
        raise refuse(statements[0], f"the batch statements rebind the loop counter {counter}")
    uses_counter = counter in read
    if not uses_counter and not random:
        raise refuse(statements[0], f"the batch depends neither on the step number {counter} nor on a random draw: "
                                    "every replica would cut the same rows")
    return _ArrayFeed(statements, names, counter if uses_counter else None,
                      args[2] if len(args) == 3 else None, random, reorders)


def _self_reorder_by_numpy(a: A.Analysis, origin, name: str) -> bool:
    """``origin`` rebinds ``name`` to its own rows reordered (tf1_common.reorders_itself)
    with NumPy's global generator or a fixed seed: shuffle(X, Y) without
    random_state, X[np.random.permutation(n)], X[perm] with perm drawn so."""
    if not reorders_itself(a, origin, name):
        return False
    statement = a.statement_of(origin)
    draws = [c for c in calls_in(statement)]
    for c in draws:
        found = a.is_name(c, apis.RANDOM_ARRAY_SPLITTERS)
        if found and find_arg(c, apis.RANDOM_ARRAY_SPLITTERS[found][0]) is not None:
            continue  # a fixed random_state: the same order on every worker
        if found or a.names(c) & apis.NUMPY_REORDERING_DRAWS:
            continue
        return False
    # X = X[perm]: perm drawn by NumPy's global generator (the names in the
    # index only: the arrays reordered may hold random data of their own)
    index_names = [n for sub in walk(statement) if isinstance(sub, cst.Subscript)
                   for el in sub.slice for n in walk(el) if isinstance(n, cst.Name)]
    for n in index_names:
        if n.value != name:
            for o, v in a.assigned_values(n):
                if v is not None and any(isinstance(c, cst.Call) and not (a.names(c) & apis.NUMPY_REORDERING_DRAWS)
                                         and any(q.startswith("numpy.random.") for q in a.names(c)) for c in walk(v)):
                    return False
    return True


def _cut_arguments(ctx) -> dict:
    """id(argument) -> the name a replica's own share of it is bound to (per conversion)."""
    return ctx.state("replica_tape.args", dict)


def _split_array_feed(ctx, loop, feed: _ArrayFeed, calls) -> None:
    a = ctx.a
    size = ctx.backend.size()
    # 1. The loop runs 1/N of the steps.
    it = step_counts.unwrapped(a, loop.iter)
    args = step_counts.plain_args(it)
    stop = args[0] if len(args) == 1 else args[1]
    stop_code = source(ctx.module, stop)
    if not isinstance(stop, (cst.Name, cst.Call, cst.Attribute, cst.Integer, cst.Subscript)):
        stop_code = f"({stop_code})"
    start = args[0] if len(args) == 2 and not (isinstance(args[0], cst.Integer) and args[0].evaluated_value == 0) \
        else None
    start_code = None
    if start is not None:  # range(1, n + 1): steps numbered from start, the count is stop - start
        start_code = source(ctx.module, start)
        if not isinstance(start, (cst.Name, cst.Integer, cst.Attribute)):
            start_code = f"({start_code})"
        stop_code = f"({source(ctx.module, stop, False)} - {start_code})"
    if feed.offset_step is not None:
        step = a.code(feed.offset_step)
        # whole groups of N batches only: no replica is left a short or empty batch
        new_stop = ctx.expr(f"{stop_code} // ({step} * {size}) * {step}")
        message = ctx.say("training steps: range(0, {stop}, {step}) runs 1/{size} of its steps, whole batches on "
                          "every replica", stop=a.code(stop), step=step)
    elif feed.counter is not None:
        # every step of the divided loop cuts N of the original's batches: none past the end
        new_stop = ctx.expr(f"{stop_code} // {size}")
        message = ctx.say("training steps divided by {size}: each step cuts {size} of the original's batches")
    else:
        new_stop = ctx.expr(ctx.backend.divide_count(stop_code))
        message = ctx.say("training steps divided by {size}: each step trains on {size} batches")
    if start_code is not None:
        new_stop = ctx.expr(f"{start_code} + {source(ctx.module, new_stop, False)}")
    ctx.plan.replace(stop, lambda old, new=new_stop: new)
    ctx.change(stop, shard_points.RULE, message)
    # 2. Arguments of the step call computed from the batch: cut per replica too.
    moved = []
    for call in calls:
        for arg in call.args:
            if isinstance(arg.value, cst.Name) or arg.star or not any(
                    isinstance(n, cst.Name) and n.value in feed.names for n in walk(arg.value)):
                continue
            base = arg.value
            while isinstance(base, (cst.Subscript, cst.Attribute, cst.Call)):
                base = base.value if not isinstance(base, cst.Call) else base.func
            name = replica_state.free_local_name(ctx, f"{base.value}_batch" if isinstance(base, cst.Name) else "batch_value")
            moved.append((name, arg.value))
            # the call is rewritten as a whole (run on every replica): it reads the name instead
            _cut_arguments(ctx)[id(arg.value)] = name
    in_moved = {id(n) for _, v in moved for n in walk(v)}
    used_after = {n.value for s in list(loop.body.body)[len(feed.statements):] for n in walk(s)
                  if isinstance(n, cst.Name) and id(n) not in in_moved}
    returned = [n for n in _ordered_targets(feed.statements) if n in used_after]
    results = returned + [name for name, _ in moved]
    if not results:
        raise ctx.unsupported(loop, "the training step reads nothing the batch statements cut")
    function = replica_state.free_local_name(ctx, "replica_batch")
    replica = "replica_context"
    while any(isinstance(n, cst.Name) and n.value == replica for s in feed.statements for n in walk(s)):
        replica += "_"
    params = replica + (f", {feed.counter}={feed.counter}" if feed.counter else "")
    head = []
    if feed.counter is not None:
        place = f"{replica}.replica_id_in_sync_group"
        if feed.offset_step is not None:
            place = f"{place} * {a.code(feed.offset_step)}"
        if start_code is not None:  # the original's step start + (k - start) * N + the replica's number
            head = ctx.stmts(f"{feed.counter} = {start_code} + ({feed.counter} - {start_code}) * {size} + {place}")
        else:
            head = ctx.stmts(f"{feed.counter} = {feed.counter} * {size} + {place}")
        number = "its replica number" + (f" * {a.code(feed.offset_step)}" if feed.offset_step is not None else "")
        comment = ctx.say("{engine}: every replica cuts its own batch as the loop cuts it, the one the original "
                          "cut at {what} {counter} * {size} + {number}.", counter=feed.counter, number=number,
                          what="offset" if feed.offset_step is not None else "step")
    else:
        comment = ctx.say("{engine}: every replica draws its own batch as the loop draws it.")
    define = ctx.stmts(f"def {function}({params}):\n    pass", comment=comment)[0]
    tail_values = ", ".join(returned + [source(ctx.module, v, False) for _, v in moved])
    tail = ctx.stmts(f"return {tail_values}")
    assign = ctx.stmts(f"{', '.join(results)} = " + ctx.backend.values_per_replica(function))[0]

    def build(inner, leading, define=define, head=head, tail=tail, assign=assign):
        return [define.with_changes(body=cst.IndentedBlock(body=[*head, *inner, *tail]),
                                    leading_lines=[*leading, *define.leading_lines]), assign]

    ctx.plan.regroup(feed.statements, build)
    ctx.change(feed.statements[0], shard_points.RULE, ctx.say(
        "the batch cut at lines {start}-{end} is cut by every replica for its own step ({function}): disjoint "
        "batches of the user's size, samples with their labels", start=str(a.line(feed.statements[0])),
        end=str(a.end_line(feed.statements[-1])), function=function), through=feed.statements[-1])
    for name, value in moved:
        ctx.change(value, shard_points.RULE, ctx.say("{value} cut by every replica for its own step",
                                                      value=a.code(value)))
    if feed.reorders:
        stmt = dataflow.outermost_loop(a, loop) or loop
        top = a.statement_of(stmt) or stmt
        if not shard_points.global_seed_set_before(a, top, apis.NUMPY_GLOBAL_SEED_SETTERS) \
                and sharding.seed_numpy_alike_before(
                    ctx, top, "{engine}: every worker reorders the arrays alike each epoch, so the batches its "
                              "replicas cut stay disjoint."):
            ctx.change(feed.reorders[0], shard_points.RULE, ctx.say(
                "the arrays reordered each epoch (line {line}) are reordered alike on every worker: NumPy seeded "
                "the same before the loop at line {loop}", line=str(a.line(feed.reorders[0])),
                loop=str(a.line(stmt))))
    if feed.random:
        stmt = dataflow.outermost_loop(a, loop) or loop
        key = ("seeded", id(stmt))
        done = ctx.state("replica_tape.seeded")
        if key not in done:
            done.add(key)
            per_rank_draws.seed_numpy_before(ctx, a.statement_of(stmt) or stmt)
            ctx.change(feed.statements[0], shard_points.RULE, ctx.say(
                "the batch is drawn from NumPy's global generator: seeded per worker before the loop at line "
                "{line}, so the workers draw different batches", line=str(a.line(stmt))))


def _ordered_targets(statements) -> List[str]:
    out: List[str] = []
    for s in statements:
        for n in walk(s):
            if isinstance(n, cst.AssignTarget):
                out += [x for x in _target_names(n.target) if x not in out]
    return out


# ------------------------------------------------------------ generators
# A step loop iterating a Python generator of the user's (``for xb, yb in
# batches():``): every worker runs the generator; each group of N
# consecutive batches it yields makes one step, replica g training on the
# g-th. Safe only when the generator yields the same batches on every
# worker: it must be a pure function of its arguments and of arrays made
# before the training loops -- no random draws, no state kept elsewhere.

@dataclass
class _GeneratorFeed:
    call: cst.Call  # batches(...) as the loop iterates it


def _generator_feed(ctx, loop) -> Optional[_GeneratorFeed]:
    """The generator call a for loop iterates (directly or in enumerate),
    when tfdist can split its batches between the replicas; refused when it
    is a generator tfdist cannot split; None when the loop iterates no
    generator function of the user's."""
    a = ctx.a
    if not isinstance(loop, cst.For):
        return None
    it = loop.iter
    if isinstance(it, cst.Call) and a.is_name(it, {"builtins.enumerate"}) and it.args:
        it = it.args[0].value
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name)):
        return None
    functions = a.local_functions(it.func)
    if not functions or not all(any(isinstance(n, (cst.Yield)) for n in walk(f.body)) for f in functions):
        return None
    name = it.func.value

    def refuse(node, why):
        return ctx.unsupported(node, ctx.say(
            "this training loop iterates {name}(), a Python generator, and {why}: every worker runs it, so the "
            "replicas can split its batches only if it yields the same ones on every worker; build a "
            "tf.data.Dataset of the samples{alternative}", name=name, why=why))

    outer = dataflow.outermost_loop(a, loop) or loop
    alike = []  # global generators it draws from: seeded the same on every worker, it yields the same everywhere
    for f in functions:
        if samplers.stateful(f):
            raise refuse(f, f"it keeps state across calls (line {a.line(f)})")
        for call in calls_in(f.body):
            qualified = a.names(call)
            if qualified & apis.NUMPY_GLOBAL_RANDOM or qualified & apis.PYTHON_GLOBAL_RANDOM:
                kind = "numpy" if qualified & apis.NUMPY_GLOBAL_RANDOM else "random"
                if kind not in alike:
                    alike.append(kind)
                continue
            if any(q.startswith(("numpy.random.", "random.", "tensorflow.random.")) for q in qualified):
                raise refuse(call, f"it draws random numbers at line {a.line(call)} (each worker would draw others)")
            if any(q.startswith("numpy.") for q in qualified) or any(
                    q in {f"builtins.{b}" for b in PURE_BUILTINS | {"zip", "enumerate"}} for q in qualified):
                continue
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in PURE_ARRAY_METHODS and not qualified:
                continue
            raise refuse(call, f"it calls {a.code(call.func)}(...) at line {a.line(call)}, whose state tfdist "
                               "cannot see")
        for n in walk(f.body):
            if isinstance(n, cst.Name):
                made = [o for o, _ in a.assigned_values(n) if not dataflow.is_inside(a, o, f)
                        and (o is outer or dataflow.is_inside(a, o, outer))]
                if made:
                    raise refuse(made[0], f"it reads {n.value}, made anew at line {a.line(made[0])} inside the "
                                          "training loops")
    if alike:
        top = dataflow.module_statement(a, outer)
        per_rank_draws.seed_alike_before(ctx, top, alike, "{engine}: every worker draws the same random numbers in "
                                                    f"{name}(), so it yields the same batches on every worker.")
        ctx.change(top, shard_points.RULE, ctx.say(
            "{name}() draws from {generators} without a seed: seeded the same on every worker before line {line}, "
            "so every worker's stream of batches is the same and the replicas' shares of it are disjoint",
            name=name, generators=" and ".join("NumPy's global generator" if k == "numpy" else "Python's random"
                                               for k in alike), line=str(a.line(top))))
    return _GeneratorFeed(it)


def _split_generator(ctx, feed: _GeneratorFeed) -> None:
    # filled now, so that the setup writes the helper the template names
    template = ctx.fill(ctx.backend.split_batch_stream("{inner}"), inner="{inner}")
    ctx.plan.replace(feed.call, lambda upd: ctx.expr(template, inner=ctx.module.code_for_node(upd)))
    ctx.change(feed.call, shard_points.RULE, ctx.say(
        "{name}() batches split between the replicas: every {size} consecutive batches make one step, each "
        "replica training on its own (the user's batch size; 1/{size} of the steps)", name=ctx.a.code(feed.call.func)))


@register
class ReplicaTape(Rule):
    id = "replica-tape"
    description = "GradientTape loops under a tf.distribute strategy: state built in the scope, the step run on every replica, each replica's loss its share of the global mean, the dataset distributed."
    engines = ('tf-distribute',)
    kinds = ('data-division', 'gradient-tape', 'lr-scaling', 'lr-warmup', 'per-replica-batch', 'replica-scope')
    refuses = "a step it cannot find or that updates state bound outside it; batches it cannot cut; a loss whose reduction it cannot follow"
    example = "gradient_tape/eager_loop"
    order = 20
    PATTERN = PATTERN

    def detect(self, a):
        return detect(a)

    def apply(self, ctx) -> None:
        apply(ctx)

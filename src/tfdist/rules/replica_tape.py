"""GradientTape loops for engines that replicate variables (tf.distribute):
models, optimizers and trained variables created in the replication scope,
the training step run on every replica (its results averaged), each
replica's loss its share of the global mean, the dataset distributed with
the user's batch kept per replica, and counted step loops divided.
"""
from __future__ import annotations

from typing import List, Optional, Set
import libcst as cst
from ..engine import analysis as A
from ..engine import patterns as P
from ..engine import dataflow
from ..engine.scopes import walk
from ..actions.replica_feeds import ArrayFeed, GeneratorFeed, array_feed, assigned_names, cut_arguments, generator_feed, split_array_feed, split_generator, target_names
from ..facts.syntax import calls_in, names_a_field, receiver, source
from ..actions import global_gradients
from ..actions import loss_shares
from ..actions import refusals
from ..actions import replicas
from ..actions import sharding
from ..actions import step_division
from ..actions import stream_feeds
from ..actions import tape_loops
from ..actions import tape_scope
from ..actions import updates_by_hand
from ..facts import dataset_iterators
from ..facts import gradient_tapes
from ..facts import kinds
from ..facts import replica_state
from ..facts import shard_points
from ..facts import step_counts
from ..facts import train_steps
from ..facts import whole_data
from ..facts import tape_rows
from ..engine.rule import Rule, register


PATTERN = P.TAPE
RULE = kinds.GRADIENT_TAPE
detect = gradient_tapes.detect


def apply(ctx) -> None:
    a = ctx.a
    refusals.refuse_tf1_optimizer_tapes(ctx)
    found = gradient_tapes.training_tapes(a)
    # steps written by hand (no optimizer) that update variables with their gradients; a tape whose
    # gradients nothing applies is no training
    updated = {id(t): gradient_tapes.manual_updates(a, t[3]) for t in found
               if not gradient_tapes.optimizer_applied(a, t[3])}
    found = [t for t in found if updated.get(id(t), True)]
    by_hand = [t for t in found if id(t) in updated]
    updates = [u for t in by_hand for u in updated[id(t)]]
    applies = [p for p in gradient_tapes.apply_calls(a) if not gradient_tapes.in_keras_train_step(a, p)]
    grad_calls = [c for *_, cs in found for c in cs]
    tape_scope.scope_trained_state(ctx, applies, grad_calls)
    by_hand_loops = updates_by_hand.loops_over_gradients(a, [c for *_, cs in by_hand for c in cs])
    stepped = frozenset({id(p) for p in applies} | {id(u) for u in updates})
    tape_scope.build_slots_before_traced_loops(ctx, applies, grad_calls,
                                               whole_data.training_loops(a, stepped, frozenset(by_hand_loops)))
    whole = whole_data.whole_data_loops(a, stepped, frozenset(by_hand_loops))
    in_whole = {id(c) for c in [*applies, *updates] for loop in whole
                if tape_rows.runs_optimizer_step(a, loop.body, {id(c)})}
    for p in applies:
        if id(p) not in in_whole:  # a step on the whole data: the global batch is the original's
            tape_loops.scale(ctx, receiver(p))
    for w, _item, _name, calls in found:
        for call in calls:
            loss_shares.loss_share(ctx, w, call)
    trained = [c for w, _item, name, calls in found if (w, _item, name, calls) not in by_hand for c in calls
               if not train_steps.of_watched_inputs(a, w, name, c)]
    try:  # clipped, scaled...: summed first, so the change acts on the global batch's gradient
        global_gradients.sum_before_changes(ctx, RULE, trained, applies)
    except train_steps.Refusal as r:
        raise ctx.unsupported(r.node, ctx.say(r.reason))
    if updates:
        updates_by_hand.convert(ctx, RULE, [c for *_, cs in by_hand for c in cs], updates, unscaled=in_whole)
    _run_steps(ctx, set(stepped), by_hand_loops, {id(loop) for loop in whole}, ([*applies, *updates] or [None])[0])


# ------------------------------------------------------------ replica scope
# ------------------------------------------------------------ steps
def _run_steps(ctx, applies: Set[int], within_step: Set[int] = frozenset(), whole: Set[int] = frozenset(),
               first=None) -> None:
    """``within_step``: ids of loops that are part of a step (over its gradients); ``whole``:
    ids of loops whose steps train on the whole data (facts/whole_data.py); ``first``: the first
    optimizer step (where a step no loop runs is reported)."""
    a = ctx.a
    trains = lambda node: tape_rows.runs_optimizer_step(a, node, applies)  # noqa: E731
    innermost = whole_data.training_loops(a, frozenset(applies), frozenset(within_step))
    if not innermost:
        ctx.warn(first, RULE, ctx.say(
            "no training loop found around this step: as converted it runs outside the replicas, on the whole "
            "batch; run it with {run} on a distributed batch, or train in a loop of steps",
            run=ctx.fill(ctx.backend.run_on_replicas("step", "args"))))
        return
    steps = []
    for loop in innermost:
        calls = [c for c in calls_in(loop.body) if trains(c) and dataflow.callees(a, c)
                 and not any(isinstance(p, (cst.FunctionDef, cst.Lambda)) for p in _between(a, c, loop))]
        if id(loop) in whole:
            _whole_data_steps(ctx, loop, calls, trains)
            steps += [f for c in calls for f in dataflow.callees(a, c) if f not in steps]
            continue
        feed = None if _reads_dataset(a, loop) else generator_feed(ctx, loop) or stream_feeds.stream_feed(ctx, loop, trains) \
            or stream_feeds.draw_feed(ctx, loop, trains) or array_feed(ctx, loop, trains)
        cut = feed if isinstance(feed, ArrayFeed) else None
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


def _whole_data_steps(ctx, loop, calls, trains) -> None:
    """A loop of steps on the whole data: each step run on every replica on all of it (its
    loss that replica's share), the steps and the data left as they are; said once."""
    if not calls:
        _step_from_inline_code(ctx, loop, trains)
        ctx.state("replica_tape.extracted").add(loop)
    ctx.facts["full_batch"] = True  # for tfdist verify: every process runs every step
    ctx.warn(loop, whole_data.RULE, ctx.say(
        "every step of this loop trains on the whole data: each replica runs it on all of it and "
        "differentiates its share of the loss, so the update is the single-process one, at the same learning "
        "rate -- exact, but no faster, and only if every process has the same data (loaded, or drawn with a fixed "
        "seed). To divide the work, batch the data (a tf.data.Dataset) and loop over its batches"))


def _step_from_inline_code(ctx, loop, trains, feed=None) -> None:
    """The statements of a loop body that make one training step (from the
    first tape to the last optimizer step) become a step function defined
    in their place, run on every replica: its arguments are what the loop
    bound for this step, its results what is read after it. ``feed``: the
    statements cutting the batch from arrays, which stay out of it (every
    replica gets its own batch from them, see _array_feed)."""
    a = ctx.a
    body = list(loop.body.body)
    if feed is not None:
        batch, cut = feed.names, {id(s) for s in feed.statements}
    else:
        batch, reads = _distributed_batch(a, loop)
        cut = {id(s) for s in reads}  # next(iterator) runs outside the replicas
    refusal = ctx.say("the training step written inline in this loop cannot be moved into a step function "
                      "{engine} runs on every replica ({why}); move the tape, the gradient and apply_gradients "
                      "into a function called from the loop{alternative}", why="{why}")
    first, last = _inline_step_span(ctx, loop, body, trains, batch, cut, refusal)
    span = body[first:last + 1]
    for read in _nested_next_reads(a, loop, span):  # inside a with block of the step: it would run on the replicas
        raise ctx.unsupported(read, refusal.replace("{why}", (
            f"line {a.line(read)} reads the next batch of a distributed iterator inside the block at line "
            f"{a.line(next(s for s in span if dataflow.is_inside(a, read, s)))}, which must run outside the replicas; "
            f"move `{a.code(read).strip()}` before that block")))
    single = _single_step_call(a, span, trains)
    if single is not None:  # one call of a step function: run on the replicas as it is, no function around it
        _run_on_replicas(ctx, single)
        later, localise = _batch_read_later(ctx, body, last, batch)
        if localise:
            ctx.plan.insert_after(span[-1], localise)
            ctx.change(span[-1], RULE, ctx.say(
                "{names} read after the step: from there on they hold this worker's rows of the distributed batch",
                names=", ".join(later)))
        return
    params, assigned = _inline_step_params(ctx, loop, body[:first], span, refusal)
    results = _inline_step_results(a, loop, span, assigned)
    name = replica_state.free_local_name(ctx, "train_step")
    run = ctx.fill(ctx.backend.run_on_replicas(name, ", ".join(params)))
    call_text = (", ".join(results) + " = " if results else "") + run
    define = ctx.stmts(f"def {name}({', '.join(params)}):\n    pass",
                       comment=ctx.say("{engine}: one training step, run on every replica."))[0]
    call = ctx.stmts(call_text)[0]
    returns = ctx.stmts("return " + ", ".join(results))[0] if results else None
    later, localise = _batch_read_later(ctx, body, last, batch)

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


def _single_step_call(a: A.Analysis, span, trains) -> Optional[cst.Call]:
    """The call of a step function of this module when the step is one statement doing nothing else
    (``loss, acc = train_step(x, y)``): a step function wrapped in another would nest a tf.function
    step in a plain one, which fails on the replicas ("merge_call called while defining a new graph")."""
    small = span[0].body[0] if len(span) == 1 and isinstance(span[0], cst.SimpleStatementLine) \
        and len(span[0].body) == 1 else None
    value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
    if not isinstance(value, cst.Call) or isinstance(small, cst.Assign) and not all(
            isinstance(t.target, (cst.Name, cst.Tuple)) for t in small.targets):
        return None
    if trains(value) and dataflow.callees(a, value):
        return value
    return None


def _inline_step_span(ctx, loop, body, trains, batch, cut, refusal: str):
    """(first, last): the indices in the loop body of the statements making the step."""
    a = ctx.a
    training = [i for i, stmt in enumerate(body) if trains(stmt) or tape_rows.runs_training_tape(a, stmt)]
    # From the first statement working on the batch to the last training one.
    marks = training + [i for i, stmt in enumerate(body) if training and i < max(training) and id(stmt) not in cut
                        and any(isinstance(n, cst.Name) and n.value in batch for n in walk(stmt))]
    if not marks:
        raise ctx.unsupported(loop, refusal.replace("{why}", "the step was not found in the loop body"))
    first, last = min(marks), max(marks)
    # ``del tape`` right after the step: it deletes what the step made, so it runs in the step too
    made = set().union(*(assigned_names(s) for s in body[first:last + 1]))
    while last + 1 < len(body) and _deletes_only(body[last + 1], made):
        last += 1
    return first, last


def _inline_step_params(ctx, loop, before, span, refusal: str):
    """(params, assigned): the names the step reads that were bound before it (``before``: the
    statements of the loop body before it), and the names it binds; refused when it updates a
    name bound outside it, or leaves the loop body."""
    bound_before = set(target_names(loop.target) if isinstance(loop, cst.For) else ())
    for stmt in before:
        bound_before |= assigned_names(stmt)
    assigned = set()
    for stmt in span:
        assigned |= assigned_names(stmt)
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
    # a name the step reads before it binds it (``x = tf.reshape(x, ...)``) is given to it too
    read_first: Set[str] = set()
    stored: Set[str] = set()
    for stmt in span:
        targets = {id(n) for t in walk(stmt) if isinstance(t, (cst.AssignTarget, cst.AsName))
                   for n in walk(t.target if isinstance(t, cst.AssignTarget) else t.name) if isinstance(n, cst.Name)}
        read_first |= {n.value for n in walk(stmt) if isinstance(n, cst.Name) and id(n) not in targets} - stored
        stored |= assigned_names(stmt)
    params = [n for n in read_in_span if n in bound_before and (n not in assigned or n in read_first)]
    return params, assigned


def _inline_step_results(a: A.Analysis, loop, span, assigned) -> List[str]:
    """The names the step binds that the rest of the same scope reads (not other functions' own names)."""
    scope = a.enclosing_function(loop) or a.module
    outside = set()
    span_ids = {id(n) for stmt in span for n in walk(stmt)}
    nested = {id(n) for d in walk(scope) if d is not scope and isinstance(d, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
              for n in walk(d.body)}
    for n in walk(scope):
        if isinstance(n, cst.Name) and id(n) not in span_ids and id(n) not in nested and not names_a_field(a, n) \
                and n.value in assigned and _may_read_the_step(a, n, span_ids):
            outside.add(n.value)
    return [n for n in sorted(assigned) if n in outside]


def _may_read_the_step(a: A.Analysis, n: cst.Name, span_ids) -> bool:
    """Can this read see a value the step binds? Not when every binding
    reaching it is known and outside the step (``tape`` of a later loop's
    own ``with tf.GradientTape() as tape``: bound there before it is read)."""
    if not a.scopes.is_load(n):
        return False  # a binding, not a read
    bound = a.assigned_values(n)
    return not bound or any(id(origin) in span_ids for origin, _ in bound)


def _batch_read_later(ctx, body, last: int, batch):
    """The batch, read again after the step (a loss or an accuracy printed
    every few steps), holds distributed values no code outside the
    replicas can use: from there on the names hold this worker's rows.
    (those names, the statements making them local)."""
    order = _ordered_names(body, batch)
    later = [n for n in order if n in batch and any(
        isinstance(x, cst.Name) and x.value == n for stmt in body[last + 1:] for x in walk(stmt))]
    localise = []
    if later:
        names = ", ".join(later)
        value = later[0] if len(later) == 1 else f"({names})"
        localise = ctx.stmts(f"{names} = " + ctx.fill(ctx.backend.local_values(value)))
    return later, localise


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
    if isinstance(loop, cst.For) and tape_rows.loop_dataset(a, loop.iter)[0] is not None:
        names |= _batch_names(loop)
    reads = []
    nexts = _dataset_next_calls(a, loop)
    for stmt in loop.body.body:
        for n in walk(stmt):
            if isinstance(n, cst.Assign) and id(n.value) in nexts:
                for t in n.targets:
                    names |= set(target_names(t.target))
                if stmt not in reads:
                    reads.append(stmt)
    return names, reads


def _nested_next_reads(a: A.Analysis, loop, span) -> List[cst.Assign]:
    """``batch = next(it)`` of a dataset's iterator nested in a statement of the step span (inside
    the tapes' ``with`` block): not a statement of the loop body that can stay outside the step."""
    nexts = _dataset_next_calls(a, loop)
    return [n for stmt in span for n in walk(stmt) if isinstance(n, cst.Assign) and id(n.value) in nexts
            and not (isinstance(stmt, cst.SimpleStatementLine) and n in stmt.body)]


def _dataset_next_calls(a: A.Analysis, loop) -> Set[int]:
    """ids of the ``next(it)`` calls in the loop that read a tf.data dataset's iterator."""
    return {id(c) for c, _made, _ds in dataset_iterators.next_reads(a, loop.body)}


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
    return set(target_names(target))


def _assigned_plain(stmts) -> Set[str]:
    out: Set[str] = set()
    for stmt in stmts:
        for n in walk(stmt):
            if isinstance(n, cst.AssignTarget):
                out |= set(target_names(n.target))
    return out


def _between(a: A.Analysis, node, outer):
    for p in a.ancestors(node):
        if p is outer:
            return
        yield p


def _run_on_replicas(ctx, call: cst.Call) -> None:
    a = ctx.a
    cut = cut_arguments(ctx)  # arguments each replica cut for itself (_split_array_feed)
    value = lambda arg: cut.get(id(arg.value)) or source(ctx.module, arg.value, False)  # noqa: E731
    if any(arg.star for arg in call.args):
        args = ", ".join(value(arg) if not arg.star else arg.star + value(arg) for arg in call.args)
    else:
        args = ", ".join((f"{arg.keyword.value}=" if arg.keyword else "") + value(arg) for arg in call.args)
    new = ctx.expr(ctx.backend.run_on_replicas(source(ctx.module, call.func, False), args))
    ctx.plan.replace(call, lambda old: new)
    ctx.change(call, RULE, ctx.say("{step}(...) run on every replica, its results averaged", step=a.code(call.func)))


def _distribute_loop_data(ctx, loop, feed=None, calls=()) -> None:
    _feed_replicas(ctx, loop, feed, calls)
    _local_after_loop(ctx, loop, _distributed_names(ctx.a, loop, feed))


def _distributed_names(a: A.Analysis, loop, feed) -> Set[str]:
    """The names the loop binds to distributed values: the batch."""
    if isinstance(feed, stream_feeds.DrawFeed):
        return {n.value for t in a.statement_of(feed.call).body[0].targets for n in walk(t) if isinstance(n, cst.Name)}
    if isinstance(feed, ArrayFeed):
        return set(feed.names)
    names = _batch_names(loop)
    for c in calls_in(loop.body):  # x, y = next(it) of a distributed dataset
        if isinstance(c.func, cst.Name) and c.func.value == "next":
            stmt = a.statement_of(c)
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            if isinstance(small, cst.Assign) and small.value is c:
                names |= {n.value for t in small.targets for n in walk(t) if isinstance(n, cst.Name)}
    return names


def _local_after_loop(ctx, loop, names: Set[str]) -> None:
    """The batch read after the loop (the last batch, evaluated or shown):
    there it is this worker's rows of the last step's batches, as plain
    tensors, bound right after the loop."""
    a = ctx.a
    scope = a.enclosing_function(loop) or a.module
    inside = {id(n) for n in walk(loop)}
    reads = [n for n in walk(scope) if isinstance(n, cst.Name) and n.value in names and id(n) not in inside
             and a.scopes.is_load(n) and any(dataflow.is_inside(a, o, loop) for o, _ in a.assigned_values(n))]
    read = sorted({n.value for n in reads})
    if not read:
        return
    values = ", ".join(ctx.fill(ctx.backend.local_values(name)) for name in read)
    ctx.plan.insert_after(loop, ctx.stmts(f"{', '.join(read)} = {values}", comment=ctx.say(
        "{engine}: the batch read after the loop is this worker's rows of the last step's batches.")))
    ctx.change(loop, shard_points.RULE, ctx.say(
        "{names} read after the loop (line {line}): there {they} this worker's rows of the last step's batches, as "
        "plain tensors", names=", ".join(read), they="it is" if len(read) == 1 else "they are",
        line=str(min(a.line(n) for n in reads))))


def _feed_replicas(ctx, loop, feed=None, calls=()) -> None:
    a = ctx.a
    if isinstance(feed, stream_feeds.DrawFeed):
        stream_feeds.split_draws(ctx, loop, feed)
        return
    if isinstance(feed, GeneratorFeed):
        split_generator(ctx, feed)
        # enumerate(...) numbers the groups of batches (one step each): a
        # cap on that number is 1/size of the original's steps
        step_division.divide_enumerated_cap(ctx, loop)
        return
    if feed is not None:
        split_array_feed(ctx, loop, feed, calls)
        return
    if isinstance(loop, cst.For):
        ds, take = tape_rows.loop_dataset(a, loop.iter)
        if ds is not None:
            _divide_dataset(ctx, ds)
            target = take if take is not None else ds
            _distribute(ctx, target)
            ctx.change(target, shard_points.RULE, ctx.say("training data distributed: each replica reads its own part of every global batch"))
            sharding.divide_steps_taken(ctx, ds)
            step_division.divide_enumerated_cap(ctx, loop)
            return
    iterators = _iterators_read(a, loop)
    if iterators:
        for it_call, ds in iterators:
            _divide_dataset(ctx, ds)
            _distribute(ctx, ds)
            ctx.change(it_call, shard_points.RULE, ctx.say("training data distributed: each replica reads its own part of every global batch"))
        if step_division.divide(ctx, loop, "training steps") == step_counts.UNKNOWN:
            ctx.warn(loop, shard_points.RULE, ctx.say("cannot see how many steps this loop runs: each global batch covers {size} batches of the original, so run 1/{size} of the steps"))
        return
    raise ctx.unsupported(loop, ctx.say(
        "this training loop does not read a tf.data dataset: {engine} can divide the work only of a dataset it "
        "distributes; build a tf.data.Dataset of the samples{alternative}"))


def _divide_dataset(ctx, ds) -> None:
    """Its batch kept per replica, its data split between workers: where this
    file builds it, or through the call of the helper of another module that
    does (that module is not edited)."""
    site = replica_state.external_helper_site(ctx, ds)
    if site is not None:
        replicas.external_helper_dataset(ctx, site, "training data")
    else:
        replicas.dataset_batches_per_replica(ctx, ds, "training data")
        replicas.split_by_engine(ctx, ds, "training data")


def _distribute(ctx, dataset) -> None:
    """The strategy's distributed version of a dataset expression (built
    from its edited form: the batch kept per replica, the split policy)."""
    refusals.refuse_unbatched_components(ctx, [dataset])
    template = ctx.backend.distribute_dataset("{inner}")
    ctx.plan.replace(dataset, lambda upd: ctx.expr(template, inner=ctx.module.code_for_node(upd)))


def _iterators_read(a: A.Analysis, loop):
    """(iter(...) call, dataset) of ``next(it)`` reads in the loop, with it = iter(dataset)."""
    out = []
    for _next, made, ds in dataset_iterators.next_reads(a, loop.body):
        if all(made is not v for v, _ in out):
            out.append((made, ds))
    return out


def _reads_dataset(a: A.Analysis, loop) -> bool:
    if isinstance(loop, cst.For) and tape_rows.loop_dataset(a, loop.iter)[0] is not None:
        return True
    return bool(_iterators_read(a, loop))


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

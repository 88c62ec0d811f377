"""Feeding replicas from arrays and generators in a tape loop: the batch statements cut per
replica, with samples and labels kept paired.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Set
import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from ..facts.batch_helpers import reorders_itself
from ..facts.syntax import calls_in, find_arg, source
from . import per_rank_draws
from . import shared_seeds
from ..facts import batch_helpers
from ..facts import gradient_tapes
from ..facts import replica_state
from ..facts import sample_arrays
from ..facts import samplers
from ..facts import shard_points
from ..facts import step_counts


def target_names(target) -> List[str]:
    return [n.value for n in walk(target) if isinstance(n, cst.Name)]


def assigned_names(stmt) -> Set[str]:
    """Names a statement binds (assignments, with-as, for targets)."""
    out: Set[str] = set()
    for n in walk(stmt):
        if isinstance(n, cst.AssignTarget):
            out |= set(target_names(n.target))
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            out |= set(target_names(n.target))
        elif isinstance(n, cst.AsName):
            out |= set(target_names(n.name))
        elif isinstance(n, cst.For):
            out |= set(target_names(n.target))
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


def batch_call_kind(a: A.Analysis, call: cst.Call, depth: int = 0) -> Optional[str]:
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
            not qualified or sample_arrays.numpy_array(a, call.func.value)):
        return "pure"  # xb.astype("float32") of NumPy rows
    if depth < 3 and batch_helpers.batch_helper_arrays(a, call, draws=True) is not None:
        fdef = dataflow.callees(a, call)[0]
        kinds = [batch_call_kind(a, inner, depth + 1) for inner in calls_in(fdef.body)]
        if any(k is None for k in kinds) or any(isinstance(n, (cst.Global, cst.Nonlocal)) for n in walk(fdef.body)):
            return None
        return "random" if "random" in kinds else "pure"
    return None


@dataclass
class ArrayFeed:
    statements: List[cst.BaseStatement]  # top of the loop body: cut one step's batch
    names: Set[str]  # names they bind
    counter: Optional[str]  # the loop counter, when they read it
    offset_step: Optional[cst.BaseExpression]  # step of range(0, stop, step): the counter is a row offset
    random: bool  # they draw from NumPy's global generator
    reorders: List[cst.CSTNode] = None  # the arrays reordered by themselves each epoch (X, Y = shuffle(X, Y))


def _refusal(ctx, node, why):
    """Refusing a step loop whose batches cannot be cut per replica (the reason in ``why``)."""
    return ctx.unsupported(node, ctx.say(
        "this training loop does not read a tf.data dataset and tfdist cannot give each replica its own batch "
        "({why}); build a tf.data.Dataset of the samples{alternative}", why=why))


def _step_range_args(ctx, loop) -> list:
    """The arguments of the range(...) a step loop counts its steps with; refused unless
    range(n), range(start, n) or range(0, n, batch)."""
    a = ctx.a
    if not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name):
        raise _refusal(ctx, loop, "it is not a for loop over range(...) numbering its steps")
    it = step_counts.unwrapped(a, loop.iter)  # tqdm(range(n)): range(n)'s steps
    args = step_counts.plain_args(it) if step_counts.is_range(a, it) else None
    zero = lambda e: isinstance(e, cst.Integer) and e.evaluated_value == 0  # noqa: E731
    if args is None or not (len(args) in (1, 2)
                            or len(args) == 3 and zero(args[0]) and isinstance(args[2], (cst.Name, cst.Integer))):
        raise _refusal(ctx, loop, "it is not a for loop over range(n), range(start, n) or range(0, n, batch)")
    return args


def _batch_statements(ctx, loop, trains):
    """The loop body and the index of its training step; the statements before it cut the batch."""
    a = ctx.a
    body = list(loop.body.body)
    tape_withs = {id(w) for w, *_ in gradient_tapes.training_tapes(a)}
    first = next((i for i, s in enumerate(body) if trains(s) or any(id(n) in tape_withs for n in walk(s))), None)
    statements = body[:first] if first else []
    if not statements:
        raise _refusal(ctx, loop, "no statements cutting the batch before the training step")
    return body, first, statements


def _batch_bindings(ctx, statements):
    """The names the batch statements bind, and whether they draw from NumPy's global generator;
    refused unless each is an assignment of names making only calls a replica can run."""
    a = ctx.a
    names: Set[str] = set()
    random = False
    for stmt in statements:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if not isinstance(small, cst.Assign) or not all(
                isinstance(n, (cst.Name, cst.Tuple, cst.List, cst.Element, cst.AssignTarget))
                for t in small.targets for n in walk(t)):
            raise _refusal(ctx, stmt, f"line {a.line(stmt)} is not an assignment of names cutting the batch")
        for call in calls_in(stmt):
            kind = batch_call_kind(a, call)
            if kind is None:
                raise _refusal(ctx, call, f"{a.code(call.func)}(...) at line {a.line(call)} may keep state tfdist "
                                          "cannot split between the replicas")
            random = random or kind == "random"
        for t in small.targets:
            names |= set(target_names(t.target))
    return names, random


def _cuts_rows(a: A.Analysis, names: Set[str], node) -> bool:
    """``node`` cuts rows here (x[i:i + B]) or by a batch helper of the script's own (get_batch(x, y, i))."""
    return any(isinstance(n, cst.Subscript) and isinstance(n.value, cst.Name)
               and n.value.value not in names or batch_helpers.batch_helper_arrays(a, n, draws=True) is not None
               for n in walk(node))


def _check_only_batch_computed(ctx, statements, cutting, names: Set[str]) -> None:
    """Each statement cuts rows, or computes what a statement cutting rows reads
    (``idx = np.random.choice(n, bs)``, ``start = i * B``): run per replica,
    anything else (a rate from the step number) would differ between them."""
    a = ctx.a
    needed = {n.value for c in cutting if _cuts_rows(a, names, c) for n in walk(c) if isinstance(n, cst.Name)}
    for k in reversed(range(len(statements))):
        stmt = statements[k]
        bound = set(assigned_names(stmt))
        if _cuts_rows(a, names, stmt) or bound & needed:
            needed |= {n.value for n in walk(stmt) if isinstance(n, cst.Name)}
            continue
        # computed from the rows cut before it (cond = np.eye(4)[yb]): each
        # replica computes it from its own rows (its calls checked above)
        earlier = {n for s in statements[:k] for n in assigned_names(s)}
        if {n.value for n in walk(stmt) if isinstance(n, cst.Name)} & earlier:
            continue
        raise _refusal(ctx, stmt, f"line {a.line(stmt)} computes {', '.join(sorted(bound))}, which is not part of "
                                  "the batch, before the step: every replica would compute its own; compute it "
                                  "after the batch is cut")


def _reordered_arrays(ctx, loop, read: dict, names: Set[str], counter: str, random: bool) -> List[cst.CSTNode]:
    """The batch statements read the arrays as they are before the loop: an
    array made anew in the loops around (a per-epoch permutation) would
    differ from worker to worker, and their batches would overlap. The arrays
    reordered by themselves each epoch are allowed: returned."""
    a = ctx.a
    outer = dataflow.outermost_loop(a, loop) or loop
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
            raise _refusal(ctx, inside[0], f"{name}, which the batch is cut with, is made anew at line "
                                           f"{a.line(inside[0])} inside the training loops: it would differ from "
                                           "worker to worker")
    return reorders


def _check_batch_read_by_step_only(ctx, loop, body, first, names: Set[str]) -> None:
    """What the batch statements bind is the batch: not bound again once the step starts."""
    a = ctx.a
    rest = [n for s in body[first:] for n in walk(s)]
    for n in rest:
        if isinstance(n, cst.AssignTarget) and set(target_names(n.target)) & names:
            raise _refusal(ctx, n, f"line {a.line(n)} binds the batch again after the step starts")
    # read after the loop: there it is this worker's rows (rules/replica_tape.py, _local_after_loop)


def array_feed(ctx, loop, trains) -> ArrayFeed:
    """The statements of a step loop cutting each step's batch from arrays,
    when every replica can run them for its own step; refused (with the
    reason and line) otherwise."""
    a = ctx.a
    args = _step_range_args(ctx, loop)
    counter = loop.target.value
    body, first, statements = _batch_statements(ctx, loop, trains)
    names, random = _batch_bindings(ctx, statements)
    # Step arguments computed from the batch statements (``x[idx]``) are cut per replica too.
    moved = [arg.value for s in body[first:] for c in calls_in(s) if trains(c) for arg in c.args
             if not isinstance(arg.value, cst.Name) and not arg.star
             and any(isinstance(n, cst.Name) and n.value in names for n in walk(arg.value))]
    cutting = [*statements, *moved]
    read = {n.value: n for s in cutting for n in walk(s) if isinstance(n, cst.Name)}
    if not any(_cuts_rows(a, names, s) for s in cutting):
        raise _refusal(ctx, statements[0], "the statements before the step cut no rows of an array")
    _check_only_batch_computed(ctx, statements, cutting, names)
    reorders = _reordered_arrays(ctx, loop, read, names, counter, random)
    _check_batch_read_by_step_only(ctx, loop, body, first, names)
    if counter in names:
        raise _refusal(ctx, statements[0], f"the batch statements rebind the loop counter {counter}")
    uses_counter = counter in read
    if not uses_counter and not random:
        raise _refusal(ctx, statements[0], f"the batch depends neither on the step number {counter} nor on a random "
                                           "draw: every replica would cut the same rows")
    return ArrayFeed(statements, names, counter if uses_counter else None,
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


def cut_arguments(ctx) -> dict:
    """id(argument) -> the name a replica's own share of it is bound to (per conversion)."""
    return ctx.state("replica_tape.args", dict)


def _divide_steps(ctx, loop, feed: ArrayFeed) -> Optional[str]:
    """The loop runs 1/N of the steps (its range's stop rewritten); the code of
    its range's start, when the steps are numbered from one."""
    a = ctx.a
    size = ctx.backend.size()
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
    return start_code


def _moved_arguments(ctx, feed: ArrayFeed, calls) -> list:
    """Arguments of the step call computed from the batch: cut per replica too,
    each bound to a name of its own; (name, argument) pairs."""
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
            cut_arguments(ctx)[id(arg.value)] = name
    return moved


def _replica_head(ctx, feed: ArrayFeed, replica: str, start_code: Optional[str]):
    """The statements numbering a replica's own step (none without a counter), and the
    comment on the function cutting its batch."""
    a = ctx.a
    size = ctx.backend.size()
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
    return head, comment


def _regroup_per_replica(ctx, loop, feed: ArrayFeed, moved, start_code: Optional[str]) -> str:
    """The batch statements (and the moved arguments) become a function every replica runs
    for its own step, its results bound per replica; the function's name."""
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
    head, comment = _replica_head(ctx, feed, replica, start_code)
    define = ctx.stmts(f"def {function}({params}):\n    pass", comment=comment)[0]
    tail_values = ", ".join(returned + [source(ctx.module, v, False) for _, v in moved])
    tail = ctx.stmts(f"return {tail_values}")
    assign = ctx.stmts(f"{', '.join(results)} = " + ctx.backend.values_per_replica(function))[0]

    def build(inner, leading, define=define, head=head, tail=tail, assign=assign):
        return [define.with_changes(body=cst.IndentedBlock(body=[*head, *inner, *tail]),
                                    leading_lines=[*leading, *define.leading_lines]), assign]

    ctx.plan.regroup(feed.statements, build)
    return function


def _seed_reorders_alike(ctx, loop, feed: ArrayFeed) -> None:
    """The arrays reordered each epoch: NumPy seeded alike on every worker before the loops."""
    a = ctx.a
    stmt = dataflow.outermost_loop(a, loop) or loop
    top = a.statement_of(stmt) or stmt
    if not shard_points.global_seed_set_before(a, top, apis.NUMPY_GLOBAL_SEED_SETTERS) \
            and shared_seeds.seed_numpy_alike_before(
                ctx, top, "{engine}: every worker reorders the arrays alike each epoch, so the batches its "
                          "replicas cut stay disjoint."):
        ctx.change(feed.reorders[0], shard_points.RULE, ctx.say(
            "the arrays reordered each epoch (line {line}) are reordered alike on every worker: NumPy seeded "
            "the same before the loop at line {loop}", line=str(a.line(feed.reorders[0])),
            loop=str(a.line(stmt))))


def _seed_draws_per_worker(ctx, loop, feed: ArrayFeed) -> None:
    """A batch drawn from NumPy's global generator: seeded per worker (once per loop)."""
    a = ctx.a
    stmt = dataflow.outermost_loop(a, loop) or loop
    key = ("seeded", id(stmt))
    done = ctx.state("replica_tape.seeded")
    if key not in done:
        done.add(key)
        per_rank_draws.seed_numpy_before(ctx, a.statement_of(stmt) or stmt)
        ctx.change(feed.statements[0], shard_points.RULE, ctx.say(
            "the batch is drawn from NumPy's global generator: seeded per worker before the loop at line "
            "{line}, so the workers draw different batches", line=str(a.line(stmt))))


def split_array_feed(ctx, loop, feed: ArrayFeed, calls) -> None:
    a = ctx.a
    # 1. The loop runs 1/N of the steps.
    start_code = _divide_steps(ctx, loop, feed)
    # 2. Arguments of the step call computed from the batch: cut per replica too.
    moved = _moved_arguments(ctx, feed, calls)
    # 3. The batch statements run by every replica for its own step.
    function = _regroup_per_replica(ctx, loop, feed, moved, start_code)
    ctx.change(feed.statements[0], shard_points.RULE, ctx.say(
        "the batch cut at lines {start}-{end} is cut by every replica for its own step ({function}): disjoint "
        "batches of the user's size, samples with their labels", start=str(a.line(feed.statements[0])),
        end=str(a.end_line(feed.statements[-1])), function=function), through=feed.statements[-1])
    for name, value in moved:
        ctx.change(value, shard_points.RULE, ctx.say("{value} cut by every replica for its own step",
                                                      value=a.code(value)))
    if feed.reorders:
        _seed_reorders_alike(ctx, loop, feed)
    if feed.random:
        _seed_draws_per_worker(ctx, loop, feed)


def _ordered_targets(statements) -> List[str]:
    out: List[str] = []
    for s in statements:
        for n in walk(s):
            if isinstance(n, cst.AssignTarget):
                out += [x for x in target_names(n.target) if x not in out]
    return out


# ------------------------------------------------------------ generators
# A step loop iterating a Python generator of the user's (``for xb, yb in
# batches():``): every worker runs the generator; each group of N
# consecutive batches it yields makes one step, replica g training on the
# g-th. Safe only when the generator yields the same batches on every
# worker: it must be a pure function of its arguments and of arrays made
# before the training loops -- no random draws, no state kept elsewhere.

@dataclass
class GeneratorFeed:
    call: cst.BaseExpression  # batches(...) as the loop iterates it
    check: int = 0  # the loop's line, when the workers confirm at run time that they read the same stream


def generator_feed(ctx, loop) -> Optional[GeneratorFeed]:
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
    # state kept across calls, calls whose state tfdist cannot see: every worker runs them alike, which
    # the workers confirm at run time (the helper's check)
    check = a.line(loop) if any(samplers.stateful(f) for f in functions) else 0
    for f in functions:
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
            check = a.line(loop)
        for n in walk(f.body):
            if isinstance(n, cst.Name):
                made = [o for o, _ in a.assigned_values(n) if not dataflow.is_inside(a, o, f)
                        and (o is outer or dataflow.is_inside(a, o, outer))]
                if made:
                    raise refuse(made[0], f"it reads {n.value}, made anew at line {a.line(made[0])} inside the "
                                          "training loops")
    if alike:  # the helper gives the stream a generator state every worker shares (tf_distribute_helpers)
        ctx.change(it, shard_points.RULE, ctx.say(
            "{name}() draws from {generators} without a seed: it draws from a state every worker shares (the "
            "script's own draws stay as they were), so every worker's stream of batches is the same and the "
            "replicas' shares of it are disjoint", name=name,
            generators=" and ".join("NumPy's global generator" if k == "numpy" else "Python's random" for k in alike)))
    return GeneratorFeed(it, check)


def split_generator(ctx, feed: GeneratorFeed) -> None:
    # filled now, so that the setup writes the helper the template names
    template = ctx.fill(ctx.backend.split_batch_stream("{inner}", feed.check), inner="{inner}")
    ctx.plan.replace(feed.call, lambda upd: ctx.expr(template, inner=ctx.module.code_for_node(upd)))
    what = ctx.a.code(feed.call.func) + "()" if isinstance(feed.call, cst.Call) else ctx.a.code(feed.call)
    checked = "" if not feed.check else (
        "; tfdist cannot see how it makes them, so what it draws from NumPy's and Python's global generators is "
        "drawn alike on every worker and, at run time, the workers compare the first step's batches of each pass "
        "and stop, saying so, if they differ (their shares would overlap)")
    ctx.change(feed.call, shard_points.RULE, ctx.say(
        "{what} batches split between the replicas: every {size} consecutive batches make one step, each "
        "replica training on its own (the user's batch size; 1/{size} of the steps){checked}",
        what=what, checked=checked))

"""How many steps a loop runs, in every form a script counts them.

Step loops: find the number of training steps a loop runs, in every form
real scripts write it, so the data-division rule can make each rank run
1/size of them.

Forms: ``for s in range(n)``, ``range(a, b)``, ``range(1, n + 1)``, the
``six.moves``/``xrange`` spellings, ``while step < n`` (or ``<=``) with
``step += 1`` in the body, ``while True`` and ``for s in itertools.count()``
ended by ``if step >= n: break``. A count derived from arrays that were
already divided (see ``engine.dataflow.sized_after``) is per-rank already
and left alone. Anything else is reported, never guessed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Set
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import dataflow
from ..engine.scopes import walk
from . import external_functions
from . import seeding
from . import shard_points


DIVIDED = "divided"
PER_RANK = "per-rank"  # computed from divided data: already a per-rank count
UNKNOWN = "unknown"


@dataclass
class Sliced:
    """Arrays divided by rank right after ``point``: a count computed from
    them after that statement is per-rank already."""
    names: Set[str]
    point: cst.CSTNode


@dataclass
class StepCount:
    count: cst.BaseExpression  # the expression to divide
    rewrite: str  # "count" (divide it), "range-span" (range(a, b): divide b - a)
    start: Optional[cst.BaseExpression] = None  # a of range(a, b)


@fact
def is_range(a, call) -> bool:
    if not isinstance(call, cst.Call):
        return False
    if a.is_name(call, apis.RANGE_FUNCTIONS) is not None:
        return True
    # Python 2's built-in xrange, used without any binding of that name
    return isinstance(call.func, cst.Name) and call.func.value == apis.PYTHON2_RANGE and not a.scopes.lookup(call.func)


def plain_args(call: cst.Call) -> Optional[List[cst.BaseExpression]]:
    """The positional arguments of a range: range() takes no keywords, and
    tqdm's trange(a, b, desc=..., leave=...) counts by its positional ones."""
    if any(arg.star for arg in call.args):
        return None
    return [arg.value for arg in call.args if arg.keyword is None]


def _same_literal(x, y) -> bool:
    return isinstance(x, cst.Integer) and isinstance(y, cst.Integer) and x.evaluated_value == y.evaluated_value


def _range_count(a, call: cst.Call) -> Optional[StepCount]:
    args = plain_args(call)
    if args is None or not 1 <= len(args) <= 2:
        return None
    if len(args) == 1:
        return StepCount(args[0], "count")
    start, stop = args
    if isinstance(start, cst.Integer) and start.evaluated_value == 0:
        return StepCount(stop, "count")
    # range(1, n + 1): n steps numbered from 1
    if isinstance(stop, cst.BinaryOperation) and isinstance(stop.operator, cst.Add):
        if _same_literal(stop.right, start):
            return StepCount(stop.left, "count")
        if _same_literal(stop.left, start):
            return StepCount(stop.right, "count")
    return StepCount(stop, "range-span", start)


def _counter_var(a, loop) -> Optional[str]:
    if isinstance(loop, cst.For) and isinstance(loop.target, cst.Name):
        return loop.target.value
    return None


def _incremented(loop, var: str, by_any: bool = False) -> bool:
    """``var += 1`` (or ``var = var + 1``) somewhere in the loop body; with
    ``by_any``, by any fixed amount (``i += BATCH_SIZE``: a literal, or a
    name the loop does not rebind), so that the steps are the bound over
    that amount and dividing the bound divides them."""
    rebound = {n.value for t in walk(loop.body) if isinstance(t, (cst.AssignTarget, cst.AugAssign))
               for n in walk(t.target if isinstance(t, cst.AugAssign) else t.target) if isinstance(n, cst.Name)}

    def step(value) -> bool:
        if isinstance(value, cst.Integer):
            return value.evaluated_value == 1 or (by_any and value.evaluated_value > 0)
        return by_any and isinstance(value, cst.Name) and value.value not in rebound

    for n in walk(loop.body):
        if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name) and n.target.value == var \
                and isinstance(n.operator, cst.AddAssign) and step(n.value):
            return True
        if isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name) \
                and n.targets[0].target.value == var and isinstance(n.value, cst.BinaryOperation) \
                and isinstance(n.value.operator, cst.Add) and isinstance(n.value.left, cst.Name) \
                and n.value.left.value == var and step(n.value.right):
            return True
    return False


def _scaled_counter(expr, var: str) -> bool:
    """``var * k`` or ``k * var`` (``while step * batch_size < training_iters``)."""
    return isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply) and (
        (isinstance(expr.left, cst.Name) and expr.left.value == var) != (isinstance(expr.right, cst.Name) and expr.right.value == var))


def _bound_of(test, var: str, operators) -> Optional[cst.BaseExpression]:
    """N in ``var OP N`` (or ``N OP' var``)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    comp = test.comparisons[0]
    flipped = {cst.LessThan: cst.GreaterThan, cst.LessThanEqual: cst.GreaterThanEqual,
               cst.GreaterThan: cst.LessThan, cst.GreaterThanEqual: cst.LessThanEqual, cst.Equal: cst.Equal}
    if ((isinstance(test.left, cst.Name) and test.left.value == var) or _scaled_counter(test.left, var)) \
            and isinstance(comp.operator, operators):
        return comp.comparator
    if (isinstance(comp.comparator, cst.Name) and comp.comparator.value == var) or _scaled_counter(comp.comparator, var):
        op = flipped.get(type(comp.operator))
        if op is not None and issubclass(op, operators):
            return test.left
    return None


def _break_bound(loop, var: str) -> Optional[cst.BaseExpression]:
    """N of the one ``if var >= N: break`` (``>``, ``==``) directly ending the loop."""
    found = []
    for n in walk(loop.body):
        if isinstance(n, (cst.For, cst.While)) and n is not loop:
            continue
        if isinstance(n, cst.If) and isinstance(n.body, cst.IndentedBlock) and any(
                isinstance(s, cst.SimpleStatementLine) and any(isinstance(x, cst.Break) for x in s.body)
                for s in n.body.body):
            bound = _bound_of(n.test, var, (cst.GreaterThanEqual, cst.GreaterThan, cst.Equal))
            if bound is not None:
                found.append(bound)
    return found[0] if len(found) == 1 else None


@fact
def enumerated_cap(a, loop) -> Optional[cst.BaseExpression]:
    """N of the ``if step > N: break`` (``>=``, ``==``) that ends a loop
    numbering what it iterates (``for step, batch in enumerate(dataset)``)
    after a fixed number of steps, whatever the data holds."""
    if not (isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call) and a.is_name(loop.iter, {apis.ENUMERATE})
            and isinstance(loop.target, (cst.Tuple, cst.List)) and len(loop.target.elements) == 2
            and isinstance(loop.target.elements[0].value, cst.Name)):
        return None
    return _break_bound(loop, loop.target.elements[0].value.value)


@fact
def unwrapped(a, it, wrappers=apis.ITERATION_WRAPPERS):
    """The iterable inside progress bars and numberings: range(n) in
    ``tqdm(range(n))``, ``enumerate(tqdm(range(n)))`` (of ``wrappers``)."""
    while isinstance(it, cst.Call) and it.args and it.args[0].keyword is None and not it.args[0].star \
            and a.is_name(it, wrappers):
        it = it.args[0].value
    return it


@fact
def step_count(a, loop) -> Optional[StepCount]:
    """The step count of a training loop, or None when tfdist cannot see it."""
    if isinstance(loop, cst.For):
        it = loop.iter
        if isinstance(it, cst.Name):  # t = trange(n); for i in t: (the count is where t is bound)
            bound = a.assigned_values(it)
            if len(bound) == 1 and isinstance(bound[0][1], cst.Call) and is_range(a, unwrapped(a, bound[0][1])):
                it = bound[0][1]
        it = unwrapped(a, it)
        if is_range(a, it):
            return _range_count(a, it)
        if isinstance(it, cst.Call) and a.is_name(it, apis.COUNTER_FUNCTIONS):
            var = _counter_var(a, loop)
            bound = _break_bound(loop, var) if var else None
            return StepCount(bound, "count") if bound is not None else None
        return None
    if isinstance(loop, cst.While):
        test = loop.test
        if isinstance(test, cst.Name) and test.value == "True":
            # the counters: names updated in the body (``step += 1`` or ``step = step + 1``)
            updated = {n.target.value for n in walk(loop.body) if isinstance(n, cst.AugAssign)
                       and isinstance(n.target, cst.Name)}
            updated |= {n.targets[0].target.value for n in walk(loop.body) if isinstance(n, cst.Assign)
                        and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)}
            for var in sorted(updated):
                bound = _break_bound(loop, var)
                if bound is not None and _incremented(loop, var):
                    return StepCount(bound, "count")
            return None
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            sides = (test.left, test.comparisons[0].comparator)
            names = [n.value for n in sides if isinstance(n, cst.Name)]
            scaled = [n.value for side in sides if isinstance(side, cst.BinaryOperation)
                      for n in (side.left, side.right) if isinstance(n, cst.Name) and _scaled_counter(side, n.value)]
            for var in names + scaled:
                bound = _bound_of(test, var, (cst.LessThan, cst.LessThanEqual))
                # while i < n: i += batch_size (offsets) / while step * batch_size < n: step += 1
                if bound is not None and _incremented(loop, var, by_any=var in names):
                    return StepCount(bound, "count")
    return None


def _bound_names(target) -> Set[str]:
    return {n.value for n in walk(target) if isinstance(n, cst.Name)}


def _compiled(a, node) -> bool:
    """node is inside a function decorated with tf.function (a Python loop
    there is traced once, not run step by step)."""
    return any(isinstance(f, cst.FunctionDef) and any(
        a.is_name(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator, {apis.TF_FUNCTION})
        for d in f.decorators) for f in a.ancestors(node))


def _run_fetches(a, node) -> bool:
    """node is inside what a TF1 ``run`` call fetches (its first argument):
    an op or tensor to run, not data fed."""
    for anc in a.ancestors(node):
        if isinstance(anc, cst.Arg):
            call = a.parent(anc)
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                    and call.func.attr.value == "run" and call.args and call.args[0] is anc and anc.keyword is None:
                return True
    return False


def _stream_iterable(a, loop) -> Optional[cst.BaseExpression]:
    """The iterable of a for-loop tfdist cannot count: not a range or a
    counter, not a literal list or tuple (its elements are settings written
    out here, not batches), not in a tf.function (traced, not stepped)."""
    if not isinstance(loop, cst.For) or _compiled(a, loop):
        return None
    it = unwrapped(a, loop.iter)
    if isinstance(it, (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.SimpleString, cst.Integer)) or is_range(a, it) \
            or (isinstance(it, cst.Call) and a.is_name(it, apis.COUNTER_FUNCTIONS)):
        return None
    return it


@fact
def stream_reach(a, loop) -> Optional[Set[str]]:
    """The names one step's data reaches in the body of a loop over an
    iterable tfdist cannot count (:func:`_stream_iterable`): the names the
    loop binds to an element and those assigned from them. None when an
    element is used as more than data -- called, asked for an attribute or
    method (optimizers, models or layers paired in a list), or run as an op."""
    if _stream_iterable(a, loop) is None:
        return None
    # the whole iterable is shared, enumerate() included: a number it adds
    # stays the element's position in the original order (labels indexed
    # by it stay paired) -- except where a cap on it ends the loop, which
    # numbers the rank's share instead (see _take_share_of_steps)
    yielded = _bound_names(loop.target)
    for use in (n for n in walk(loop.body) if isinstance(n, cst.Name) and n.value in yielded):
        parent = a.parent(use)
        if (isinstance(parent, cst.Call) and parent.func is use) or _run_fetches(a, use) or (
                isinstance(parent, cst.Attribute) and parent.value is use and parent.attr.value not in apis.DATA_ATTRIBUTES):
            return None
    reached = set(yielded)
    assigns = [n for n in walk(loop.body) if isinstance(n, (cst.Assign, cst.AnnAssign)) and n.value is not None]
    for _ in range(len(assigns)):
        grown = {t for n in assigns if reads(n.value, reached)
                 for t in _bound_names(n.targets[0].target if isinstance(n, cst.Assign) else n.target)} - reached
        if not grown:
            break
        reached |= grown
    return reached


def reads(node, names: Set[str]) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in walk(node))


@fact
def stream_of_steps(a, loop, spots: List[cst.CSTNode]) -> Optional[cst.BaseExpression]:
    """The iterable of a for-loop whose elements are the data of its steps,
    when tfdist cannot count them (a generator, an object of another
    module, a list built at run time): what it yields reaches ``spots``
    (where the step's data enters training) and is used as data only
    (:func:`stream_reach`)."""
    reached = stream_reach(a, loop)
    if reached is None or not any(reads(spot, reached) for spot in spots) or _steps_depend_on_data(a, loop, spots, reached):
        return None
    return _stream_iterable(a, loop)


def _own_statements(loop):
    """The nodes of a loop's body outside loops and functions nested in it."""
    stack = [loop.body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        stack.extend(node.children)


def _steps_depend_on_data(a, loop, spots: List[cst.CSTNode], reached: Set[str]) -> bool:
    """Whether a step may run or not depending on the element (``continue``
    on a short sentence, a step only when a buffer is full, a ``break``
    other than a cap on the enumerated position): ranks holding different
    elements would then run different numbers of steps, and a collective
    would wait for ever."""
    cap = None
    if isinstance(loop.iter, cst.Call) and a.is_name(loop.iter, {apis.ENUMERATE}) \
            and isinstance(loop.target, (cst.Tuple, cst.List)) and isinstance(loop.target.elements[0].value, cst.Name):
        cap = _break_bound(loop, loop.target.elements[0].value.value)
    for node in _own_statements(loop):
        if isinstance(node, cst.Continue):
            return True
        if isinstance(node, cst.Break) and cap is None:
            return True
        if isinstance(node, cst.If) and reads(node.test, reached) and any(
                dataflow.is_inside(a, spot, node) for spot in spots):
            return True
    return False


@fact
def number_used_as_data(a, loop, counter: str):
    """A read of the loop's number in its body that is data: in a subscript
    (``labels[i]``) or an argument of a call other than console output and
    string formatting; None when every read only tests it (the cap,
    ``if i % 100 == 0``) or prints it."""
    for n in walk(loop.body):
        if not (isinstance(n, cst.Name) and n.value == counter):
            continue
        child = n
        for anc in a.ancestors(n):
            if anc is loop:
                break
            if isinstance(anc, cst.SubscriptElement):
                return n
            if isinstance(anc, cst.Call) and child is not anc.func and not (
                    a.names(anc) & apis.CONSOLE_WRITE_FUNCTIONS
                    or any(q.startswith(apis.STEP_NUMBER_LOGGERS) for q in a.names(anc))
                    or isinstance(anc.func, cst.Attribute) and anc.func.attr.value == "format"):
                return n
            child = anc
    return None


def draws_own_order(ctx, iterable, depth: int = 0) -> Optional[str]:
    """The iterable is made by a helper (of this module or the project's,
    called there, or bound to a name from such a call) that reorders rows
    with NumPy's global generator and sets no seed of its own
    (data_division's check), with no global seed set at module level: each
    process then makes its own order, and every size-th element of
    different orders are not disjoint shares: "draws"; "unseen" when the
    helper is imported from a module tfdist cannot read (:func:`_unseen_helper`);
    None otherwise."""
    a = ctx.a
    if depth > 3:
        return None
    if isinstance(iterable, cst.Name):
        found = [draws_own_order(ctx, v, depth + 1) for _, v in a.assigned_values(iterable) if v is not None]
        return "draws" if "draws" in found else "unseen" if "unseen" in found else None
    if not isinstance(iterable, cst.Call) or shard_points.global_seed_set_before(
            a, iterable, apis.NUMPY_GLOBAL_SEED_SETTERS):
        return None
    if seeding.helper_draws(ctx, iterable):
        return "draws"
    return "unseen" if _unseen_helper(ctx, iterable) else None


def _unseen_helper(ctx, call: cst.Call) -> bool:
    """A helper imported from a module tfdist cannot read (not a library it
    knows, not a module of the converted project): it may shuffle with
    NumPy's global generator (``random_mini_batches(X, Y, 64)`` of a course's
    utils module). In a script using NumPy, seeding NumPy alike costs
    nothing when it does not, and makes the shares disjoint when it does."""
    a = ctx.a
    names = a.qualified(call.func)
    if not names or not a.is_import_binding(call.func):
        return False  # a function, class or object of this file: not unseen
    if any(n.startswith(apis.KNOWN_LIBRARY_PREFIXES) for n in names):
        return False
    if external_functions.external_function(ctx, call) is not None:
        return False  # read, and found not to draw (helper_draws)
    return any(m == "numpy" or m.startswith("numpy.") for m in ctx.imports.import_stmt)

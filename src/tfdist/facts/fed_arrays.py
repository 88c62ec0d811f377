"""TF1 feeds: which arrays a ``feed_dict`` is fed from, through samplers and streams, and where
they are sliced.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import dataflow
from .batch_helpers import batch_helper_arrays, is_constant, is_schedule, pure_batch_function_argument, reorders_itself, rows_reshaped, rows_under
from .syntax import method_name, receiver
from .tf1_graphs import feed_values, feeds
from . import samplers
from . import step_counts


@fact
def sliced_for(a: A.Analysis, loop, sliced) -> Optional[step_counts.Sliced]:
    """Of the arrays sliced (one Sliced, or one per function binding
    some), those the loop's count may be computed from: sliced in the
    loop's function, or the only ones."""
    if sliced is None or isinstance(sliced, step_counts.Sliced):
        return sliced
    if len(sliced) == 1:
        return sliced[0]
    return next((s for s in sliced if a.enclosing_function(s.point) is a.enclosing_function(loop)), None)


@fact
def array_roots(a: A.Analysis, expr, loop, out: Dict[str, cst.Name], readers: List[cst.CSTNode],
                 reader: cst.CSTNode, depth: int = 0) -> bool:
    """Collect the arrays bound outside the training loop that a fed value
    reads rows of: ``data`` in ``data[off:off + B]``, in ``xb`` with
    ``xb = data[idx]`` bound in the loop, in ``x`` of ``for x, y in
    zip(data, labels)``; a function parameter is followed to the arguments
    of the function's one call site (which then reads the arrays). False if
    the value is anything else (a sampler call, a computation tfdist cannot
    follow)."""
    if depth > 6:
        return False
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements \
            and not any(isinstance(e, cst.StarredElement) for e in expr.elements):
        # {X: [x]}: a batch of the rows listed (x one sample of the loop's
        # rows); a whole array listed is still refused below (depth kept)
        return all(array_roots(a, e.value, loop, out, readers, reader, depth) for e in expr.elements)
    while isinstance(expr, cst.Call) and method_name(expr) in apis.ROW_PRESERVING_METHODS \
            and isinstance(receiver(expr), cst.Subscript):
        expr = receiver(expr)  # x[idx].reshape(b, n): still rows of x
    rows = isinstance(expr, cst.Subscript)
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return False
    bound = a.assigned_values(expr)
    if not bound:
        return False
    if len(bound) == 1 and isinstance(bound[0][0], cst.Name):
        iterated = loop_row_source(a, bound[0][0])
        if iterated is not None:
            return array_roots(a, iterated, loop, out, readers, reader, depth + 1)
    # X, Y = shuffle(X, Y) each epoch: the same rows again, so X is still the
    # array bound before the loop (and is divided there)
    reorders = [o for o, _ in bound if dataflow.is_inside(a, o, loop) and reorders_itself(a, o, expr.value)]
    if reorders and depth == 0 and not rows:
        return False  # the whole array, every step
    bound = [(o, v) for o, v in bound if all(o is not r for r in reorders)]
    inside = [(o, v if v is not None or not isinstance(o, cst.Name) else dataflow.element_value(a, o))
              for o, v in bound if dataflow.is_inside(a, o, loop)]
    if depth == 0 and not rows and not inside and not (len(bound) == 1 and isinstance(bound[0][0], cst.Param)):
        return False  # the whole array, every step: not rows of it (see _whole_feeds)
    if inside:
        if len(inside) != len(bound):
            return False
        return _roots_inside(a, inside, loop, out, readers, reader, depth)
    return _roots_outside(a, expr, bound, loop, out, readers, reader, depth)


def _roots_inside(a: A.Analysis, inside, loop, out: Dict[str, cst.Name], readers: List[cst.CSTNode],
                  reader: cst.CSTNode, depth: int) -> bool:
    """array_roots of a name bound inside the loop (``inside``: its origins and values there):
    the arrays the values cut rows of."""
    helpers = [batch_helper_arrays(a, v if isinstance(v, cst.Call) else dataflow.assigned_by(a, o))
               for o, v in inside]
    if all(h is not None for h in helpers):
        # bx, by = get_next_batch(X, Y, step): rows of X and Y
        return all(array_roots(a, arg, loop, out, readers, reader, depth + 1) for h in helpers for arg in h)
    # xb = tf.convert_to_tensor(xb): still the rows xb holds; so is
    # noisy = xb + 0.3 * np.random.randn(*xb.shape) (a denoising input)
    inside = [(o, _rows_under_noise(a, v, loop) or v) for o, v in inside]
    # (every conversion peeled: xb = xb / 127.5 - 1.0 is still xb's rows)
    inside = [(o, (rows_under(a, v) if v is not None else None) or v) for o, v in inside]
    # yb = one_hot(get_batch(y, step)): a function of this module computing
    # from the rows it is given and nothing else
    inside = [(o, pure_batch_function_argument(a, v) or v) for o, v in inside]
    for _, v in inside:
        helper = batch_helper_arrays(a, v)
        if helper is not None:  # one_hot(get_batch(y, step)): the rows get_batch cuts from y
            if not all(array_roots(a, arg, loop, out, readers, reader, depth + 1) for arg in helper):
                return False
        elif not (v is not None and (isinstance(v, (cst.Subscript, cst.Name)) or rows_reshaped(v))
                  and array_roots(a, v, loop, out, readers, reader, depth + 1)):
            return False
    return True


def _roots_outside(a: A.Analysis, expr: cst.Name, bound, loop, out: Dict[str, cst.Name],
                   readers: List[cst.CSTNode], reader: cst.CSTNode, depth: int) -> bool:
    """array_roots of a name bound outside the loop: the array itself, or, for a parameter of
    a function called per step, the argument of its one call."""
    params = [o for o, _ in bound if isinstance(o, cst.Param)]
    # a parameter of the function holding the step loop is divided at the
    # function's entry (every caller's data alike); one of a function called
    # per step is followed to the arguments of its one call
    at_entry = bool(params) and all(a.enclosing_function(p) is a.enclosing_function(loop) for p in params)
    if len(bound) == 1 and params:
        calls = a.argument_values(params[0])
        if len(calls) == 1:
            call, arg = calls[0]
            found_out, found_readers = dict(out), list(readers)
            if array_roots(a, arg, call, found_out, found_readers, call, depth + 1):
                out.update(found_out)
                readers[:] = found_readers
                return True
        if not at_entry:
            return False
    elif params and not at_entry:
        return False
    out.setdefault(expr.value, expr)
    if all(r is not reader for r in readers):
        readers.append(reader)
    return True


@fact
def loop_row_source(a: A.Analysis, target: cst.Name) -> Optional[cst.BaseExpression]:
    """The array whose rows (or a column of whose rows) the for-loop target
    ``target`` holds at each iteration: ``data`` for ``x`` in ``for x in
    data:``, in ``for x, y in data:`` (a row unpacked into its columns), in
    ``for x, y in zip(data, labels):`` and ``for i, (x, y) in
    enumerate(zip(data, labels)):``; None for a counter, for anything
    iterated that is not a name of the script's (a call, a range) or is
    known to be something else than an array (a dataset, a generator)."""
    path: List[int] = []
    node = target
    while True:
        parent = a.parent(node)
        if isinstance(parent, cst.For) and parent.target is node:
            break
        holder = a.parent(parent) if isinstance(parent, cst.Element) else None
        if not isinstance(holder, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in holder.elements):
            return None
        path.insert(0, list(holder.elements).index(parent))
        node = holder
    loop = a.parent(node)
    shape = node
    # progress bars peeled; enumerate() is not (it changes what the target holds)
    peel = apis.ITERATION_WRAPPERS - {apis.ENUMERATE}
    iterated = step_counts.unwrapped(a, loop.iter, peel)
    while isinstance(iterated, cst.Call) and a.is_name(iterated, {apis.ENUMERATE, "builtins.zip"}):
        args = [arg.value for arg in iterated.args if arg.keyword is None]
        if any(arg.star for arg in iterated.args) or not path or not isinstance(shape, (cst.Tuple, cst.List)):
            return None
        if a.is_name(iterated, {apis.ENUMERATE}):
            if len(args) != 1 or len(shape.elements) != 2 or path[0] == 0:
                return None  # the counter of enumerate()
            iterated = args[0]
        elif len(args) != len(shape.elements):
            return None
        else:
            iterated = args[path[0]]
        shape = shape.elements[path[0]].value
        path = path[1:]
        iterated = step_counts.unwrapped(a, iterated, peel)
    base = iterated
    while isinstance(base, cst.Subscript):
        base = base.value
    if not isinstance(base, cst.Name) or a.kinds(base):
        return None
    return iterated


def _rows_under_noise(a: A.Analysis, expr, loop):
    """``rows + noise``, ``rows - noise`` or ``rows * noise`` (noise drawn
    fresh each step, maybe scaled by a constant: ``0.3 * np.random.randn(...)``,
    a dropout mask): the rows, or None."""
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply))):
        return None

    def noise(e) -> bool:
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Multiply):
            return (is_constant(a, e.left) and noise(e.right)) or (is_constant(a, e.right) and noise(e.left))
        return _is_noise(a, e, loop)

    if noise(expr.right) and not noise(expr.left):
        return expr.left
    if noise(expr.left) and not noise(expr.right) and not isinstance(expr.operator, cst.Subtract):
        return expr.right
    return None


def _is_noise(a: A.Analysis, expr, loop) -> bool:
    """A value drawn fresh each step from one of NumPy's random
    distributions (``mask = np.random.binomial(1, p, batch.shape)``):
    noise, not data to divide. ``choice``/``permutation``/``shuffle`` draw
    from data and are not noise."""
    if isinstance(expr, cst.Name):
        bound = a.assigned_values(expr)
        return bool(bound) and all(v is not None and dataflow.is_inside(a, o, loop) and _is_noise(a, v, loop)
                                   for o, v in bound)
    if isinstance(expr, cst.Call):
        names = a.names(expr)
        if isinstance(expr.func, cst.Name) and not names & {"builtins." + expr.func.value}:
            # a local function returning noise (def sample_z(n): return np.random.uniform(...))
            functions = a.local_functions(expr.func)
            returns = [r for f in functions for r in A.returned_values(f)]
            return bool(returns) and all(isinstance(r, cst.Call) and _is_noise(a, r, loop) for r in returns)
        return samplers.is_noise_draw(a, expr)
    return False


@fact
def fed_array_roots(a: A.Analysis, runs: List[cst.Call], train_ops: Set[str]):
    """The arrays fed row by row to the train op, grouped by the function
    they are bound in (two methods may both call theirs ``X``): a list of
    (name -> a use of it, the nodes that read them); None when a fed value
    is not rows of an array bound before the loop."""
    groups: Dict[int, Tuple[Dict[str, cst.Name], List[cst.CSTNode]]] = {}
    fed = [r for r in runs if feeds(r, train_ops)]
    if not fed:
        return None
    for run in fed:
        loop = dataflow.outermost_loop(a, run)
        if loop is None:
            return None
        values = feed_values(a, run, train_ops)
        if values is None:
            return None
        roots: Dict[str, cst.Name] = {}
        readers: List[cst.CSTNode] = []
        for v in values:
            if is_schedule(a, v) or _is_noise(a, v, loop):
                continue
            if not array_roots(a, v, loop, roots, readers, run):
                return None
        for name, node in roots.items():
            group_roots, group_readers = groups.setdefault(id(a.enclosing_function(node)), ({}, []))
            known = group_roots.setdefault(name, node)
            if known is not node and {id(b.node) for b in a.bindings_of(known)} != {
                    id(b.node) for b in a.bindings_of(node)}:
                return None  # another loop reads another binding of it too (rebound between them): no one point
            group_readers.extend(r for r in readers if all(r is not g for g in group_readers))
    return list(groups.values()) or None


@fact
def samplers_fed(a: A.Analysis, runs: List[cst.Call], train_ops: Set[str]) -> Optional[List[samplers.Sampler]]:
    """The samplers every non-constant fed value comes from, or None."""
    out: List[samplers.Sampler] = []
    for run in [r for r in runs if feeds(r, train_ops)]:
        values = feed_values(a, run, train_ops)
        if values is None:
            return None
        loop = dataflow.outermost_loop(a, run)
        for v in values:
            if is_schedule(a, v) or (loop is not None and _is_noise(a, v, loop)):
                continue
            found = samplers.fed_by_sampler(a, v, loop)
            if not found:
                return None
            out += [s for s in found if all(s.call is not o.call for o in out)]
    return out or None


@fact
def fed_arrays_read(a: A.Analysis, runs: List[cst.Call], train_ops: Set[str]) -> List[cst.Name]:
    out: List[cst.Name] = []
    for run in [r for r in runs if feeds(r, train_ops)]:
        loop = dataflow.outermost_loop(a, run)
        if loop is None:
            continue
        for v in feed_values(a, run, train_ops) or ():
            out += [n for n in samplers.arrays_read(a, v, loop) if all(n is not o for o in out)]
    return out


def fed_from_streams(ctx, fed: List[cst.Call], train_ops: Set[str]) -> bool:
    """Every feeding run is in a loop whose iterable each rank now takes its
    own share of (step_loops.share_stream), and every value it feeds that
    is not a constant comes from that iterable's elements: the data fed is
    divided."""
    a = ctx.a
    streams = ctx.state("tf1_common.streams", list)
    for run in fed:
        loop = next((l for l in streams if dataflow.is_inside(a, run, l)), None)
        values = feed_values(a, run, train_ops)
        if loop is None or values is None:
            return False
        reached = step_counts.stream_reach(a, loop) or set()
        if not all(is_constant(a, v) or step_counts.reads(v, reached) for v in values):
            return False
    return True

"""What a GradientTape loop trains on: the rows it reads, where they are drawn at random, and
the samplers and iterators feeding each step.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from . import gradient_tapes
from .gradient_tapes import tapes
from .syntax import calls_in, method_name
from . import batch_helpers
from . import dataset_iterators
from . import dataset_flow
from . import fed_arrays
from . import sample_arrays
from . import samplers


@fact
def eager_optimizer_sites(a: A.Analysis, expr, traced, depth: int = 0) -> Optional[List[cst.BaseExpression]]:
    """Where the optimizer ``expr`` is, in code that runs eagerly: expr
    itself, or -- expr being a parameter of a traced function -- the
    arguments every call of this module hands to it. None when a call of
    that function is not found here by name (another module's, a
    strategy.run(...)), or the optimizer comes from elsewhere in the graph."""
    if isinstance(expr, cst.Name) and not a.assigned_values(expr):
        return None  # bound nowhere: the script fails as written (a snippet of a larger one)
    if dataflow.runs_eagerly(a, expr, traced):
        return [expr]
    fdef = next((f for f in a.ancestors(expr) if isinstance(f, cst.FunctionDef)), None)
    if depth > 4 or not isinstance(expr, cst.Name) or fdef is None:
        return None
    bound = a.assigned_values(expr)
    if len(bound) != 1 or not isinstance(bound[0][0], cst.Param) or bound[0][0] not in fdef.params.params:
        return None
    calls = a.argument_values(bound[0][0])
    named = sum(1 for n in walk(a.module) if isinstance(n, cst.Name) and n.value == fdef.name.value
                and not (isinstance(a.parent(n), cst.FunctionDef) and a.parent(n).name is n))
    if not calls or named != len(calls):
        return None  # handed on (strategy.run(step, ...)) or called in ways not followed here
    out: List[cst.BaseExpression] = []
    for _, value in calls:
        found = eager_optimizer_sites(a, value, traced, depth + 1)
        if found is None:
            return None
        out.extend(found)
    return out


# ------------------------------------------------------------- data division
def _reachable(a: A.Analysis, node, found, seen=None) -> bool:
    """Does ``found(node)`` hold for node, or for a local function it calls
    (transitively)?"""
    return dataflow.reaches(a, node, found, seen)


@fact
def runs_optimizer_step(a: A.Analysis, node, applies: Set[int]) -> bool:
    """Does running node run an optimizer step (directly or via local functions)?"""
    return _reachable(a, node, lambda n: any(id(c) in applies for c in calls_in(n)))


@fact
def runs_training_tape(a: A.Analysis, node) -> bool:
    """Does running node run the block of a tape whose gradients are applied
    (written in it, or in a local function it calls: ``grads = grad(model,
    x, y)`` with the tape in ``grad``)?"""
    withs = {id(w) for w, *_ in gradient_tapes.training_tapes(a)}
    return _reachable(a, node, lambda n: any(id(m) in withs for m in walk(n)))


@fact
def loop_dataset(a: A.Analysis, it) -> Tuple[Optional[cst.BaseExpression], Optional[cst.Call]]:
    """The dataset a for-loop iterates (made here, or by a helper of another
    module of the project), and a ``.take(n)`` directly on it."""
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate" and it.args:
        it = it.args[0].value
    take = None
    if isinstance(it, cst.Call) and method_name(it) == "take":
        take = it
    is_dataset = a.is_kind(it, A.DATASET) or bool(dataset_flow.dataset_sources(a, it)) \
        or dataset_flow.external_dataset(a, it)
    return (it if is_dataset else None), take


def over_a_display(loop) -> bool:
    """A ``for`` over a tuple or list written out in place: a fixed set of
    things (optimizers, models) handled in turn within one step."""
    return isinstance(loop, cst.For) and isinstance(loop.iter, (cst.Tuple, cst.List)) and bool(loop.iter.elements)


def _settings_written_out(a: A.Analysis, name: cst.Name) -> bool:
    """Every binding of name is a list or tuple of literal numbers or
    strings written out (``SCALES = [1.0, 0.5, 0.25]``): settings a step
    picks by its number, not rows of data to divide."""
    def literal(e) -> bool:
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
            e = e.expression
        return isinstance(e, (cst.Integer, cst.Float, cst.SimpleString))
    bound = a.assigned_values(name)
    return bool(bound) and all(isinstance(v, (cst.List, cst.Tuple)) and v.elements and all(
        not isinstance(el, cst.StarredElement) and literal(el.value) for el in v.elements) for _o, v in bound)


@fact
def rows_read(a: A.Analysis, loop, applies: Set[int]) -> Tuple[Dict[str, cst.Name], List[cst.CSTNode]]:
    """Arrays whose rows the training step reads, followed back through the
    loops around it to where they are bound (``x_train`` in ``xb =
    x_train[i * B:(i + 1) * B]`` when ``xb`` goes into the tape block or into
    a call that trains), and the nodes that read them. No arrays, and the
    names the step reads that tfdist cannot follow back, when it reads rows
    it can follow beside those (slicing only some would break the pairs)."""
    spots: List[cst.CSTNode] = [w.body for w, _, _ in tapes(a) if dataflow.is_inside(a, w, loop)]
    spots += [arg for c in calls_in(loop.body) if runs_optimizer_step(a, c, applies) for arg in c.args]
    outer = dataflow.outermost_loop(a, loop) or loop
    roots: Dict[str, cst.Name] = {}
    readers: List[cst.CSTNode] = []
    candidates: List[cst.Name] = []
    for spot in spots:
        for n in walk(spot):
            if isinstance(n, cst.Subscript):
                base = n.value
                while isinstance(base, cst.Subscript):
                    base = base.value
                if isinstance(base, cst.Name):
                    candidates.append(base)
            elif isinstance(n, cst.Name) and _rows_bound_in_loop(a, n, loop):
                candidates.append(n)
    # names bound in the loop from a computation on rows of an outer array
    # (xb = augment(x[i:i + B])): not followed, but they must be divided too
    # (the data entering the step: not what the step computes from it)
    missed: List[cst.Name] = [n for spot in spots for n in walk(spot) if isinstance(n, cst.Name)
                              and not any(dataflow.is_inside(a, o, sp) for o, _ in a.assigned_values(n) for sp in spots)
                              and not _rows_bound_in_loop(a, n, loop) and _computed_from_rows(a, n, loop, spots)]
    for name in candidates:
        if a.kinds(name) or any(isinstance(o, cst.Param) for o, _ in a.assigned_values(name)):
            continue  # a model, a dataset, ... or an argument of the step function itself
        found: Dict[str, cst.Name] = {}
        read_here: List[cst.CSTNode] = []
        if fed_arrays.array_roots(a, name, outer, found, read_here, loop):
            kept = {k: v for k, v in found.items() if not a.kinds(v) and not _settings_written_out(a, v)}
            for k, v in kept.items():
                roots.setdefault(k, v)
            if found and all(_settings_written_out(a, v) for v in found.values()):
                read_here = []  # only settings written out: nothing read as data here
        elif isinstance(name, cst.Name) and _rows_bound_in_loop(a, name, loop):
            missed.append(name)
        readers += [r for r in read_here if r not in readers]
    # a value computed in the loop from rows of the arrays sliced anyway (a
    # generator's output for a batch of conditions: ``fake =
    # generator.predict([noise, y[i:i + B]])``) is made from each rank's rows
    missed = [n for n in missed if not (set() < _row_arrays(a, n, loop, spots) <= roots.keys())]
    if roots and missed:
        # the step reads rows of arrays tfdist can follow and rows it cannot:
        # slicing only the first would pair samples with other samples' labels
        return {}, list({n.value: n for n in missed}.values())
    return roots, readers


def _computed_from_rows(a: A.Analysis, name: cst.Name, loop, spots) -> bool:
    """``name`` is bound in the loop, before the step (``spots``), to a value
    computed from a slice of an array bound before the loop
    (``augment(x[i:i + B])``), directly or through other such names."""
    return bool(_row_arrays(a, name, loop, spots))


def _row_arrays(a: A.Analysis, name: cst.Name, loop, spots, depth: int = 0) -> Set[str]:
    """The arrays bound before the loop whose rows ``name`` (bound in the
    loop, before the step) is computed from, directly or through other
    names bound there."""
    out: Set[str] = set()
    if depth > 4:
        return out
    for origin, value in a.assigned_values(name):
        if value is None or not dataflow.is_inside(a, origin, loop) \
                or any(dataflow.is_inside(a, origin, spot) for spot in spots):
            continue
        for sub in walk(value):
            if isinstance(sub, cst.Name) and sub is not name:
                out |= _row_arrays(a, sub, loop, spots, depth + 1)
            base = sub.value if isinstance(sub, cst.Subscript) else None
            while isinstance(base, cst.Subscript):
                base = base.value
            if isinstance(base, cst.Name) and not a.kinds(base) and a.assigned_values(base) and not any(
                    dataflow.is_inside(a, o, loop) for o, _ in a.assigned_values(base)):
                out.add(base.value)
    return out


def _rows_bound_in_loop(a: A.Analysis, name: cst.Name, loop, depth: int = 0) -> bool:
    """``name`` is bound in the loop to rows of an array (``xb = x[i:i + B]``),
    directly or through conversions keeping them (``xb =
    tf.convert_to_tensor(xb)``), or as an element of a tuple of such rows."""
    if depth > 4:
        return False
    for origin, value in a.assigned_values(name):
        if not dataflow.is_inside(a, origin, loop):
            continue
        if value is None and isinstance(origin, cst.Name):
            iterated = fed_arrays.loop_row_source(a, origin)
            if iterated is not None and sample_arrays.numpy_array(a, iterated):
                return True  # for x, y in zip(x_train, y_train): rows of arrays (not a dataset's batches)
            value = dataflow.element_value(a, origin)
            if value is None and batch_helpers.batch_helper_arrays(a, dataflow.assigned_by(a, origin)):
                return True  # xb, yb = get_batch(x, y, step)
        if batch_helpers.batch_helper_arrays(a, value):
            return True
        value = batch_helpers.rows_under(a, value)
        if isinstance(value, cst.Subscript):
            return True
        if isinstance(value, cst.Name) and value is not name and _rows_bound_in_loop(a, value, loop, depth + 1):
            return True
    return False


@fact
def step_spots(a: A.Analysis, loop, applies: Set[int]) -> List[cst.CSTNode]:
    """Where the step loop's data enters training: its tape blocks and the arguments of calls that train."""
    spots: List[cst.CSTNode] = [w.body for w, _, _ in tapes(a) if dataflow.is_inside(a, w, loop)]
    spots += [arg for c in calls_in(loop.body) if runs_optimizer_step(a, c, applies) for arg in c.args]
    return spots


def _from_dataset_iterator(a: A.Analysis, call: cst.Call) -> bool:
    """``next(it)`` with ``it = iter(dataset)``: divided by sharding the dataset."""
    if not (a.is_name(call, {"builtins.next"}) and call.args and isinstance(call.args[0].value, cst.Name)):
        return False
    if dataset_iterators.iterator_sources(a, call.args[0].value):  # iter(ds), also one handed in as a parameter
        return True
    return any(value is not None and a.is_kind(value, A.DATASET) for _, value in a.assigned_values(call.args[0].value))


@fact
def samplers_feeding(a: A.Analysis, loop, applies: Set[int]) -> List[samplers.Sampler]:
    """Batches the step loop draws from a sampler (``next_batch``, a function
    of the user's, a generator) and hands to the training step."""
    read = {n.value for spot in step_spots(a, loop, applies) for n in walk(spot) if isinstance(n, cst.Name)}
    out = []
    for stmt in walk(loop.body):
        if not (isinstance(stmt, cst.Assign) and isinstance(stmt.value, cst.Call) and len(stmt.targets) == 1):
            continue
        call = stmt.value
        targets = {n.value for n in walk(stmt.targets[0].target) if isinstance(n, cst.Name)}
        if not targets & read or _from_dataset_iterator(a, call) or runs_optimizer_step(a, call, applies):
            continue
        if dataflow.reaches(a, call, lambda n: any(isinstance(w, cst.With) and any(
                isinstance(i.item, cst.Call) and a.is_name(i.item, {apis.GRADIENT_TAPE}) for i in w.items)
                for w in walk(n))):
            continue
        found = samplers.classify(a, call, dataflow.outermost_loop(a, call) or loop)
        if found is not None:
            out.append(found)
    return out


@fact
def random_index_draws(a: A.Analysis, loop, read: Set[str], functions) -> List[cst.Call]:
    """Draws from a global generator (``functions``: NumPy's, TensorFlow's) in the loop body that pick the
    rows of the step's batch (``idx = np.random.choice(n, bs)``; ``xb =
    x[idx]``), followed back from what the step reads: a script that seeds
    NumPy once would give every rank the same batches. Only draws used as
    an index: another draw (a rate, a choice between steps) must stay the
    same on every rank."""
    body = [s for s in walk(loop.body) if isinstance(s, (cst.Assign, cst.AugAssign, cst.AnnAssign))]
    indexes = [n for e in walk(loop.body) if isinstance(e, cst.SubscriptElement) for n in walk(e)] + [
        n for c in walk(loop.body) if isinstance(c, cst.Call) and a.names(c) & apis.GATHER_FUNCTIONS
        for arg in c.args[1:] for n in walk(arg)]
    index_names = {n.value for n in indexes if isinstance(n, cst.Name)}
    index_calls = {id(n) for n in indexes if isinstance(n, cst.Call)}
    return [c for names, value in _feeding(body, read) for c in walk(value)
            if isinstance(c, cst.Call) and a.names(c) & functions and (id(c) in index_calls or names & index_names)]


def _feeding(body, read: Set[str]) -> List[Tuple[Set[str], cst.BaseExpression]]:
    """(names bound, value) of the assignments of a loop body (``body``, in
    source order) whose values reach the names ``read``, directly or through
    later such assignments -- followed back from the last."""
    needed = set(read)
    out = []
    for stmt in reversed(body):
        target = stmt.targets[0].target if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 else \
            getattr(stmt, "target", None)
        if target is None or stmt.value is None:
            continue
        names = {n.value for n in walk(target) if isinstance(n, cst.Name)}
        if not names & needed:
            continue
        needed |= {n.value for n in walk(stmt.value) if isinstance(n, cst.Name)}
        out.append((names, stmt.value))
    return out


@fact
def rows_drawn_at_random(a: A.Analysis, loop, read: Set[str]) -> bool:
    """Every row the step's data is computed from, of an array bound before
    the loop, is picked by a draw from NumPy's global generator
    (``x[np.random.randint(0, n, B)]``, ``x[idx]`` with ``idx =
    np.random.choice(...)``), whatever the loop computes from those rows
    (``fake = generator.predict(noise)``, ``np.concatenate([real, fake])``):
    rows drawn per rank need no slicing."""
    body = [s for s in walk(loop.body) if isinstance(s, (cst.Assign, cst.AugAssign, cst.AnnAssign))]
    bound_here = {n.value for s in body for t in (s.targets if isinstance(s, cst.Assign) else [s])
                  for n in walk(t.target) if isinstance(n, cst.Name)}

    def draws(node) -> bool:
        return any(isinstance(c, cst.Call) and a.names(c) & apis.NUMPY_GLOBAL_RANDOM for c in walk(node))

    drawn = {n.value for s in body if s.value is not None and draws(s.value)
             for t in (s.targets if isinstance(s, cst.Assign) else [s]) for n in walk(t.target) if isinstance(n, cst.Name)}
    rows = [sub for _names, value in _feeding(body, read) for sub in walk(value) if isinstance(sub, cst.Subscript)
            and isinstance(sub.value, cst.Name) and sub.value.value not in bound_here and not a.kinds(sub.value)]
    return bool(rows) and all(any(draws(e) or any(isinstance(n, cst.Name) and n.value in drawn for n in walk(e))
                                  for e in sub.slice) for sub in rows)


@fact
def reaches(a: A.Analysis, node, loops) -> bool:
    """Is one of loops inside node, or inside a local function node calls?"""
    return _reachable(a, node, lambda n: any(any(anc is n for anc in a.ancestors(l)) for l in loops))

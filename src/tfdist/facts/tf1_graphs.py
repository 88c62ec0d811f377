"""What a TF1 graph holds: its feeds, the sizes of its data, where its samples are sliced.

Pieces shared by the TF1 rules (Session and MonitoredSession)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from .batch_helpers import is_constant
from .syntax import find_arg, method_name, positional, receiver
from .tf1_train_ops import train_op_names, train_runs


def pinned_configs(ctx) -> set:
    """Session configs already given a GPU per process (per conversion)."""
    return ctx.state("tf1_common.pinned")


def feeds(call: cst.Call, train_ops: Set[str]) -> bool:
    """The run call feeds data through feed_dict."""
    if find_arg(call, "feed_dict") is not None:
        return True
    recv = receiver(call)
    op_run = (isinstance(recv, cst.Name) and recv.value in train_ops) or (
        isinstance(recv, cst.Call) and method_name(recv) == "minimize")
    # sess.run(fetches, feed_dict) / train_op.run(feed_dict)
    return len(positional(call)) >= (1 if op_run else 2)


def _feed_dict_node(a: A.Analysis, run: cst.Call, train_ops: Set[str]) -> Optional[cst.BaseExpression]:
    arg = find_arg(run, "feed_dict")
    if arg is None:
        pos = positional(run)
        recv = receiver(run)
        op_run = (isinstance(recv, cst.Name) and recv.value in train_ops) or isinstance(recv, cst.Call)
        index = 0 if op_run else 1
        arg = pos[index] if index < len(pos) else None
    return arg.value if arg is not None else None


@fact
def feed_values(a: A.Analysis, run: cst.Call, train_ops: Set[str]) -> Optional[List[cst.BaseExpression]]:
    """The values of the feed_dict of a run call (a dict literal, maybe through one name)."""
    value = _feed_dict_node(a, run, train_ops)
    if value is None:
        return None
    if isinstance(value, cst.Name):
        bound = a.assigned_values(value)
        value = bound[0][1] if len(bound) == 1 else None
    if not isinstance(value, cst.Dict) or any(not isinstance(e, cst.DictElement) for e in value.elements):
        return None
    return [e.value for e in value.elements]


@fact
def full_size_uses(a: A.Analysis, block_body, first, point, roots: Set[str]) -> List[Tuple[str, int, cst.Name]]:
    """Counts of the rows of the fed arrays (and names computed from such
    counts) bound between the first binding of the arrays and the slicing
    point (so from the full data), read after the slicing point other than
    as a loop's step count: (name, line bound, use). Other values taken from
    the full data -- a vocabulary, a number of classes, a longest sequence --
    are meant to be the same on every rank (they shape the model)."""
    out = []
    body = list(block_body)
    if point is None:
        return out  # sliced at the entry: nothing is computed before
    sizes: Set[str] = set()
    for stmt in body[body.index(first):body.index(point)]:
        value = dataflow.value_of_statement(stmt) if isinstance(stmt, cst.SimpleStatementLine) else None
        if value is None or not (_size_of(a, value, roots) or any(n.value in sizes for n in dataflow.names_in(value))):
            continue
        small = stmt.body[0]
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        for target in targets:
            for name in walk(target):
                if not isinstance(name, cst.Name) or name.value in roots:
                    continue
                sizes.add(name.value)
                for use in a.scopes.references(name):
                    if dataflow.after(a, use, point) and not _in_step_count(a, use):
                        out.append((name.value, a.line(stmt), use))
    return out


def _size_of(a: A.Analysis, expr, roots: Set[str]) -> bool:
    """expr measures one of roots: ``len(x)``, ``x.shape[...]``, ``x.size``."""
    for n in walk(expr):
        if isinstance(n, cst.Call) and a.is_name(n, {"builtins.len"}) and n.args and isinstance(n.args[0].value, cst.Name) \
                and n.args[0].value.value in roots:
            return True
        if isinstance(n, cst.Attribute) and n.attr.value in ("shape", "size") and isinstance(n.value, cst.Name) \
                and n.value.value in roots and not _feature_axes(a, n):
            return True
    return False


def _feature_axes(a: A.Analysis, shape: cst.Attribute) -> bool:
    """``x.shape[1]``, ``x.shape[2:]``: axes after the rows, the same
    whatever rows a rank holds (a number of classes, an image size)."""
    sub = a.parent(shape)
    if shape.attr.value != "shape" or not isinstance(sub, cst.Subscript) or sub.value is not shape \
            or len(sub.slice) != 1:
        return False
    index = sub.slice[0].slice
    if isinstance(index, cst.Index):
        return isinstance(index.value, cst.Integer) and int(index.value.value, 0) >= 1
    return isinstance(index, cst.Slice) and isinstance(index.lower, cst.Integer) and int(index.lower.value, 0) >= 1


@fact
def per_rank_sizes_in_graph(a: A.Analysis, block_body, point, roots: Set[str]) -> List[Tuple[str, int, cst.Name]]:
    """Names bound after the slicing point to a size of the sliced arrays and
    read in a statement that builds a TensorFlow expression (a loss
    normaliser, say) rather than counting steps: per-rank now, which may not
    be what the user meant."""
    out = []
    body = list(block_body)
    for stmt in body[body.index(point) + 1 if point is not None else 0:]:
        value = dataflow.value_of_statement(stmt) if isinstance(stmt, cst.SimpleStatementLine) else None
        if value is None or not _size_of(a, value, roots):
            continue
        if isinstance(value, cst.Call) and a.is_name(value, apis.TF_SHAPE_ARGUMENTS):
            continue  # tf_x = tf.placeholder(tf.float32, x.shape): a tensor shaped like the rank's data, not a count
        small = stmt.body[0]
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        for target in targets:
            if not isinstance(target, cst.Name):
                continue
            for use in a.scopes.references(target):
                use_stmt = a.statement_of(use)
                if use_stmt is None or _in_step_count(a, use) or _in_shape(a, use):
                    continue
                if any(isinstance(c, cst.Call) and any(q.startswith("tensorflow.") for q in a.names(c))
                       for c in walk(use_stmt)):
                    out.append((target.value, a.line(stmt), use))
                    break
    return out


def _in_shape(a: A.Analysis, node) -> bool:
    """node is (part of) the shape a TensorFlow function or an RNN cell's
    zero_state() is given: the batch a tensor holds, per rank like the
    batch fed (apis.TF_SHAPE_ARGUMENTS, apis.TF_SHAPE_METHODS)."""
    for anc in a.ancestors(node):
        if isinstance(anc, cst.Arg):
            call = a.parent(anc)
            if not isinstance(call, cst.Call):
                return False
            name = a.is_name(call, apis.TF_SHAPE_ARGUMENTS)
            spec = apis.TF_SHAPE_ARGUMENTS[name] if name is not None else apis.TF_SHAPE_METHODS.get(method_name(call))
            return spec is not None and find_arg(call, spec[0], spec[1]) is anc
        if isinstance(anc, cst.BaseStatement):
            return False
    return False


def _in_step_count(a: A.Analysis, node) -> bool:
    """node is part of a loop's step count (range(...) arguments, a while test, a break test)."""
    for anc in a.ancestors(node):
        if isinstance(anc, cst.Call) and a.is_name(anc, apis.RANGE_FUNCTIONS):
            return True
        if isinstance(anc, cst.While) or isinstance(anc, cst.If):
            return node is not None and any(x is anc.test for x in [node, *a.ancestors(node)])
        if isinstance(anc, cst.BaseStatement):
            return False
    return False


@dataclass
class SlicePoint:
    roots: Dict[str, cst.Name]
    bindings: Dict[str, List[cst.BaseStatement]]  # the statements binding each (not its parameter)
    every: List[cst.BaseStatement]
    body: List[cst.BaseStatement]  # the block they are bound in
    first: cst.BaseStatement  # the first binding (or the function's first statement)
    point: Optional[cst.BaseStatement]  # the last binding; None: at the function's entry
    entry: Optional[cst.BaseStatement]  # the function's first statement, for parameters
    function: Optional[cst.FunctionDef]

    @property
    def where(self):
        return self.point if self.point is not None else self.function.params


@fact
def lifted_to_common_block(a: A.Analysis, stmts: List[cst.BaseStatement], entry_block) -> List[cst.BaseStatement]:
    """Each statement replaced by the statement holding it in the innermost
    block holding them all (and ``entry_block``, a function's body when its
    parameters are among the bindings); unchanged when there is no such
    block within the same function."""
    def chain(stmt):  # (block, the statement in it) from the statement's own block outwards
        out = []
        while stmt is not None:
            block = a.parent(stmt)
            out.append((block, stmt))
            holder = next((x for x in a.ancestors(block) if isinstance(x, cst.BaseStatement)), None)
            if holder is None or isinstance(holder, (cst.FunctionDef, cst.ClassDef)):
                break
            stmt = holder
        return out
    if not stmts:
        return stmts
    chains = [chain(s) for s in stmts]
    common = [b for b, _ in chains[0] if all(any(b is c for c, _ in ch) for ch in chains[1:])]
    if entry_block is not None:
        common = [b for b in common if b is entry_block]
    if not common:
        return stmts
    block = common[0]
    lifted: List[cst.BaseStatement] = []
    for ch in chains:
        holder = next(s for b, s in ch if b is block)
        if all(holder is not x for x in lifted):
            lifted.append(holder)
    return lifted


@fact
def changed_in_place(a: A.Analysis, node: cst.Name, stmts: List[cst.BaseStatement]) -> Optional[List[cst.BaseStatement]]:
    """The statements, in the block binding the array, that change it in
    place after it is bound (``dataX.append(x)`` in the loop filling it,
    ``rows[i] = r``): the loop or statement holding each change. None when a
    change is elsewhere (another function, another block)."""
    block = a.parent(stmts[0]) if stmts else None
    targets = [t for s in stmts for t in walk(s) if isinstance(t, cst.Name) and t.value == node.value
               and isinstance(a.parent(t), (cst.AssignTarget, cst.Element, cst.AnnAssign))]
    out: List[cst.BaseStatement] = []
    for use in [u for t in targets for u in a.scopes.references(t)]:
        par = a.parent(use)
        mutated = (isinstance(par, cst.Attribute) and par.value is use and par.attr.value in apis.CONTAINER_MUTATORS
                   and isinstance(a.parent(par), cst.Call) and a.parent(par).func is par) \
            or (isinstance(par, cst.Subscript) and par.value is use and isinstance(a.parent(par), cst.AssignTarget))
        if not mutated:
            continue
        stmt = a.statement_of(use)
        while stmt is not None and a.parent(stmt) is not block:
            stmt = a.statement_of(a.parent(stmt)) if a.parent(stmt) is not None else None
        if stmt is None:
            return None
        if stmt not in out:
            out.append(stmt)
    return out


def is_docstring(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) \
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


@fact
def bound_names(a: A.Analysis, call: cst.Call) -> Set[str]:
    """The names ``call``'s result is bound to (``op1`` in ``op1 = opt.minimize(loss1)``)."""
    for anc in a.ancestors(call):
        if isinstance(anc, cst.Assign):
            return {n.value for t in anc.targets for n in walk(t.target) if isinstance(n, cst.Name)}
        if isinstance(anc, cst.BaseStatement):
            break
    return set()


@fact
def argument_values(a: A.Analysis, expr) -> List[cst.BaseExpression]:
    """expr, or what the calls pass for it when it is a parameter
    (``minimize(loss_value)`` in ``def train_step(loss_value)``)."""
    if isinstance(expr, cst.Name):
        params = [origin for origin, _ in a.assigned_values(expr) if isinstance(origin, cst.Param)]
        if params:
            return [v for p in params for v in a.parameter_values(p)] or [expr]
    return [expr]


def shuffle_off(call: cst.Call) -> bool:
    arg = find_arg(call, "shuffle")
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False"


@fact
def returned_by_callers(a: A.Analysis, queues: List[cst.Call], batches: Set[str]) -> Set[str]:
    """Names bound from calls of the functions that build the queues and
    return their batches (``X, Y = read_images(path)``), through up to three
    levels of such functions."""
    out: Set[str] = set()
    functions = {a.enclosing_function(q) for q in queues} - {None}
    for _ in range(3):
        returning = [f for f in functions if any(
            isinstance(r, cst.Return) and r.value is not None and dataflow.depends_on(a, r.value, batches | out)
            for r in walk(f.body))]
        calls = [c for c in a.calls if isinstance(c.func, cst.Name) and any(c.func.value == f.name.value for f in returning)]
        grown = {n for c in calls for n in bound_names(a, c)} - out - batches
        if not grown:
            break
        out |= grown
        functions = {a.enclosing_function(c) for c in calls} - {None}
    return out


@fact
def whole_feeds(a: A.Analysis, fed: List[cst.Call], train_ops: Set[str]) -> List[cst.BaseExpression]:
    """Fed values that are a whole array (or literal list) bound outside the step loop."""
    out = []
    for run in fed:
        loop = dataflow.outermost_loop(a, run)
        for v in feed_values(a, run, train_ops) or ():
            if isinstance(v, (cst.List, cst.Tuple)) and not is_constant(a, v):
                out.append(v)
            elif isinstance(v, cst.Name) and not is_constant(a, v) and loop is not None:
                bound = a.assigned_values(v)
                if bound and not any(dataflow.is_inside(a, o, loop) or isinstance(o, cst.Param) for o, _ in bound):
                    out.append(v)
    return out


def full_batch_feeds(ctx) -> Optional[Tuple[Dict[str, cst.Name], List[cst.CSTNode]]]:
    """(arrays, the runs feeding them) when every non-constant value fed to
    the train op is a whole array bound before the step loop, the same at
    every step -- full-batch training; None otherwise. Computed once per file."""
    cache = ctx.state("tf1_common.full_batch", dict)
    if "value" in cache:
        return cache["value"]
    a = ctx.a
    cache["value"] = None
    train_ops = train_op_names(a)
    runs = train_runs(a, a.module, train_ops)
    fed = [r for r in runs if feeds(r, train_ops)]
    roots: Dict[str, cst.Name] = {}
    if not fed:
        found = _in_graph_data(a) if runs else None
        if found:
            cache["value"] = found
        return cache["value"]
    for run in fed:
        loop = dataflow.outermost_loop(a, run)
        values = feed_values(a, run, train_ops)
        if loop is None or values is None:
            return None
        for v in values:
            if is_constant(a, v):
                continue
            if not isinstance(v, cst.Name):
                return None
            bound = a.assigned_values(v)
            if not bound or any(dataflow.is_inside(a, o, loop) or isinstance(o, cst.Param) for o, _ in bound):
                return None
            roots.setdefault(v.value, v)
    if roots:
        cache["value"] = (roots, fed)
    return cache["value"]


_SAMPLE_ARRAYS = {"numpy.array", "numpy.asarray", "numpy.loadtxt", "numpy.genfromtxt"}


def _literal_length(a: A.Analysis, value) -> Optional[int]:
    """Rows of a data literal: a list/tuple of numbers or of such lists, or a
    list comprehension (-1: known at run time), directly or through
    np.array(...); None for anything else."""
    if isinstance(value, cst.Call) and a.is_name(value, _SAMPLE_ARRAYS) and value.args:
        if a.is_name(value, {"numpy.loadtxt", "numpy.genfromtxt"}):
            return -1  # rows known only at run time
        value = value.args[0].value
    if isinstance(value, cst.ListComp):
        return -1  # x_data = [v[0] for v in points]: one row per element, known at run time
    if not isinstance(value, (cst.List, cst.Tuple)) or len(value.elements) < 2:
        return None
    for e in value.elements:
        v = e.value
        if isinstance(v, cst.UnaryOperation):
            v = v.expression
        if isinstance(v, (cst.List, cst.Tuple)):
            if not all(isinstance(x.value, (cst.Integer, cst.Float, cst.UnaryOperation)) for x in v.elements):
                return None
        elif not isinstance(v, (cst.Integer, cst.Float)):
            return None
    return len(value.elements)


def _in_graph_data(a: A.Analysis) -> Optional[Tuple[Dict[str, cst.Name], List[cst.CSTNode]]]:
    """Samples written into the graph itself (``X = [1, 2, 3]``, ``hypothesis
    = X * W``): full-batch training with no feed. Only literal sample arrays
    used as direct operands of the expressions the loss is built from count
    (never a shape, never through a subscript), all of one length."""
    losses = [c for c in optimizer_loss_calls(a)]
    if not losses:
        return None
    roots: Dict[str, cst.Name] = {}
    lengths = set()
    for assign in a.assigns:
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            continue
        length = _literal_length(a, assign.value)
        if length is None:
            continue
        target = assign.targets[0].target
        uses = a.scopes.references(target)
        operand_uses = [u for u in uses if isinstance(a.parent(u), cst.BinaryOperation)]
        if not operand_uses:
            continue
        if not any(dataflow.depends_on(a, loss.args[0].value, {target.value}) for loss in losses if loss.args):
            continue
        if any(isinstance(a.parent(u), cst.Subscript) or isinstance(a.parent(u), cst.Element) for u in uses):
            return None  # also used as a shape or indexed: not plainly samples
        roots.setdefault(target.value, target)
        lengths.add(length)
    if not roots or len(lengths - {-1}) > 1:
        return None
    return roots, losses


@fact
def optimizer_loss_calls(a: A.Analysis) -> List[cst.Call]:
    """``opt.minimize(loss)`` / ``opt.compute_gradients(loss)`` on TF1 optimizers."""
    return [c for c in a.calls if method_name(c) in ("minimize", "compute_gradients")
            and a.is_kind(receiver(c), A.TF1_OPTIMIZER)]

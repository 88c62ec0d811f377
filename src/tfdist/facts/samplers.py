"""Which draws are random: samplers, generators and NumPy draws, what they feed and how they are
seeded.

Samplers: objects that hand out a new batch on each call (TF1 tutorial
data sets' ``mnist.train.next_batch(n)``, a user class with a
``next_batch`` drawing from NumPy's global generator).

Their arrays are hidden inside the object, so they cannot be sliced by
rank; instead each rank draws a *different* stream (NumPy's generator
re-seeded by rank right before the training loop, from a value drawn from
the user's own stream, so a seeded script stays reproducible) and runs
1/size of the steps (the step-loop rule). A sampler that walks its data in
a fixed order would hand every rank the same batches: that is reported,
never re-seeded.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional
import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.scopes import walk
from .external_functions import external_function_of, external_methods_of
from .syntax import method_name, receiver
from . import external_functions


GLOBAL_STREAM = "global"  # draws from NumPy's global generator
FIXED_ORDER = "fixed"  # no randomness seen: every rank would read the same batches
UNKNOWN = "unknown"
#: methods of a NumPy array returning (a view or copy of) the same rows
NUMPY_ARRAY_METHODS = {"astype", "reshape", "copy", "squeeze", "flatten", "ravel"}


@dataclass
class Sampler:
    call: cst.Call  # the next_batch(...) call
    stream: str


def _draws_from_global_numpy(a: A.Analysis, fdef: cst.FunctionDef, call: Optional[cst.Call] = None) -> Optional[bool]:
    """True: the method draws from NumPy's global generator; False: no
    random draw at all; None: it draws from something else (its own
    RandomState, Python's random...), or only under a flag of its own that
    the call does not decide (``if shuffle: rows = np.random.randint(...)``
    draws nothing for ``generator(data, shuffle=False)``)."""
    other = False
    for n in walk(fdef.body):
        if isinstance(n, cst.Call):
            names = a.names(n)
            random = bool(names & apis.NUMPY_GLOBAL_RANDOM)
            if not random and (any(x.startswith(("numpy.random.", "random.")) for x in names) or (
                    isinstance(n.func, cst.Attribute) and n.func.attr.value in ("shuffle", "permutation", "choice", "randint")
                    and not names)):
                other = True
            if not random:
                continue
            taken = branch_taken(a, fdef, call, n)
            if taken is None:
                other = True
            elif taken:
                return True
    return None if other else False


@fact
def branch_taken(a: A.Analysis, fdef: cst.FunctionDef, call: Optional[cst.Call], node) -> Optional[bool]:
    """Whether node runs when call runs fdef, as far as the if-statements
    around it test the function's own parameters (``if shuffle:``, ``if not
    shuffle:``): False when the call's literal arguments (or the defaults)
    skip it, None when a parameter's value is not a literal; tests on
    anything else are taken to run (the draw may run)."""
    child = node
    for parent in a.ancestors(node):
        if parent is fdef:
            return True
        if isinstance(parent, cst.If) and child is not parent.test:
            truth = _test_truth(a, fdef, call, parent.test)
            if truth is _NOT_A_PARAMETER:
                pass
            elif truth is None or truth != (child is parent.body):
                return None if truth is None else False
        child = parent
    return True


_NOT_A_PARAMETER = object()


def _test_truth(a: A.Analysis, fdef: cst.FunctionDef, call: Optional[cst.Call], test):
    """The truth of an if-test naming one of fdef's parameters (``flag``,
    ``not flag``, ``flag == True``, ``flag is None``) at call; None: not a literal there; _NOT_A_PARAMETER:
    the test reads something else."""
    negate = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        negate, test = not negate, test.expression
    compared = None  # ``flag == True``, ``flag is not None``: the literal name it is compared with
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
        if isinstance(operator, (cst.Equal, cst.Is, cst.NotEqual, cst.IsNot)) \
                and isinstance(right, cst.Name) and right.value in ("True", "False", "None"):
            compared = right.value
            negate ^= isinstance(operator, (cst.NotEqual, cst.IsNot))
            test = test.left
    params = list(fdef.params.params) + list(fdef.params.kwonly_params)
    if not isinstance(test, cst.Name) or not any(p.name.value == test.value for p in params):
        return _NOT_A_PARAMETER
    param = next(p for p in params if p.name.value == test.value)
    if call is None:
        return None
    value = external_functions.argument_at(a, fdef, call, param)
    if compared is not None:
        if not (isinstance(value, cst.Name) and value.value in ("True", "False", "None")):
            return None  # ``1 == True`` but not ``1 is True``: not decided here
        return (value.value == compared) != negate
    truth = _literal_truth(value)
    return None if truth is None else truth != negate


def _literal_truth(value) -> Optional[bool]:
    if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
        return value.value == "True"
    if isinstance(value, (cst.Integer, cst.Float)):
        return float(value.value) != 0
    if isinstance(value, cst.SimpleString):
        return len(value.evaluated_value) > 0
    return None


def stateful(fdef: cst.FunctionDef) -> bool:
    """The function keeps state across calls: it declares a global or
    nonlocal, assigns an attribute or an item, or advances an iterator."""
    for n in walk(fdef.body):
        if isinstance(n, (cst.Global, cst.Nonlocal)):
            return True
        if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            if any(isinstance(t, (cst.Attribute, cst.Subscript)) and not _local_item(t, fdef) for t in targets):
                return True
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "next":
            return True
    return False


def _local_item(target, fdef: cst.FunctionDef) -> bool:
    """``xs[i] = ...`` on an array the function made itself (not state)."""
    base = target.value
    while isinstance(base, (cst.Subscript, cst.Attribute)):
        base = base.value
    return isinstance(target, cst.Subscript) and isinstance(base, cst.Name) and base.value != "self" and any(
        isinstance(s, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == base.value
                                          for t in s.targets)
        for s in walk(fdef.body))


def _varies_per_step(a: A.Analysis, call: cst.Call, loop) -> bool:
    """An argument of the call -- or the object a method is called on
    (``X[j * b:(j + 1) * b].toarray()``) -- reads a name bound inside the
    loop (its counter, a batch index...)."""
    if loop is None:
        return True
    read = [arg.value for arg in call.args]
    if isinstance(call.func, cst.Attribute):
        read.append(call.func.value)
    for value in read:
        for n in walk(value):
            if isinstance(n, cst.Name) and any(dataflow.is_inside(a, o, loop) or o is loop
                                               for o, _ in a.assigned_values(n)):
                return True
    return False


def _stream_of(a: A.Analysis, functions: List[cst.FunctionDef], call: cst.Call, loop) -> Optional[str]:
    kinds = {_draws_from_global_numpy(a, f, call) for f in functions}
    if kinds == {True}:
        return GLOBAL_STREAM
    if any(stateful(f) for f in functions) or None in kinds:
        return FIXED_ORDER if kinds == {False} else UNKNOWN
    # A pure function of its arguments: the same batch for the same
    # arguments; drawing it size times per step would give every rank the
    # same batch. Only a call whose arguments never change is a stream --
    # unless nothing it reads changes either: then it returns the same value
    # at every step (``compute_loss(outputs, model(inputs))`` on the whole
    # data set), no batch of a stream.
    if _varies_per_step(a, call, loop) or all(_same_every_step(a, f, loop) for f in functions):
        return None
    return FIXED_ORDER


def _same_every_step(a: A.Analysis, fdef: cst.FunctionDef, loop) -> bool:
    """fdef, given the same arguments, returns the same value at every step
    of loop: it calls only TensorFlow, Keras, NumPy, math and builtins
    functions, none of them a random draw, and reads no name the loop binds."""
    for n in walk(fdef.body):
        if isinstance(n, cst.Call):
            names = a.names(n)
            if not names or not all(x.startswith(apis.LIBRARY_ROOTS) for x in names) \
                    or any(x.startswith(apis.RANDOM_MODULE_PREFIXES) for x in names):
                return False
        elif isinstance(n, cst.Name) and loop is not None and any(
                o is loop or dataflow.is_inside(a, o, loop) for o, _ in a.assigned_values(n)):
            return False
    return True


@fact
def classify(a: A.Analysis, call: cst.Call, loop=None) -> Optional[Sampler]:
    """A call handing out a batch per step (``next_batch``, a function of
    the user's, ``next(generator)``) and where its randomness comes from,
    or None if it is no sampler (or one tfdist cannot split safely)."""
    names = a.names(call)
    if any(n.startswith(("tensorflow.", "keras.", "numpy.")) for n in names):
        return None
    base = call
    while isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) and isinstance(base.func.value, cst.Call) \
            and base.func.attr.value in NUMPY_ARRAY_METHODS:
        base = base.func.value  # np.random.normal(...).astype("float32"): the NumPy call's array
    if base is not call and any(n.startswith("numpy.") for n in a.names(base)):
        return None
    if "builtins.next" in names:
        return Sampler(call, UNKNOWN)
    recv = receiver(call)
    # mnist.train.next_batch(n): mnist from read_data_sets()
    if isinstance(recv, cst.Attribute) and recv.attr.value in apis.TF1_TUTORIAL_SPLITS \
            and a.is_kind(recv.value, A.TUTORIAL_DATASETS) and method_name(call) in apis.SAMPLER_METHODS:
        return Sampler(call, GLOBAL_STREAM)
    if isinstance(call.func, cst.Name):
        functions = a.local_functions(call.func)
        if not functions:
            if any(n.startswith("builtins.") for n in names):
                return None
            return None if _varies_per_step(a, call, loop) else Sampler(call, UNKNOWN)
        stream = _stream_of(a, functions, call, loop)
        return Sampler(call, stream) if stream is not None else None
    if not isinstance(call.func, cst.Attribute):
        return None
    methods = a.methods_called(call)
    if methods:
        stream = _stream_of(a, methods, call, loop)
        return Sampler(call, stream) if stream is not None else None
    if a.kinds(recv):
        return None  # a model, a dataset, a session...: not a sampler
    # A method of an object tfdist cannot see into (its class lives in a
    # library or another module): a stream only if nothing it is given
    # changes from step to step.
    return None if _varies_per_step(a, call, loop) else Sampler(call, UNKNOWN)


@fact
def in_loop(a: A.Analysis, loop) -> List[Sampler]:
    out = []
    for n in walk(loop.body):
        if isinstance(n, cst.Call):
            s = classify(a, n, loop)
            if s is not None:
                out.append(s)
    return out


@fact
def generator_call(a: A.Analysis, expr) -> Optional[cst.Call]:
    """The call of a generator function of this module (every definition
    the name reaches yields), or of a generator method of one of its classes
    on an instance (``batches.generate()``), that expr is, directly or
    through a name bound once -- or through a parameter every call of its
    function binds to such a call (the first of them); None otherwise."""
    calls = generator_calls(a, expr)
    return calls[0] if calls else None


@fact
def generator_calls(a: A.Analysis, expr, depth: int = 0) -> Optional[List[cst.Call]]:
    """Every generator call expr can be (see :func:`generator_call`), or
    None when any of its values is something else or unknown."""
    if depth > 6:
        return None
    if isinstance(expr, cst.Name):
        bound = a.assigned_values(expr)
        if len(bound) != 1:
            return None
        origin, value = bound[0]
        if isinstance(origin, cst.Param):
            # train(train_gen, ...) called with generator(...) calls
            values = a.parameter_values(origin)
            if not values:
                return None
            out: List[cst.Call] = []
            for v in values:
                calls = generator_calls(a, v, depth + 1)
                if calls is None:
                    return None
                out += [c for c in calls if c not in out]
            return out
        if not isinstance(value, cst.Call):
            return None
        expr = value
    if not isinstance(expr, cst.Call):
        return None
    defs = generator_defs(a, expr)
    if not defs or not all(any(isinstance(n, cst.Yield) for n in walk(f.body)) for _, f in defs):
        return None
    return [expr]


@fact
def generator_home(a: A.Analysis, expr) -> str:
    """Where the generator expr is made by is defined: "this file" or
    "module <name>"."""
    for call in generator_calls(a, expr) or []:
        if not generator_functions(a, call):
            for owner, _fdef in generator_defs(a, call):
                return f"module {owner.project.module_name}" if owner.project.module_name else "another module"
    return "this file"


@fact
def generator_defs(a: A.Analysis, call: cst.Call) -> list:
    """(analysis, FunctionDef) of each function a call runs: this module's
    (:func:`generator_functions`), or a function of another module of the
    project (``from utils import DataGenerator``), with that module's
    analysis to read it."""
    local = generator_functions(a, call)
    if local:
        return [(a, f) for f in local]
    found = external_function_of(a, call)
    return [found] if found is not None else external_methods_of(a, call)


@fact
def generator_functions(a: A.Analysis, call: cst.Call) -> List[cst.FunctionDef]:
    """The functions of this module a call runs: by name, or the methods of
    its classes an instance's ``obj.method(...)`` runs."""
    if isinstance(call.func, cst.Name):
        return list(a.local_functions(call.func))
    return a.methods_called(call)


@fact
def random_generator(a: A.Analysis, expr) -> Optional[cst.Call]:
    """The call making a generator that draws its batches from NumPy's
    global generator (``gen = batch_generator(64)``, ``def
    batch_generator(...): while True: idx = np.random.randint(...); yield
    ...``), or None."""
    calls = generator_calls(a, expr)
    if not calls:
        return None
    return calls[0] if all(_draws_from_global_numpy(owner, f, call) is True
                           for call in calls for owner, f in generator_defs(a, call)) else None


@fact
def fed_by_sampler(a: A.Analysis, value, loop, depth: int = 0) -> Optional[List[Sampler]]:
    """The samplers a fed value comes from: ``batch_x`` with ``batch_x,
    batch_y = mnist.train.next_batch(n)`` (or ``batch[0]`` with ``batch =
    ...``) bound in the loop, or computed there from such batches
    (``batch_x + 0.3 * np.random.randn(...)``). None if the value is not
    (only) from samplers."""
    while isinstance(value, cst.Subscript):
        value = value.value
    if depth > 6:
        return None
    if not isinstance(value, cst.Name):
        # fed as computed: {x: batch + 0.1 * np.random.randn(...)}
        return _computed_from_samplers(a, value, loop, depth) if loop is not None else None
    bound = a.assigned_values(value)
    if not bound:
        return None
    if len(bound) == 1 and isinstance(bound[0][0], cst.Param):
        # fed from a parameter (a method running the train op): follow it
        # to its one call site, in the caller's step loop
        calls = a.argument_values(bound[0][0])
        if len(calls) != 1:
            return None
        call, arg = calls[0]
        return fed_by_sampler(a, arg, dataflow.outermost_loop(a, call))
    if loop is None:
        return None
    # ``x = x.reshape(...)`` after the draw: the same batch, reshaped; and
    # only the bindings in this loop reach its feed (another training loop
    # may draw into the same name)
    bound = _through_reshapes(a, value.value, bound)
    bound = [(o, v) for o, v in bound if dataflow.is_inside(a, o, loop)]
    if not bound:
        return None
    out = []
    for origin, v in bound:
        node = origin
        # tuple targets: find the assignment's value
        if v is None:
            v = dataflow.assigned_by(a, origin)
        if v is None or not dataflow.is_inside(a, node, loop):
            return None
        s = classify(a, v, loop) if isinstance(v, cst.Call) else None
        if s is None and isinstance(v, cst.Call) and a.names(v) & apis.NUMPY_GLOBAL_RANDOM:
            # rand_index = np.random.choice(len(x), size=b): rows drawn from
            # NumPy's global generator, a stream of its own on each rank
            s = Sampler(v, GLOBAL_STREAM)
        if s is not None:
            out.append(s)
            continue
        derived = _computed_from_samplers(a, v, loop, depth)
        if derived is None:
            return None
        out += [d for d in derived if all(d.call is not o.call for o in out)]
    return out


def _computed_from_samplers(a: A.Analysis, value, loop, depth: int) -> Optional[List[Sampler]]:
    """The samplers of a value the step loop computes from drawn batches
    only (``np.array([img - mean for img in batch])``, ``batch + noise``):
    every name it reads that the loop binds is itself drawn (or fresh
    NumPy noise); names bound before the loop are the same at every step.
    None when something else the loop binds (a step counter, an offset)
    reaches it: the batch then depends on the step, not on a draw."""
    if isinstance(value, cst.Call) and is_noise_draw(a, value):
        return []
    local = {t.value for comp in walk(value) if isinstance(comp, cst.CompFor)
             for t in walk(comp.target) if isinstance(t, cst.Name)}
    found: List[Sampler] = []

    def bound_here(name: cst.Name) -> bool:
        return name.value in local or any(dataflow.is_inside(a, o, loop) for o, _ in a.assigned_values(name))

    for call in walk(value):
        if not isinstance(call, cst.Call):
            continue
        # a call reading only what is bound before the loop may itself draw
        # (preprocess(mnist.train.next_batch(n))); one reading the drawn
        # batch must transform its rows (img.reshape(...), np.array(...),
        # one_hot(batch_y) of this module): not a method of an object tfdist
        # cannot see (lr_control.get_value(iteration=count)), which makes
        # anything of what it is given
        if not any(bound_here(n) for n in dataflow.names_in(call)):
            if call is not value:
                s = classify(a, call, loop)
                if s is not None:
                    found.append(s)
        elif not _transforms_rows(a, call):
            return None
    for name in dataflow.names_in(value):
        if name.value in local:
            continue
        bound = a.assigned_values(name)
        if not any(dataflow.is_inside(a, o, loop) for o, _ in bound):
            continue  # bound before the loop: the same at every step
        if all(v is not None and isinstance(v, cst.Call) and is_noise_draw(a, v) for _, v in bound):
            continue
        inner = fed_by_sampler(a, name, loop, depth + 1)
        if inner is None:
            return None
        found += [s for s in inner if all(s.call is not o.call for o in found)]
    return found or None


@fact
def arrays_read(a: A.Analysis, value, loop, depth: int = 0, seen=None) -> List[cst.Name]:
    """The names bound before the loop that a fed value's computation in the
    loop reads (``x_vals`` in ``np.transpose([x_vals[rand_index]])``): the
    arrays the drawn rows come from, whose own random split must be the
    same on every rank."""
    seen = seen if seen is not None else set()
    out: List[cst.Name] = []
    if depth > 6 or id(value) in seen:
        return out
    seen.add(id(value))
    for name in dataflow.names_in(value):
        bound = a.assigned_values(name)
        inside = [v for o, v in bound if dataflow.is_inside(a, o, loop)]
        if not inside:
            if bound:
                out.append(name)
            continue
        for v in inside:
            if v is not None:
                out += arrays_read(a, v, loop, depth + 1, seen)
    return out


def _transforms_rows(a: A.Analysis, call: cst.Call) -> bool:
    """A call that makes arrays of the arrays it is given, row for row:
    NumPy's functions, an array's own methods, a function of this module."""
    names = a.names(call)
    if any(n.startswith("numpy.") for n in names):
        return True
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in NUMPY_ARRAY_METHODS:
        return True
    return isinstance(call.func, cst.Name) and bool(a.local_functions(call.func))


@fact
def is_noise_draw(a: A.Analysis, call: cst.Call) -> bool:
    """A fresh draw from one of NumPy's random distributions
    (``np.random.randn(n, 784)``): noise, not data to divide."""
    names = a.names(call)
    return any(n.startswith("numpy.random.") for n in names) and not names & apis.NUMPY_DATA_DRAWS


def keep_comments(old: cst.SimpleStatementLine, loop: cst.For) -> cst.For:
    """The replaced statement's comments: those above it stay above; its
    trailing comment goes with the call, on the line that now draws."""
    body = list(loop.body.body)
    body[0] = body[0].with_changes(trailing_whitespace=old.trailing_whitespace)
    return loop.with_changes(leading_lines=[*old.leading_lines, *loop.leading_lines],
                             body=loop.body.with_changes(body=body))


def _through_reshapes(a: A.Analysis, name: str, bound, depth: int = 0):
    """The bindings of a batch, a reshaped batch (``x = np.reshape(x, ...)``)
    followed back to the batch it reshapes (the binding reaching its use)."""
    out = []
    for o, v in bound:
        if not _reshapes_itself(a, name, v):
            out.append((o, v))
        elif depth < 8:
            for inner in dataflow.names_in(v):
                if inner.value == name:
                    out += [b for b in _through_reshapes(a, name, a.assigned_values(inner), depth + 1) if b not in out]
    return out


def _reshapes_itself(a: A.Analysis, name: str, value) -> bool:
    """The batch itself, reshaped: ``x.reshape(...)``, ``x.astype(...)``
    (method chains on the name) or ``np.reshape(x, ...)`` (a NumPy
    function of it, given first)."""
    if isinstance(value, cst.Call) and value.args and not value.args[0].keyword \
            and any(n.startswith("numpy.") for n in a.names(value)):
        value = value.args[0].value
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        value = value.func.value
    if isinstance(value, cst.BinaryOperation):  # x * 2. - 1.: rescaled, still the same rows
        operands = [value]
        names = set()
        while operands:
            node = operands.pop()
            if isinstance(node, cst.BinaryOperation):
                operands += [node.left, node.right]
            elif isinstance(node, cst.Name):
                names.add(node.value)
            elif not isinstance(node, (cst.Integer, cst.Float, cst.UnaryOperation)):
                return False
        return names == {name}
    return isinstance(value, cst.Name) and value.value == name

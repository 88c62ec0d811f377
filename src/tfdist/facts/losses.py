"""What builds a loss and with what reduction, so each replica's loss can be its share of the
global mean.

Each replica's loss: its share of the global mean.

Under a strategy the optimizer SUMS the replicas' gradients, so every
replica must differentiate its loss divided by the number of replicas --
unless it is already that share: a Keras ``Loss`` object with a mean
reduction run by a strategy (Keras 3 divides it), ``self.compute_loss``,
``tf.nn.compute_average_loss``. What the loss is made of is followed
through names, ``self`` attributes, the module's functions and lambdas and
the parameters the module's calls fill (never its text): one answer
(:func:`loss_kind`) for tape loops and Keras ``train_step`` alike. A loss
adding both kinds, or a call tfdist cannot see into, is named, never guessed.
"""
from __future__ import annotations

import libcst as cst
from .. import apis
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine.analysis import returned_values
from ..engine.scopes import walk
from .syntax import find_arg
from .loss_bindings import (bound_values, call_returns, calls_super, compiled_values, is_super, keyword_read,
                            through_parameters)
from . import kinds


RULE = kinds.GRADIENT_TAPE
#: the Model methods returning the compiled loss, divided by the replicas under a strategy
SCALED_METHODS = ("compute_loss", "compiled_loss", "_compute_loss")
#: divides by the global batch under a strategy when no global_batch_size is given
SHARE_FUNCTIONS = {"tensorflow.nn.compute_average_loss", "tensorflow.compat.v2.nn.compute_average_loss"}
#: what these libraries compute is no Keras Loss object's reduction: Keras divides none of it
LIBRARY_ROOTS = apis.LIBRARY_ROOTS
#: how deep a loss is followed (names, calls, returns, arithmetic) before it counts as undecided:
#: a guard against cycles, deep enough for a helper returning a dict of sums of helpers' values
MAX_DEPTH = 20


@fact
def call_kind(a: A.Analysis, call: cst.Call) -> str:
    """What a call in a loss is, for who divides it by the replicas:

    - 'keras': this replica's share already -- a Keras Loss object with a
      mean reduction, ``self.compute_loss`` / ``self.compiled_loss`` of a
      class that does not override them, ``tf.nn.compute_average_loss``
      without ``global_batch_size``;
    - 'module': a function, method or lambda of this module
      (:func:`call_returns` are what it gives);
    - 'library': computed by TensorFlow, Keras, NumPy or a builtin (a mean,
      a sum, ``keras.losses.mse``, a Loss object reducing by sum or not at
      all): Keras divides none of it;
    - 'unknown': anything else (a parameter, an object's method).
    """
    func = call.func
    if is_keras_loss_object(a, func):
        return _subclasses_kind(a, keras_loss_constructions(a, func))
    if keras_loss_constructions(a, func, mean_only=False):
        return "library"
    if a.is_name(call, SHARE_FUNCTIONS):
        return "keras" if find_arg(call, "global_batch_size", 1) is None else "library"
    if isinstance(func, cst.Attribute) and func.attr.value in SCALED_METHODS:
        # self.compute_loss(...) in a model's method, or model.compute_loss(...) of a Keras model:
        # Keras's own unless a class of this module (the model's lineage, for self) overrides it
        owner = a.self_class(func.value) if isinstance(func.value, cst.Name) else None
        classes = a.lineage(owner) if owner is not None else a.classdefs if A.MODEL in a.kinds(func.value) else None
        if is_super(func.value):
            # super().compute_loss(...) in an override: Keras's, unless a base class here overrides it too
            fdef = a.enclosing_function(call)
            klass = a.method_owner(fdef) if fdef is not None else None
            classes = a.lineage(klass)[1:] if klass is not None else None
        if classes is not None:
            overrides = [f for klass in classes for f in klass.body.body
                         if isinstance(f, cst.FunctionDef) and f.name.value == func.attr.value]
            if not overrides:
                return "library" if owner is not None and _compiled_unreduced(a, owner) else "keras"
            if any(calls_super(f, func.attr.value) for f in overrides) or not call_returns(a, call):
                return "unknown"
            return "module"  # the class's own method of that name, not Keras's: what it returns
    if call_returns(a, call):
        return "module"
    if _is_layer_or_model(a, func):
        return "library"
    names = a.names(call)
    if names and all(n.startswith(LIBRARY_ROOTS) for n in names):
        return "library"
    values = bound_values(a, func) if not isinstance(func, cst.Call) else []
    if values and all(isinstance(v, (cst.Name, cst.Attribute)) and a.names(v)
                      and all(n.startswith(LIBRARY_ROOTS) for n in a.names(v)) for v in values):
        return "library"  # a library function stored or handed in (compile(loss=keras.losses.mae))
    return "unknown"


@fact
def loss_scaled(a: A.Analysis, call: cst.Call):
    """The loss a mixed-precision optimizer scales (``self.optimizer.get_scaled_loss(loss)``,
    Keras 3 ``optimizer.scale_loss(loss)``: the loss times the loss scale, of the loss's
    kind); None for any other call."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in apis.OPTIMIZER_LOSS_SCALING_METHODS:
        return None
    r = func.value
    own = (isinstance(r, cst.Attribute) and r.attr.value == "optimizer" and isinstance(r.value, cst.Name)
           and a.self_class(r.value) is not None)
    if not (own or a.is_kind(r, A.KERAS_OPTIMIZER)):
        return None
    keyword, position = apis.OPTIMIZER_LOSS_SCALING_METHODS[func.attr.value]
    arg = find_arg(call, keyword, position)
    return arg.value if arg is not None and not arg.star else None


@fact
def loss_kind(a: A.Analysis, expr, depth: int = 0, inside: bool = False) -> str:
    """'keras' when the loss is made of values Keras divides by the number
    of replicas under a strategy (:func:`call_kind`), summed or scaled;
    'plain' when none is (a mean the user computed); 'mixed' when both
    kinds are added, or a library call is given a Keras-divided value
    (``tf.reduce_mean(loss_fn(y, p))``: divided, then no share of a sum);
    'unknown' when a term of the loss is a call that may or may not be
    divided (a function handed in as a parameter, an object's method).

    Followed through names (plain and augmented assignments; a parameter:
    what the module's calls pass), this module's functions, methods and
    lambdas (what they return) and arithmetic. ``inside``: the value is an
    argument of a library call (a prediction, the labels): only a
    Keras-divided value matters there; an unknown call is taken as data."""
    if depth > MAX_DEPTH:
        return "plain" if inside else "unknown"
    read = keyword_read(a, expr) if isinstance(expr, (cst.Call, cst.Subscript)) else None
    if read is not None:  # kwargs.pop("weights", default): what callers pass as weights=, or the default
        return _combined([loss_kind(a, v, depth + 1, inside) for v in read]) if read else "unknown"
    if isinstance(expr, cst.Call):
        scaled = loss_scaled(a, expr)
        if scaled is not None:
            return loss_kind(a, scaled, depth + 1, inside)
        kind = call_kind(a, expr)
        if kind == "module":
            return _combined([loss_kind(a, r, depth + 1, inside) for r in call_returns(a, expr)])
        if kind == "library":
            args = {loss_kind(a, arg.value, depth + 1, True) for arg in expr.args}
            return "plain" if args <= {"plain"} else "mixed"
        return "plain" if inside and kind == "unknown" else kind
    if isinstance(expr, cst.Name):
        kinds = []
        for origin, value in a.assigned_values(expr):
            if _is_zero(value):
                continue  # ``loss = 0.0`` before a loop adding terms: no term of either kind
            if value is not None:
                kinds.append(loss_kind(a, value, depth + 1, inside))
            elif isinstance(origin, cst.Name) and isinstance(a.parent(origin), cst.AugAssign):
                kinds.append(_augmented_kind(a, a.parent(origin), depth + 1, inside))
            elif isinstance(origin, cst.Param) and not inside:
                # a helper handed the loss, a weight: what the module's calls pass, or the default
                values = [arg for _, arg in a.argument_values(origin)] + [
                    origin.default] * (origin.default is not None)
                kinds += [loss_kind(a, v, depth + 1) for v in values] or ["unknown"]
            elif not inside:
                # an unpacked tuple: the matching element of what is unpacked (``loss, acc =
                # self.step_loss(...)`` returning ``loss, acc``); a loop target...: not followed
                elements = a.tuple_element_values(origin) if isinstance(origin, cst.Name) else []
                kinds += [loss_kind(a, v, depth + 1) for v in elements] or ["unknown"]
        return _combined(kinds)
    if isinstance(expr, cst.BinaryOperation):
        left, right = loss_kind(a, expr.left, depth + 1, inside), loss_kind(a, expr.right, depth + 1, inside)
        if isinstance(expr.operator, (cst.Add, cst.Subtract)):
            return _combined([left, right])
        if "unknown" in (left, right):
            return "unknown"
        # a Keras value weighted by a plain one (a constant, a tensor of
        # weights) or divided by one is still divided by Keras; two Keras
        # values multiplied, or a plain value divided by a Keras one, are no share
        if (left, right) in (("plain", "plain"), ("keras", "plain")):
            return left
        if isinstance(expr.operator, cst.Multiply) and (left, right) == ("plain", "keras"):
            return "keras"
        return "mixed"
    if isinstance(expr, cst.UnaryOperation):
        return loss_kind(a, expr.expression, depth + 1, inside)
    if isinstance(expr, cst.Subscript):
        # an element of a container (``self.weights[i]``, ``losses[0]``): the container's kind;
        # the index picks, it adds nothing
        return loss_kind(a, expr.value, depth + 1, inside)
    if isinstance(expr, cst.Attribute):
        # self.weight: what the class binds it to (a constructor's argument); any other attribute
        # read (self.net.losses, a config value) holds no loss of this step
        kinds = [loss_kind(a, v, depth + 1, inside) for v in bound_values(a, expr)]
        # a Loss object's value stored on the object was computed once, where it was bound, not
        # by the step: divided by the replicas or not as the scope it ran in had them
        return "unknown" if "keras" in kinds and not inside else _combined(kinds)
    if isinstance(expr, (cst.Lambda, cst.BaseNumber, cst.BaseString)):
        return "plain"
    return _combined([loss_kind(a, n, depth + 1, inside) for n in _parts(expr)])


@fact
def undecided_term(a: A.Analysis, expr, depth: int = 0):
    """The innermost part of a loss that makes it 'unknown' or 'mixed' (what
    a refusal names, with its line); None when the loss is decided."""
    if depth > MAX_DEPTH or loss_kind(a, expr) not in ("unknown", "mixed"):
        return None
    parts = []
    if isinstance(expr, cst.Call):
        scaled = loss_scaled(a, expr)
        parts = [scaled] if scaled is not None else call_returns(a, expr) if call_kind(a, expr) == "module" else []
    elif isinstance(expr, cst.Name):
        for origin, value in a.assigned_values(expr):
            parts.append(value if value is not None else (
                a.parent(origin).value if isinstance(a.parent(origin), cst.AugAssign) else None))
        if any(p is None for p in parts):
            return expr  # bound by a parameter, a loop...
    elif isinstance(expr, cst.BinaryOperation):
        parts = [expr.left, expr.right]
    elif isinstance(expr, cst.Attribute):
        parts = bound_values(a, expr)
    elif isinstance(expr, cst.UnaryOperation):
        parts = [expr.expression]
    elif isinstance(expr, cst.Subscript):
        parts = [expr.value]
    else:
        parts = _parts(expr)
    for part in parts:
        found = undecided_term(a, part, depth + 1)
        if found is not None:
            return found
    return expr


def _parts(expr) -> list:
    """The calls and names an expression reads directly (list elements,
    subscripts, comprehensions...), not inside a nested call or lambda."""
    out, todo = [], list(expr.children)
    while todo:
        n = todo.pop(0)
        if isinstance(n, (cst.Call, cst.Name)):
            out.append(n)
        elif not isinstance(n, (cst.Lambda, cst.Attribute)):
            todo.extend(n.children)
    return out


def _combined(kinds, weight: bool = False) -> str:
    """The kind of a sum of terms of these kinds (``weight``: of a product
    or other combination, where a plain factor keeps a Keras share's kind)."""
    found = set(kinds)
    if "unknown" in found:
        return "unknown"
    if weight and found != {"plain"}:
        found.discard("plain")
    if not found:
        return "plain"
    return found.pop() if len(found) == 1 else "mixed"


@fact
def plain_terms(a: A.Analysis, expr, depth: int = 0):
    """The terms a loss adds to Keras Loss objects' values that are no such
    value (``sum(model.losses)`` in ``loss = loss_fn(y, p); loss +=
    sum(model.losses)``), followed through the bindings of names and
    through constant factors; None when the loss is not such a sum."""
    if depth > 6:
        return None
    kind = loss_kind(a, expr, depth)
    if kind == "keras":
        return []
    if kind == "plain":
        return [expr]
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, (cst.Add, cst.Subtract)):
            left, right = plain_terms(a, expr.left, depth + 1), plain_terms(a, expr.right, depth + 1)
            return None if left is None or right is None else left + right
        if isinstance(expr.operator, (cst.Multiply, cst.Divide)):
            for side, other in ((expr.left, expr.right), (expr.right, expr.left)):
                if isinstance(other, (cst.Integer, cst.Float)):
                    return plain_terms(a, side, depth + 1)
        return None
    if not isinstance(expr, cst.Name):
        return None
    bound = a.assigned_values(expr)
    if len(bound) != 1:
        return None
    origin, value = bound[0]
    if value is not None:
        return plain_terms(a, value, depth + 1)
    aug = a.parent(origin) if isinstance(origin, cst.Name) else None
    if not isinstance(aug, cst.AugAssign) or not isinstance(aug.operator, (cst.AddAssign, cst.SubtractAssign)):
        return None
    before = _binding_before(a, aug)
    if before is None or before[1] is None:
        return None
    previous, added = plain_terms(a, before[1], depth + 1), plain_terms(a, aug.value, depth + 1)
    return None if previous is None or added is None else previous + added


def _augmented_kind(a: A.Analysis, aug: cst.AugAssign, depth: int, inside: bool = False) -> str:
    """``loss += sum(model.losses)``: the kind of the value before (the
    binding of the name last run before this statement, in its block)
    combined with what is added; scaled by a plain factor, the kind before."""
    if depth > MAX_DEPTH or not isinstance(aug.target, cst.Name):
        return "unknown"
    before = _binding_before(a, aug)
    if before is None:
        return "unknown"
    origin, value = before
    if _is_zero(value):
        previous = loss_kind(a, aug.value, depth + 1, inside) if isinstance(
            aug.operator, (cst.AddAssign, cst.SubtractAssign)) else "plain"
    elif value is not None:
        previous = loss_kind(a, value, depth + 1, inside)
    elif isinstance(origin, cst.Name) and isinstance(a.parent(origin), cst.AugAssign):
        previous = _augmented_kind(a, a.parent(origin), depth + 1, inside)
    else:
        return "plain" if inside else "unknown"  # a parameter, a loop target...: what it holds cannot be told
    added = loss_kind(a, aug.value, depth + 1, inside)
    if isinstance(aug.operator, (cst.AddAssign, cst.SubtractAssign)):
        return _combined([previous, added])
    if isinstance(aug.operator, (cst.MultiplyAssign, cst.DivideAssign)) and added == "plain":
        return previous
    return "unknown" if "unknown" in (previous, added) else "mixed"


def _is_zero(value) -> bool:
    """A literal zero (``0``, ``0.0``): added to a loss, it adds no term of either kind."""
    return isinstance(value, (cst.Integer, cst.Float)) and value.evaluated_value == 0


def _binding_before(a: A.Analysis, aug: cst.AugAssign):
    """(origin, value) of the binding of ``aug``'s name last before it
    (``loss = loss_fn(y, p)`` for ``loss += ...``), or None."""
    if not isinstance(aug.target, cst.Name):
        return None
    line = a.line(aug)
    before = [(o, v) for o, v in a.assigned_values(aug.target, reaching=False) if a.line(o) < line]
    return before[-1] if before else None


def _subclasses_kind(a: A.Analysis, constructions) -> str:
    """What Loss objects with a mean reduction give (constructions of them): 'keras' for Keras's
    classes; a Loss subclass of this module returning its own ``call``'s value, which Keras 3
    reduces (losses/loss.py ``reduce_values``) -- dividing per-example values by the replicas,
    but returning one number as it is: 'keras' when that number is made of Keras-divided values
    (``self.mae(...)`` terms), 'library' when it is a mean of the class's own, 'unknown' else."""
    kinds = set()
    for c in constructions:
        fact_ = a.class_of(c.func)
        calls = a.class_methods(fact_.node, "call") if fact_ is not None else []
        returns = returned_values(calls[0]) if calls else []
        if not calls:
            kinds.add("keras")  # Keras's own call
        for r in returns:
            kind = loss_kind(a, r, 1)
            kinds.add(kind if kind != "plain" else "library" if _one_number(a, r)
                      else "keras" if _per_example(a, r) else "unknown")
        if calls and not returns:
            kinds.add("unknown")
    return kinds.pop() if len(kinds) == 1 else "unknown"


@fact
def returns_one_number(a: A.Analysis, fdef: cst.FunctionDef) -> bool:
    """Does every value the function returns certainly hold one number (a full reduction)?"""
    returns = returned_values(fdef)
    return bool(returns) and all(_one_number(a, r) for r in returns)


@fact
def one_number(a: A.Analysis, expr) -> bool:
    """Is expr certainly one number (a lambda's body, say)? See :func:`_one_number`."""
    return _one_number(a, expr)


def _one_number(a: A.Analysis, expr, depth: int = 0) -> bool:
    """Is expr certainly one number: a full reduction (``ops.mean(x)``, ``tf.reduce_sum(x)``,
    no axis), a Python number, arithmetic of those, or names bound only to them?"""
    if depth > 8:
        return False
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Call) and a.names(expr) & apis.NUMBER_FUNCTIONS:
        return True
    if isinstance(expr, cst.Call) and a.names(expr) & apis.SHAPE_KEEPING_FUNCTIONS:
        return bool(expr.args) and _one_number(a, expr.args[0].value, depth + 1)
    if isinstance(expr, cst.Subscript) and _shape_read(a, expr.value):
        return True  # tf.shape(y)[0], y.shape[0]: one size
    if isinstance(expr, cst.Call):
        names = [n for n in a.names(expr) if n in apis.TENSOR_FULL_REDUCTIONS]
        if not names:
            returns = call_returns(a, expr)  # a method or function of this module: what it returns
            return bool(returns) and all(_one_number(a, r, depth + 1) for r in returns)
        axis = find_arg(expr, *apis.TENSOR_FULL_REDUCTIONS[names[0]])
        return axis is None or (isinstance(axis.value, cst.Name) and axis.value.value == "None")
    if isinstance(expr, cst.BinaryOperation):
        return _one_number(a, expr.left, depth + 1) and _one_number(a, expr.right, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return _one_number(a, expr.expression, depth + 1)
    if isinstance(expr, cst.Name):
        bound = a.assigned_values(expr)
        parts = []
        for origin, value in bound:
            aug = a.parent(origin) if isinstance(origin, cst.Name) else None
            if value is not None:
                parts.append(value)
            elif isinstance(aug, cst.AugAssign):
                before = _binding_before(a, aug)
                if before is None or before[1] is None:
                    return False
                parts += [before[1], aug.value]
            elif isinstance(origin, cst.Param) and a.parameter_values(origin):
                parts += a.parameter_values(origin)  # a factory's setting: what the module's calls pass
            else:
                return False
        return bool(parts) and all(_one_number(a, p, depth + 1) for p in parts)
    return False


def _shape_read(a: A.Analysis, expr) -> bool:
    """``tf.shape(x)`` / ``ops.shape(x)`` / ``x.shape``: a shape, whose elements are sizes."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "shape"
    return isinstance(expr, cst.Call) and bool(a.names(expr) & apis.SHAPE_FUNCTIONS)


def _per_example(a: A.Analysis, expr, depth: int = 0) -> bool:
    """Is expr certainly per-example values: a reduction over given axes (``ops.mean(...,
    axis=-1)``), a Keras loss function (``keras.losses.mean_squared_error``), a product or
    quotient of such values by numbers, or a name bound only to them?"""
    if depth > 8:
        return False
    if isinstance(expr, cst.Call):
        names = a.names(expr)
        reductions = [n for n in names if n in apis.TENSOR_FULL_REDUCTIONS]
        if reductions:
            axis = find_arg(expr, *apis.TENSOR_FULL_REDUCTIONS[reductions[0]])
            return axis is not None and not (isinstance(axis.value, cst.Name) and axis.value.value == "None")
        return any(n.startswith(apis.KERAS_LOSS_MODULES) and n.rsplit(".", 1)[1][:1].islower() for n in names)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Divide)):
        sides = (expr.left, expr.right)
        return any(_per_example(a, s, depth + 1) for s in sides) and any(_one_number(a, s, depth + 1) for s in sides)
    if isinstance(expr, cst.Name):
        values = [v for _, v in a.assigned_values(expr)]
        return bool(values) and all(v is not None and _per_example(a, v, depth + 1) for v in values)
    return False


def _compiled_unreduced(a: A.Analysis, owner: cst.ClassDef) -> bool:
    """Every loss the model's ``compile`` is given is a Keras Loss object reducing by sum or not
    at all (``loss=keras.losses.MeanSquaredError(reduction="none")``): ``compute_loss`` /
    ``compiled_loss`` return its values undivided (measured, Keras 3.15 under MirroredStrategy:
    per-example values, not divided by the replicas; tf-keras scales only a mean reduction)."""
    values = through_parameters(a, compiled_values(a, owner, "loss"), 1)
    if not values:
        return False
    for v in values:
        reduction = construction_reduction(a, v) if isinstance(v, cst.Call) else None
        if reduction is None or reduction.lower() in apis.KERAS_MEAN_REDUCTIONS:
            return False
    return True


def _is_layer_or_model(a: A.Analysis, func) -> bool:
    """func is a Keras model, tf.Module or layer (its call returns outputs,
    no loss Keras divides)."""
    if a.kinds(func) & {A.MODEL, A.MODULE}:
        return True
    values = bound_values(a, func)
    return bool(values) and all(isinstance(v, cst.Call) and any(
        n.startswith(apis.KERAS_LAYER_MODULES) and n.rsplit(".", 1)[1][:1].isupper() for n in a.names(v))
        for v in values)


@fact
def is_keras_loss_object(a: A.Analysis, func) -> bool:
    return bool(keras_loss_constructions(a, func))


@fact
def keras_loss_constructions(a: A.Analysis, func, mean_only: bool = True) -> list:
    """The constructions of the Keras Loss object with a mean reduction
    (``mean_only=False``: with any reduction) ``func`` calls (followed
    through names, the ``self`` attributes of its class and the parameters
    the module's calls fill); [] when func is not certainly one."""
    constructions = bound_values(a, func)
    if not constructions:
        return []
    for c in constructions:
        if not isinstance(c, cst.Call):
            return []
        reduction = construction_reduction(a, c)
        if reduction is None:
            return []  # a loss function (no reduction), not a Keras loss, or a reduction tfdist cannot read
        if mean_only and reduction.lower() not in apis.KERAS_MEAN_REDUCTIONS:
            return []
    return constructions


DEFAULT_REDUCTION = "sum_over_batch_size"


@fact
def construction_reduction(a: A.Analysis, c: cst.Call):
    """The reduction of the Keras Loss object ``c`` builds -- a Keras Loss
    class, or a class of this module deriving from one (its ``__init__``'s
    ``super().__init__(reduction=...)``, else what the construction passes
    on) -- as text ('none' for ``reduction=None``); None when c builds no
    Loss object or its reduction cannot be read."""
    names = [n for n in a.names(c) if n.startswith(apis.KERAS_LOSS_MODULES)]
    if names:
        if not names[0].rsplit(".", 1)[1][:1].isupper():
            return None  # a loss function
        return _reduction_text(find_arg(c, "reduction", None))
    fact_ = a.class_of(c.func)
    klass = fact_.node if fact_ is not None else None
    if klass is None or not any(n.startswith(apis.KERAS_LOSS_MODULES) and n.rsplit(".", 1)[1][:1].isupper()
                                for k in a.lineage(klass) for base in k.bases for n in a.names(base.value)):
        return None
    init = a.class_methods(klass, "__init__")
    if not init:
        return _reduction_text(find_arg(c, "reduction", None))
    supers = [n for n in walk(init[0].body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
              and n.func.attr.value == "__init__" and is_super(n.func.value)]
    if len(supers) != 1:
        return None
    given = find_arg(supers[0], "reduction", None)
    if given is not None and isinstance(given.value, cst.SimpleString):
        return _reduction_text(given)
    if given is None and not any(arg.star == "**" for arg in supers[0].args):
        return DEFAULT_REDUCTION  # super().__init__() with no reduction: Keras's default
    if given is None or (isinstance(given.value, cst.Name) and given.value.value in [
            p.name.value for p in init[0].params.params]):
        passed = find_arg(c, "reduction", None)
        if given is not None and passed is None:
            param = next(p for p in init[0].params.params if p.name.value == given.value.value)
            return _reduction_text(cst.Arg(param.default)) if param.default is not None else None
        return _reduction_text(passed)
    return None


def _reduction_text(arg):
    """The reduction an argument names ('none' for None); the default when no argument."""
    if arg is None:
        return DEFAULT_REDUCTION
    value = arg.value
    if isinstance(value, cst.Name) and value.value == "None":
        return "none"
    if isinstance(value, cst.SimpleString):
        return value.evaluated_value
    if isinstance(value, cst.Attribute):
        return value.attr.value.lower()  # losses.Reduction.SUM
    return None



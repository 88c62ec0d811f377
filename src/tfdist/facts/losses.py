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
from ..engine import dataflow
from ..engine.analysis import returned_values
from ..engine.scopes import walk
from .syntax import find_arg
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
        return "keras"
    if keras_loss_constructions(a, func, mean_only=False):
        return "library"
    if a.is_name(call, SHARE_FUNCTIONS):
        return "keras" if find_arg(call, "global_batch_size", 1) is None else "library"
    if isinstance(func, cst.Attribute) and func.attr.value in SCALED_METHODS:
        # self.compute_loss(...) in a model's method, or model.compute_loss(...) of a Keras model:
        # Keras's own unless a class of this module (the model's lineage, for self) overrides it
        owner = a.self_class(func.value) if isinstance(func.value, cst.Name) else None
        classes = a.lineage(owner) if owner is not None else a.classdefs if A.MODEL in a.kinds(func.value) else None
        if _is_super(func.value):
            # super().compute_loss(...) in an override: Keras's, unless a base class here overrides it too
            fdef = a.enclosing_function(call)
            klass = a.method_owner(fdef) if fdef is not None else None
            classes = a.lineage(klass)[1:] if klass is not None else None
        if classes is not None:
            overrides = [f for klass in classes for f in klass.body.body
                         if isinstance(f, cst.FunctionDef) and f.name.value == func.attr.value]
            if not overrides:
                return "keras"
            if any(_calls_super(f, func.attr.value) for f in overrides) or not call_returns(a, call):
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
def call_returns(a: A.Analysis, call: cst.Call) -> list:
    """What a call of this module's functions, methods or lambdas returns
    (``return`` values; a lambda's body); [] for any other call."""
    returns = [r for fdef in dataflow.callees(a, call) for r in returned_values(fdef)]
    if not returns and isinstance(call.func, (cst.Name, cst.Attribute)):
        # a lambda, or a function of the module handed in and stored (``self.gen_loss_fn =
        # gen_loss_fn`` of ``gan.compile(gen_loss_fn=generator_loss)``): every value it is bound to
        values = bound_values(a, call.func)
        functions = [[v.body] if isinstance(v, cst.Lambda) else
                     [r for f in a.local_functions(v) for r in returned_values(f)] if isinstance(v, cst.Name) else []
                     for v in values]
        if values and all(functions):
            returns = [r for found in functions for r in found]
    return returns


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
    if isinstance(expr, cst.Call):
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
    if isinstance(expr, cst.Attribute):
        # self.weight: what the class binds it to (a constructor's argument); any other attribute
        # read (self.net.losses, a config value) holds no loss of this step
        return _combined([loss_kind(a, v, depth + 1, inside) for v in bound_values(a, expr)])
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
        parts = call_returns(a, expr) if call_kind(a, expr) == "module" else []
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
    if value is not None:
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


def _binding_before(a: A.Analysis, aug: cst.AugAssign):
    """(origin, value) of the binding of ``aug``'s name last before it
    (``loss = loss_fn(y, p)`` for ``loss += ...``), or None."""
    if not isinstance(aug.target, cst.Name):
        return None
    line = a.line(aug)
    before = [(o, v) for o, v in a.assigned_values(aug.target, reaching=False) if a.line(o) < line]
    return before[-1] if before else None


@fact
def bound_values(a: A.Analysis, func) -> list:
    """What ``func`` is bound to: itself when a call, a name's values, a
    ``self`` attribute's values in its class, with the arguments the
    module's calls pass for a parameter among them."""
    values = []
    if isinstance(func, cst.Call):
        values = [func]
    elif isinstance(func, cst.Name):
        bound = a.assigned_values(func)
        if bound and all(isinstance(origin, cst.Param) for origin, _ in bound):
            values = [func]  # a parameter: what the module's calls pass for it
        else:
            values = [v for _, v in bound if v is not None]
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        fdef = a.enclosing_function(func)
        owner = a.method_owner(fdef) if fdef is not None else None
        if owner is not None and a.self_class(func.value) is not None:
            values = a.attribute_values(owner, func.attr.value) or compiled_values(a, owner, func.attr.value)
    return _through_parameters(a, values)


@fact
def compiled_values(a: A.Analysis, owner: cst.ClassDef, attr: str) -> list:
    """What Keras's ``compile`` stored as ``self.<attr>`` of a model class
    that binds no such attribute itself (apis.KERAS_COMPILE_STORED:
    ``self.loss``): the argument of each ``compile`` call reaching Keras's --
    ``super().compile(loss=...)`` in the class's lineage, or ``model.compile(
    loss=...)`` on an instance of it (through an override forwarding
    ``**kwargs`` to ``super().compile``). [] when none is seen."""
    fact_ = a.classes.get(next(iter(a.qualified(owner.name)), owner.name.value))
    if attr not in apis.KERAS_COMPILE_STORED or not fact_ or A.MODEL not in fact_.kinds:
        return []
    keyword, position = apis.KERAS_COMPILE_STORED[attr]
    out = []
    for c in a.calls:
        if not (isinstance(c.func, cst.Attribute) and c.func.attr.value == "compile"):
            continue
        r = c.func.value
        if _is_super(r):
            fdef = a.enclosing_function(c)
            klass = a.method_owner(fdef) if fdef is not None else None
            if klass is None or not (owner in a.lineage(klass) or klass in a.lineage(owner)):
                continue
        else:
            classes = a.instance_classes(r)
            if not classes or not all(owner in a.lineage(k) for k in classes):
                continue
            overrides = [f for k in classes for f in a.class_methods(k, "compile")]
            if overrides and not all(_forwards_keywords(f) for f in overrides):
                continue  # the override's own super().compile(...) call says what is stored
            if overrides:
                position = None
        arg = find_arg(c, keyword, position)
        if arg is not None and not arg.star:
            out.append(arg.value)
    return out


def _is_super(expr) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "super"


def _calls_super(fdef: cst.FunctionDef, method: str) -> bool:
    """fdef calls ``super().<method>(...)``."""
    return any(isinstance(n, cst.Attribute) and n.attr.value == method and _is_super(n.value) for n in walk(fdef.body))


def _forwards_keywords(fdef: cst.FunctionDef) -> bool:
    """``def compile(self, **kwargs): super().compile(**kwargs)``."""
    star = fdef.params.star_kwarg
    if star is None:
        return False
    return any(isinstance(n, cst.Arg) and n.star == "**" and isinstance(n.value, cst.Name)
               and n.value.value == star.name.value for n in walk(fdef.body))


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
              and n.func.attr.value == "__init__" and _is_super(n.func.value)]
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


def _through_parameters(a: A.Analysis, values, depth: int = 0) -> list:
    """Values with each parameter they name replaced by the arguments the
    module's calls pass for it (``self.loss_fn = loss_fn`` in an overridden
    ``compile(self, ..., loss_fn)``, called as ``gan.compile(loss_fn=...)``).
    A parameter no call binds stays, and decides nothing."""
    out = []
    for v in values:
        params = [o for o, _ in a.assigned_values(v)] if isinstance(v, cst.Name) and depth < 4 else []
        if params and all(isinstance(o, cst.Param) for o in params):
            args = [arg for o in params for _, arg in a.argument_values(o)]
            out += _through_parameters(a, args, depth + 1) if args else [v]
        else:
            out.append(v)
    return out

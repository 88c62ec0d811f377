"""What a callable in a loss is bound to: the values a name, a ``self``
attribute or a parameter holds (through the arguments the module's calls
pass), what Keras's ``compile`` stored as ``self.loss``, and what a call of
the module's own functions, methods or lambdas returns. Read-only questions
:mod:`.losses` asks while it follows a loss; no kind is decided here.
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
        else:  # model.loss_func = BinaryCrossentropy(), set on the object the function is handed
            values = a.assigned_attribute_values(func)
    return through_parameters(a, values)


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
        if is_super(r):
            fdef = a.enclosing_function(c)
            klass = a.method_owner(fdef) if fdef is not None else None
            if klass is None or not (owner in a.lineage(klass) or klass in a.lineage(owner)):
                continue
        else:
            classes = a.instance_classes(r)
            if not classes or not all(owner in a.lineage(k) for k in classes):
                continue
            overrides = [f for k in classes for f in a.class_methods(k, "compile")]
            if overrides and not all(forwards_keywords(f) for f in overrides):
                continue  # the override's own super().compile(...) call says what is stored
            if overrides:
                position = None
        arg = find_arg(c, keyword, position)
        if arg is not None and not arg.star:
            out.append(arg.value)
    return out


def is_super(expr) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "super"


def calls_super(fdef: cst.FunctionDef, method: str) -> bool:
    """fdef calls ``super().<method>(...)``."""
    return any(isinstance(n, cst.Attribute) and n.attr.value == method and is_super(n.value) for n in walk(fdef.body))


def forwards_keywords(fdef: cst.FunctionDef) -> bool:
    """``def compile(self, **kwargs): super().compile(**kwargs)``."""
    star = fdef.params.star_kwarg
    if star is None:
        return False
    return any(isinstance(n, cst.Arg) and n.star == "**" and isinstance(n.value, cst.Name)
               and n.value.value == star.name.value for n in walk(fdef.body))


@fact
def through_parameters(a: A.Analysis, values, depth: int = 0) -> list:
    """Values with each parameter they name replaced by the arguments the
    module's calls pass for it (``self.loss_fn = loss_fn`` in an overridden
    ``compile(self, ..., loss_fn)``, called as ``gan.compile(loss_fn=...)``).
    A parameter no call binds stays, and decides nothing."""
    out = []
    for v in values:
        bound = a.assigned_values(v) if isinstance(v, cst.Name) and depth < 4 else []
        if bound and all(isinstance(o, cst.Param) for o, _ in bound):
            args = [arg for o, _ in bound for _, arg in a.argument_values(o)]
            out += through_parameters(a, args, depth + 1) if args else [v]
        elif bound and all(value is not None for _, value in bound):
            # an argument naming what the caller bound (``loss_fn = keras.losses.MeanSquaredError()``
            # then ``model.compile(loss_fn=loss_fn)``): the values it was bound to
            out += through_parameters(a, [value for _, value in bound], depth + 1)
        else:
            out.append(v)
    return out


#: a mapping's methods reading one key: (key position, default position)
MAPPING_READS = {"pop": (0, 1), "get": (0, 1)}


@fact
def keyword_read(a: A.Analysis, expr):
    """The values a read of one key of a ``**kwargs`` parameter can give --
    ``kwargs.pop("k", default)``, ``kwargs.get("k", default)``, ``kwargs["k"]``: what the
    module's calls pass as ``k=...``, and the default -- or None when expr is no such read."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in MAPPING_READS:
        mapping, (at, default_at) = expr.func.value, MAPPING_READS[expr.func.attr.value]
        key = expr.args[at].value if len(expr.args) > at and not expr.args[at].keyword else None
        default = expr.args[default_at].value if len(expr.args) > default_at else None
    elif isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        mapping, key, default = expr.value, expr.slice[0].slice.value, None
    else:
        return None
    if not isinstance(mapping, cst.Name) or not isinstance(key, cst.SimpleString):
        return None
    bound = a.assigned_values(mapping)
    if len(bound) != 1 or not isinstance(bound[0][0], cst.Param):
        return None
    star = bound[0][0]
    passed = [v for _, v in a.keyword_values(star, key.evaluated_value)]
    fdef = a.enclosing_function(star)
    if fdef is None or fdef.params.star_kwarg is not star:
        return None
    if default is not None and _rebinds(a, expr, default):
        default = None  # ``self.w = kwargs.pop("w", self.w)``: the default is self.w's other bindings
    return passed + ([default] if default is not None else [])


def _rebinds(a: A.Analysis, read, default) -> bool:
    """The read is the value of ``self.x = ...`` and its default is ``self.x``."""
    asg = a.parent(read)
    if not (isinstance(asg, cst.Assign) and len(asg.targets) == 1 and isinstance(default, cst.Attribute)):
        return False
    target = asg.targets[0].target
    return (isinstance(target, cst.Attribute) and target.attr.value == default.attr.value
            and all(isinstance(x.value, cst.Name) and a.self_class(x.value) is not None for x in (target, default)))


@fact
def functions_given(a: A.Analysis, expr, depth: int = 0) -> list:
    """The functions of this module (defs, lambdas) an expression handing a
    function on evaluates to: a name bound to a def, a name bound to what a
    call returns, a factory's call returning its nested def
    (``compile(loss=get_loss(dims))`` with ``def get_loss(d): def loss(...):
    ...; return loss``); [] where any value is something else."""
    if depth > 6:
        return []
    if isinstance(expr, cst.Lambda):
        return [expr]
    if isinstance(expr, cst.Call):
        returns = call_returns(a, expr)
        found = [f for r in returns for f in functions_given(a, r, depth + 1)]
        return found if returns and all(functions_given(a, r, depth + 1) for r in returns) else []
    if isinstance(expr, cst.Name):
        defs = a.local_functions(expr)
        if defs:
            return defs
        values = [v for _, v in a.assigned_values(expr)]
        if not values or any(v is None for v in values):
            return []
        found = [functions_given(a, v, depth + 1) for v in values]
        return [f for fs in found for f in fs] if all(found) else []
    return []

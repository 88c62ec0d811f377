"""Functions and methods defined in other modules of the project (or in this file, called from
elsewhere): which definition a call reaches, and what it returns.
"""
from __future__ import annotations

from typing import Optional
import libcst as cst
from ..engine.memo import fact
from ..engine.analysis import Analysis, ProjectContext
from .syntax import find_arg, has_star_args


@fact
def external_callable(a, call: cst.Call):
    """(analysis of its module, FunctionDef) of a function of another module
    of the project, or of a class or static method of a class there
    (``MNIST.get_data(...)``), that call runs; None otherwise."""
    found = external_function_of(a, call)
    if found is None and isinstance(call.func, cst.Attribute):
        owner = _external_definition(a, call.func.value, cst.ClassDef)
        if owner is not None:
            other, klass = owner
            found = next(((other, m) for m in klass.body.body if isinstance(m, cst.FunctionDef)
                          and m.name.value == call.func.attr.value and class_level_method(m)), None)
    return found


def class_level_method(fdef: cst.FunctionDef) -> Optional[str]:
    """"classmethod" or "staticmethod" when fdef is decorated so."""
    return next((d.decorator.value for d in fdef.decorators if isinstance(d.decorator, cst.Name)
                 and d.decorator.value in ("classmethod", "staticmethod")), None)


@fact
def argument_at(a, fdef: cst.FunctionDef, call: cst.Call, param: cst.Param):
    """The value ``param`` of ``fdef`` (in the module ``a`` analyses) has at
    ``call``: the argument given, else its default (None when neither is
    known, or with ``*args``). A method's ``self``/``cls`` is not among the
    call's positional arguments."""
    if has_star_args(call):
        return None
    params = list(fdef.params.params)
    index = None
    if param in params:
        bound_first = a.method_owner(fdef) is not None and class_level_method(fdef) != "staticmethod"
        index = params.index(param) - (1 if bound_first else 0)
    given = find_arg(call, param.name.value, index)
    return given.value if given is not None else param.default


def external_function(ctx, call: cst.Call):
    """(analysis of its module, FunctionDef) of a function imported from
    another module of the project (the project facts the pipeline is handed
    carry its module's source), or None."""
    return external_function_of(ctx.a, call)


@fact
def external_function_of(a, call: cst.Call):
    """external_function, for an analysis (each other module is parsed and
    analysed once per analysis)."""
    found = _external_definition(a, call.func, cst.FunctionDef)
    return found


def _external_definition(a, func, kind):
    """(analysis of its module, the top-level def or class of ``kind``)
    that ``func`` (a name or dotted name) refers to in another module of
    the project, or None."""
    return a.project_definition(func, kind)


@fact
def external_methods_of(a, call: cst.Call) -> list:
    """(analysis of its module, method) for ``obj.method(...)`` when obj is
    (a name bound once to) an instance of a class another module of the
    project defines: ``training = Data(...)`` then ``training.generator(32)``."""
    if not isinstance(call.func, cst.Attribute):
        return []
    obj = call.func.value
    if isinstance(obj, cst.Name):
        bound = a.assigned_values(obj)
        if len(bound) != 1 or not isinstance(bound[0][1], cst.Call):
            return []
        obj = bound[0][1]
    if not isinstance(obj, cst.Call):
        return []
    found = _external_definition(a, obj.func, cst.ClassDef)
    if found is None:
        return []
    other, cd = found
    return [(other, f) for f in other.class_methods(cd, call.func.attr.value)]

"""Which calls of a function another module of the project defines write a file
(``save_images(generator, epoch)`` of a helper module): what it writes, when rank 0 alone may run
it -- it runs no collective operation and changes nothing outside itself that other ranks would miss.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine.memo import fact
from ..engine.scopes import walk
from . import model_builds
from .collectives import collective_free
from .external_functions import argument_at, external_callable
from .syntax import calls_in, method_name, receiver
from .writes import file_write_what, is_model_value, open_mode


@fact
def helper_write(a: A.Analysis, call: cst.Call, inference: bool = False) -> Optional[str]:
    """What the function of another project module that ``call`` runs writes (a phrase); None
    when it writes no file, or when it may run a collective operation or change state that
    outlives it (``global``, an attribute or item of what it is handed), so that only rank 0 may not
    run it. ``inference``: Keras evaluate/predict run collectives on this engine."""
    found = external_callable(a, call)
    if found is None:
        return None
    other, fdef = found
    if any(isinstance(n, (cst.Global, cst.Nonlocal)) for n in walk(fdef)) or _changes_what_it_is_handed(fdef):
        return None
    what = None
    for c in calls_in(fdef.body):
        if not _runs_no_collective(a, call, other, fdef, c, inference):
            return None
        what = what or _write(other, c) or _writes_inside(other, c, set())
    return what


def _write(other: A.Analysis, c: cst.Call) -> Optional[str]:
    """What the call writes: a write of a file, or ``open()`` for writing."""
    return file_write_what(other, c) or ("a file opened for writing" if open_mode(other, c) is True else None)


def _writes_inside(other: A.Analysis, c: cst.Call, seen: set) -> Optional[str]:
    """What a function of the helper's module that the helper calls writes (``display_images(...)``)."""
    functions = other.local_functions(c.func) if isinstance(c.func, cst.Name) else []
    for f in functions:
        if id(f) not in seen:
            seen.add(id(f))
            found = next((w for inner in calls_in(f.body)
                          for w in [_write(other, inner) or _writes_inside(other, inner, seen)] if w), None)
            if found:
                return found
    return None


def _runs_no_collective(a, call, other, fdef, c: cst.Call, inference: bool) -> bool:
    """A call in the helper runs no collective: a forward pass or predict of a model the caller
    hands it (by what the caller's module knows of that model), else as the helper's module knows."""
    handed = _handed_model(a, call, other, fdef, c.func if isinstance(c.func, cst.Name) else receiver(c))
    if handed is not None and isinstance(c.func, cst.Name):  # generator(noise, training=False)
        return not inference or model_builds.built_when_made(a, handed)
    if handed is not None and method_name(c) in apis.KERAS_VERBOSE_METHODS:
        return not inference
    return collective_free(other, c, inference)


def _handed_model(a, call, other, fdef, expr) -> Optional[cst.BaseExpression]:
    """The model the caller hands the helper's parameter ``expr`` names, or None."""
    if not isinstance(expr, cst.Name):
        return None
    param = next((p for p in fdef.params.params if p.name.value == expr.value), None)
    if param is None:
        return None
    value = argument_at(other, fdef, call, param)
    return value if value is not None and is_model_value(a, value) else None


def _changes_what_it_is_handed(fdef: cst.FunctionDef) -> bool:
    """An assignment to an attribute or an item of a parameter (``history["images"] = ...``) or a
    method of one that changes it (``.append``, ``.update``: apis.CONTAINER_MUTATORS)."""
    params = {p.name.value for p in fdef.params.params}
    for node in walk(fdef.body):
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else \
            [node.target] if isinstance(node, (cst.AugAssign, cst.AnnAssign)) else []
        for t in targets:
            while isinstance(t, (cst.Attribute, cst.Subscript)):
                t = t.value
                if isinstance(t, cst.Name) and t.value in params:
                    return True
        if isinstance(node, cst.Call) and method_name(node) in apis.CONTAINER_MUTATORS:
            base = receiver(node)
            if isinstance(base, cst.Name) and base.value in params:
                return True
    return False


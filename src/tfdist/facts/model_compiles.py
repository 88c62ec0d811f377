"""Which models a fit trains with an optimizer this file never configures:
built and compiled by a function of another module of the project
(``model = Unet(1)`` with ``Unet`` compiling what it returns), or loaded
compiled (``keras.models.load_model(path)`` restores the saved optimizer).
Horovod averages gradients only through the optimizer ``compile()`` is
given; the conversion of this file cannot reach one made elsewhere."""
from __future__ import annotations

from typing import List, NamedTuple

import libcst as cst

from .. import apis
from ..engine import analysis as A
from ..engine.memo import fact
from .keras_models import model_calls
from .syntax import receiver


class UncompiledFit(NamedTuple):
    call: cst.Call  # the fit / train_on_batch
    made: cst.Call  # the call that makes the model: another module's function, or a loader
    where: str  # "build_compiled() of model.py, line 6" / "keras.models.load_model"


@fact
def model_origins(a: A.Analysis, expr) -> frozenset:
    """ids of the calls that make the model(s) ``expr`` may be."""
    return frozenset(id(t.call) for t in a.types(expr) if t.kind == A.MODEL and t.call is not None)


@fact
def uncompiled_fits(a: A.Analysis) -> List[UncompiledFit]:
    """Each fit (or train_on_batch) whose model every binding makes by a
    call of another module's function or a Keras loader, and no compile()
    of this file prepares (a compile on an object whose construction tfdist
    cannot tell may be that model's: then none is listed)."""
    compiled: set = set()
    for call in model_calls(a, {"compile"}):
        origins = model_origins(a, receiver(call))
        if not origins:
            return []
        compiled |= origins
    out = []
    for call in model_calls(a, apis.KERAS_FIT_METHODS | {"train_on_batch"}):
        made = [t.call for t in a.types(receiver(call)) if t.kind == A.MODEL and t.call is not None]
        if not made or any(id(m) in compiled for m in made):
            continue
        where = [_made_where(a, m) for m in made]
        if all(where):
            out.append(UncompiledFit(call, made[0], where[0]))
    return out


def _made_where(a: A.Analysis, made: cst.Call) -> str:
    """How ``made`` makes a model compiled elsewhere, or "" when it does not."""
    loader = a.is_name(made, apis.KERAS_MODEL_LOADERS)
    if loader is not None:
        return f"{a.code(made.func)}(...) (line {a.line(made)}), which restores the optimizer saved with the model"
    found = a.project_definition(made.func)
    if found is None:
        return ""
    other, fdef = found
    module = other.project.module_name or "another module"
    return f"{fdef.name.value}() of module {module} (line {other.line(fdef)}), called at line {a.line(made)}"

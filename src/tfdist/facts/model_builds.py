"""What Keras builds a subclassed model from when a strategy runs fit().

Measured (TF 2.21, Keras 3.15, MirroredStrategy over 2 logical CPUs and
MultiWorkerMirroredStrategy): fit() on a model made in a strategy's scope
first builds the model, its compiled loss and its metrics by calling the
model symbolically on fit's first batch (``Trainer._symbolic_build``, also
when the model's own layers are built already). Without a strategy Keras
builds them when the step is first traced, on whatever the step calls the
model with; tf-keras does so under a strategy too. Two shapes of custom
``train_step`` cannot be built from fit's batch under Keras 3:

- a class with no ``call()`` of its own (a GAN or VAE trainer whose step
  runs its sub-models): its variables are its sub-models', and it is marked
  built when its ``keras.Model.__init__`` is given no inputs and outputs
  (which would make it a functional model, with a call());
- a class whose step calls the model only on tensors it holds
  (``self([self.node_states, self.edges])`` in a graph network fed node
  indices): the symbolic call on fit's batch fails ("Unable to
  automatically build the model", an input-shape error).
"""
from __future__ import annotations

from typing import List

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine.dataflow import assigned_by, element_value, names_in
from ..engine.memo import fact
from ..engine.values import returned_values
from ..engine.scopes import walk
from . import external_functions
from .syntax import calls_in, receiver

KERAS_MODEL_INPUTS = ("inputs", "outputs")


@fact
def held_input_calls(a: A.Analysis, cls: cst.ClassDef) -> List[cst.Call]:
    """The calls of the model itself in cls's ``train_step`` (``self(...)``)
    when there is one and none is handed what the step's data parameter
    holds (followed through the step's bindings); else []."""
    steps = a.class_methods(cls, "train_step")
    if not steps or len(steps[0].params.params) < 2:
        return []
    data = steps[0].params.params[1]
    calls = [c for c in calls_in(steps[0].body)
             if isinstance(c.func, cst.Name) and a.self_class(c.func) is cls]
    if not calls or any(_reads(a, arg.value, data, 0, set()) for c in calls for arg in c.args):
        return []
    return calls


def _reads(a: A.Analysis, expr, param: cst.Param, depth: int, seen: set) -> bool:
    """expr reads param, directly or through the values bound to the names it reads."""
    if depth > 10:
        return True  # too deep to tell: taken as reading it (nothing is changed then)
    for n in names_in(expr):
        for origin, value in a.assigned_values(n):
            if origin is param:
                return True
            if value is None and isinstance(origin, cst.Name):
                value = element_value(a, origin) or assigned_by(a, origin)  # x, y = data
            if value is not None and id(value) not in seen:
                seen.add(id(value))
                if _reads(a, value, param, depth + 1, seen):
                    return True
    return False


@fact
def hands_keras_no_inputs(a: A.Analysis, cls: cst.ClassDef) -> bool:
    """cls's ``__init__`` hands ``super().__init__`` no inputs and outputs:
    nothing positional, no ``inputs=``/``outputs=``, and a ``**kwargs`` only
    when every construction of cls in this module passes neither (no more
    positional arguments than its ``__init__`` names, no ``inputs=`` /
    ``outputs=``, no ``*`` / ``**`` of its own)."""
    inits = a.class_methods(cls, "__init__")
    if not inits:
        return False
    for c in calls_in(inits[0].body):
        if not (isinstance(c.func, cst.Attribute) and c.func.attr.value == "__init__"):
            continue
        for arg in c.args:
            if arg.keyword is not None:
                if arg.keyword.value in KERAS_MODEL_INPUTS:
                    return False
            elif arg.star != "**" or not _constructions_fill_named(a, cls, inits[0]):
                return False
    return True


def _constructions_fill_named(a: A.Analysis, cls: cst.ClassDef, init: cst.FunctionDef) -> bool:
    positional = len(init.params.params) - 1
    made = [c for c in a.calls if _constructs(a, c, cls)]
    if not made:
        return False  # built where tfdist cannot see what it is given
    for c in made:
        if sum(1 for arg in c.args if arg.keyword is None and not arg.star) > positional:
            return False
        if any(arg.star for arg in c.args) or any(
                arg.keyword is not None and arg.keyword.value in KERAS_MODEL_INPUTS for arg in c.args):
            return False
    return True


def _constructs(a: A.Analysis, call: cst.Call, cls: cst.ClassDef) -> bool:
    found = a.class_of(call.func) if isinstance(call.func, (cst.Name, cst.Attribute)) else None
    return found is not None and found.node is cls



#: keywords of a Keras layer giving the model its input shape when it is made
SHAPE_KEYWORDS = {"input_shape", "input_dim", "batch_input_shape", "shape"}


@fact
def built_when_made(a: A.Analysis, expr) -> bool:
    """Is every model ``expr`` may hold built (its variables made) when it is
    constructed -- a functional ``Model(inputs, outputs)``, a ``Sequential``
    whose first layer is an ``Input`` or is given its input shape? A
    subclass, or a Sequential without a shape, makes its variables at its
    first call (under MultiWorkerMirroredStrategy a collective: the workers
    agree on their initial values)."""
    types = [t for t in a.types(expr) if t.kind == A.MODEL]
    return bool(types) and all(t.call is not None and _built_by(a, t.name, t.call) for t in types)


def _built_by(a: A.Analysis, name: str, call: cst.Call) -> bool:
    if name == "keras.Model":
        return len(call.args) >= 2 or any(arg.keyword is not None and arg.keyword.value in KERAS_MODEL_INPUTS
                                          for arg in call.args)
    if name != "keras.Sequential" or not call.args or not isinstance(call.args[0].value, (cst.List, cst.Tuple)):
        return False
    elements = call.args[0].value.elements
    first = elements[0].value if elements else None
    return isinstance(first, cst.Call) and (a.is_name(first, apis.KERAS_SYMBOLIC_INPUTS | {"keras.layers.InputLayer"})
                                            is not None or any(arg.keyword is not None and arg.keyword.value
                                                               in SHAPE_KEYWORDS for arg in first.args))


@fact
def layer_building(a: A.Analysis, name) -> List[cst.BaseStatement]:
    """``net = layers.BatchNormalization(...)``, a Keras layer trained by
    itself (its ``trainable_variables`` handed to a tape): the statement
    making it and the first statement after it, in its block, that calls it
    -- a layer makes its variables at its first call, so both must run in a
    strategy's scope. [] for anything else, or when that first call is not
    in the same block (then it is in the training itself)."""
    bound = a.assigned_values(name) if isinstance(name, cst.Name) else []
    if len(bound) != 1 or not isinstance(bound[0][0], cst.Assign) or not isinstance(bound[0][1], cst.Call):
        return []
    origin, value = bound[0]
    target = origin.targets[0].target if len(origin.targets) == 1 else None
    if not isinstance(target, cst.Name) or not any(
            n.startswith(apis.KERAS_LAYER_MODULES) and n.rsplit(".", 1)[1][:1].isupper() for n in a.names(value)):
        return []
    return _made_and_first_called(a, value, target)


@fact
def lazy_model_building(a: A.Analysis, name) -> List[cst.BaseStatement]:
    """``generator = Generator()`` of a model that makes its variables at its first call (a
    subclass; not built when made), then ``fake = generator(noise)`` later in its block: the
    statement making it and that first call -- run outside the scope, the call would make the
    variables there. [] for anything else (also a model built when made)."""
    bound = a.assigned_values(name) if isinstance(name, cst.Name) else []
    if len(bound) != 1 or not isinstance(bound[0][0], cst.Assign) or not isinstance(bound[0][1], cst.Call):
        return []
    origin, value = bound[0]
    target = origin.targets[0].target if len(origin.targets) == 1 else None
    if not isinstance(target, cst.Name) or not a.is_kind(name, A.MODEL) or built_when_made(a, name):
        return []
    made = _made_and_first_called(a, value, target)
    # the first call a plain statement (``fake = generator(noise)``), not the training loop, nor a
    # definition (a step function's body runs when it is called)
    return made if len(made) == 2 and isinstance(made[1], cst.SimpleStatementLine) else []


def _made_and_first_called(a: A.Analysis, value: cst.Call, target: cst.Name) -> List[cst.BaseStatement]:
    stmt = a.statement_of(value)
    block = a.parent(stmt)
    body = list(getattr(block, "body", ()))
    if stmt not in body:
        return []
    uses = {id(r) for r in a.scopes.references(target)}
    for later in body[body.index(stmt) + 1:]:
        if isinstance(later, (cst.FunctionDef, cst.ClassDef)):
            continue  # defined, not run
        if any(isinstance(n, cst.Call) and id(n.func) in uses for n in calls_in(later)):
            return [stmt, later]
    return [stmt]


@fact
def fitted_class_without_call(a: A.Analysis, call: cst.Call):
    """(model name, analysis of the class's module, class) for ``model.fit(...)`` on an instance
    of a keras.Model subclass with a ``train_step`` and no ``call()`` whose ``__init__`` hands
    keras.Model no inputs and outputs (not a functional subclass): a class of this module, or of
    another module of the project (``Net()`` of ``from nets import Net``, or what a function
    there returns: ``ddim.create_model(...)``), read in its own module. Only when the whole
    lineage is readable there, on keras.Model (a base tfdist cannot read may define call()).
    None otherwise."""
    model = receiver(call)
    if not isinstance(model, cst.Name):
        return None
    classes = a.instance_classes(model)
    owner, cls = (a, classes[0]) if len(classes) == 1 else _imported_class(a, model)
    if cls is None:
        return None
    lineage = owner.lineage(cls)
    for klass in lineage:
        for base in klass.bases:
            if base.keyword is not None:
                continue
            known = owner.class_of(base.value)
            if not (known is not None and known.node in lineage or owner.is_name(base.value, apis.KERAS_MODEL_CLASSES)):
                return None
    if owner.class_methods(cls, "call") or not owner.class_methods(cls, "train_step"):
        return None
    if not hands_keras_no_inputs(owner, cls):
        return None
    return model, owner, cls


#: What a custom train_step reads of the loss compile() configured (Keras's compiled loss), as
#: opposed to the loss object itself (``self.loss(y, y_pred)``).
COMPILED_LOSS_READS = {"compute_loss", "compiled_loss", "_compile_loss"}


@fact
def reads_compiled_loss(a: A.Analysis, cls: cst.ClassDef) -> bool:
    """Does the class (or a base class of its module) read Keras's compiled loss (``self.compute_loss``,
    ``self.compiled_loss``)? A step that does not never builds it, so it may be marked built."""
    return any(isinstance(n, cst.Attribute) and n.attr.value in COMPILED_LOSS_READS
               for klass in a.lineage(cls) for n in walk(klass))


def _imported_class(a: A.Analysis, model: cst.Name):
    """(analysis of its module, class) when the model's one binding makes an instance of a class
    another module of the project defines, directly or returned by a function there; else (a, None)."""
    bound = a.assigned_values(model)
    if len(bound) != 1 or not isinstance(bound[0][1], cst.Call):
        return a, None
    made = bound[0][1]
    found = a.project_definition(made.func, cst.ClassDef)
    if found is not None:
        return found
    found = external_functions.external_function_of(a, made)
    if found is None:
        return a, None
    other, fdef = found
    returned = returned_values(fdef)
    classes = {id(c): c for value in returned for c in other.instance_classes(value)}
    return (other, next(iter(classes.values()))) if len(returned) == 1 and len(classes) == 1 else (a, None)

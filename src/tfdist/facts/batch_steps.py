"""Which models a script trains with ``train_on_batch`` and how they are compiled.

Keras ``train_on_batch`` loops (a GAN's discriminator and combined model,
or one model stepped over slices): what each engine needs.

Horovod (per-rank batches): every compiled optimizer is wrapped and its
learning rate scaled (keras_fit's compile handling); fit's broadcast
callback does not run for train_on_batch, so each model's variables and its
optimizer's state are broadcast from rank 0 once, after the model's first
train_on_batch created the optimizer's slots (``optimizer.iterations == 1``,
checked after every call site: only one fires); the step loop is divided as
a tape loop's is (gradient_tape._divide_loops: arrays read by offset sliced
by rank, the step count divided) and NumPy's global generator re-seeded by
rank before a loop drawing its batches from it.

tf.distribute (measured on TF 2.21, tf-keras, 2 replicas: tests/slow
correctness script ``tob_gan``): train_on_batch takes the batch it is given
as the *global* batch and splits it between the replicas -- local replicas
under MirroredStrategy take their slices of it, and under
MultiWorkerMirroredStrategy each worker keeps its own slice of the batch it
fed (worker g the g-th part), the gradients averaged. So the user's batch
stays the global batch: the models and optimizers are built in the scope,
the learning rate and the step count are kept, and every replica trains on
its own part of every batch. Keras 3 (``import keras``) is refused: its
train_on_batch fails under MultiWorkerMirroredStrategy (measured on Keras
3.15: "Invalid reduction dimension 0 for input with 0 dimensions").
"""
from __future__ import annotations

from typing import Dict, List, Set
import libcst as cst
from ..engine.memo import fact
from ..engine import analysis as A
from ..engine import dataflow
from .dataset_flow import call_sites
from .syntax import receiver
from . import keras_models
from . import kinds
from . import replica_state


RULE = kinds.KERAS
#: NumPy generator objects: seeded, they hand every rank the same draws.
NUMPY_GENERATORS = {"numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator"}


@fact
def calls(a: A.Analysis) -> List[cst.Call]:
    return keras_models.model_calls(a, {"train_on_batch"})


def _followed(a: A.Analysis, model):
    """The expression a stepped model's name stands for: a parameter of a
    function called once followed to the argument of that call."""
    for _ in range(6):
        if not isinstance(model, cst.Name):
            break
        bound = a.assigned_values(model)
        if len(bound) != 1 or not isinstance(bound[0][0], cst.Param):
            break
        passed = a.argument_values(bound[0][0])
        fdef = a.enclosing_function(bound[0][0])
        if len(passed) != 1 or fdef is None or len(call_sites(a, fdef)) != 1:
            break
        model = passed[0][1]
    return model


@fact
def compiled_as(a: A.Analysis, model) -> Set[str]:
    """The keys a model's compile() may carry: its own, and, for a model a
    function of this file builds (``d_model = define_discriminator()``),
    the model that function compiles and returns (``model.compile(...);
    return model``)."""
    keys = {model_key(a, model)}
    model = _followed(a, model)
    bound = a.assigned_values(model) if isinstance(model, cst.Name) else []
    if len(bound) != 1:
        return keys
    origin, value = bound[0]
    returns = []
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
        fdefs = a.local_functions(value.func)
        returns = A.returned_values(fdefs[0]) if len(fdefs) == 1 else []
    elif value is None:  # generator, discriminator, combined = build_models(): its element
        returns = a.tuple_element_values(origin)
    if returns and all(isinstance(r, cst.Name) for r in returns):
        keys |= {model_key(a, r) for r in returns}
    return keys


@fact
def model_key(a: A.Analysis, model) -> str:
    """Which model object an expression names: a name by the bindings that
    reach it (a notebook rebinding ``model`` cell after cell holds several
    models, each compiled in its own cell), anything else by the function it
    is in and its text (``self.gan``); a parameter of a function called
    once by the argument of that call (``train(discriminator=discriminator)``)."""
    model = _followed(a, model)
    if isinstance(model, cst.Name):
        bound = a.assigned_values(model)
        if bound and not any(isinstance(origin, cst.Param) for origin, _ in bound):
            return f"{model.value}:" + ",".join(str(id(origin)) for origin, _ in bound)
    owner = replica_state.self_attribute_class(a, model)
    if owner is not None:  # self.discriminator: one attribute in every method of the class
        return f"{id(owner)}:self.{model.attr.value}"
    return f"{id(a.enclosing_function(model))}:{a.code(model)}"


@fact
def by_model(a: A.Analysis, tob: List[cst.Call]) -> Dict[str, List[cst.Call]]:
    out: Dict[str, List[cst.Call]] = {}
    for c in tob:
        out.setdefault(model_key(a, receiver(c)), []).append(c)
    return out


@fact
def step_loops(a: A.Analysis, tob: List[cst.Call]):
    out = []
    for c in tob:
        loop = dataflow.outermost_loop(a, c)
        if loop is not None and loop not in out:
            out.append(loop)
    return out


# ------------------------------------------------------------ tf.distribute
KERAS3_REFUSAL = (
    "train_on_batch under Keras 3 (import keras) fails under MultiWorkerMirroredStrategy (measured on Keras 3.15, "
    "TF 2.21: \"Invalid reduction dimension 0 for input with 0 dimensions\"); not converted for --backend "
    "tf-distribute (use tf.keras with tf-keras, or a GradientTape loop)")

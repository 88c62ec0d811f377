"""Which calls step a reinforcement-learning environment, and which training
steps run in the loops that step one.

An environment (the Gym protocol: ``obs, reward, done, info =
env.step(action)``, ``env.reset()``) is stepped by each process on its own:
its episodes end when they end (``done``), so how many training steps a
process runs, and on what experience, is decided by its environment, not by
its share of a dataset. Under a distributed engine every process must run the
same number of collective steps (else they wait for each other forever) and
an episode loop cut to 1/N of its steps is another task. Such loops are
found here; what to do with them is the rule's.

An environment is an object a known factory made (apis.RL_ENVIRONMENT_FACTORIES:
``gym.make``...), or whose ``step(...)`` result is unpacked into at least
apis.RL_STEP_RESULTS names (an environment class of the script's own), never
a Keras model or optimizer.
"""
from __future__ import annotations

from typing import List, Tuple

import libcst as cst
from .. import apis
from ..engine import analysis as A
from ..engine import dataflow
from ..engine.memo import fact
from ..engine.scopes import walk
from .syntax import method_name, receiver
from . import gradient_tapes

RULE = "environment-loops"
#: Keras model methods that run training steps
TRAINING_METHODS = apis.KERAS_FIT_METHODS | {"train_on_batch"}


@fact
def environment_steps(a: A.Analysis) -> List[cst.Call]:
    """The calls stepping an environment, in source order."""
    out = []
    for c in a.calls:
        if method_name(c) != "step":
            continue
        r = receiver(c)
        if a.kinds(r) & {A.MODEL, A.KERAS_OPTIMIZER, A.MODULE}:
            continue
        if _made_by_factory(a, r) or _unpacked_as_gym_step(a, c):
            out.append(c)
    return out


def _made_by_factory(a: A.Analysis, r) -> bool:
    if isinstance(r, cst.Name):
        values = [v for _, v in a.assigned_values(r)]
    elif isinstance(r, cst.Attribute) and isinstance(r.value, cst.Name):
        fdef = a.enclosing_function(r)
        owner = a.method_owner(fdef) if fdef is not None else None
        values = a.attribute_values(owner, r.attr.value) if owner is not None and a.self_class(r.value) else []
    else:
        values = []
    return any(isinstance(v, cst.Call) and a.is_name(v, apis.RL_ENVIRONMENT_FACTORIES) for v in values)


def _unpacked_as_gym_step(a: A.Analysis, c: cst.Call) -> bool:
    asg = a.parent(c)
    if not (isinstance(asg, cst.Assign) and asg.value is c and len(asg.targets) == 1):
        return False
    target = asg.targets[0].target
    return isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) >= apis.RL_STEP_RESULTS


@fact
def training_calls(a: A.Analysis) -> List[cst.Call]:
    """Calls running a training step: an optimizer applying gradients, a Keras model's
    fit / train_on_batch."""
    out = list(gradient_tapes.apply_calls(a))
    out += [c for c in a.calls if method_name(c) in TRAINING_METHODS and A.MODEL in a.kinds(receiver(c))]
    return sorted(out, key=a.line)


@fact
def trained_in_environment_loops(a: A.Analysis) -> List[Tuple[cst.CSTNode, cst.Call, cst.Call]]:
    """(loop, environment step, training call): a loop whose body steps an environment and
    runs a training step (each directly or through the module's functions it calls) a number
    of times its environment may decide -- the loop, or a loop inside it around the training,
    is a ``while`` loop or has a ``break`` of its own. A fixed number of updates, each on a
    rollout of fixed length (a synchronous actor-critic's ``for update in range(n)``), is not
    such a loop: every process runs the same steps, each on its own environment's experience."""
    steps = environment_steps(a)
    if not steps:
        return []
    trains = training_calls(a)
    out = []
    for loop in sorted([*a.for_loops, *a.while_loops], key=a.line):
        step = _reached(a, loop.body, steps)
        found = _reached_at(a, loop.body, trains) if step is not None else None
        if found is None:
            continue
        site, train = found
        around = [x for x in (loop, *a.ancestors(site)) if isinstance(x, (cst.For, cst.While))
                  and (x is loop or dataflow.is_inside(a, x, loop))]
        if any(isinstance(x, cst.While) or _breaks(x) for x in around):
            out.append((loop, step, train))
    return out


def _breaks(loop) -> bool:
    """A ``break`` of the loop itself (not of a loop or function inside it)."""
    todo = list(loop.body.children)
    while todo:
        n = todo.pop()
        if isinstance(n, cst.Break):
            return True
        if not isinstance(n, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            todo.extend(n.children)
    return False


def _reached(a: A.Analysis, body, calls):
    """The first of calls in body, or in a function of the module body calls (transitively)."""
    found = _reached_at(a, body, calls)
    return found[1] if found is not None else None


def _reached_at(a: A.Analysis, body, calls):
    """(node of body, call): the first of calls in body itself, or the call in body running a
    function of the module that reaches one (transitively); None when none is reached."""
    ids = {id(c): c for c in calls}
    for n in walk(body):
        if id(n) in ids:
            return n, ids[id(n)]
        if isinstance(n, cst.Call):
            found = []

            def holds(node) -> bool:
                hits = [ids[id(x)] for x in walk(node) if id(x) in ids]
                found.extend(hits)
                return bool(hits)

            if any(dataflow.reaches(a, f.body, holds) for f in dataflow.callees(a, n)):
                return n, found[0]
    return None

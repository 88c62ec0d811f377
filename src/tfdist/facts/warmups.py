"""What --warmup-epochs needs to know: the epochs, the schedules already there, how they are
phrased.

--warmup-epochs K: gradual learning-rate warmup (Goyal et al., "Accurate,
Large Minibatch SGD", 2017). The scaled rate (--lr-scaling linear or sqrt) is
reached linearly, step by step, from the single-process rate over the first
K epochs: a rate N times larger from the first step can diverge.

What must happen (the backend says how):

- Keras fit(): a warmup callback after the engine's own callbacks; fit()
  hands it its steps per epoch at run time. A rate that is the script's
  own schedule cannot be set by a callback: the schedule is wrapped as for
  tape loops, and a callback tells the wrapper fit()'s steps per epoch.
- GradientTape loops: the optimizer's rate -- the scaled number or the
  script's own (scaled) schedule -- becomes a schedule around it that warms
  it up over K epochs of this process's steps. The epoch length is this
  process's batches of the dataset the step loop iterates inside an epoch
  loop, set right before that loop; where the converter cannot see an
  epoch, --steps-per-epoch S (the original's steps per epoch) gives it.
- TF1 loops: the same around the rate tensor, counted by the global step
  minimize() increments; their epochs are never visible to the converter
  (the graph is built before any loop runs), so --steps-per-epoch is needed.

Anything else is refused with the line and the option to use: a warmup
over a guessed number of steps would be wrong silently.
"""
from __future__ import annotations

import libcst as cst
from . import kinds


RULE = kinds.LR_WARMUP
#: What to do where the converter cannot see an epoch.
GIVE_STEPS = ("convert with --steps-per-epoch S as well, S being the original script's optimizer steps per epoch "
              "(samples / batch size)")


def warmup_state(ctx) -> dict:
    return ctx.state("warmup", dict)


def phrase(ctx) -> str:
    """What the warmup does to a rate, for the report ('' without a warmup)."""
    k = ctx.backend.warmup_epochs
    if not k:
        return ""
    return (f", reached by a linear warmup from the rate as written over the first {k} "
            f"epoch{'s' if k > 1 else ''} (--warmup-epochs {k})")


def epochs_phrase(k: int) -> str:
    return f"{k} epoch{'s' if k > 1 else ''}"


def plain_reference(node) -> bool:
    """A name or a dotted attribute of names (evaluated again without effect)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def keras_module(ctx) -> str:
    """The Keras module the file uses, as a template."""
    return "{keras}" if ctx.facts.get("keras_flavor") == "keras" else "{tf}.keras"


def note_schedule(ctx, schedule: cst.Call) -> None:
    """A learning-rate schedule feeds an optimizer (fit()'s warmup callback
    cannot set its rate: apply() refuses one that was not wrapped)."""
    warmup_state(ctx).setdefault("schedules", []).append(schedule)

"""--warmup-epochs K: gradual learning-rate warmup (Goyal et al., "Accurate,
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

from typing import Optional
import libcst as cst
from ..engine import dataflow
from ..facts.warmups import GIVE_STEPS, RULE, warmup_state
from ..facts import gradient_tapes
from ..facts import tape_rows
from ..engine.rule import Rule, register


def _epoch_length(ctx) -> None:
    """Tape loops without --steps-per-epoch: this process's steps per epoch
    are the batches of the dataset its step loop iterates, once per pass of
    an epoch loop around it; set right before that epoch loop."""
    a = ctx.a
    applies = {id(p) for p in gradient_tapes.apply_calls(a)}
    loops = [f for f in a.for_loops if tape_rows.runs_optimizer_step(a, f.body, applies)]
    inner = [f for f in loops if not any(o is not f and dataflow.is_inside(a, o, f) for o in loops)]
    first = warmup_state(ctx)["loop_optimizers"][0]
    places = []
    for loop in inner:
        dataset, take = tape_rows.loop_dataset(a, loop.iter)
        epoch_loop = dataflow.outermost_loop(a, loop)
        reason = _why_not_epoch(a, loop, dataset, take, epoch_loop)
        if reason:
            raise ctx.unsupported(loop, f"--warmup-epochs: {reason}, so the converter cannot tell how many steps make "
                                        f"an epoch; {GIVE_STEPS}")
        places.append((epoch_loop, dataset))
    if not places:
        raise ctx.unsupported(first, "--warmup-epochs: no training loop over a dataset inside an epoch loop was "
                                     f"found, so the converter cannot tell how many steps make an epoch; {GIVE_STEPS}")
    if len({(id(e), d.value) for e, d in places}) > 1:
        raise ctx.unsupported(places[1][0], f"--warmup-epochs: several training loops with their own epochs; "
                                            f"{GIVE_STEPS}")
    epoch_loop, dataset = places[0]
    name = warmup_state(ctx)["schedule"]
    ctx.plan.insert_before(epoch_loop, ctx.stmts(
        f"{name}.steps_per_epoch = int({dataset.value}.cardinality())",
        comment=ctx.say("{engine}: the learning-rate warmup counts epochs in this process's batches of "
                        "{dataset}.", dataset=dataset.value)))
    ctx.change(dataset, RULE, f"the learning-rate warmup's epoch: this process's batches of {dataset.value}, "
                              f"counted before the epoch loop (line {a.line(epoch_loop)})")


def _why_not_epoch(a, loop, dataset, take, epoch_loop) -> Optional[str]:
    """Why a step loop does not show its epoch ('' / None when it does)."""
    line = a.line(loop)
    if dataset is None or not isinstance(dataset, cst.Name) or take is not None:
        return f"the training loop at line {line} does not iterate a dataset by its name"
    if epoch_loop is None or epoch_loop is loop:
        return f"the training loop at line {line} over {dataset.value} has no epoch loop around it"
    # bound before the epoch loop: assignments above it, or a parameter of
    # the function it is in (``def train(dataset, epochs)``)
    origins = [origin for origin, _ in a.assigned_values(dataset)]
    late = [o for o in origins if not isinstance(o, cst.Param)
            and (a.statement_of(o) is None or a.end_line(a.statement_of(o)) >= a.line(epoch_loop))]
    if not origins or late:
        return f"{dataset.value} is not bound once and for all before the epoch loop at line {a.line(epoch_loop)}"
    return None


# --------------------------------------------------------------------- rule
def apply(ctx) -> None:
    k = ctx.backend.warmup_epochs
    if not k:
        return
    schedules = warmup_state(ctx).get("schedules")
    if schedules and warmup_state(ctx).get("fits"):
        # a schedule reached by fit() that tfdist did not wrap (it could not
        # see which optimizer it feeds): the callback would set its rate
        unwrapped = [s for s in schedules if s not in warmup_state(ctx).get("wrapped_schedules", ())]
        if unwrapped:
            raise ctx.unsupported(unwrapped[0], "--warmup-epochs with a learning-rate schedule in Keras fit() whose "
                                                "optimizer tfdist cannot see: the warmup callback would set the rate "
                                                "the schedule computes itself; convert without --warmup-epochs, or "
                                                "warm the schedule up by hand")
    if warmup_state(ctx).get("loop_optimizers") and not ctx.backend.steps_per_epoch:
        _epoch_length(ctx)


@register
class LrWarmup(Rule):
    id = "lr-warmup"
    description = "--warmup-epochs K: the learning rate ramps up to the scaled rate over the first K epochs."
    engines = ('horovod', 'tf-distribute')
    kinds = ('lr-warmup',)
    refuses = "a warmup whose epoch length it cannot see (give --steps-per-epoch); several training loops with epochs of their own; a schedule it cannot wrap"
    example = "gradient_tape/schedule_in_main"
    example_option = "warmup-"
    order = 70

    def apply(self, ctx) -> None:
        apply(ctx)

"""Training steps inside a loop that steps a reinforcement-learning
environment: refused on every engine, with the loop's line.

Each process steps its own environment; its episodes end when its
environment says (``done``), so the number of training steps each process
runs -- and the experience each trains on -- is its environment's to decide.
Averaging gradients needs every process to run the same number of
collective steps: one process finishing an episode earlier would wait for
the others forever, or pair its gradients with another step's. And the
episode loop is no pass over data: run for 1/N of its steps it is another
task, not a share of this one. What tfdist cannot divide it refuses
(facts/environments.py says which loops these are).
"""
from __future__ import annotations

from ..engine.rule import Rule, register
from ..facts import environments


@register
class RefuseEnvironmentLoops(Rule):

    id = "refuse-environment-loops"
    description = ("Training steps in a loop that steps a reinforcement-learning environment (Gym protocol): "
                   "each process's episodes decide its steps; refused on every engine, with the loop's line.")
    engines = ("horovod", "tf-distribute")
    kinds = ()
    refuses = ("a loop stepping an environment (env.step) that also trains: the processes would run different "
               "numbers of collective steps")
    example = "unsupported/rl_environment_loop"
    order = 1

    def prepare(self, ctx) -> None:
        found = environments.trained_in_environment_loops(ctx.a)
        if not found:
            return
        a = ctx.a
        loop, step, train = found[0]
        raise ctx.unsupported(loop, ctx.say(
            "this loop steps a reinforcement-learning environment ({step}, line {step_line}) and trains "
            "({train}, line {train_line}): each process's episodes would decide how many training steps it runs "
            "and on what, so the processes would not run the same number of collective steps (one would wait "
            "for the others forever), and an episode loop cut to a share of its steps is another task. Not "
            "converted: distribute the learner yourself (e.g. collect experience in every process and train one "
            "learner on it), or train on a fixed dataset of transitions",
            step=a.code(step.func), step_line=str(a.line(step)), train=a.code(train.func),
            train_line=str(a.line(train))))

    def apply(self, ctx) -> None:
        return None

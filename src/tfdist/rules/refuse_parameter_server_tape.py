"""``tf.GradientTape`` training loops under tf.distribute's
ParameterServerStrategy (``--strategy parameter-server``): not converted yet
(the step would have to become a ``tf.function`` a ``ClusterCoordinator``
schedules on a per-worker iterator, its losses read back as ``RemoteValue``s):
refused with the reason and the engines that convert it, before anything is
written."""
from __future__ import annotations

from ..actions.refusals import RefusedPattern
from ..engine import patterns as P
from ..engine.context import Unsupported
from ..engine.rule import register
from ..facts import gradient_tapes


@register
class RefuseParameterServerTape(RefusedPattern):

    id = "refuse-parameter-server-tape"
    description = "GradientTape loops under ParameterServerStrategy, not converted yet: refused, naming the strategy and engine that convert them."
    engines = ("parameter-server",)
    kinds = ()
    refuses = "every script of this pattern under --strategy parameter-server (convert it with --strategy mirrored)"
    example = "gradient_tape/eager_loop"
    order = 20
    PATTERN = P.TAPE

    def detect(self, a):
        return gradient_tapes.detect(a)

    def apply(self, ctx) -> None:
        evidence = list(self.detect(ctx.a))
        raise Unsupported(evidence[0].line if evidence else 1, ctx.backend.tape_refusal())

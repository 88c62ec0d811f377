"""TF1 ``tf.Session`` training for engines that cannot run it (tf.distribute's
strategies drive TF2 code only): refused, with the backend's reason, before
anything is written."""
from __future__ import annotations

from ..actions.refusals import RefusedPattern
from ..engine.rule import register
from ..facts import sessions


@register
class RefuseTf1Session(RefusedPattern):

    id = "refuse-tf1-session"
    description = "TF1 Session training, which tf.distribute strategies cannot run: refused with the engine's reason."
    engines = ("tf-distribute", "parameter-server")
    kinds = ()
    refuses = "every script of this pattern (convert it with --backend horovod)"
    example = "session/in_graph_samples"
    order = 30
    PATTERN = sessions.PATTERN

    def detect(self, a):
        return sessions.detect(a)

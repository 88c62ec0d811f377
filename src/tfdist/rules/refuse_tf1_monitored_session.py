"""TF1 ``MonitoredTrainingSession`` training for engines that cannot run it (tf.distribute's
strategies drive TF2 code only): refused, with the backend's reason, before
anything is written."""
from __future__ import annotations

from ..actions.refusals import RefusedPattern
from ..engine.rule import register
from ..facts import monitored_sessions


@register
class RefuseTf1MonitoredSession(RefusedPattern):

    id = "refuse-tf1-monitored-session"
    description = "TF1 MonitoredTrainingSession training, which tf.distribute strategies cannot run: refused with the engine's reason."
    engines = ("tf-distribute", "parameter-server")
    kinds = ()
    refuses = "every script of this pattern (convert it with --backend horovod)"
    example = "monitored_session/no_hooks"
    order = 40
    PATTERN = monitored_sessions.PATTERN

    def detect(self, a):
        return monitored_sessions.detect(a)

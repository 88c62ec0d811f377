"""TF1 ``Session`` / ``MonitoredTrainingSession`` training, for engines that
cannot run it (tf.distribute's strategies drive TF2 code only): refused, with
the backend's reason, before anything is written."""
from __future__ import annotations

from . import monitored_session, session


class RefusedPattern:
    """A pattern detected as usual, then refused with the backend's reason."""

    def __init__(self, pattern, detect):
        self.PATTERN = pattern
        self.detect = detect

    def apply(self, ctx) -> None:
        evidence = [e for e in self.detect(ctx.a)]
        line = evidence[0].line if evidence else 1
        raise ctx.unsupported(None, ctx.backend.tf1_refusal()) if not evidence else _at(line, ctx.backend.tf1_refusal())


def _at(line: int, message: str):
    from ..engine.context import Unsupported
    return Unsupported(line, message)


SESSION = RefusedPattern(session.PATTERN, session.detect)
MONITORED_SESSION = RefusedPattern(monitored_session.PATTERN, monitored_session.detect)

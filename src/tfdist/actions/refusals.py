"""A training pattern an engine cannot run: detected as usual, then refused
with the backend's reason, before anything is written."""
from __future__ import annotations

from ..engine.context import Unsupported
from ..engine.rule import Rule


class RefusedPattern(Rule):
    """The base of a refusal rule: a subclass sets ``PATTERN`` and ``detect``;
    ``apply`` refuses the file at the first place the pattern was seen."""

    def apply(self, ctx) -> None:
        evidence = list(self.detect(ctx.a))
        if not evidence:
            raise ctx.unsupported(None, ctx.backend.tf1_refusal())
        raise Unsupported(evidence[0].line, ctx.backend.tf1_refusal())

"""What a rule is, and the registry of rules.

A rule is an object of a ``Rule`` subclass, registered with ``@register``
when its module is imported (as Fixit's rules are classes carrying their
own examples). It says what it is for: its ``id``, a one-line
``description``, the ``engines`` whose pipelines run it, the finding
``kinds`` it emits (the ``rule`` field of each change and warning in the
report), what it ``refuses``, and its ``example``: a case folder under
``tfdist/rules/examples/`` (``<pattern>/<case>/input.py`` and, per engine,
the ``expected*.py`` the conversion writes). The examples are whole-script
fixtures like those under ``tests/fast/fixtures``: the fixture tests check
them byte for byte, and ``tfdist rules ID`` shows them.

The engine runs rules (``tfdist.engine.pipeline``) and knows none of them:
rules import the engine, never the reverse.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

#: Every registered rule, by id, in registration order.
REGISTRY: Dict[str, "Rule"] = {}


class Rule:
    """The base of every rule; subclasses set the attributes and override
    ``apply`` (and ``detect`` and ``PATTERN`` when they convert a training
    pattern, ``prepare`` when they record something before any rule applies)."""

    id: str = ""
    description: str = ""
    engines: Tuple[str, ...] = ()
    kinds: Tuple[str, ...] = ()
    refuses: str = ""
    example: str = ""
    #: The option key part an example is converted with (``warmup-``), if any.
    example_option: str = ""
    #: Where the rule runs in its pipeline (lower first): pattern rules,
    #: then cross-cutting ones, then setup, which places what the others asked for.
    order: int = 0
    #: The training pattern a pattern rule converts (None: cross-cutting).
    PATTERN = None

    def detect(self, a) -> List:
        return []

    def prepare(self, ctx) -> None:
        return None

    def apply(self, ctx) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<rule {self.id}>"


def register(cls):
    """Class decorator: make one object of the rule class and register it by id."""
    rule = cls()
    if not rule.id or not rule.description or not rule.engines:
        raise ValueError(f"{cls.__name__}: a rule needs an id, a description and its engines")
    if rule.id in REGISTRY:
        raise ValueError(f"two rules with the id {rule.id!r}")
    REGISTRY[rule.id] = rule
    return cls


def rules_for(engine: str) -> Tuple[Rule, ...]:
    """The rules an engine's pipeline runs, in their order."""
    return tuple(sorted((r for r in REGISTRY.values() if engine in r.engines), key=lambda r: r.order))

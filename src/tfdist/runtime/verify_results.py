"""What `tfdist verify` establishes, as typed results: one Check per thing
checked, the results of a run, and the text helpers the checks and the
report share (paths relative to the run's directory, first lines, short lists,
values by rank)."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Check:
    """One thing verify established (``passed``) or found wrong."""
    name: str
    passed: bool
    measured: Any = None
    expected: Any = None
    #: The sentence of the text report ("ok: ..." when passed, the failure
    #: reason otherwise).  Empty for a passed check the text does not mention.
    detail: str = ""
    #: The name of the check whose sentence already tells this failure (the
    #: text says it once); None: rendered on its own.
    said_by: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class CheckResults:
    """All checks of one distributed run against the original."""
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    samples: dict | None = None        # the sample summary (sample_checks), when samples were checked

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def named(self, name: str) -> list[Check]:
        return [c for c in self.checks if c.name == name]


@dataclass
class SampleResults:
    """The sample checks (sample_checks)."""
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    summary: dict | None = None
    identical: bool = False



def rel_path(path: str, root: str | None) -> str:
    """``path`` relative to ``root`` when it lies under it."""
    if root:
        try:
            rel = os.path.relpath(path, root)
            if not rel.startswith(".."):
                return rel
        except ValueError:
            pass
    return path


def brief(text: str, limit: int = 160) -> str:
    """The first line of ``text``, cut to ``limit`` characters."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."


def short_list(items: list[str], limit: int = 4) -> str:
    """The first ``limit`` items, and how many more there are."""
    shown = ", ".join(items[:limit])
    return shown + (f", ... (+{len(items) - limit} more)" if len(items) > limit else "")


def by_rank(values: dict) -> dict:
    """{rank: value} with string keys, as JSON has them."""
    return {str(k): v for k, v in sorted(values.items())}

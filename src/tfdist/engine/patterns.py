"""Training patterns as a flat lattice: Unknown < each pattern < Multiple."""
from __future__ import annotations

from functools import reduce
from typing import Iterable

UNKNOWN = "Unknown"
MULTIPLE = "Multiple"
SESSION = "Session"
MONITORED = "MonitoredSession"
TAPE = "GradientTape"
KERAS = "Keras"
PATTERNS = (SESSION, MONITORED, TAPE, KERAS)

# Patterns that can share a file and be converted together: independent
# phases (fit, then a custom tape loop on the same model).
COMBINABLE = ({KERAS, TAPE},)


def join(a: str, b: str) -> str:
    if a == UNKNOWN:
        return b
    if b == UNKNOWN or a == b:
        return a
    return MULTIPLE


def join_all(patterns: Iterable[str]) -> str:
    return reduce(join, patterns, UNKNOWN)


def combinable(found: set) -> bool:
    return len(found) <= 1 or any(found <= c for c in COMBINABLE)

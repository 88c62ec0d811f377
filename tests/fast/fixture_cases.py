"""Where the whole-script fixtures live: tests/fast/fixtures/, and the rules'
own examples (src/tfdist/rules/examples/, shipped with tfdist so that
``tfdist rules ID`` can show them). Both have the layout
``<pattern>/<case>/input.py`` + ``expected*.py`` and are checked alike."""
from __future__ import annotations

from pathlib import Path
from typing import List

import tfdist.rules

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLES = Path(tfdist.rules.__file__).resolve().parent / "examples"
ROOTS = (FIXTURES, EXAMPLES)


def glob(pattern: str) -> List[Path]:
    """Every fixture path matching pattern under either root, sorted."""
    return sorted(p for root in ROOTS for p in root.glob(pattern))

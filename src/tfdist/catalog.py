"""``tfdist rules``: every rule, and one rule with its example (as ``ruff rule``).

``tfdist rules`` lists each registered rule: its id, the engines that run
it, its one-line description and what it refuses. ``tfdist rules ID``
shows one rule: description, engines, the finding kinds it emits, what it
refuses, and its example: the input of a fixture case shipped with tfdist
(``tfdist/rules/examples/``) and, for each of the rule's engines, the
unified diff to what the conversion writes -- the expected files the
fixture tests hold byte for byte. A rule that refuses a pattern shows the
refusal its engine gives for the example.
"""
from __future__ import annotations

import difflib
import sys
import textwrap
from pathlib import Path
from typing import List, Optional

from . import rules
from .api import convert_source
from .engine.rule import REGISTRY, Rule

EXAMPLES = Path(rules.__file__).resolve().parent / "examples"


def example_files(rule: Rule) -> List[Path]:
    """The expected files of a rule's example that show it: one per engine
    (``expected.py`` is Horovod's), or those converted with the rule's option."""
    case = EXAMPLES / rule.example
    out = []
    for engine in rule.engines:
        names = [p.name for p in sorted(case.glob("expected*.py"))]
        key = (lambda n: n.startswith(f"expected.{engine}+") and rule.example_option in n) if rule.example_option \
            else (lambda n: n == ("expected.py" if engine == "horovod" else f"expected.{engine}.py"))
        out += [case / n for n in names if key(n)][:1]
    return out


def listing() -> str:
    """Every rule, one paragraph each."""
    lines = [f"{len(REGISTRY)} rules (tfdist rules ID shows one with its example)", ""]
    for rule in sorted(REGISTRY.values(), key=lambda r: (r.engines != ("horovod", "tf-distribute"), r.engines, r.order)):
        lines.append(f"{rule.id:30} {', '.join(rule.engines)}")
        lines += textwrap.wrap(rule.description, 88, initial_indent="    ", subsequent_indent="    ")
        if rule.refuses:
            lines += textwrap.wrap("refuses: " + rule.refuses, 88, initial_indent="    ", subsequent_indent="      ")
    return "\n".join(lines) + "\n"


def describe(rule: Rule) -> str:
    """One rule: what it is for, and its example's before/after per engine."""
    case = EXAMPLES / rule.example
    source = case / "input.py"
    lines = [f"# {rule.id}", "", *textwrap.wrap(rule.description, 88), "",
             f"engines:  {', '.join(rule.engines)}",
             f"findings: {', '.join(rule.kinds) if rule.kinds else '(none: it refuses or only places code)'}",
             f"refuses:  {rule.refuses or 'nothing'}",
             f"example:  {rule.example} (fixture tfdist/rules/examples/{rule.example})", ""]
    files = example_files(rule)
    for path in files:
        before = source.read_text().splitlines(True)
        after = path.read_text().splitlines(True)
        lines.append(f"## {path.name[len('expected.'):-3] if path.name != 'expected.py' else 'horovod'}")
        lines.append("".join(difflib.unified_diff(before, after, "input.py", path.name)).rstrip("\n"))
        lines.append("")
    if not files:
        for engine in rule.engines:
            result = convert_source(source.read_bytes(), str(source), backend=engine)
            lines += [f"## {engine}", "", "input.py:", textwrap.indent(source.read_text().rstrip("\n"), "    "), "",
                      f"refused ({result.status}), line {result.error_line}: {result.error}", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    """``tfdist rules [ID]``: 0, or 3 for an unknown id (the ids listed)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv in ([], ["--list"]):
        sys.stdout.write(listing())
        return 0
    if len(argv) != 1 or argv[0] not in REGISTRY:
        print(f"tfdist rules: unknown rule {' '.join(argv)!r}; the rules are: {', '.join(REGISTRY)}", file=sys.stderr)
        return 3
    sys.stdout.write(describe(REGISTRY[argv[0]]))
    return 0

"""Findings in the formats tools already read (``tfdist convert --format``).

- ``github``: GitHub Actions workflow commands, one annotation a finding
  (``::warning file=train.py,line=12,col=5,title=tfdist data-division::...``),
  shown on the pull request's lines;
- ``sarif``: a SARIF 2.1.0 log (code scanning, IDEs);
- ``json``: the ``--report`` document.

All are built from the report entries (``FileAnswer.entry``), after the run.
"""
from __future__ import annotations

import json
from typing import Dict, Iterable, List, Tuple

FORMATS = ("text", "json", "github", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

# A finding's level: changes made are notes, hand-work warnings are
# warnings, refusals and failures are errors.
_GITHUB = {"note": "notice", "warning": "warning", "error": "error"}


def findings(entries: Iterable[dict]) -> List[Tuple[str, int, int, int, str, str, str]]:
    """(path, line, end_line, col, level, rule, message) of every entry."""
    out = []
    for e in entries:
        path = e["path"]
        for c in e.get("changes", ()):
            out.append((path, c["line"], c.get("end_line", c["line"]), c.get("col", 1), "note", c["rule"], c["message"]))
        for w in e.get("warnings", ()):
            out.append((path, w["line"], w.get("end_line", w["line"]), w.get("col", 1), "warning", w["rule"], w["message"]))
        if e.get("status") in ("unsupported", "failed") and e.get("error"):
            line = e.get("error_line") or 1
            out.append((path, line, line, 1, "error", e["status"], e["error"]))
    return out


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(entries: Iterable[dict]) -> str:
    lines = []
    for path, line, end, col, level, rule, message in findings(entries):
        props = (f"file={_escape_property(path)},line={line},endLine={end},col={col},"
                 f"title={_escape_property('tfdist ' + rule)}")
        lines.append(f"::{_GITHUB[level]} {props}::{_escape_data(message)}")
    return "".join(line + "\n" for line in lines)


def sarif(entries: Iterable[dict], version: str) -> str:
    entries = list(entries)
    rules: Dict[str, int] = {}
    results = []
    for path, line, end, col, level, rule, message in findings(entries):
        index = rules.setdefault(rule, len(rules))
        results.append({
            "ruleId": rule, "ruleIndex": index, "level": level,
            "message": {"text": message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": path.replace("\\", "/")},
                "region": {"startLine": line, "endLine": end, "startColumn": col}}}],
        })
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "tfdist", "version": version,
                                "rules": [{"id": r, "name": r} for r in rules]}},
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"

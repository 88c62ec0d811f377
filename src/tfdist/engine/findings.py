"""Structured findings (Fixit-style records) and the per-file result."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import List, Optional

# Levels, most severe first.
ERROR = "ERROR"
WARNING = "WARNING"  # converted, but a human should look
INFO = "INFO"  # a change that was made

# File statuses.
CONVERTED = "converted"
UNCHANGED = "unchanged"
ALREADY = "already-distributed"
UNSUPPORTED = "unsupported"
FAILED = "error"


@dataclass
class Finding:
    rule: str
    line: int
    col: int
    level: str
    message: str
    fixed: bool = False
    end_line: int = 0  # last line of the code the finding is about

    def __post_init__(self):
        self.end_line = max(self.end_line, self.line)

    def human(self, path: str) -> str:
        return f"{path}:{self.line}:{self.col}: {self.level} {self.rule}: {self.message}"

    def as_change(self) -> dict:
        return {"line": self.line, "end_line": self.end_line, "col": self.col, "rule": self.rule,
                "message": self.message}


@dataclass
class Evidence:
    pattern: str
    construct: str
    line: int

    def human(self) -> str:
        return f"line {self.line}: {self.construct} -> {self.pattern}"


@dataclass
class FileResult:
    path: str
    status: str
    pattern: str = "Unknown"
    code: Optional[str] = None  # converted text (the input text if unchanged)
    data: Optional[bytes] = None  # converted bytes, in the input's encoding
    changes: List[Finding] = field(default_factory=list)
    warnings: List[Finding] = field(default_factory=list)
    error: Optional[str] = None
    error_line: Optional[int] = None
    evidence: List[Evidence] = field(default_factory=list)
    hierarchy: List[str] = field(default_factory=list)
    types: List[str] = field(default_factory=list)
    # the conversion divides the data each step reads, not the steps: every
    # rank runs all of the original's steps on its share (full-batch
    # training; train_on_batch under tf.distribute)
    full_batch: bool = False
    # the converted workers switch tf.keras to tf-keras where it is installed
    # (tf.distribute's multi-worker fit needs it): tfdist verify runs the
    # original on the same Keras
    tf_keras_on_workers: bool = False
    # ... and also without TF_CONFIG (a model Keras 3 cannot build under a
    # strategy, facts/model_builds): the original runs on tf-keras in every mode
    tf_keras_everywhere: bool = False

    @property
    def no_training(self) -> bool:
        """A TensorFlow file in which no training loop was found."""
        return self.status == UNSUPPORTED and (self.error or "").startswith("no training loop found")

    @property
    def changed(self) -> bool:
        return self.status == CONVERTED

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "status": self.status,
            "pattern": self.pattern,
            "changes": [c.as_change() for c in self.changes],
            "warnings": [asdict(w) for w in self.warnings],
            "error": self.error,
            "error_line": self.error_line,
            "evidence": [asdict(e) for e in self.evidence],
            "hierarchy": list(self.hierarchy),
        }

    def human_lines(self) -> List[str]:
        lines = [c.human(self.path) for c in self.changes]
        lines += [w.human(self.path) for w in self.warnings]
        if self.error:
            where = f"{self.path}:{self.error_line}" if self.error_line else self.path
            lines.append(f"{where}: ERROR {self.status}: {self.error}")
        return lines

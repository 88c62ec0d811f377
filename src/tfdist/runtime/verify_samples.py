"""The training samples one process consumed, as the probe recorded them:
which source counts as "what was trained on", and the stream of (sample,
labels) rows it gives.  The sample checks themselves are in verify_sample_checks."""
from __future__ import annotations

from dataclasses import dataclass


#: Order in which the probe's sample sources are trusted as "what was trained
#: on": TF1 feeds of train-op runs are training steps by construction; eager
#: iterator batches and eager GradientTape batches (the first model input and
#: the first loss's y_true in a tape) count when an optimizer step followed
#: them; Keras fit's NumPy rows are what fit was given (x epochs); the
#: batches fit() read from a Sequence it was given, as it read them.
SAMPLE_SOURCES = ("tf1-feed", "iterator", "tape", "keras-fit", "keras-sequence")
#: Sources whose batches count only when marked ``trained`` by the probe.
STEP_FOLLOWED_SOURCES = ("iterator", "tape")


@dataclass
class SampleStream:
    """Rows a process trained on, in order: (sample hash, label hashes)."""
    source: str
    rows: list[tuple[str, tuple[str, ...]]]
    capped: bool = False

    @property
    def samples(self) -> list[str]:
        return [s for s, _ in self.rows]

    def distinct(self) -> set[str]:
        return {s for s, _ in self.rows}


def _split_row(row) -> tuple[str, tuple[str, ...]]:
    parts = row.split(":") if isinstance(row, str) else list(row)
    return parts[0], tuple(parts[1:])


def sample_stream(samples: dict | None) -> SampleStream | None:
    """The training stream of one probe record's ``samples``: the first
    source in SAMPLE_SOURCES that recorded rows (iterator and tape batches
    only when an optimizer step followed them; keras-fit rows repeated per
    epoch)."""
    if not samples:
        return None
    batches = samples.get("batches") or []
    capped = bool(samples.get("capped"))
    for source in SAMPLE_SOURCES:
        chosen = [b for b in batches if b.get("source") == source]
        if source in STEP_FOLLOWED_SOURCES:
            chosen = [b for b in chosen if b.get("trained")]
        if not chosen:
            continue
        rows: list[tuple[str, tuple[str, ...]]] = []
        for b in chosen:
            batch_rows = [_split_row(r) for r in b.get("rows", [])]
            repeat = int(b.get("epochs", 1) or 0) if source == "keras-fit" else 1
            for _ in range(repeat):
                rows.extend(batch_rows)
        return SampleStream(source, rows, capped)
    return None


def samples_summary(samples: dict | None) -> dict:
    stream = sample_stream(samples)
    if stream is None:
        return {}
    return {"source": stream.source, "rows": len(stream.rows), "distinct": len(stream.distinct()),
            "capped": stream.capped}

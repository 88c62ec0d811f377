"""The sample checks of `tfdist verify`: did each rank train on whole
(sample, labels) pairs of the original's data, and did the ranks divide the
work between them (verify_samples says which samples a process trained on)."""
from __future__ import annotations

from .verify_records import RankRecord
from .verify_results import Check, SampleResults, by_rank
from .verify_samples import SampleStream


def sample_checks(ref: RankRecord, ranks: list[RankRecord], np: int) -> SampleResults:
    """Sample checks, when the original and the ranks recorded samples.

    * sample-pairs-intact: every (sample, labels) row a rank consumed, whose
      sample the original also fed, carries labels the original fed with it;
    * work-divided: the ranks did not all consume the identical sequence;
      reported: distinct samples per rank, the overlap between ranks within
      their first epoch (the first len(original's distinct samples)/N rows of
      each), and how much of the original's samples the ranks covered."""
    out = SampleResults()
    ref_stream = None if ref.missing else ref.sample_stream()
    streams = {r.rank: r.sample_stream() for r in ranks if not r.missing}
    if not _comparable(ref_stream, streams, out):
        return out
    ref_pairs: dict[str, set] = {}
    for sample, labels in ref_stream.rows:
        ref_pairs.setdefault(sample, set()).add(labels)
    summary = {"source": ref_stream.source, "original": {"rows": len(ref_stream.rows), "distinct": len(ref_pairs),
                                                          "capped": ref_stream.capped}, "ranks": {}}
    _pairs_check(ref_stream, ref_pairs, streams, summary, out)
    _divided_check(ref_stream, set(ref_pairs), streams, np, summary, out)
    if ref_stream.capped or any(st.capped for st in streams.values()):
        out.warnings.append("sample recording was capped (TFDIST_PROBE_SAMPLE_ROWS): checks use the first rows only")
    out.summary = summary
    return out


def _comparable(ref_stream: SampleStream | None, streams: dict[int, SampleStream | None], out: SampleResults) -> bool:
    """Whether the original and every rank recorded samples from one source;
    when only some did, a warning says which."""
    if ref_stream is None and not any(streams.values()):
        return False
    if ref_stream is None or not streams or not all(streams.values()):
        have = (["the original"] if ref_stream else []) + [f"rank {k}" for k, v in sorted(streams.items()) if v]
        out.warnings.append("samples not checked: only " + (", ".join(have) or "no run")
                            + " recorded the samples it trained on")
        return False
    sources = {ref_stream.source} | {st.source for st in streams.values()}
    if len(sources) > 1:
        out.warnings.append("samples not checked: the runs recorded different sources ("
                            + f"original: {ref_stream.source}; "
                            + ", ".join(f"rank {k}: {v.source}" for k, v in sorted(streams.items())) + ")")
        return False
    return True


def _pairs_check(ref_stream: SampleStream, ref_pairs: dict[str, set], streams: dict[int, SampleStream],
                 summary: dict, out: SampleResults) -> None:
    """sample-pairs-intact, and each rank's counts in ``summary``."""
    ref_distinct = set(ref_pairs)
    has_labels = any(labels for _, labels in ref_stream.rows)
    broken, unknown_only, per_rank_seen = [], [], []
    for rank, st in sorted(streams.items()):
        seen = st.distinct() & ref_distinct
        bad = {s for s, labels in st.rows if s in ref_pairs and labels not in ref_pairs[s]}
        unknown = len(st.distinct() - ref_distinct)
        summary["ranks"][rank] = {"rows": len(st.rows), "distinct": len(st.distinct()), "known": len(seen),
                                  "unknown": unknown, "mispaired": len(bad), "capped": st.capped}
        per_rank_seen.append(f"rank {rank}: {len(seen)}")
        if bad:
            broken.append(f"rank {rank} fed {len(bad)} of {len(seen)} samples with labels that are not theirs")
        if not seen:
            unknown_only.append(rank)
        elif unknown:
            out.warnings.append(f"rank {rank} fed {unknown} sample(s) the original never fed "
                                "(random augmentation? different data?)")
    if unknown_only:
        out.warnings.append("samples of " + ", ".join(f"rank {r}" for r in unknown_only)
                            + " never appeared in the original run: sample/label pairs not checked for them")
    pairs = {"mispaired": by_rank({k: v["mispaired"] for k, v in summary["ranks"].items()}),
             "checked": by_rank({k: v["known"] for k, v in summary["ranks"].items()})}
    if broken:
        out.checks.append(Check("sample-pairs-intact", False, pairs, 0,
                                "sample/label pairs broken: " + "; ".join(broken)
                                + " (the original fed those samples with other labels: were the labels "
                                "sliced or reordered differently from the samples?)"))
    elif has_labels and len(unknown_only) < len(streams):
        out.checks.append(Check("sample-pairs-intact", True, pairs, 0,
                                "sample/label pairs intact: every sample a rank fed carried the labels the "
                                f"original fed it with ({', '.join(per_rank_seen)} samples checked)"))


def _divided_check(ref_stream: SampleStream, ref_distinct: set, streams: dict[int, SampleStream], np: int,
                   summary: dict, out: SampleResults) -> None:
    """work-divided: the ranks' sequences differ, their first epochs overlap
    little, and together they cover the original's samples."""
    sequences = [st.samples for _, st in sorted(streams.items())]
    out.identical = (np > 1 and len(sequences) > 1 and bool(sequences[0])
                     and all(seq == sequences[0] for seq in sequences[1:]))
    window = max(1, len(ref_distinct) // max(1, np))
    firsts = {rank: set(st.samples[:window]) for rank, st in sorted(streams.items())}
    counts: dict[str, int] = {}
    for first in firsts.values():
        for sample in first:
            counts[sample] = counts.get(sample, 0) + 1
    overlap = sum(1 for c in counts.values() if c > 1)
    union: set[str] = set()
    for st in streams.values():
        union |= st.distinct()
    covered = len(union & ref_distinct)
    coverage = covered / len(ref_distinct) if ref_distinct else 0.0
    summary.update({"first_epoch_window": window, "first_epoch_overlap": overlap,
                    "covered": covered, "coverage": round(coverage, 4)})
    per_rank = ", ".join(f"rank {r}: {len(st.distinct())}" for r, st in sorted(streams.items()))
    text = (f"distinct samples per rank ({per_rank}); {overlap} sample(s) shared between ranks within the first "
            f"epoch ({window} per rank); the ranks together covered {coverage:.1%} of the original's "
            f"{len(ref_distinct)} samples")
    measured = {"identical_sequences": out.identical, "first_epoch_overlap": overlap, "coverage": round(coverage, 4),
                "distinct": by_rank({r: len(st.distinct()) for r, st in streams.items()})}
    if out.identical:
        out.checks.append(Check("work-divided", False, measured, "different sequences per rank",
                                f"work not divided: every rank consumed the identical sequence of "
                                f"{len(sequences[0])} samples (data not sharded by rank?); " + text))
    else:
        out.checks.append(Check("work-divided", True, measured, "different sequences per rank",
                                f"work divided ({ref_stream.source}): " + text))
        if np > 1 and overlap:
            out.warnings.append(f"{overlap} sample(s) were read by more than one rank within the first epoch "
                                "(each rank shuffles the whole dataset instead of reading its own shard?)")
        if coverage < 0.9:
            out.warnings.append(f"the ranks together covered only {coverage:.1%} of the original's samples")

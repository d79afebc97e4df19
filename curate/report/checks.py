"""What a user must not miss, shown at the top of the page: each warning says what happened and what to do.

- ``stale``: a stage whose recorded input fingerprints (``params.input_fingerprints``, one per
  ``params.inputs``) no longer match the ``fingerprint`` of the stage output it read (that stage
  was re-run since, and this one was not): its numbers, and those of every stage after it,
  describe data that no longer exists.
- ``lost_source``: a source that entered the pipeline and has no documents in a last stage with
  documents (one that no other stage reads); and a source the blend left out (``skipped_sources``).
- ``heavy_removal``: a stage that removed more than half of a source's documents.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from curate.dataset import files_fingerprint, record_fingerprint
from curate.report.collect import SUCCESS, Run, Stage, candidates, last_stages, removed
from curate.report.fmt import fmt_int, fmt_pct, num
from curate.storage import as_path
from curate.targets import read_json

#: A stage removing more than this share of a source's documents is warned about.
HEAVY_SHARE = 0.5


@dataclass
class Alert:
    """One warning: its kind, what happened (``what``), the numbers behind it (``detail``) and what to do (``todo``)."""

    kind: str  # stale | lost_source | blend_skipped | heavy_removal
    what: str
    detail: str
    todo: str
    stage: str = ""
    source: str = ""


def all_warnings(run: Run) -> list[Alert]:
    """All warnings about a run, the most serious first."""
    lost = lost_sources(run)
    culprits = {(w.stage, w.source) for w in lost}
    return [*stale_stages(run), *lost, *blend_skipped(run), *heavy_removals(run, skip=culprits)]


# --------------------------------------------------------------------------- stale stages


def current_fingerprint(raw: str, s: Stage, run: Run) -> str | None:
    """The fingerprint an input has now, as the runtime would compute it; None when it is not a curate output here.

    A stage directory: its ``_SUCCESS`` fingerprint. A prefix: its record's fingerprint, else its
    files' (by the name as recorded, so only where that name still leads to them).
    """
    if any(ch in raw for ch in "*?["):
        return None  # a glob is fingerprinted by its files' names, sizes and times: not a stage's output as such
    try:
        for c in candidates(raw, s, run.roots):
            if c.is_dir() and (c / SUCCESS).is_file():
                return record_fingerprint(c)
        p = as_path(raw)
        stats = as_path(f"{p}.stats.json")
        if stats.is_file():
            rec = read_json(stats) or {}
            if isinstance(rec.get("fingerprint"), str):
                return rec["fingerprint"]
            files = [as_path(f"{p}.bin"), as_path(f"{p}.idx")]
            if all(f.is_file() for f in files):
                return files_fingerprint(files)
    except (OSError, ValueError, AttributeError):  # unreadable here: not checked, never a failed report
        return None
    return None


def stale_stages(run: Run) -> list[Alert]:
    out = []
    for s in run.stages:
        names = s.input_paths
        prints = s.get("params", "input_fingerprints")
        if not isinstance(prints, list) or len(prints) != len(names):
            continue
        changed: list[tuple[str, Stage | None]] = []
        for raw, fp in zip(names, prints):
            now = current_fingerprint(raw, s, run)
            if now is not None and now != fp:
                changed.append((raw, run.at(raw, s)))
        if not changed:
            continue
        ups = []
        for raw, up in changed:
            label = up.label if up is not None else raw
            if label not in ups:
                ups.append(label)
        after = [t.label for t in run.downstream(s)]
        then = f" and then the stages after it ({', '.join(after)})" if after else ""
        out.append(
            Alert(
                "stale",
                f"{s.label} is stale: {', '.join(ups)} changed after {s.label} read {'it' if len(ups) == 1 else 'them'}",
                f"{s.who} recorded the fingerprint of each input it read; "
                + "; ".join(f"{raw} no longer matches" for raw, _ in changed)
                + ". Its numbers on this page"
                + (" and those of every stage after it" if after else "")
                + " describe data that no longer exists.",
                f"Re-run {s.label}{then} with the same command{'s' if after else ''} (or `make`): "
                f"{'each' if after else 'it'} sees {'its' if after else 'the'} changed input and starts again.",
                stage=s.label,
            )
        )
    return out


# --------------------------------------------------------------------------- sources that reach the end with no documents


def _gone(run: Run, last: Stage, src: str) -> tuple[Stage, dict[str, Any]] | None:
    """Where a source's documents ran out on the way to ``last``: the last stage that had some, with its counts."""
    had = None
    for t in run.upstream(last):
        d = t.per_source().get(src)
        if d is not None and num(d.get("docs_in")) > 0:
            had = (t, d)
    return had


def lost_sources(run: Run) -> list[Alert]:
    out: list[Alert] = []
    seen: set[tuple[str, str]] = set()
    for last in last_stages(run):
        lineage = run.upstream(last)
        entered = sorted({src for t in lineage for src, d in t.per_source().items() if num(d.get("docs_in")) > 0})
        for src in entered:
            d = last.per_source().get(src)
            if d is not None and num(d.get("docs_out")) > 0:
                continue
            where = _gone(run, last, src)
            if where is None:
                continue
            t, counts = where
            if (t.label, src) in seen:
                continue
            seen.add((t.label, src))
            if num(counts.get("docs_out")) == 0:
                rej = counts.get("rejected") or {}
                reasons = ", ".join(f"{r} {fmt_int(n)}" for r, n in sorted(rej.items(), key=lambda kv: -num(kv[1]))) or "no reason recorded"
                detail = f"{t.who} removed all {fmt_int(counts.get('docs_in'))} of its documents: {reasons}."
                todo = (f"If {src} belongs in the corpus, look at {t.label}'s rejected samples below and loosen what removed it "
                        f"(thresholds, kept languages, rules for this source); if it is left out on purpose, drop it from the "
                        f"inputs instead.")  # fmt: skip
            else:
                detail = (f"{t.who} still had {fmt_int(counts.get('docs_out'))} of its documents, but "
                          f"{last.label} received none of them.")  # fmt: skip
                todo = (f"Check which inputs and source selections (--only-sources, --sources, a blend's sources:) the stages "
                        f"between {t.label} and {last.label} were run with.")  # fmt: skip
            out.append(Alert("lost_source", f"{src} reaches {last.label} with no documents", detail, todo, stage=t.label, source=src))
    return out


def blend_skipped(run: Run) -> list[Alert]:
    out = []
    for sec in run.feeding("blend"):
        skipped = sec.beside("skipped_sources") or []
        for src in skipped if isinstance(skipped, list) else []:
            out.append(
                Alert(
                    "blend_skipped",
                    f"{sec.stage.label} left out {src}: no documents found for it",
                    f"{sec.stage.label} was run with --skip-missing: {src} had no path, an empty prefix or none of its sources, "
                    "and the other sources' weights were renormalised to fill its share.",
                    f"Fix the path of {src} in the blend config (or make sure the stages before it keep its documents) and run "
                    f"the blend again; if it is meant to be absent, remove it from the config.",
                    stage=sec.stage.label,
                    source=str(src),
                )
            )
    return out


# --------------------------------------------------------------------------- heavy removals


def heavy_removals(run: Run, skip: Collection[tuple[str, str]] = ()) -> list[Alert]:
    out = []
    for s in run.doc_stages:
        for src, d in sorted(s.per_source().items()):
            din = num(d.get("docs_in"))
            gone = removed(d)
            if din <= 0 or gone / din <= HEAVY_SHARE or (s.label, src) in skip:
                continue
            rej = d.get("rejected") or {}
            top = sorted(rej.items(), key=lambda kv: -num(kv[1]))
            reasons = ", ".join(f"{r} {fmt_int(n)}" for r, n in top[:3])
            out.append(
                Alert(
                    "heavy_removal",
                    f"{s.label} removed {fmt_pct(gone / din)} of {src}",
                    f"{s.who} removed {fmt_int(gone)} of the {fmt_int(din)} documents of {src} it received"
                    + (f" ({reasons})." if reasons else "."),
                    f"Read {s.label}'s rejected samples for "
                    + (f"{top[0][0]}" if top else "this source")
                    + f" below: if they are documents you want, loosen that rule or threshold for {src} (or run the "
                    "stage on the other sources only); if not, nothing to do.",
                    stage=s.label,
                    source=src,
                )
            )
    return out

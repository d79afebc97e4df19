"""Pile-style subsets: JSON lines with ``text`` and ``meta.pile_set_name``, local or from the hub.

Local files (``.jsonl``, ``.jsonl.zst``, ``.json.gz``, ``.jsonl.gz``, ``.parquet``) are read
here directly, so that a malformed line can be counted under ``bad_record`` with its file
and line number; hub datasets are streamed through Hugging Face ``datasets``. Both give
the same :class:`Record` stream, in a deterministic order, which ``dataset.write_stream``
cuts into shards.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

from curate.dataset import Inputs, files_fingerprint, input_name, sha256_json
from curate.errors import CurateError
from curate.readers import MAX_LINE_BYTES, SUFFIXES, BadStart, Record, ZstdFrames, find_files, hub_rows, is_local, json_lines, valid_utf8
from curate.registry import stage
from curate.runtime import Common, Context, Stage, param

log = logging.getLogger("curate")

#: The 22 subsets of the Pile, as ``meta.pile_set_name`` spells them.
PILE_SUBSETS = [
    "Pile-CC", "PubMed Central", "Books3", "OpenWebText2", "ArXiv", "Github", "FreeLaw",
    "StackExchange", "USPTO Backgrounds", "PubMed Abstracts", "Gutenberg (PG-19)",
    "OpenSubtitles", "Wikipedia (en)", "DM Mathematics", "Ubuntu IRC", "BookCorpus2",
    "EuroParl", "HackerNews", "YoutubeSubtitles", "PhilPapers", "NIH ExPorter", "Enron Emails",
]  # fmt: skip
__all__ = ["MAX_LINE_BYTES", "SUFFIXES", "ZstdFrames", "DownloadPile", "find_files", "is_local", "pile_records", "read_jsonl_file"]


def subset_slug(name: str) -> str:
    """``Wikipedia (en)`` -> ``Wikipedia``, ``Gutenberg (PG-19)`` -> ``Gutenberg_PG-19``."""
    name = re.sub(r"\s*\(en\)\s*$", "", name.strip())
    name = re.sub(r"\s*\(([^)]*)\)", r"_\1", name)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "unknown"


def _key(name: str) -> str:
    return subset_slug(name).lower()


def resolve_subsets(requested: list[str], allow_unknown: bool = False) -> dict[str, str]:
    """Map each requested subset's key to its display name; unknown names are an error."""
    known = {_key(n): n for n in PILE_SUBSETS}
    out: dict[str, str] = {}
    for name in requested:
        k = _key(name)
        if k in known:
            out[k] = known[k]
        elif allow_unknown:
            out[k] = name
        else:
            close = difflib.get_close_matches(name, PILE_SUBSETS + [subset_slug(n) for n in PILE_SUBSETS], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise CurateError(
                f"unknown subset {name!r}{hint} Known Pile subsets: {', '.join(PILE_SUBSETS)} "
                "(use --allow-unknown-subsets for a dataset with other names)"
            )
    return out


def _doc(text: Any, meta: Any, rid: str, source: str, url: Any = None, counters: Counter | None = None) -> dict[str, Any]:
    doc = {
        "id": rid,
        "text": text,
        "source": source,
        "url": url if isinstance(url, str) else None,
        "meta": json.dumps(meta, ensure_ascii=False, sort_keys=True) if meta is not None else None,
    }
    repaired = False
    for key in ("text", "url", "meta"):
        value = doc[key]
        if isinstance(value, str) and not value.isascii():
            fixed = valid_utf8(value)
            if fixed is not value:
                doc[key], repaired = fixed, True
    if repaired and counters is not None:
        counters["invalid_utf8_repaired"] += 1
    return doc


def _subset_of(meta: Any) -> str | None:
    if isinstance(meta, dict):
        name = meta.get("pile_set_name")
        return name if isinstance(name, str) and name else None
    return None


def _bad(rid: str, raw: str, reason: str = "bad_record") -> Record:
    return Record(_doc(raw[:10_000], None, rid, "pile/unknown"), reason)


def read_jsonl_file(path: Path, rel: str, counters: Counter, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Record]:
    """Records of one JSON-lines file (plain, .gz or .zst); bad lines counted, not fatal.

    A file that cannot be decompressed, or whose first lines are all unparsable, stops the
    stage with a one-line error naming it.
    """
    start = BadStart(path)
    for ln in json_lines(path, max_line_bytes):
        rid = f"{rel}:{ln.lineno}"
        if ln.reason == "line_too_long":
            counters["line_too_long"] += 1
            log.warning("%s:%d: line longer than %d bytes, skipped (line_too_long)", path, ln.lineno, max_line_bytes)
            yield _bad(rid, "", "line_too_long")
            continue
        if ln.invalid_utf8:
            counters["invalid_utf8_repaired"] += 1
        err = ln.error
        if err is None and not isinstance(ln.row.get("text"), str):
            err = "no string 'text' field"
        if err is not None:
            start.fail(ln.lineno, err)
            counters["bad_record"] += 1
            log.warning("%s:%d: %s, skipped (bad_record)", path, ln.lineno, err)
            yield _bad(rid, ln.raw)
            continue
        start.ok()
        row = ln.row
        yield Record(_doc(row["text"], row.get("meta"), rid, "", row.get("url"), counters))
    start.finish()


def _parquet_rows(pf: pq.ParquetFile, cols: list[str], path: Path, counters: Counter) -> Iterator[list[dict[str, Any]]]:
    """Rows of a Parquet file, batch by batch; invalid UTF-8 (Arrow does not check it) becomes U+FFFD, counted.

    A row whose nested ``meta`` still holds invalid UTF-8 keeps its text and loses its meta
    (``bad_meta``); a file that breaks off is a one-line error naming it.
    """
    from curate.dataset import repair_utf8

    try:
        for batch in pf.iter_batches(columns=cols, batch_size=1024):
            table, repaired = repair_utf8(pa.Table.from_batches([batch]))
            for n in repaired.values():
                counters["invalid_utf8_repaired"] += n
            try:
                yield table.to_pylist()
            except UnicodeDecodeError:
                rows = []
                for i in range(table.num_rows):
                    try:
                        rows.append(table.slice(i, 1).to_pylist()[0])
                    except UnicodeDecodeError:
                        counters["bad_meta"] += 1
                        rows.append(table.slice(i, 1).drop_columns(["meta"]).to_pylist()[0])
                yield rows
    except (OSError, pa.ArrowException) as exc:
        raise CurateError(f"{path}: cannot read ({exc})") from exc


def _row_record(row: dict[str, Any], rid: str, counters: Counter) -> Record:
    """A Parquet or hub row (``meta`` a struct or a JSON string) as a record; no string ``text``: ``bad_record``."""
    meta = row.get("meta")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            meta = {"raw": meta}
    if not isinstance(row.get("text"), str):
        counters["bad_record"] += 1
        return _bad(rid, "")
    return Record(_doc(row["text"], meta, rid, "", row.get("url"), counters))


def read_parquet_file(path: Path, rel: str, counters: Counter) -> Iterator[Record]:
    """Records of a Parquet file in the Pile layout (``text``, ``meta`` struct or JSON string)."""
    try:
        pf = pq.ParquetFile(path if isinstance(path, Path) else path.open("rb"))
    except Exception as exc:  # noqa: BLE001 - any failure to open is a bad file
        raise CurateError(f"{path}: not a readable Parquet file ({exc})") from exc
    if "text" not in pf.schema_arrow.names:
        raise CurateError(f"{path}: no 'text' column (has: {', '.join(pf.schema_arrow.names)})")
    cols = [c for c in ("text", "meta", "url") if c in pf.schema_arrow.names]
    row_no = 0
    for rows in _parquet_rows(pf, cols, path, counters):
        for row in rows:
            row_no += 1
            yield _row_record(row, f"{rel}:{row_no}", counters)


def iter_local(spec: str, counters: Counter) -> Iterator[Record]:
    files, root = find_files(spec)
    for f in files:
        rel = f.relative_to(root).as_posix() if f.is_relative_to(root) else f.name
        log.debug("reading %s", f)
        if f.name.endswith(".parquet"):
            yield from read_parquet_file(f, rel, counters)
        else:
            yield from read_jsonl_file(f, rel, counters)


def iter_hub(name: str, split: str, config: str | None, counters: Counter) -> Iterator[Record]:
    """Stream a hub dataset (or a local dataset directory) through ``datasets``."""
    rows = hub_rows(name, split, config, "pass local files (.jsonl, .jsonl.zst, .json.gz, .parquet) instead")
    for i, row in enumerate(rows):
        yield _row_record(row, f"{name}:{split}:{i}", counters)


def pile_records(
    dataset: str,
    *,
    subsets: list[str] | None = None,
    max_docs: int | None = None,
    loader: str = "auto",
    split: str = "train",
    config: str | None = None,
    allow_unknown_subsets: bool = False,
    counters: Counter | None = None,
) -> Iterator[Record]:
    """The filtered record stream: ``source`` set to ``pile/<subset>``, limits applied.

    ``counters`` receives ``records``, ``skipped_subset`` (not asked for), ``over_max_docs``
    and the per-subset counts under ``subset:<name>``.
    """
    counters = counters if counters is not None else Counter()
    wanted = resolve_subsets(subsets, allow_unknown_subsets) if subsets else None
    if loader == "auto":
        loader = "local" if is_local(dataset) else "hub"
    if loader == "local":
        stream = iter_local(dataset, counters)
    elif loader == "hub":
        stream = iter_hub(dataset, split, config, counters)
    else:
        raise CurateError(f"unknown loader {loader!r}; choose auto, local or hub")
    taken: Counter = Counter()
    for rec in stream:
        counters["records"] += 1
        if rec.reason is not None:
            yield rec
            continue
        name = _subset_of(json.loads(rec.doc["meta"]) if rec.doc["meta"] else None)
        if name is None:
            counters["no_subset"] += 1
            name = "unknown"
        key = _key(name)
        if wanted is not None and key not in wanted:
            counters["skipped_subset"] += 1
            continue
        if max_docs is not None and taken[key] >= max_docs:
            counters["over_max_docs"] += 1
            if wanted is not None and all(taken[k] >= max_docs for k in wanted):
                return  # every requested subset is full: stop reading
            continue
        taken[key] += 1
        rec.doc["source"] = f"pile/{subset_slug(name)}"
        yield rec
    if counters["no_subset"]:
        log.warning("%s: %s record(s) have no meta.pile_set_name (source pile/unknown, new ids); files in other layouts "
                    "(FineWeb, Dolma, RedPajama, plain text) keep their ids, URLs and fields with `curate import`",
                    dataset, f"{counters['no_subset']:,}")  # fmt: skip
    if wanted is not None:
        for key, display in wanted.items():
            if taken[key] == 0:
                log.warning("subset %r: no documents found in %s", display, dataset)
                counters["empty_subsets"] += 1


@stage("download pile", section="get data", order=10)
@dataclass
class DownloadPile(Stage):
    """Pile-style subsets into a dataset directory (source = pile/<subset>).

    Text is stored as read; repair Unicode with `curate clean` next. A malformed line is
    counted under bad_record (file and line in the log) and skipped; a file that cannot
    be read at all stops the command.

    \b
    Example:
      curate download pile --dataset sample_data/pile --subset Wikipedia --subset ArXiv \\
          --max-docs 100 --out out/pile
    """

    name: ClassVar[str] = "download_pile"
    kind: ClassVar[str] = "source"
    required_columns: ClassVar[tuple[str, ...]] = ()
    options: ClassVar[tuple[str, ...]] = ("out", "overwrite", "keep_rejected", "format")
    option_help: ClassVar[dict[str, str]] = {"keep_rejected": "Write malformed records to OUT/_rejected/ with their reason."}
    error_reasons: ClassVar[frozenset[str]] = frozenset({"bad_record"})
    dataset: str = param(help="Hub dataset name (streamed with `datasets`), or a local file, directory or glob "
                         "of .jsonl, .jsonl.zst, .json.gz or .parquet files in the Pile layout.", metavar="NAME|PATH",
                         required=True)  # fmt: skip
    subsets: list[str] = param([], "Keep this pile_set_name (repeatable; e.g. 'Wikipedia (en)' or Wikipedia) [default: all].",
                               flag="--subset", metavar="NAME", multiple=True)  # fmt: skip
    max_docs: int | None = param(None, "At most N documents per subset.", min=1)
    shard_docs: int = param(10_000, "Records per output shard.", min=1)
    loader: str = param("auto", "auto: local when the path exists, else the hub; hub also loads a local dataset directory "
                        "through `datasets`.", choices=("auto", "local", "hub"))  # fmt: skip
    split: str = param("train", "Hub split.")
    config: str | None = param(None, "Hub dataset configuration name.")
    allow_unknown_subsets: bool = param(False, "Accept subset names that are not among the Pile's 22.", record=False)  # a check only

    def derived_params(self) -> dict[str, Any]:
        return {"subsets": sorted(self.subsets)}  # the order they are named in changes nothing

    def _local(self) -> bool:
        return self.loader == "local" or (self.loader == "auto" and is_local(self.dataset))

    def inputs(self, common: Common) -> Inputs:
        if self.subsets:
            resolve_subsets(self.subsets, self.allow_unknown_subsets)  # a misspelt subset is an error before anything is written
        if self._local():
            files, root = find_files(self.dataset)
            return Inputs([input_name(self.dataset)], list(files), [files_fingerprint(files, root)], [root if len(files) > 1 else files[0]])
        # a hub dataset: its name, split and configuration are all we know of it
        return Inputs([self.dataset], [], [sha256_json([self.dataset, self.split, self.config])], [])

    def run(self, ctx: Context) -> dict[str, Any]:
        counters: Counter = Counter()
        records = pile_records(
            self.dataset,
            subsets=list(self.subsets) or None,
            max_docs=self.max_docs,
            loader=self.loader,
            split=self.split,
            config=self.config,
            allow_unknown_subsets=self.allow_unknown_subsets,
            counters=counters,
        )
        return ctx.stream_pass(records, shard_docs=self.shard_docs, counters=counters)

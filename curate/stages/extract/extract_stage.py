"""HTML pages in WARC (and ARC) files to main-content text documents (the ``extract`` stage).

One WARC or ARC file becomes one output shard (:func:`warc_inputs` finds them). The reader
(:class:`curate.warc.records.WarcReader`) yields each record with its HTTP response judged
and its body's codings undone; of a ``response`` with HTTP 200 and an HTML content type, the
body is decoded (:func:`curate.warc.charset.decode_html`), its main content extracted by the
``extractor`` (``fast`` by default; any registered one: :mod:`curate.stages.extract.extractors`,
:mod:`curate.stages.extract.fast`) in the time-limited helper process
(:mod:`curate.stages.extract.sandbox`), Unicode repaired with the clean stage's
``clean_text``, and the document gets ``source`` ``cc/<snapshot>``, the URL (wget's ``<...>``
around it removed), the WARC-Record-ID as ``id`` (ARC records have none: ``file@offset``)
and the WARC date and content type in ``meta``.

Every other record is counted: non-``response`` records (requests, metadata) under
``counters.records``; responses that are not documents under a reason (``not_200``,
``not_html``, ``too_large``, ``binary``, ``decode_error``, ``bad_http``,
``unsupported_encoding``, ``bad_encoding``, ``empty``, ``cut_before_body``, ``timeout``, ``extractor_error``,
``extractor_crash``, ``record_error`` (anything else that failed on one record), and for
damaged files ``truncated``, ``bad_length``, ``corrupt``, ``decompression_bomb``).

Limits. An HTML body longer than ``max_html_bytes`` loses the scripts and styles before its
``<body>``, then is cut there and extracted (``truncated_html``; CommonCrawl itself cuts
payloads at 1 MiB, ``WARC-Truncated``); one whose cut still falls before ``<body>`` is
``cut_before_body``; a decoder that is not final drops a character the cut splits. A payload larger than
``max_record_bytes`` (64 MiB), stored or decoded, is ``too_large``: what bounds memory.
``record_timeout`` bounds one page's extraction (``timeout``); ``record_timeout=0``
extracts in-process without a limit.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from curate import registry
from curate.dataset import Inputs, files_fingerprint, input_name
from curate.errors import CurateError
from curate.registry import extractor_names, stage
from curate.runtime import Common, Context, FileBatch, Stage, param
from curate.schema import BASE_SCHEMA, rejected_schema
from curate.stages.extract.extractors import extractor_function, keeps_comments
from curate.stages.extract.sandbox import ExtractCrash, ExtractTimeout, sandbox
from curate.storage import as_path, glob_paths
from curate.warc.charset import decode_html, looks_binary
from curate.warc.records import ARCHIVE_SUFFIXES, DEFAULT_MAX_RECORD_BYTES, RawRecord, WarcReader

log = logging.getLogger("curate")

SNAPSHOT_IN_PATH = re.compile(r"CC-MAIN-\d{4}-\d{2}")
BATCH_RECORDS = 512
#: pages extracted as one group (one stream to the helper process): at most this many, or this much HTML
GROUP_RECORDS, GROUP_CHARS = 64, 8 << 20
_REJECTED_SCHEMA = rejected_schema(BASE_SCHEMA)


#: The ``--extractor`` choices: every registered extractor (built-in or installed), in their declared order.
EXTRACTORS = tuple(extractor_names())


def _extractor_help() -> str:
    """``--extractor``'s help, from the registry: each extractor's name and its ``help`` in brackets."""
    helps = {e.name: e.meta.get("help") for e in registry.extractors.entries()}
    return "Main-content extractor: " + ", ".join(f"{n} ({helps[n]})" if helps.get(n) else n for n in EXTRACTORS) + "."


def first_error(counters: dict[str, Any], reason: str, exc: BaseException) -> None:
    """Remember the first error message of a reason (``counters.first_error``): what a failed run reports."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    counters.setdefault("first_error", {}).setdefault(reason, text if ": " in text else f"{type(exc).__name__}: {text}")


def find_warc_files(inputs: list[str]) -> list[Path]:
    """WARC and ARC files under the given directories (recursive), files or globs, in a stable order (see :func:`warc_inputs`)."""
    return warc_inputs(inputs).files  # type: ignore[return-value]


_ARCHIVE_LIKE = re.compile(r"\.w?arc(\.|$)|\.warc", re.I)


def warc_inputs(inputs: list[str]) -> Inputs:
    """WARC and ARC files under the given directories (recursive), files or globs, in a stable order, and their fingerprint.

    Files and directories whose name starts with ``.`` or ``_`` (partial downloads,
    manifests) are skipped; other files under a directory that look like archives but are
    not read (``x.warc.zst``, ``x.arc.bz2``) are named in a warning.
    """
    out: list[Path] = []
    prints: list[str] = []
    locations = []
    for raw in inputs:
        p = as_path(raw)
        if p.is_dir():
            found, skipped = [], []
            for f in sorted(p.rglob("*")):
                if any(part.startswith((".", "_")) for part in f.relative_to(p).parts) or not f.is_file():
                    continue
                if f.name.endswith(ARCHIVE_SUFFIXES):
                    found.append(f)
                elif _ARCHIVE_LIKE.search(f.name):
                    skipped.append(f.relative_to(p).as_posix())
            if skipped:
                log.warning("extract: %s: %d file(s) skipped, not %s: %s%s", p, len(skipped), "/".join(ARCHIVE_SUFFIXES),
                            ", ".join(skipped[:5]), ", ..." if len(skipped) > 5 else "")  # fmt: skip
            if not found:
                raise CurateError(f"{p}: no WARC or ARC files ({', '.join(ARCHIVE_SUFFIXES)}) under this directory")
            root = p
        elif p.is_file():
            if not p.name.endswith(ARCHIVE_SUFFIXES):
                raise CurateError(f"{p}: not a WARC or ARC file (expected {', '.join(ARCHIVE_SUFFIXES)})")
            found, root = [p], p.parent
        elif any(ch in raw for ch in "*?["):
            found = [f for f in glob_paths(raw) if f.name.endswith(ARCHIVE_SUFFIXES) and f.is_file()]
            if not found:
                raise CurateError(f"{raw}: no WARC or ARC files match")
            root = None
        else:
            raise CurateError(f"{raw}: no such file or directory")
        out.extend(found)
        prints.append(files_fingerprint(found, root))
        locations.append(p if root is not None else found[0].parent)
    seen: set[Path] = set()
    unique = []
    for f in out:
        r = f.resolve()
        if r not in seen:
            seen.add(r)
            unique.append(f)
    return Inputs([input_name(i) for i in inputs], unique, prints, locations)


def source_for(path: Path, override: str | None = None) -> str:
    """``cc/<snapshot>`` from the last CC-MAIN-YYYY-WW in the path, or ``override``."""
    if override:
        return override
    found = SNAPSHOT_IN_PATH.findall(path.as_posix())
    if not found:
        raise CurateError(f"{path}: no CC-MAIN-YYYY-WW snapshot name in the path; name the source with --source")
    # crawl-data/CC-MAIN-2020-50/... : the directory names the snapshot (file names hold timestamps)
    return f"cc/{found[0]}"


def warc_label(path: Path) -> str:
    """The file's path from ``crawl-data/`` on (as CommonCrawl lists it), else its name."""
    parts = path.as_posix().split("/")
    return "/".join(parts[parts.index("crawl-data") :]) if "crawl-data" in parts else path.name


@stage("extract", section="get data", order=40)
@dataclass
class ExtractStage(Stage):
    """Main-content text of the HTML pages in WARC and ARC files (source = cc/<snapshot>).

    Keeps `response` records with HTTP 200 and an HTML content type, undoes their transfer
    and content codings (chunked; gzip, deflate, br, zstd), decodes them with the declared
    charset, else as UTF-8 if they are valid UTF-8, else a detected one, extracts the main
    content, repairs Unicode, and writes one shard per file with url, id (the
    WARC-Record-ID; ARC records: file@offset) and meta (WARC date, content type, charset).
    Files may be gzipped record by record or as a whole; HTTP headers may end lines in LF
    only. A page longer than --max-html-bytes loses the scripts and styles before its <body>,
    then is cut there and extracted (truncated_html; cut_before_body when no body is left);
    one larger than --max-record-bytes is skipped (too_large). A truncated or corrupt file
    keeps what could be read and is named in a warning. A run in which every page fails to
    extract (extractor_error, ...) exits 1 instead of writing an empty output.

    \b
    meta may also hold: html_truncated (the cut), http_decoded (codings
    undone), warc_truncated (WARC-Truncated), warc_offset_uncompressed.

    \b
    Reasons a response is not a document:
      not_200, not_html, too_large, binary, empty   what it is
      cut_before_body       the --max-html-bytes cut falls before <body>
      bad_http              no HTTP status line / header block
      unsupported_encoding  a Content-Encoding that cannot be undone here
      bad_encoding          a compressed body of which nothing decodes
      decompression_bomb    a body or gzip member inflating past the limits
      truncated, bad_length, corrupt   a damaged file
      decode_error, timeout, extractor_error, extractor_crash, record_error
                            failures (the run fails when they are all)

    \b
    Counters (in _SUCCESS):
      truncated_html        pages cut at --max-html-bytes (kept)
      head_bulk_dropped     longer pages that fit once their <head> scripts
                            and styles were dropped (not cut)
      http_decoded          codings undone, per coding (chunked, gzip, ...)
      http_decode_partial   malformed or cut chunked/compressed bodies:
                            what decoded was kept
      http_encoding_ignored bodies stored decoded under a coding header
      lf_http_headers       HTTP header blocks with bare-LF line ends
      charset               how pages were decoded (bom, http, meta, utf8,
                            detected, replaced, failed)
      whole_gzip_files, arc_files   files read as one gzip stream / as ARC
      warc_truncated        records the crawler cut (WARC-Truncated)
      truncated, corrupt_gzip, bad_warc_header, bad_arc_header, resynced,
      skipped_bytes, unreadable   damage found in files

    \b
    Example:
      curate extract --in data/cc --out out/cc_extract
      curate extract --in 'data/cc/**/*.warc.gz' --extractor trafilatura --out out/cc_traf
    """

    name: ClassVar[str] = "extract"
    kind: ClassVar[str] = "source"
    required_columns: ClassVar[tuple[str, ...]] = ()
    options: ClassVar[tuple[str, ...]] = ("inputs", "out", "workers", "overwrite", "keep_rejected", "executor", "ray_address", "format")
    option_help: ClassVar[dict[str, str]] = {
        "inputs": "Directory (searched recursively), .warc(.gz) or .arc(.gz) file, or glob (repeatable).",
        "out": "Output dataset directory (one shard per WARC file).",
        "keep_rejected": "Also write skipped records to OUT/_rejected/ with a reason (text empty).",
    }
    error_reasons: ClassVar[frozenset[str]] = frozenset({"extractor_error", "extractor_crash", "record_error", "decode_error", "timeout"})
    extractor: str = param("fast", _extractor_help(), choices=EXTRACTORS)
    source: str | None = param(None, "The documents' source [default: cc/<snapshot>, the CC-MAIN-YYYY-WW part of each file's path].",
                               metavar="NAME")  # fmt: skip
    max_html_bytes: int = param(1_000_000, "Longer HTML bodies are cut here and extracted (counted: truncated_html).", min=1)
    max_record_bytes: int = param(DEFAULT_MAX_RECORD_BYTES, "Records whose HTTP payload, stored or decoded, is larger are "
                                  "skipped (too_large): what bounds memory.", min=1)  # fmt: skip
    record_timeout: float = param(5.0, "Seconds one record's extraction may take (timeout); 0: no limit, extract in-process.", min=0.0)
    min_chars: int = param(1, "Documents with less extracted text are rejected (empty).", min=1)
    comments: bool = param(False, "Keep pages' comment sections (resiliparse, trafilatura, fast; jusText cannot tell them). Off: "
                           "comments are short, repetitive and often spam, and the recipe's extractors leave them out.",
                           secondary="--no-comments")  # fmt: skip

    def __post_init__(self) -> None:
        extractor_function(self.extractor)
        if self.comments and not keeps_comments(self.extractor):
            log.warning("extract: --extractor %s cannot keep comment sections; --comments has no effect", self.extractor)

    def inputs(self, common: Common) -> Inputs:
        found = warc_inputs(common.inputs)
        for f in found.files:
            source_for(f, self.source)  # fail early, naming the file, when a snapshot cannot be told
        return found

    def run(self, ctx: Context) -> dict[str, Any]:
        return ctx.file_pass(self.read, BASE_SCHEMA, labels=[f.name for f in ctx.files])

    def _extract_many(self, htmls: list[str]) -> list[str | BaseException]:
        """Each page's text or the exception standing for its failure (a CurateError is raised)."""
        if self.record_timeout > 0:
            return sandbox(self.extractor, self.comments).extract_many(htmls, self.record_timeout)
        fn = extractor_function(self.extractor, self.comments)
        out: list[str | BaseException] = []
        for html in htmls:
            try:
                out.append(fn(html))
            except CurateError:
                raise
            except Exception as exc:  # noqa: BLE001 - counted per page by _finish
                out.append(exc)
        return out

    def read(self, path: Path) -> Iterator[FileBatch]:
        from curate.stages.clean import CleanStage

        clean = CleanStage()
        source = source_for(path, self.source)
        label = warc_label(path)
        counters: dict[str, Any] = {}  # the whole file's: reported with the last batch
        out = _Batch()
        pending: list[tuple[RawRecord, dict[str, Any], str | None, str | None]] = []  # (record, meta, reason, html)
        pending_chars = 0
        seen_ids: set[str] = set()

        def batch(final: bool) -> FileBatch:
            b = FileBatch(
                pa.Table.from_pylist(out.kept, schema=BASE_SCHEMA),
                pa.Table.from_pylist(out.rejected, schema=_REJECTED_SCHEMA),
                counters if final else {},
                docs_in=out.docs_in,
                bytes_in=out.html_bytes,
                source=source,
            )
            out.__init__()
            return b

        def flush() -> Iterator[FileBatch]:
            """Extract the pending pages as one group, then finish their records in order."""
            extracted = iter(self._extract_many([html for _, _, _, html in pending if html is not None]))
            for raw, meta, reason, html in pending:
                text = ""
                if html is not None:
                    try:
                        text, reason = self._finish(next(extracted), raw, meta, clean, counters)
                    except CurateError:
                        raise
                    except Exception as exc:  # noqa: BLE001 - one record from a stranger must never stop the file
                        text, reason = "", self._record_error(label, raw, exc, counters)
                out.add(raw, meta, reason, text, source, label, seen_ids, counters)
                if len(out.kept) + len(out.rejected) >= BATCH_RECORDS:
                    yield batch(final=False)
            pending.clear()

        for raw in WarcReader(path, self.max_html_bytes, counters, self.max_record_bytes):
            if raw.rtype != "response":
                continue
            meta: dict[str, Any] = {"warc_file": label, "warc_offset": raw.offset, "warc_date": raw.date, "content_type": raw.content_type}
            if raw.uncompressed:
                meta["warc_offset_uncompressed"] = True  # inside a gzip member (a file gzipped as a whole)
            if raw.decoded:
                meta["http_decoded"] = raw.decoded
            if raw.truncated:
                meta["html_truncated"] = self.max_html_bytes
            if raw.warc_truncated:
                meta["warc_truncated"] = raw.warc_truncated
            reason = raw.damaged or raw.reason or ("cut_before_body" if raw.cut_before_body else None)
            html = None
            if reason is None:
                try:
                    html, reason = self._prepare(raw, meta, counters)
                except CurateError:
                    raise
                except Exception as exc:  # noqa: BLE001 - one record from a stranger must never stop the file
                    reason = self._record_error(label, raw, exc, counters)
            raw.body = None  # decoded into html (or not needed): not kept while the group waits
            pending.append((raw, meta, reason, html))
            pending_chars += len(html) if html is not None else 0
            if len(pending) >= GROUP_RECORDS or pending_chars >= GROUP_CHARS:
                yield from flush()
                pending_chars = 0
        yield from flush()
        yield batch(final=True)

    @staticmethod
    def _record_error(label: str, raw: RawRecord, exc: Exception, counters: dict[str, Any]) -> str:
        log.warning("extract: %s: the record #%d at byte %d failed (%s: %s), skipped (record_error)", label, raw.index,
                    raw.offset, type(exc).__name__, exc)  # fmt: skip
        first_error(counters, "record_error", exc)
        return "record_error"

    def _prepare(self, raw: RawRecord, meta: dict[str, Any], counters: dict[str, Any]) -> tuple[str | None, str | None]:
        """The decoded HTML of a candidate record, or ``(None, reason)``."""
        body = raw.body or b""
        if not body.strip():
            return None, "empty"
        if looks_binary(body):
            return None, "binary"
        html, enc, how = decode_html(body, raw.charset, raw.truncated)
        cs = counters.setdefault("charset", {})
        cs[how] = cs.get(how, 0) + 1
        if html is None:
            return None, "decode_error"
        meta["charset"] = enc
        return html, None

    def _finish(
        self, extracted: str | BaseException, raw: RawRecord, meta: dict[str, Any], clean: Any, counters: dict[str, Any]
    ) -> tuple[str, str | None]:
        """The cleaned main text of an extracted page, or ``("", reason)``."""
        if isinstance(extracted, ExtractTimeout):
            log.warning("extract: %s: %s took over %.1f s, skipped (timeout)", meta["warc_file"], raw.url, self.record_timeout)
            return "", "timeout"
        if isinstance(extracted, ExtractCrash):
            log.warning("extract: %s: %s crashed the extractor (%s), skipped", meta["warc_file"], raw.url, extracted)
            first_error(counters, "extractor_crash", extracted)
            return "", "extractor_crash"
        if isinstance(extracted, BaseException):
            log.debug("extract: %s: %s: %s", meta["warc_file"], raw.url, extracted)
            first_error(counters, "extractor_error", extracted)
            return "", "extractor_error"
        text, fixed = clean.clean_text(extracted or "")
        if fixed:
            counters["ftfy_fixed"] = counters.get("ftfy_fixed", 0) + 1
        if len(text) < self.min_chars:
            return "", "empty"
        return text, None


class _Batch:
    """The documents and rejected records of one output batch, and what went in."""

    def __init__(self) -> None:
        self.kept: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []
        self.docs_in = self.html_bytes = 0

    def add(self, raw: RawRecord, meta: dict[str, Any], reason: str | None, text: str, source: str, label: str,
            seen_ids: set[str], counters: dict[str, Any]) -> None:  # fmt: skip
        self.docs_in += 1
        self.html_bytes += raw.length
        if reason is not None:
            meta.update(status=raw.status, length=raw.length)
        rid = raw.record_id or f"{label}@{raw.offset}"
        if rid in seen_ids:  # a WARC file from elsewhere may repeat a record id: ids must stay unique
            counters["duplicate_record_id"] = counters.get("duplicate_record_id", 0) + 1
            rid = f"{rid}@{raw.offset}"
        seen_ids.add(rid)
        doc = {"id": rid, "text": text, "source": source, "url": raw.url, "meta": json.dumps(meta, ensure_ascii=False)}
        if reason is None:
            self.kept.append(doc)
        else:
            self.rejected.append({**doc, "reason": reason})

"""``curate import``: documents in the shapes other tools write, into a dataset directory, keeping what identifies them.

A *layout* (:data:`LAYOUTS`) says which field of a record is the text, the id, the URL and
the source: FineWeb's Parquet, Dolma's and datatrove's JSON lines, RedPajama-V2's documents,
plain ``{"text": ...}`` records, and curate's own output. It is detected per file from the
fields of the first record and printed, or named with ``--layout``; ``--text-field`` and its
siblings name any one field (a dotted path reaches into a nested object or a JSON string).
Ids are kept (checked non-null and unique, the rule for every input curate did not write)
unless ``--new-ids``; the URL is kept; every other field goes into ``meta`` as JSON, so
nothing is lost. The ``curate`` layout restores curate's columns exactly, so a corpus written
with ``--format jsonl`` comes back column for column.

A record that is not a document (a malformed line, no text, a text that is not a string,
invalid UTF-8) is counted under its reason and skipped (kept with ``--keep-rejected``). The
records of all files are one deterministic stream cut into shards by the runtime's stream
pass: memory does not grow with the input (but for 8 bytes per kept id), and a killed run
resumes.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from curate import readers
from curate.dataset import Inputs, files_fingerprint, input_name, is_curate_dir, record_fingerprint, sha256_json
from curate.errors import CurateError, ParamError
from curate.readers import Record
from curate.registry import stage
from curate.runtime import Common, Context, Stage, param
from curate.schema import BASE_FIELDS, BASE_SCHEMA, STAGE_FIELDS
from curate.storage import as_path
from curate.targets import SUCCESS

log = logging.getLogger("curate")


@dataclass(frozen=True)
class Layout:
    """Where a layout's records keep their text, id, URL and source (candidate paths, the first present wins)."""

    name: str
    about: str
    text: tuple[str, ...] = ("text",)
    id: tuple[str, ...] = ("id",)
    url: tuple[str, ...] = ("url",)
    source: tuple[str, ...] = ()
    flatten: str | None = None  # a field whose object's keys go into meta themselves (Dolma's metadata, RedPajama's meta)


LAYOUTS: dict[str, Layout] = {
    lay.name: lay
    for lay in [
        Layout("fineweb", "FineWeb, FineWeb-Edu, FineWeb-2 (datatrove's Parquet): text, id, dump, url, date, file_path, ..."),
        Layout("dolma", "Dolma and OLMo mixes, datatrove's JSON lines: id, text, source, added, created, metadata.url",
               url=("metadata.url", "url"), source=("source",), flatten="metadata"),
        Layout("redpajama", "RedPajama-V2: documents files (raw_content, url, ...; no id) or hub rows (raw_content, doc_id, meta)",
               text=("raw_content",), id=("doc_id",), url=("url", "meta.url"), flatten="meta"),
        Layout("plain", "text, and any other fields (id and url when the records have them)"),
        Layout("curate", "curate's own output: --format jsonl (id, text, source, metadata) or Parquet (id, text, source, url, meta, ...)"),
    ]
}  # fmt: skip

REASONS = frozenset({"malformed_json", "not_an_object", "line_too_long", "no_text", "text_not_string", "invalid_utf8", "bad_column_value"})
_CURATE_JSON = frozenset({"id", "text", "source", "metadata"})
_CURATE_COLUMNS = frozenset(f.name for f in BASE_FIELDS) | frozenset(STAGE_FIELDS)
_SNAPSHOT = re.compile(r"(?:^|/)(\d{4}-\d{2}/.+)$")  # RedPajama-V2 ids: <snapshot>/<shard>/<lang>_<part>.json.gz/<row>
_MISSING = object()
_LOGGED = 10  # bad records logged per file; the rest are counted


# --------------------------------------------------------------------------- fields by path


def _parsed(obj: dict[str, Any], key: str) -> Any:
    """``obj[key]``, a JSON string holding an object (RedPajama's ``meta``) parsed and kept parsed in its place."""
    child = obj.get(key)
    if isinstance(child, str) and child.lstrip().startswith("{"):
        try:
            parsed = json.loads(child)
        except ValueError:
            return child
        if isinstance(parsed, dict):
            obj[key] = child = parsed
    return child


def _lookup(obj: dict[str, Any], path: str) -> tuple[dict[str, Any] | None, str]:
    """The object holding ``path``'s last step, and that step; ``(None, path)`` when it is missing.

    A literal key wins over a dotted path; a step may go through a JSON string of an object.
    """
    while True:
        if path in obj:
            return obj, path
        head, dot, rest = path.partition(".")
        if not dot or head not in obj:
            return None, path
        child = _parsed(obj, head)
        if not isinstance(child, dict):
            return None, path
        obj, path = child, rest


def _take(row: dict[str, Any], path: str | None, ok: Any = str) -> tuple[Any, bool]:
    """``(value, taken)`` at ``path``: removed from the record when it is null or of type ``ok``, else left for meta."""
    if path is None:
        return None, True
    holder, key = _lookup(row, path)
    if holder is None:
        return None, True
    value = holder[key]
    if value is None or (isinstance(value, ok) and not isinstance(value, bool)):
        return holder.pop(key), True
    return value, False


def _jsonable(value: Any) -> Any:
    """Values JSON has no type for (timestamps, bytes, decimals) as strings."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, default=_jsonable)


def _fold(meta: Any, extras: dict[str, Any]) -> str | None:
    """``meta`` as curate stores it (a JSON string), with ``extras`` (fields no column holds) added as keys.

    When ``meta`` is not a JSON object, or shares a key with ``extras``, it goes under their ``meta`` key instead.
    """
    if meta is _MISSING or meta is None:
        return _dumps(extras) if extras else None
    if not extras:
        return meta if isinstance(meta, str) else _dumps(meta)
    obj = meta
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except ValueError:
            pass
    if isinstance(obj, dict) and not (obj.keys() & extras.keys()):
        return _dumps({**obj, **extras})
    return _dumps({"meta": meta, **extras})


def default_source(dataset: str) -> str:
    """``import/<name>``: the file's name without its suffixes, the directory's (a glob's: before its wildcard), the hub dataset's."""
    wild = re.search(r"[*?\[]", dataset)
    base = dataset[: wild.start()].rsplit("/", 1)[0] if wild and "/" in dataset[: wild.start()] else "" if wild else dataset.rstrip("/")
    name = base.rstrip("/").rsplit("/", 1)[-1]
    for suffix in (".gz", ".zst", ".jsonl", ".json", ".parquet"):
        name = name.removesuffix(suffix)
    return "import/" + (re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_.") or "data")


# --------------------------------------------------------------------------- what --dataset names


@dataclass(frozen=True)
class Unit:
    """One thing read in order: a JSON-lines or Parquet file, a saved dataset, or a hub dataset."""

    kind: str  # jsonl, parquet, disk, hub
    path: Any
    rel: str  # names its records' new ids: the file relative to the dataset's root, or the dataset's name
    curate: bool = False  # a shard of a curate output directory


@dataclass
class _Fields:
    """A layout resolved against a file's first record: the path of each part of a document (None: the record has none)."""

    layout: str
    text: str = "text"
    id: str | None = None
    url: str | None = None
    source: str | None = None
    flatten: str | None = None

    def describe(self, default_source: str) -> str:
        if self.layout == "curate":
            return "id, text, source, url, meta and curate's columns as they are"
        ids = self.id or ("<path>/<row>" if self.layout == "redpajama" else "new")
        return f"text={self.text} id={ids} url={self.url or '-'} source={self.source or default_source}; the other fields go to meta"


class Importer:
    """One pass over the units of an import: records in order, the layout of each unit, the ids seen."""

    def __init__(self, st: Import, units: list[Unit], counters: Counter, quiet: bool = False) -> None:
        self.st, self.units, self.counters, self.quiet = st, units, counters, quiet
        self.default_source = st.source or default_source(st.dataset)
        self.typed: list[str] | None = None  # curate's columns the output has, fixed by the first unit
        self.ids = readers.IdHashes()
        self._shown: str | None = None

    def schema(self) -> pa.Schema:
        return pa.schema(BASE_FIELDS + [STAGE_FIELDS[c] for c in self.typed or []])

    # -- the stream
    def records(self) -> Iterator[Record]:
        taken = 0
        for unit in self.units:
            for rec in self._unit(unit):
                self.counters["records"] += 1
                if rec.reason is None:
                    if self.st.max_docs is not None and taken >= self.st.max_docs:
                        return
                    taken += 1
                    if not self.st.new_ids:
                        self.ids.add(rec.doc["id"])
                yield rec

    def _unit(self, unit: Unit) -> Iterator[Record]:
        fields: _Fields | None = None
        logged = 0
        for where, rid, row_no, row, reason, utf8 in self._raw(unit):
            if reason is None:
                if fields is None:
                    fields = self._resolve(unit, row)
                rec = (
                    self._curate(row, where, rid, utf8)
                    if fields.layout == "curate"
                    else self._doc(fields, unit, row, where, rid, row_no, utf8)
                )
            else:
                rec = self._bad(where, rid, reason, row)
            if rec.reason is not None and not self.quiet:
                logged += 1
                if logged <= _LOGGED:
                    log.warning("%s: %s, skipped (%s)", where, rec.doc.pop("_error", rec.reason), rec.reason)
                elif logged == _LOGGED + 1:
                    log.warning("%s: more records that are not documents; counted, not logged", unit.path)
            rec.doc.pop("_error", None)
            yield rec

    def _raw(self, unit: Unit) -> Iterator[tuple[str, str, int, Any, str | None, int]]:
        """``(where, new id, row number from 0, record, reason or None, UTF-8: 0 valid, 1 repaired, 2 lost)`` of a unit."""
        if unit.kind == "jsonl":
            start = readers.BadStart(unit.path)
            for ln in readers.json_lines(unit.path):
                reason = ln.reason
                if reason is not None and reason != "line_too_long":
                    start.fail(ln.lineno, ln.error or reason)
                elif reason is None:
                    start.ok()
                row = ln.row if reason is None else ln
                yield f"{unit.path} line {ln.lineno}", f"{unit.rel}:{ln.lineno}", ln.lineno - 1, row, reason, int(ln.invalid_utf8)
            start.finish()
            return
        if unit.kind == "hub":
            rows = readers.hub_rows(unit.path, self.st.split, self.st.config, "pass local files or a save_to_disk directory instead")
            for i, row in enumerate(rows):
                yield f"{unit.path} row {i}", f"{unit.rel}:{self.st.split}:{i}", i, row, None, 0
            return
        if unit.kind == "disk":
            tables: Iterator[pa.Table] = readers.saved_dataset_tables(unit.path, self.st.split)
            prefix = f"{unit.rel}:{self.st.split}" if (unit.path / "dataset_dict.json").exists() else unit.rel
            first = 0
        else:
            tables, prefix, first = readers.parquet_tables(unit.path), unit.rel, 1
        i = 0
        for table in tables:
            for row, utf8 in readers.arrow_rows(table):
                yield f"{unit.path} row {i}", f"{prefix}:{i + first}", i, row, None, utf8
                i += 1

    # -- layouts
    def _resolve(self, unit: Unit, row: dict[str, Any]) -> _Fields:
        st = self.st
        given = {"text": st.text_field, "id": st.id_field, "url": st.url_field, "source": st.source_field}
        for part, path in given.items():
            if path is not None and _lookup(row, path)[0] is None:
                raise CurateError(f"{unit.path}: --{part}-field {path}: no such field in its first record (fields: {_fields(row)})")
        name = st.layout
        if name == "auto":
            generic = any(given.values())
            name = "curate" if unit.curate and not generic else detect(row, st.text_field, unit.path, curate=not generic)
        if name == "curate":
            if any(given.values()):
                raise CurateError("--text-field, --id-field, --url-field and --source-field do not apply to the curate layout")
            fields = _Fields("curate", id="id", url="url", source="source")
            self._fix_columns(unit, row)
        else:
            lay = LAYOUTS[name]
            fields = _Fields(name, flatten=lay.flatten)
            for part, candidates in (("text", lay.text), ("id", lay.id), ("url", lay.url), ("source", lay.source)):
                found = next((c for c in candidates if _lookup(row, c)[0] is not None), None)
                setattr(fields, part, given[part] if given[part] is not None else found)
            if fields.text is None:
                raise CurateError(f"{unit.path}: its records have no {' or '.join(lay.text)} field for the {name} layout "
                                  f"(fields: {_fields(row)}); name it with --text-field")  # fmt: skip
            if self.typed is None:
                self.typed = []
        self.counters[f"layout:{name}"] += 1
        how = "--layout" if st.layout != "auto" else "detected"
        line = f"{name} layout ({how}): {fields.describe(self.default_source)}"
        if line != self._shown and not self.quiet:
            log.info("%s: %s", unit.path, line)
        self._shown = line
        return fields

    def _fix_columns(self, unit: Unit, row: dict[str, Any]) -> None:
        """curate's columns (lang, ...) of this unit's first record: the first unit's make the output's schema."""
        keys = row["metadata"] if set(row) == _CURATE_JSON and isinstance(row.get("metadata"), dict) else row
        cols = [k for k in keys if k in STAGE_FIELDS]
        if self.typed is None:
            self.typed = cols
        extra = [c for c in cols if c not in self.typed]
        if extra:
            raise CurateError(f"{unit.path}: has column(s) {', '.join(extra)} that the first file has not; import such files separately")

    # -- documents
    def _id(self, value: Any, taken: bool, where: str, rid: str) -> str:
        if self.st.new_ids:
            return rid
        if value is None or not taken:
            what = "null" if value is None else f"a {type(value).__name__} ({value!r:.40})"
            raise CurateError(f"{where}: id is {what}; every document needs a string or integer id "
                              "(--new-ids gives every document a new one; add --overwrite after a failed run)")  # fmt: skip
        return value if isinstance(value, str) else str(value)

    def _source(self, value: Any, asked: bool) -> str:
        if isinstance(value, str) and value:
            return value
        if asked:
            self.counters["no_source"] += 1
        return self.default_source

    def _doc(self, f: _Fields, unit: Unit, row: dict[str, Any], where: str, rid: str, row_no: int, utf8: int) -> Record:
        holder, key = _lookup(row, f.text)
        text = holder.get(key) if holder is not None else None
        if not isinstance(text, str):
            return self._bad(where, rid, "no_text" if text is None else "text_not_string", row)
        del holder[key]  # type: ignore[union-attr]
        if self.st.new_ids or f.id is None:  # RedPajama's documents files have none: its own ids are <path from the snapshot>/<row>
            found = _SNAPSHOT.search(str(unit.path).replace("\\", "/")) if f.layout == "redpajama" and not self.st.new_ids else None
            doc_id = f"{found.group(1)}/{row_no}" if found else rid
            self.counters["new_ids"] += 1
        else:
            doc_id = self._id(*_take(row, f.id, (str, int)), where, rid)
        url, taken = _take(row, f.url)
        if not taken:
            url = None
            self.counters["url_not_string"] += 1
        source, taken = _take(row, f.source)
        meta: dict[str, Any] = row
        inner = _parsed(row, f.flatten) if f.flatten else None
        if isinstance(inner, dict):
            rest = {k: v for k, v in row.items() if k != f.flatten}
            if not (inner.keys() & rest.keys()):
                meta = {**inner, **rest}
        doc = {"id": doc_id, "text": text, "source": self._source(source if taken else None, f.source is not None), "url": url,
               "meta": _dumps(meta) if meta else None}  # fmt: skip
        return self._checked(doc, where, utf8)

    def _curate(self, row: dict[str, Any], where: str, rid: str, utf8: int) -> Record:
        text = row.get("text")
        if not isinstance(text, str):
            return self._bad(where, rid, "no_text" if text is None else "text_not_string", row)
        jsonl = set(row) == _CURATE_JSON and isinstance(row["metadata"], dict)  # a --format jsonl shard, else Parquet
        old_id = row.get("id")
        doc_id = self._id(*_take(row, "id", (str, int)), where, rid)
        if jsonl:
            md = dict(row["metadata"])
            url = md.pop("url", None)
            cols = {c: md.pop(c, None) for c in self.typed or []}
            nested = md.pop("meta", _MISSING)
            if nested is _MISSING:
                nested, md = (md or None), {}
            extras = md
        else:  # Parquet
            url, nested = row.get("url"), row.get("meta")
            cols = {c: row.get(c) for c in self.typed or []}
            extras = {k: v for k, v in row.items() if k not in _CURATE_COLUMNS}
        if self.st.new_ids and old_id is not None:
            extras = {**extras, "id": old_id}
        for c, v in cols.items():
            want = str if pa.types.is_string(STAGE_FIELDS[c].type) else (int, float)
            if v is not None and (isinstance(v, bool) or not isinstance(v, want)):
                return self._bad(where, rid, "bad_column_value", row, f"{c} is {v!r:.40}")
        if not isinstance(url, str):
            url = None
        doc = {
            "id": doc_id,
            "text": text,
            "source": self._source(row.get("source"), True),
            "url": url,
            "meta": _fold(nested, extras),
            **cols,
        }
        if self.st.new_ids:
            self.counters["new_ids"] += 1
        return self._checked(doc, where, utf8)

    def _checked(self, doc: dict[str, Any], where: str, utf8: int) -> Record:
        """Invalid UTF-8 (bytes, or lone surrogates from JSON escapes): rejected, or repaired (``--invalid-utf8 repair``)."""
        for k, v in doc.items():
            if isinstance(v, str) and not v.isascii():
                fixed = readers.valid_utf8(v)
                if fixed is not v:
                    doc[k], utf8 = fixed, max(utf8, 1)
        if utf8 == 2 or (utf8 and self.st.invalid_utf8 == "reject"):
            doc["_error"] = "invalid UTF-8" + (" in a nested field" if utf8 == 2 else "")
            return Record(doc, "invalid_utf8", where)
        if utf8:
            self.counters["invalid_utf8_repaired"] += 1
        return Record(doc, None, where)

    def _bad(self, where: str, rid: str, reason: str, row: Any, error: str | None = None) -> Record:
        """A rejected record: its text the raw line (JSON lines), its meta what the record held (for --keep-rejected)."""
        raw, err = "", error
        if isinstance(row, readers.JsonLine):
            raw, err, row = row.raw[:10_000].rstrip("\r\n"), row.error, None
        meta = readers.valid_utf8(_dumps(row)) if isinstance(row, dict) else None
        err = err or {"no_text": "no text field", "text_not_string": "the text is not a string"}.get(reason, reason)
        doc = {"id": rid, "text": readers.valid_utf8(raw), "source": self.default_source, "url": None, "meta": meta, "_error": err}
        return Record(doc, reason, where)


def detect(row: dict[str, Any], text_field: str | None, path: Any, curate: bool = True) -> str:
    """The layout a record's fields say (see docs/download.md); an error listing them when none fits, or several do."""
    keys = set(row)
    if curate and (
        (keys == _CURATE_JSON and isinstance(row.get("metadata"), dict)) or ({"id", "text", "source"} <= keys <= _CURATE_COLUMNS)
    ):
        return "curate"
    has_text = _lookup(row, text_field or "text")[0] is not None
    found = ["redpajama"] if "raw_content" in keys else []
    if has_text and {"id", "dump"} <= keys:
        found.append("fineweb")
    if has_text and "id" in keys and keys & {"metadata", "source"}:
        found.append("dolma")
    if len(found) == 1:
        return found[0]
    if found:
        raise CurateError(
            f"{path}: its records fit the {' and the '.join(found)} layouts (fields: {_fields(row)}); choose one with --layout"
        )
    if has_text:
        return "plain"
    raise CurateError(
        f"{path}: cannot tell the layout of its records (fields: {_fields(row)}); name the text field with --text-field, "
        f"or choose --layout ({', '.join(LAYOUTS)})"
    )


def _fields(row: dict[str, Any]) -> str:
    return ", ".join(row) or "none"


# --------------------------------------------------------------------------- the stage


@stage("import", section="get data", order=5)
@dataclass
class Import(Stage):
    """Your own documents as other tools write them (FineWeb, Dolma, RedPajama, plain, curate's JSON lines) into shards.

    The layout (which field is the text, the id, the URL, the source) is detected per file
    and printed; ids are kept (checked unique) unless --new-ids, the URL is kept, and every
    other field goes into meta as JSON. Records that are not documents are counted under
    their reason and skipped.

    \b
    Examples:
      curate import --dataset fineweb/000_00000.parquet --out out/fineweb
      curate import --dataset 'dolma/documents/*.json.gz' --out out/dolma
      curate import --dataset notes.jsonl --source mine/notes --out out/notes
      curate import --dataset out/filter_jsonl --out out/filter_again
    """

    name: ClassVar[str] = "import"
    kind: ClassVar[str] = "source"
    required_columns: ClassVar[tuple[str, ...]] = ()
    options: ClassVar[tuple[str, ...]] = ("out", "overwrite", "keep_rejected", "format")
    option_help: ClassVar[dict[str, str]] = {
        "keep_rejected": "Write the records that are not documents to OUT/_rejected/ with their reason."
    }
    error_reasons: ClassVar[frozenset[str]] = REASONS
    dataset: str = param(help="A file, directory or glob of .parquet, .jsonl, .jsonl.gz, .jsonl.zst, .json.gz files (local or a URL), "
                         "a save_to_disk directory, a curate output directory, or a hub dataset name (streamed).",
                         metavar="PATH|NAME", required=True)  # fmt: skip
    layout: str = param("auto", "Which fields are the text, id, URL and source: " + "; ".join(f"{n}: {lay.about}" for n, lay in LAYOUTS.items())
                        + "; auto: detected per file (printed).", choices=("auto", *LAYOUTS))  # fmt: skip
    text_field: str | None = param(None, "The text's field (a dotted path into nested objects, e.g. body.content).", metavar="PATH")
    id_field: str | None = param(None, "The id's field.", metavar="PATH")
    url_field: str | None = param(None, "The URL's field (e.g. metadata.url).", metavar="PATH")
    source_field: str | None = param(None, "The source's field.", metavar="PATH")
    source: str | None = param(
        None, "Source of the documents whose records name none [default: import/<name of --dataset>].", metavar="NAME"
    )
    new_ids: bool = param(False, "Give every document a new id (<file>:<line>, stable across re-runs); the old one stays in meta.")
    invalid_utf8: str = param("reject", "Records with invalid UTF-8: reject them (invalid_utf8), or repair them (U+FFFD, counted).",
                              choices=("reject", "repair"))  # fmt: skip
    max_docs: int | None = param(None, "Stop after N documents.", min=1)
    shard_docs: int = param(10_000, "Records per output shard.", min=1)
    loader: str = param("auto", "auto: a save_to_disk directory, local files, else the hub; hub also loads a local dataset "
                        "directory through datasets.load_dataset.", choices=("auto", "local", "disk", "hub"))  # fmt: skip
    split: str = param("train", "Split of a hub dataset or a saved DatasetDict.")
    config: str | None = param(None, "Hub dataset configuration name.")

    def __post_init__(self) -> None:
        if self.source is not None and not self.source.strip():
            raise ParamError("--source", "give a name, e.g. web/mine")
        for name in ("text_field", "id_field", "url_field", "source_field"):
            if getattr(self, name) is not None and not getattr(self, name).strip():
                raise ParamError(f"--{name.replace('_', '-')}", "give a field name or a dotted path")

    def _loader(self) -> str:
        if self.loader != "auto":
            return self.loader
        if not readers.is_local(self.dataset):
            return "hub"
        return "disk" if readers.is_saved_dataset(as_path(self.dataset)) else "local"

    def units(self) -> tuple[list[Unit], Inputs]:
        """What ``--dataset`` names, in reading order, and the inputs the runtime fingerprints."""
        loader = self._loader()
        if loader == "hub":
            fingerprint = sha256_json([self.dataset, self.split, self.config])  # all we know of a hub dataset
            return [Unit("hub", self.dataset, self.dataset)], Inputs([self.dataset], [], [fingerprint])
        p = as_path(self.dataset)
        name = input_name(self.dataset)
        if loader == "disk":
            if not readers.is_saved_dataset(p):
                raise CurateError(f"{p}: not a directory written by save_to_disk (no state.json or dataset_dict.json)")
            files = sorted(f for f in p.rglob("*") if f.is_file())
            return [Unit("disk", p, p.name)], Inputs([name], files, [files_fingerprint(files, p)], [p])
        if p.is_dir() and is_curate_dir(p):
            if not (p / SUCCESS).exists():
                raise CurateError(f"{p}: the stage that writes it has not finished (no {SUCCESS}); run it to completion first")
            shards = sorted([*p.glob("part-*.parquet"), *p.glob("part-*.jsonl.gz")], key=lambda f: f.name)
            if not shards:
                raise CurateError(f"{p}: no shards (part-*.parquet or part-*.jsonl.gz) in this curate directory")
            units = [Unit("parquet" if f.name.endswith(".parquet") else "jsonl", f, f.name, curate=True) for f in shards]
            return units, Inputs([name], shards, [record_fingerprint(p)], [p])
        files, root = readers.find_files(self.dataset)
        units = [Unit("parquet" if f.name.endswith(".parquet") else "jsonl", f, _rel(f, root)) for f in files]
        return units, Inputs([name], list(files), [files_fingerprint(files, root)], [root if len(files) > 1 else files[0]])

    def inputs(self, common: Common) -> Inputs:
        return self.units()[1]

    def run(self, ctx: Context) -> dict[str, Any]:
        units = self.units()[0]
        counters: Counter = Counter()
        imp = Importer(self, units, counters)
        records = imp.records()
        head = []
        for rec in records:  # until the first unit's layout is known: it fixes the output's columns
            head.append(rec)
            if imp.typed is not None:
                break
        stats = ctx.stream_pass(itertools.chain(head, records), shard_docs=self.shard_docs, counters=counters,
                                schema=imp.schema() if imp.typed else BASE_SCHEMA)  # fmt: skip
        if not self.new_ids:
            self._check_ids(units, imp.ids.duplicates())
        return stats

    def _check_ids(self, units: list[Unit], dups: set[int]) -> None:
        """Ids unique across the inputs (the runtime's rule for inputs curate did not write): a duplicate names both records."""
        if not dups:
            return
        seen: dict[str, str] = {}
        for rec in Importer(self, units, Counter(), quiet=True).records():
            rid = rec.doc["id"]
            if rec.reason is None and readers.IdHashes.digest(rid) in dups:
                if rid in seen:
                    raise CurateError(f"duplicate id {rid!r}: {seen[rid]} and {rec.where} (ids must be unique across the inputs; "
                                      "--new-ids gives every document a new one, with --overwrite after this run)")  # fmt: skip
                seen[rid] = rec.where

    def summary(self, record: dict[str, Any]) -> list[str]:
        lines = super().summary(record)
        c = record.get("counters") or {}
        files = [f"{k.split(':', 1)[1]} ({v:,} file{'s' if v != 1 else ''})" for k, v in sorted(c.items()) if k.startswith("layout:")]
        notes = [f"layout {', '.join(files)}"] if files else []
        said = {"new_ids": "new ids", "no_source": "given the default source", "invalid_utf8_repaired": "repaired (invalid UTF-8)",
                "url_not_string": "URLs not strings (kept in meta)"}  # fmt: skip
        notes += [f"{c[k]:,} {what}" for k, what in said.items() if c.get(k)]
        return [lines[0], *(["  " + "; ".join(notes)] if notes else []), *lines[1:]]


def _rel(f: Any, root: Any) -> str:
    return f.relative_to(root).as_posix() if f.is_relative_to(root) else f.name

"""Evaluation sets: local files (JSON lines, JSON, Parquet, plain text) or hub datasets.

A spec is a path or a hub name:

* a file: one evaluation set named by the file stem (``lambada_test.jsonl`` -> ``lambada_test``);
  ``.jsonl``/``.json`` (JSON lines, or one JSON array of objects), optionally ``.gz``/``.zst``;
  ``.parquet``; ``.txt`` (one item per non-blank line: LAMBADA's plain-text layout);
* a directory: every such file in it (recursively), each its own set;
* ``NAME`` or ``NAME:CONFIG`` (or ``hub:NAME`` to force the hub, also for a local dataset
  directory ``datasets`` can read): ``datasets.load_dataset(NAME, CONFIG, split=SPLIT)``
  for each split of ``--eval-split`` (default ``test``), named ``NAME`` or ``NAME:CONFIG``.

An item's text is its fields joined with a space. Fields (``--eval-field``, repeatable or
comma-separated, default ``text``) may be dotted (``question.text``); a list value is joined
with spaces; ``SET=FIELDS`` gives one set its own fields (and ``SET=SPLITS`` its splits).
A record without a named field, an empty set and a hub name that cannot be loaded are
one-line errors.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curate.errors import CurateError
from curate.hub import check_hub_reachable
from curate.storage import as_path, file_sha256, open_input

SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz", ".jsonl.zst", ".json.zst", ".parquet", ".txt", ".txt.gz", ".txt.zst")
DEFAULT_FIELDS = ["text"]
DEFAULT_SPLITS = ["test"]


@dataclass
class EvalSpec:
    """One evaluation set to load."""

    name: str
    kind: str  # "file" or "hub"
    source: str  # file path, or hub name / local dataset directory
    config: str | None = None
    fields: list[str] = field(default_factory=lambda: list(DEFAULT_FIELDS))
    splits: list[str] = field(default_factory=lambda: list(DEFAULT_SPLITS))
    fields_given: bool = False

    def describe(self) -> str:
        if self.kind == "file":
            return self.source
        cfg = f", config {self.config!r}" if self.config else ""
        return f"hub dataset {self.source!r}{cfg}"


@dataclass
class EvalSet:
    """A loaded evaluation set: its items' texts and a fingerprint of what was read."""

    spec: EvalSpec
    texts: list[str]
    fingerprint: str
    empty_items: int = 0


def _split_list(values: Iterable[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _qualified(values: Iterable[str], option: str) -> tuple[list[str], dict[str, list[str]]]:
    """``a,b`` values (for every set) and ``SET=a,b`` values (for one set)."""
    common: list[str] = []
    per_set: dict[str, list[str]] = {}
    for value in values:
        if "=" in value:
            name, _, rest = value.partition("=")
            items = _split_list([rest])
            if not name.strip() or not items:
                raise CurateError(f"{option} {value!r}: expected SET=VALUE[,VALUE...]")
            per_set.setdefault(name.strip(), []).extend(items)
        else:
            common.extend(_split_list([value]))
    return common, per_set


def file_stem(path: Path) -> str:
    """``lambada_test.jsonl.zst`` -> ``lambada_test``."""
    name = path.name
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _looks_like_path(spec: str) -> bool:
    """Hub names never start with ``.``, ``/`` or ``~``, never end with a file suffix, and their owner is no local folder."""
    from curate.storage import is_url

    return (
        is_url(spec) or spec.startswith((".", "/", "~")) or spec.endswith(SUFFIXES) or ("/" in spec and Path(spec.split("/")[0]).is_dir())
    )


def parse_specs(evals: Iterable[str], fields: Iterable[str] = (), splits: Iterable[str] = ()) -> list[EvalSpec]:
    """Turn ``--eval``, ``--eval-field`` and ``--eval-split`` values into named specs."""
    specs: list[EvalSpec] = []
    for raw in evals:
        raw = raw.strip()
        if not raw:
            raise CurateError("--eval: empty value")
        if raw.startswith("hub:"):
            rest = raw[4:]
            if Path(rest).exists():  # a local dataset directory read through datasets
                specs.append(EvalSpec(Path(rest).resolve().name, "hub", rest))
            else:
                name, _, config = rest.partition(":")
                specs.append(EvalSpec(rest, "hub", name, config or None))
            continue
        p = as_path(raw).expanduser()
        if p.is_file():
            if not p.name.endswith(SUFFIXES):
                raise CurateError(f"{p}: unsupported evaluation file type (use {', '.join(SUFFIXES)})")
            specs.append(EvalSpec(file_stem(p), "file", str(p)))
        elif p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(SUFFIXES) and not f.name.startswith((".", "_")))
            if not files:
                raise CurateError(f"{p}: no evaluation files ({', '.join(SUFFIXES)}) in this directory")
            specs.extend(EvalSpec(file_stem(f), "file", str(f)) for f in files)
        elif _looks_like_path(raw):
            raise CurateError(f"{raw}: no such evaluation file or directory")
        else:
            name, _, config = raw.partition(":")
            specs.append(EvalSpec(raw, "hub", name, config or None))
    if not specs:
        raise CurateError("give at least one evaluation set with --eval")
    names = [s.name for s in specs]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise CurateError(f"--eval: two evaluation sets are named {dups[0]!r} (sets are named by file stem or hub name); rename one file")
    common_fields, set_fields = _qualified(fields, "--eval-field")
    common_splits, set_splits = _qualified(splits, "--eval-split")
    for option, per_set in (("--eval-field", set_fields), ("--eval-split", set_splits)):
        unknown = sorted(set(per_set) - set(names))
        if unknown:
            raise CurateError(f"{option} {unknown[0]}=...: no evaluation set named {unknown[0]!r} (sets: {', '.join(names)})")
    for s in specs:
        chosen = set_fields.get(s.name) or common_fields
        s.fields_given = s.name in set_fields
        s.fields = chosen or list(DEFAULT_FIELDS)
        s.splits = set_splits.get(s.name) or common_splits or list(DEFAULT_SPLITS)
        if s.kind == "file" and s.source.endswith((".txt", ".txt.gz", ".txt.zst")) and s.fields_given:
            raise CurateError(f"--eval-field {s.name}=...: {s.source} is plain text (one item per line) and has no fields")
    return specs


# --------------------------------------------------------------------------- item text


def _value_text(value: Any, where: str, fld: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return " ".join(t for t in (_value_text(v, where, fld) for v in value) if t)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, dict):
        raise CurateError(f"{where}: field {fld!r} is an object; name one of its fields, e.g. {fld}.{next(iter(value), 'text')}")
    return str(value)


def item_text(record: Any, fields: list[str], where: str) -> str:
    """The named fields of one record joined with a space; a missing field is an error naming it."""
    if not isinstance(record, dict):
        raise CurateError(f"{where}: not a JSON object (got {type(record).__name__})")
    parts = []
    for fld in fields:
        value: Any = record
        for part in fld.split("."):
            if not isinstance(value, dict) or part not in value:
                have = ", ".join(map(str, value)) if isinstance(value, dict) else type(value).__name__
                raise CurateError(f"{where}: no field {fld!r} (has: {have}); choose fields with --eval-field")
            value = value[part]
        text = _value_text(value, where, fld)
        if text:
            parts.append(text)
    return " ".join(parts)


# --------------------------------------------------------------------------- local files


def _open_text(path: Path) -> io.TextIOBase:
    try:
        if path.name.endswith(".gz"):
            return io.TextIOWrapper(gzip.open(path if isinstance(path, Path) else open_input(path), "rb"), encoding="utf-8")
        if path.name.endswith(".zst"):
            import zstandard

            return io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(open_input(path)), encoding="utf-8")
        return open(path, encoding="utf-8") if isinstance(path, Path) else io.TextIOWrapper(open_input(path), encoding="utf-8")
    except OSError as exc:
        raise CurateError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def _file_records(path: Path, fields: list[str]) -> Iterator[str]:
    name = path.name
    if name.endswith(".parquet"):
        yield from _parquet_records(path, fields)
        return
    plain = name.endswith((".txt", ".txt.gz", ".txt.zst"))
    try:
        with _open_text(path) as fh:
            if not plain and name.endswith((".json", ".json.gz", ".json.zst")):
                head = fh.read(4096)
                rest = fh.read() if head.lstrip().startswith("[") else None
                if rest is not None:
                    try:
                        rows = json.loads(head + rest)
                    except ValueError as exc:
                        raise CurateError(f"{path}: not valid JSON ({exc})") from exc
                    for i, row in enumerate(rows):
                        yield item_text(row, fields, f"{path}: item {i}")
                    return
                lines: Iterable[str] = (head + fh.read()).splitlines()
            else:
                lines = fh
            for lineno, line in enumerate(lines, 1):
                line = line.rstrip("\r\n")
                if not line.strip():
                    continue
                if plain:
                    yield line
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise CurateError(f"{path}: line {lineno}: not valid JSON ({exc})") from exc
                yield item_text(row, fields, f"{path}: line {lineno}")
    except UnicodeDecodeError as exc:
        raise CurateError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except (OSError, EOFError) as exc:
        raise CurateError(f"{path}: cannot read ({exc})") from exc


def _parquet_records(path: Path, fields: list[str]) -> Iterator[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path if isinstance(path, Path) else open_input(path))
    except (OSError, pa.ArrowException) as exc:
        raise CurateError(f"{path}: not a readable Parquet file ({exc})") from exc
    names = pf.schema_arrow.names
    top = list(dict.fromkeys(f.split(".")[0] for f in fields))
    missing = [f for f in top if f not in names]
    if missing:
        raise CurateError(f"{path}: no field {missing[0]!r} (has: {', '.join(names)}); choose fields with --eval-field")
    from curate.dataset import repair_utf8

    row_no = 0
    for batch in pf.iter_batches(columns=top, batch_size=4096):
        table, _ = repair_utf8(pa.Table.from_batches([batch]))  # Arrow does not validate UTF-8: U+FFFD, never a crash
        for row in table.to_pylist():
            yield item_text(row, fields, f"{path}: row {row_no}")
            row_no += 1


# --------------------------------------------------------------------------- hub


def _hub_records(spec: EvalSpec) -> tuple[list[str], str]:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - a dependency
        raise CurateError("the 'datasets' package is needed for hub evaluation sets: pip install datasets") from exc
    if not Path(spec.source).exists():
        check_hub_reachable(f"evaluation set {spec.name!r}", "pass a local file (JSONL, Parquet or text) instead")
    texts: list[str] = []
    prints = []
    for split in spec.splits:
        try:
            ds = datasets.load_dataset(spec.source, spec.config, split=split)
        except Exception as exc:  # noqa: BLE001 - hub errors come in many types
            msg = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise CurateError(
                f"evaluation set {spec.name!r}: cannot load {spec.describe()} split {split!r} through datasets: {msg}"
            ) from exc
        top = list(dict.fromkeys(f.split(".")[0] for f in spec.fields))
        missing = [f for f in top if f not in ds.column_names]
        if missing:
            raise CurateError(
                f"evaluation set {spec.name!r} ({split}): no field {missing[0]!r} (has: {', '.join(ds.column_names)}); "
                f"choose fields with --eval-field {spec.name}=FIELD"
            )
        for i, row in enumerate(ds.select_columns(top)):
            texts.append(item_text(row, spec.fields, f"evaluation set {spec.name!r} ({split}): row {i}"))
        prints.append(f"{split}:{getattr(ds, '_fingerprint', '')}:{len(ds)}")
    return texts, "|".join(prints)


# --------------------------------------------------------------------------- loading


def load_eval_set(spec: EvalSpec) -> EvalSet:
    """Read every item of one set; an empty set is an error."""
    if spec.kind == "file":
        path = as_path(spec.source)
        texts = list(_file_records(path, spec.fields))
        digest = file_sha256(path)
    else:
        texts, digest = _hub_records(spec)
    if not texts:
        raise CurateError(f"{spec.describe()}: empty evaluation set (no items)")
    key = json.dumps([spec.kind, spec.name, spec.config, spec.fields, spec.splits if spec.kind == "hub" else None, digest])
    fp = hashlib.sha256(key.encode()).hexdigest()
    return EvalSet(spec, texts, fp, sum(1 for t in texts if not t.strip()))


def fingerprint(sets: list[EvalSet]) -> str:
    """One digest of every set's name, fields and content."""
    return hashlib.sha256("\n".join(s.fingerprint for s in sets).encode()).hexdigest()[:16]

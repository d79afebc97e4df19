"""The stage protocols: what a stage declares, and the base of stages that decide per document.

Kinds: a map stage (:class:`MapStage`: a table in, kept and rejected documents out, shard by
shard; :class:`DocStage` when the stage only decides per document), ``source`` (files or a
stream in, documents out), ``global`` (phases over every input, then a map pass) and ``sink``
(documents in, other files out). The runtime (``lifecycle.run_stage``) runs each the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from curate.dataset import Inputs, dataset_inputs, decode_texts, repair_utf8
from curate.runtime.params import MAP_OPTIONS, declared_params
from curate.schema import BASE_FIELDS, REQUIRED_COLUMNS, STAGE_FIELDS, with_column
from curate.stats import Counters, summary_line
from curate.targets import OutputDir, Target

if TYPE_CHECKING:
    from curate.runtime.params import Common
    from curate.runtime.passes import Context

_TEXT_FIELD = BASE_FIELDS[1]


@dataclass
class FileBatch:
    """What a file reader (a source stage's ``read``) yields: kept and rejected documents, counters, and the input they came from.

    ``docs_in``/``bytes_in`` count the input (e.g. HTML records and bytes); by default they are
    the kept plus rejected rows and their text bytes. ``source`` attributes them per source.
    """

    kept: pa.Table
    rejected: pa.Table | None = None
    counters: dict[str, Any] = field(default_factory=dict)
    docs_in: int | None = None
    bytes_in: int | None = None
    source: str = ""


@dataclass
class MapResult:
    """What a map stage returns for one batch of documents."""

    kept: pa.Table
    rejected: pa.Table | None = None  # same columns plus ``reason``
    counters: dict[str, Any] = field(default_factory=dict)


class Stage:
    """What every stage declares. Subclasses are dataclasses whose fields are ``param`` declarations.

    ``name`` is what its records say (``_SUCCESS`` ``stage``); ``title`` what its log lines
    and summary say. ``options`` names the shared options (``COMMON``) it takes, and
    ``option_help`` rewords one for this stage. ``error_reasons`` are rejection reasons that
    mean something failed (not a decision about the document): see ``check_outcome``.
    Instances must be picklable (they travel to worker processes); load models lazily.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    options: ClassVar[tuple[str, ...]] = MAP_OPTIONS
    option_help: ClassVar[dict[str, str]] = {}
    option_defaults: ClassVar[dict[str, Any]] = {}
    error_reasons: ClassVar[frozenset[str]] = frozenset()
    checks_ids: ClassVar[bool] = True  # ids of foreign inputs are checked (sinks that drop ids say False)
    required_columns: ClassVar[tuple[str, ...]] = REQUIRED_COLUMNS  # checked in the inputs before any work
    #: Report sections this stage feeds: section name -> where its data is in the record (a dotted path,
    #: e.g. "counters.lang"). Written into the record, so the report reads it without importing the stage.
    sections: ClassVar[dict[str, str]] = {}

    @classmethod
    def display(cls) -> str:
        return cls.title or cls.name.replace("_", " ")

    def params(self) -> dict[str, Any]:
        """What the output is made with: every declared field with ``record`` and the stage's :meth:`derived_params`.

        Not overridden by stages (a test holds them to it): a new declared field is recorded,
        and so restarts the output when it changes, without anyone listing it.
        """
        out = {
            f.name: getattr(self, f.name) for f, p in declared_params(type(self)) if p.record and (p.relevant is None or p.relevant(self))
        }
        out.update(self.derived_params())
        return out

    def derived_params(self) -> dict[str, Any]:
        """Values the output also depends on (a model's sha256, resolved defaults), or a declared field's recorded form."""
        return {}

    def inputs(self, common: Common) -> Inputs:
        """What the stage reads (default: dataset directories, Parquet files or globs from --in)."""
        return dataset_inputs(common.inputs)

    def target(self, common: Common) -> Target:
        """Where the stage writes (default: a dataset directory, in the ``--format`` it takes)."""
        return OutputDir(common.out, common.format if "format" in self.options else None)

    def summary(self, record: dict[str, Any]) -> list[str]:
        """The lines the command prints at the end (stored in the record for the report)."""
        return [summary_line(self.display(), record, record.get("wall_seconds", 0.0)), f"  output: {record.get('output', '')}"]

    def run(self, ctx: Context) -> dict[str, Any]:
        """Do the work; returns the record's stage-specific entries (stats, counters)."""
        raise NotImplementedError


class MapStage(Stage):
    """A stage that maps a table of documents to kept and rejected documents, shard by shard."""

    kind: ClassVar[str] = "map"

    def __call__(self, table: pa.Table) -> MapResult:
        raise NotImplementedError

    def run(self, ctx: Context) -> dict[str, Any]:
        return ctx.map_pass(self)


# --------------------------------------------------------------------------- deciding per document


@dataclass(frozen=True, slots=True)
class Document:
    """One document as :meth:`DocStage.decide` sees it (``meta`` is the JSON string, or None)."""

    id: str
    text: str
    source: str
    url: str | None
    meta: str | None


@dataclass(frozen=True, slots=True)
class Decision:
    """What a stage decides for one document: keep it (``reason`` None) or reject it, with its new text or not."""

    reason: str | None = None
    text: str | None = None


KEEP = Decision()


@dataclass
class Decisions:
    """What a stage decides for one batch, in row order.

    ``reasons[i]`` is None to keep document ``i``, else its rejection reason (``reasons`` None:
    keep all). ``texts`` (when given: a list or an Arrow array) is every document's new text,
    kept and rejected alike; ``columns`` are columns the
    stage adds to every document (by name: a column of the schema, ``curate/schema.py``, or a
    ``pa.Field``), ``rejected_columns`` columns only the rejected output gets, after ``reason``
    (values for every row; e.g. the document a duplicate duplicates); ``counters`` what it counted.
    """

    reasons: Sequence[str | None] | None = None
    texts: Sequence[str] | pa.Array | pa.ChunkedArray | None = None
    columns: dict[str | pa.Field, Any] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)
    rejected_columns: dict[str | pa.Field, Any] = field(default_factory=dict)


class Batch:
    """A batch of documents handed to :meth:`DocStage.decide_batch`: the table, and its texts as Python strings (on first use)."""

    def __init__(self, table: pa.Table, texts: list[str] | None = None) -> None:
        self.table = table
        self._texts = texts

    @property
    def texts(self) -> list[str]:
        if self._texts is None:
            self._texts = [t if t is not None else "" for t in self.table.column("text").to_pylist()]
        return self._texts

    def column(self, name: str) -> list[Any]:
        """A column as a Python list (None where the table has no such column)."""
        if name not in self.table.column_names:
            return [None] * self.table.num_rows
        return self.table.column(name).to_pylist()

    def documents(self) -> list[Document]:
        ids, sources, urls, metas = (self.column(c) for c in ("id", "source", "url", "meta"))
        return [Document(i, t, s, u, m) for i, t, s, u, m in zip(ids, self.texts, sources, urls, metas)]


class DocStage(MapStage):
    """A map stage that decides per document; the base builds the kept and rejected tables and counts.

    Define :meth:`decide` (one document -> a :class:`Decision`, a reason string, or None to
    keep it) or, for speed, :meth:`decide_batch` (a :class:`Batch` -> :class:`Decisions`).
    ``invalid_utf8`` is the stage's policy for text that is not valid UTF-8 (Arrow does not
    check what it reads; curate's readers repair on the way in, so this applies to tables
    handed to the stage directly): ``repair`` replaces the bad bytes with U+FFFD and counts
    ``invalid_utf8_repaired`` per column; ``reject`` rejects the document (reason ``invalid_utf8``).
    """

    invalid_utf8: ClassVar[str] = "repair"

    def decide(self, doc: Document) -> Decision | str | None:
        """Keep (None or :data:`KEEP`), reject (a reason), or keep with new text (``Decision(text=...)``)."""
        raise NotImplementedError

    def decide_batch(self, batch: Batch) -> Decisions:
        """The decisions of a batch; the default calls :meth:`decide` per document."""
        reasons: list[str | None] = []
        texts: list[str] = []
        changed = False
        for doc in batch.documents():
            d = self.decide(doc)
            if d is None or isinstance(d, str):
                reasons.append(d)
                texts.append(doc.text)
                continue
            reasons.append(d.reason)
            if d.text is not None and d.text != doc.text:
                changed = True
                texts.append(d.text)
            else:
                texts.append(doc.text)
        return Decisions(reasons, texts if changed else None)

    def __call__(self, table: pa.Table) -> MapResult:
        counters = Counters()
        if self.invalid_utf8 == "repair":
            table, repaired = repair_utf8(table)
            if repaired:
                counters["invalid_utf8_repaired"] = repaired
            d = self.decide_batch(Batch(table))
        else:
            decoded = decode_texts(table.column("text"))
            bad = [i for i, t in enumerate(decoded) if t is None]
            if not bad:
                d = self.decide_batch(Batch(table, decoded))  # type: ignore[arg-type]
            else:  # rejected before the stage sees them; it decides over the others
                table, _ = repair_utf8(table)
                d = _merge_invalid(self, table, decoded)
        counters.merge(d.counters)
        return _result(table, d, counters)


def _merge_invalid(stage: DocStage, table: pa.Table, decoded: list[str | None]) -> Decisions:
    """The stage's decisions over the valid documents, with the invalid ones rejected as ``invalid_utf8``, in row order."""
    ok = [i for i, t in enumerate(decoded) if t is not None]
    d = stage.decide_batch(Batch(table.take(ok), [decoded[i] for i in ok]))  # type: ignore[misc]
    where = {row: k for k, row in enumerate(ok)}  # row -> its place among the valid ones
    n = table.num_rows
    given = d.reasons if d.reasons is not None else [None] * len(ok)
    reasons = [given[where[i]] if i in where else "invalid_utf8" for i in range(n)]
    texts = None
    if d.texts is not None:
        new = d.texts.to_pylist() if isinstance(d.texts, (pa.Array, pa.ChunkedArray)) else d.texts
        repaired = table.column("text").to_pylist()
        texts = [new[where[i]] if i in where else repaired[i] for i in range(n)]
    index = pa.array([where[i] if i in where else len(ok) for i in range(n)], pa.int64())  # len(ok): a null appended below
    columns = {k: _with_null(v).take(index) for k, v in d.columns.items()}
    return Decisions(reasons, texts, columns, d.counters)


def _with_null(values: Any) -> pa.Array:
    """``values`` as an Arrow array with one null appended."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        values = pa.array(list(values))
    return pa.concat_arrays([values, pa.nulls(1, values.type)])


def _field(key: str | pa.Field) -> pa.Field:
    if isinstance(key, pa.Field):
        return key
    if key not in STAGE_FIELDS:
        raise KeyError(f"column {key!r} is not in curate/schema.py's STAGE_FIELDS; pass a pa.Field")
    return STAGE_FIELDS[key]


def _result(table: pa.Table, d: Decisions, counters: Counters) -> MapResult:
    """Kept and rejected tables from a batch's decisions (new text and columns applied to both)."""
    if d.texts is not None:
        texts = d.texts if isinstance(d.texts, (pa.Array, pa.ChunkedArray)) else pa.array(d.texts, type=pa.large_string())
        table = with_column(table, _TEXT_FIELD, texts)
    for key, values in d.columns.items():
        table = with_column(table, _field(key), values)
    if d.reasons is None:
        return MapResult(table, None, counters)
    if len(d.reasons) != table.num_rows:
        raise ValueError(f"a stage decided {len(d.reasons)} documents of a batch of {table.num_rows}")
    mask = pa.array([r is None for r in d.reasons], pa.bool_())
    drop = pc.invert(mask)
    kept = table.filter(mask)
    rejected = table.filter(drop)
    reasons = [r for r in d.reasons if r is not None]
    rejected = rejected.append_column("reason", pa.array(reasons, pa.string()))
    for key, values in d.rejected_columns.items():
        f = _field(key)
        arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, f.type)
        rejected = rejected.append_column(f, arr.filter(drop))
    return MapResult(kept, rejected, counters)

"""The ``curate`` command line: one small command per stage, no logic of its own.

Every user mistake becomes one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import click

from curate import __version__
from curate.errors import CurateError

log = logging.getLogger("curate")


class CurateGroup(click.Group):
    """A click group whose errors are one line on stderr (exit 2 for usage, 1 otherwise)."""

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:  # type: ignore[override]
        extra.pop("standalone_mode", None)
        try:
            rv = super().main(args, prog_name or "curate", standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo("curate: aborted", err=True)
            sys.exit(130)
        except click.UsageError as exc:
            cmd = exc.ctx.command_path if exc.ctx else "curate"
            click.echo(f"{cmd}: error: {exc.format_message()} (see '{cmd} --help')", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"curate: error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except CurateError as exc:
            click.echo(f"curate: error: {exc}", err=True)
            sys.exit(1)
        except OSError as exc:  # disk full, permissions, a vanished file: one line, never a traceback
            import os

            why = os.strerror(exc.errno) if exc.errno else (exc.strerror or str(exc) or type(exc).__name__)
            where = f"{exc.filename}: " if exc.filename else ""
            click.echo(f"curate: error: {where}{why}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("curate: interrupted; finished shards are kept, re-run to complete", err=True)
            sys.exit(130)
        if isinstance(rv, int):
            sys.exit(rv)
        sys.exit(0)


def _setup_logging(verbose: int, quiet: bool) -> None:
    level = logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("curate: %(message)s"))
    root = logging.getLogger("curate")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


@click.group(name="curate", cls=CurateGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="curate")
@click.option("-v", "--verbose", count=True, help="More log output (per-record warnings, debug lines).")
@click.option("-q", "--quiet", is_flag=True, help="Only warnings and errors on stderr.")
def cli(verbose: int, quiet: bool) -> None:
    """curate: turn raw public text into a tokenized LLM training corpus.

    Each command is one stage. Stages read and write dataset directories of Parquet
    shards (open them with pandas.read_parquet); re-running a stage resumes it.
    """
    _setup_logging(verbose, quiet)


def map_stage_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options every map stage takes: --in, --out, --workers, --overwrite, --keep-rejected."""
    options = [
        click.option("--in", "inputs", multiple=True, required=True, metavar="DIR",
                     help="Input dataset directory, Parquet file or glob (repeatable; local or a URL: s3://bucket/dir)."),
        click.option("--out", "out", required=True, metavar="DIR", help="Output dataset directory (local or a URL: s3://bucket/dir)."),
        click.option("--workers", type=click.IntRange(min=1), default=None,
                     help="Worker processes [default: all cores]."),
        click.option("--overwrite", is_flag=True, help="Delete OUT and start again instead of resuming."),
        click.option("--keep-rejected", is_flag=True, help="Also write dropped documents to OUT/_rejected/ with a reason."),
        click.option("--only-sources", "only_sources", default=None, metavar="GLOBS",
                     help="Apply the stage only to these sources (comma-separated globs, e.g. 'cc/*'); "
                          "other documents pass through unchanged."),
    ]  # fmt: skip
    for opt in reversed(options):
        fn = opt(fn)
    return executor_options(fn)


def executor_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--executor and --ray-address; ``_executor`` reads them from the command's parameters."""

    @functools.wraps(fn)
    def command(*args: Any, executor: str = "local", ray_address: str | None = None, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    options = [
        click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="Run shards as local worker processes, or as Ray tasks (pip install 'curate[ray]')."),
        click.option("--ray-address", default=None, metavar="ADDR",
                     help="With --executor ray: 'auto' or ray://HOST:PORT of a running cluster [default: start Ray locally]."),
    ]  # fmt: skip
    for opt in reversed(options):
        command = opt(command)
    return command


def _executor(workers: int | None) -> Any:
    """The executor the current command's --executor/--ray-address ask for."""
    from curate.executor import make_executor

    ctx = click.get_current_context(silent=True)
    params = ctx.params if ctx is not None else {}
    return make_executor(params.get("executor") or "local", workers, ray_address=params.get("ray_address"))


def _report(stage: str, record: dict[str, Any], out: str) -> None:
    from curate.dataset import summary_line

    click.echo(summary_line(stage, record, record.get("wall_seconds", 0.0)))
    click.echo(f"  output: {out}")


def run_map(
    stage: Any,
    inputs: tuple[str, ...],
    out: str,
    workers: int | None,
    overwrite: bool,
    keep_rejected: bool,
    only_sources: str | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """Run a map stage from CLI options and print its summary line."""
    from curate.dataset import run_map_stage

    record = run_map_stage(
        stage,
        list(inputs),
        out,
        executor=_executor(workers),
        overwrite=overwrite,
        keep_rejected=keep_rejected,
        only_sources=[only_sources] if only_sources else None,
        **kw,
    )
    _report(stage.name, record, out)
    return record


# --------------------------------------------------------------------------- download


@cli.group()
def download() -> None:
    """Download source data: Pile-style subsets (hub or local files), CommonCrawl WARCs."""


@download.command("pile")
@click.option(
    "--dataset",
    required=True,
    metavar="NAME|PATH",
    help="Hub dataset name (streamed with `datasets`), or a local file, directory or glob "
    "of .jsonl, .jsonl.zst, .json.gz or .parquet files in the Pile layout.",
)
@click.option(
    "--subset",
    "subsets",
    multiple=True,
    metavar="NAME",
    help="Keep this pile_set_name (repeatable; e.g. 'Wikipedia (en)' or Wikipedia) [default: all].",
)
@click.option("--max-docs", type=click.IntRange(min=1), default=None, help="At most N documents per subset.")
@click.option("--shard-docs", type=click.IntRange(min=1), default=10_000, show_default=True, help="Records per output shard.")
@click.option("--out", required=True, metavar="DIR", help="Output dataset directory.")
@click.option(
    "--loader",
    type=click.Choice(["auto", "local", "hub"]),
    default="auto",
    show_default=True,
    help="auto: local when the path exists, else the hub; hub also loads a local dataset directory through `datasets`.",
)
@click.option("--split", default="train", show_default=True, help="Hub split.")
@click.option("--config", "hub_config", default=None, help="Hub dataset configuration name.")
@click.option("--allow-unknown-subsets", is_flag=True, help="Accept subset names that are not among the Pile's 22.")
@click.option("--overwrite", is_flag=True, help="Delete OUT and start again instead of resuming.")
@click.option("--keep-rejected", is_flag=True, help="Write malformed records to OUT/_rejected/ with their reason.")
def download_pile(
    dataset: str,
    subsets: tuple[str, ...],
    max_docs: int | None,
    shard_docs: int,
    out: str,
    loader: str,
    split: str,
    hub_config: str | None,
    allow_unknown_subsets: bool,
    overwrite: bool,
    keep_rejected: bool,
) -> None:
    """Pile-style subsets into a dataset directory (source = pile/<subset>).

    Text is stored as read; repair Unicode with `curate clean` next. A malformed line is
    counted under bad_record (file and line in the log) and skipped; a file that cannot
    be read at all stops the command.

    \b
    Example:
      curate download pile --dataset sample_data/pile --subset Wikipedia --subset ArXiv \\
          --max-docs 100 --out out/pile
    """  # noqa: D301
    from curate.dataset import write_stream
    from curate.stages.pile import pile_records

    counters: Counter = Counter()
    records = pile_records(
        dataset,
        subsets=list(subsets) or None,
        max_docs=max_docs,
        loader=loader,
        split=split,
        config=hub_config,
        allow_unknown_subsets=allow_unknown_subsets,
        counters=counters,
    )
    params = {
        "dataset": dataset,
        "subsets": sorted(subsets),
        "max_docs": max_docs,
        "shard_docs": shard_docs,
        "loader": loader,
        "split": split,
        "config": hub_config,
    }
    record = write_stream(
        records,
        out,
        stage="download_pile",
        params=params,
        shard_docs=shard_docs,
        counters=counters,
        keep_rejected=keep_rejected,
        overwrite=overwrite,
        desc="download pile",
    )
    _report("download pile", record, out)


# --------------------------------------------------------------------------- clean


@cli.command("clean")
@map_stage_options
@click.option(
    "--normalization",
    type=click.Choice(["NFC", "NFKC", "none"]),
    default="NFC",
    show_default=True,
    help="Unicode normalisation form applied after repair.",
)
@click.option(
    "--max-blank-lines", type=click.IntRange(min=0), default=2, show_default=True, help="Collapse longer runs of blank lines to this many."
)
def clean(
    inputs: tuple[str, ...],
    out: str,
    workers: int | None,
    overwrite: bool,
    keep_rejected: bool,
    only_sources: str | None,
    normalization: str,
    max_blank_lines: int,
) -> None:
    """Repair Unicode (ftfy: mojibake, entities, control characters) and normalise whitespace.

    Documents that are empty after cleaning are rejected with reason `empty`.

    \b
    Example:
      curate clean --in out/pile --out out/clean
    """
    from curate.stages.clean import CleanStage

    stage = CleanStage(normalization="" if normalization == "none" else normalization, max_blank_lines=max_blank_lines)
    run_map(stage, inputs, out, workers, overwrite, keep_rejected, only_sources)


# --------------------------------------------------------------------------- extract (issue 3)


@download.command("cc")
@click.option("--snapshot", required=True, metavar="NAME", help="CommonCrawl snapshot, e.g. CC-MAIN-2020-50.")
@click.option("--segments", required=True, type=click.IntRange(min=1), metavar="N", help="How many WARC files to download.")
@click.option("--seed", type=int, default=None, help="Pick a seeded random sample of the listing instead of the first N.")
@click.option(
    "--base-url",
    default="https://data.commoncrawl.org",
    show_default=True,
    metavar="URL",
    help="The data host; a mirror or a local server (python -m curate.httpserve DIR) works the same.",
)
@click.option(
    "--out",
    required=True,
    metavar="DIR",
    help="Files go to DIR/<path as listed> (DIR mirrors the host's layout); a local directory (no s3:// here).",
)
@click.option("--workers", type=click.IntRange(min=1), default=4, show_default=True, help="Parallel downloads.")
@click.option("--retries", type=click.IntRange(min=0), default=5, show_default=True, help="Retries of a file after a transient error.")
@click.option(
    "--retry-wait",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="First backoff in seconds (doubles per retry, at most 60).",
)
@click.option(
    "--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True, help="Seconds without data before a read is retried."
)
@click.option(
    "--ca-bundle",
    default=None,
    metavar="PEM",
    help="Extra CA certificates to trust (a mirror with a private CA); certificates are always verified.",
)
@click.option(
    "--max-file-bytes",
    type=click.IntRange(min=1),
    default=20 << 30,
    show_default=True,
    help="A file larger than this (announced or received) fails instead of filling the disk.",
)
@click.option(
    "--max-redirects",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Redirects followed per request (only to http/https, never from https to http).",
)
def download_cc_cmd(
    snapshot: str,
    segments: int,
    seed: int | None,
    base_url: str,
    out: str,
    workers: int,
    retries: int,
    retry_wait: float,
    timeout: float,
    ca_bundle: str | None,
    max_file_bytes: int,
    max_redirects: int,
) -> None:
    """CommonCrawl WARC files of one snapshot, resumable (extract them with `curate extract`).

    Reads BASE-URL/crawl-data/SNAPSHOT/warc.paths.gz, picks N paths and downloads each to
    OUT/<path>. A file is written under a temporary name and renamed when complete and of
    the announced size; an interrupted file resumes with an HTTP Range request; connection
    errors, timeouts and 5xx are retried with exponential backoff. A 404 or a size
    mismatch fails that file, the others still complete, and the command exits 1 naming
    what is missing. Re-running skips complete files (and reuses the saved listing).
    OUT must be local (resuming needs a local file); copy it to s3:// afterwards if the
    cluster reads from there: `curate extract --in s3://...` reads WARC files through fsspec.

    \b
    Example:
      curate download cc --snapshot CC-MAIN-2020-50 --segments 2 --out data/cc
      curate download cc --snapshot CC-MAIN-2021-04 --segments 100 --seed 1 --workers 8 --out data/cc
    """  # noqa: D301
    from curate.dataset import as_path, is_local
    from curate.stages.download_cc import RetryPolicy, download_cc, summary_line

    if not is_local(out):
        raise CurateError(
            f"download cc --out {out}: must be a local directory (resuming with HTTP Range requests needs a local file); "
            "download to local disk, then copy to the object store or run extract on the local copy"
        )
    out = str(as_path(out))  # file:// URLs too
    policy = RetryPolicy(
        retries=retries,
        wait=retry_wait,
        read_timeout=timeout,
        max_redirects=max_redirects,
        max_file_bytes=max_file_bytes,
        ca_bundle=ca_bundle,
    )
    summary = download_cc(snapshot, segments, out, seed=seed, base_url=base_url, workers=workers, policy=policy)
    click.echo(summary_line(summary))
    click.echo(f"  output: {out}")


@cli.command("extract")
@executor_options
@click.option(
    "--in",
    "inputs",
    multiple=True,
    required=True,
    metavar="DIR",
    help="Directory (searched recursively), .warc.gz file or glob (repeatable).",
)
@click.option("--out", required=True, metavar="DIR", help="Output dataset directory (one shard per WARC file).")
@click.option(
    "--extractor",
    type=click.Choice(["resiliparse", "trafilatura", "justext"]),
    default="resiliparse",
    show_default=True,
    help="Main-content extractor.",
)
@click.option(
    "--source",
    default=None,
    metavar="NAME",
    help="The documents' source [default: cc/<snapshot>, the CC-MAIN-YYYY-WW part of each file's path].",
)
@click.option(
    "--max-html-bytes",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Records with a larger HTML body are skipped (too_large).",
)
@click.option(
    "--record-timeout",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="Seconds one record's extraction may take (timeout); 0: no limit, extract in-process.",
)
@click.option(
    "--min-chars", type=click.IntRange(min=1), default=1, show_default=True, help="Documents with less extracted text are rejected (empty)."
)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Worker processes [default: all cores].")
@click.option("--overwrite", is_flag=True, help="Delete OUT and start again instead of resuming.")
@click.option("--keep-rejected", is_flag=True, help="Also write skipped records to OUT/_rejected/ with a reason (text empty).")
def extract_cmd(
    inputs: tuple[str, ...],
    out: str,
    extractor: str,
    source: str | None,
    max_html_bytes: int,
    record_timeout: float,
    min_chars: int,
    workers: int | None,
    overwrite: bool,
    keep_rejected: bool,
) -> None:
    """Main-content text of the HTML pages in WARC files (source = cc/<snapshot>).

    Keeps `response` records with HTTP 200 and an HTML content type, decodes them with the
    declared or detected charset, extracts the main content, repairs Unicode, and writes
    one shard per WARC file with url, id (the WARC-Record-ID) and meta (WARC date, content
    type, charset). Other records are counted under a reason (not_200, not_html,
    too_large, binary, decode_error, empty, timeout, ...); a truncated or corrupt file keeps
    what could be read and is named in a warning.

    \b
    Example:
      curate extract --in data/cc --out out/cc_extract
      curate extract --in 'data/cc/**/*.warc.gz' --extractor trafilatura --out out/cc_traf
    """  # noqa: D301
    from curate.stages.extract import ExtractStage, run_extract

    stage = ExtractStage(extractor=extractor, max_html_bytes=max_html_bytes, record_timeout=record_timeout, min_chars=min_chars)
    record = run_extract(
        stage, list(inputs), out, source=source, executor=_executor(workers), overwrite=overwrite, keep_rejected=keep_rejected
    )
    _report("extract", record, out)


# --------------------------------------------------------------------------- langid, filter (issue 4)


@cli.command("langid")
@map_stage_options
@click.option(
    "--keep",
    "keep",
    multiple=True,
    default=("en",),
    show_default=True,
    metavar="LANG",
    help="Language to keep (repeatable or comma-separated; en matches en, eng and eng_Latn); 'all' annotates without dropping.",
)
@click.option(
    "--min-score",
    type=click.FloatRange(0.0, 1.0),
    default=0.65,
    show_default=True,
    help="Keep a document only when its language's score is at least this.",
)
@click.option(
    "--model",
    "model",
    default=None,
    metavar="PATH",
    help="A fastText language-ID model (lid.176.bin, GlotLID model.bin, ...) [default: the shipped lid.176.ftz].",
)
@click.option(
    "--max-chars",
    type=click.IntRange(min=100),
    default=4000,
    show_default=True,
    help="Longer text is sampled to this many characters (its start and middle) before prediction.",
)
@click.option(
    "--filter-sources",
    default=None,
    metavar="GLOBS",
    help="Drop only documents of these sources (e.g. 'cc/*'); the others are annotated and kept.",
)
def langid_cmd(
    inputs: tuple[str, ...],
    out: str,
    workers: int | None,
    overwrite: bool,
    keep_rejected: bool,
    only_sources: str | None,
    keep: tuple[str, ...],
    min_score: float,
    model: str | None,
    max_chars: int,
    filter_sources: str | None,
) -> None:
    """Identify each document's language with fastText; keep the wanted ones (reason `lang`).

    Writes `lang` (the model's label without __label__, e.g. en or eng_Latn) and
    `lang_score`. Text without letters gets lang `und`, score 0. Bytes that are not valid
    UTF-8 (a Parquet file from elsewhere) are replaced with U+FFFD when read and counted
    (invalid_utf8_repaired).

    \b
    Example:
      curate langid --in out/clean --out out/langid --keep en --filter-sources 'cc/*'
      curate langid --in out/clean --out out/langid_all --keep all
      curate langid --in out/clean --out out/langid_de --keep de,en --model glotlid/model.bin
    """  # noqa: D301
    from curate.stages.langid import LangIdStage

    codes = [c.strip() for k in keep for c in k.split(",") if c.strip()]
    if not codes:
        raise click.BadParameter("give at least one language, or 'all'", param_hint="--keep")
    if "all" in codes and len(codes) > 1:
        raise click.BadParameter("'all' cannot be combined with languages", param_hint="--keep")
    stage = LangIdStage(
        keep=None if codes == ["all"] else codes,
        min_score=min_score,
        model=model,
        max_chars=max_chars,
        filter_sources=[filter_sources] if filter_sources else None,
    )
    run_map(stage, inputs, out, workers, overwrite, keep_rejected, only_sources)


@cli.command("filter")
@map_stage_options
@click.option(
    "--rules",
    "rules",
    default=None,
    metavar="NAMES",
    help="Rule sets to use (comma-separated): gopher_quality, gopher_repetition, c4, fineweb "
    "[default: all; the config decides which apply to which source].",
)
@click.option(
    "--config",
    "config_path",
    default=None,
    metavar="YAML",
    help="Per-source rule sets and threshold overrides [default: curate/resources/filters.yaml].",
)
def filter_cmd(
    inputs: tuple[str, ...],
    out: str,
    workers: int | None,
    overwrite: bool,
    keep_rejected: bool,
    only_sources: str | None,
    rules: str | None,
    config_path: str | None,
) -> None:
    """Heuristic quality rules: Gopher quality and repetition, C4, FineWeb (published thresholds).

    Each document goes through the rule sets its source is given in the config, in order,
    and is rejected with the first rule it fails as its reason (e.g.
    `gopher_quality:mean_word_length`). The default config filters CommonCrawl and other
    web text with all four, gives the Pile's curated prose subsets only the repetition
    rules, and leaves code, maths and subtitles alone. C4 keeps only a page's kept lines.

    \b
    Example:
      curate filter --in out/langid --out out/filter
      curate filter --in out/langid --out out/filter_c4 --rules c4 --config my_filters.yaml
    """  # noqa: D301
    from curate.config import load_yaml
    from curate.stages.filters import FilterConfig, FilterStage, default_config_path, parse_rules

    path = config_path or str(default_config_path())
    config = FilterConfig.from_mapping(load_yaml(path), path)
    stage = FilterStage(config, parse_rules(rules) if rules is not None else None)
    run_map(stage, inputs, out, workers, overwrite, keep_rejected, only_sources)


# --------------------------------------------------------------------------- quality (issue 5)


@cli.group()
def quality() -> None:
    """Quality classifier (GPT-3 / MT-NLG): train fastText on curated vs raw web text, score and sample."""


@quality.command("train")
@click.option(
    "--pos",
    "pos",
    multiple=True,
    required=True,
    metavar="DIR",
    help="Dataset directory of high-quality documents (repeatable), e.g. the cleaned Pile subsets.",
)
@click.option(
    "--neg",
    "neg",
    multiple=True,
    required=True,
    metavar="DIR",
    help="Dataset directory of raw web documents (repeatable), e.g. the CommonCrawl extract.",
)
@click.option(
    "--pos-sources",
    default=None,
    metavar="GLOBS",
    help="Take positives only from these sources (comma-separated globs, e.g. 'pile/Wikipedia,pile/OpenWebText2').",
)
@click.option("--neg-sources", default=None, metavar="GLOBS", help="Take negatives only from these sources (e.g. 'cc/*').")
@click.option(
    "--model", "model", required=True, metavar="FILE", help="Model file to write (replaced if it exists); metrics go to FILE.metrics.json."
)
@click.option("--epoch", type=click.IntRange(min=1), default=5, show_default=True, help="fastText epochs.")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=0.1, show_default=True, help="fastText learning rate.")
@click.option("--word-ngrams", type=click.IntRange(min=1), default=2, show_default=True, help="Word n-grams (2: words and bigrams).")
@click.option("--dim", type=click.IntRange(min=1), default=64, show_default=True, help="Embedding dimension.")
@click.option("--min-count", type=click.IntRange(min=1), default=1, show_default=True, help="Drop words seen fewer times.")
@click.option(
    "--bucket",
    type=click.IntRange(min=0),
    default=1_000_000,
    show_default=True,
    help="Hash buckets for n-grams; the model holds (words + bucket) x dim floats (1M x 64: 256 MB).",
)
@click.option(
    "--max-docs-per-class",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Sample at most N documents per class (by a hash of id and --seed); the larger class is cut to the smaller.",
)
@click.option(
    "--valid-fraction",
    type=click.FloatRange(0.0, 1.0, max_open=True),
    default=0.1,
    show_default=True,
    help="Fraction held out for evaluation (by a hash of id and --seed).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample, the held-out split and fastText.")
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="fastText training threads [default: all cores]; only --threads 1 gives the same model bytes on every run.",
)
@click.option(
    "--normalize",
    type=click.Choice(["lower_punct", "lower", "none"]),
    default="lower_punct",
    show_default=True,
    help="Text normalisation (recorded in FILE.metrics.json; `quality score` uses the same by default).",
)
@click.option("--keep-data", is_flag=True, help="Keep the fastText training and held-out files as FILE.train.txt and FILE.valid.txt.")
def quality_train(
    pos: tuple[str, ...],
    neg: tuple[str, ...],
    pos_sources: str | None,
    neg_sources: str | None,
    model: str,
    epoch: int,
    lr: float,
    word_ngrams: int,
    dim: int,
    min_count: int,
    bucket: int,
    max_docs_per_class: int,
    valid_fraction: float,
    seed: int,
    threads: int | None,
    normalize: str,
    keep_data: bool,
) -> None:
    """Train a fastText classifier: positives (__label__hq) vs negatives (__label__cc).

    Documents are sampled reproducibly (a hash of id and --seed), classes are balanced by
    cutting the larger one, texts are normalised to one line (lower_punct: lowercase,
    punctuation split off, whitespace folded), and a held-out split (--valid-fraction)
    gives precision, recall and F1 at score 0.5, and ROC AUC: printed and written to
    FILE.metrics.json. The data files live in a temporary directory beside FILE.

    \b
    Example:
      curate quality train --pos out/clean --pos-sources 'pile/Wikipedia,pile/OpenWebText2' \\
          --neg out/cc_extract --neg-sources 'cc/*' --model out/quality_model/model.bin
    """  # noqa: D301
    from curate.executor import default_workers
    from curate.stages.quality import NEG_LABEL, POS_LABEL, ClassInput, TrainConfig, train_classifier, train_lines

    config = TrainConfig(
        epoch=epoch,
        lr=lr,
        word_ngrams=word_ngrams,
        dim=dim,
        min_count=min_count,
        bucket=bucket,
        max_docs_per_class=max_docs_per_class,
        valid_fraction=valid_fraction,
        seed=seed,
        threads=threads or default_workers(),
        normalize=normalize,
    )
    record = train_classifier(
        ClassInput(POS_LABEL, list(pos), pos_sources), ClassInput(NEG_LABEL, list(neg), neg_sources), model, config, keep_data=keep_data
    )
    for line in train_lines(record):
        click.echo(line)


@quality.command("score")
@map_stage_options
@click.option("--model", "model", required=True, metavar="FILE", help="fastText classifier (.bin or .ftz).")
@click.option(
    "--label",
    default="__label__hq",
    show_default=True,
    metavar="NAME",
    help="The model's positive label: quality_score is its probability (e.g. __label__hq for DCLM's fasttext_oh_eli5).",
)
@click.option(
    "--mode",
    type=click.Choice(["annotate", "threshold", "pareto"]),
    default="annotate",
    show_default=True,
    help="annotate: keep all; threshold: keep score >= T; pareto: keep when pareto(alpha) > 1 - score (GPT-3).",
)
@click.option("--threshold", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True, help="Threshold of --mode threshold.")
@click.option("--alpha", type=click.FloatRange(min=0, min_open=True), default=9.0, show_default=True, help="Pareto shape of --mode pareto.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --mode pareto (with each document's id).")
@click.option(
    "--normalize",
    type=click.Choice(["auto", "lower_punct", "lower", "none"]),
    default="auto",
    show_default=True,
    help="Text normalisation before scoring; auto: the one in FILE.metrics.json (written by `quality train`), "
    "else none (whitespace and newlines folded only, as datatrove's classifier filter does; use what the model was trained on).",
)
def quality_score(
    inputs: tuple[str, ...],
    out: str,
    workers: int | None,
    overwrite: bool,
    keep_rejected: bool,
    only_sources: str | None,
    model: str,
    label: str,
    mode: str,
    threshold: float,
    alpha: float,
    seed: int,
    normalize: str,
) -> None:
    """Score documents with a fastText classifier (quality_score) and keep them by mode.

    pareto keeps a document when (1 - u)^(-1/alpha) - 1 > 1 - score, u = (xxh64(id, seed) >> 11) / 2^53:
    with probability (2 - score)^-alpha, the same documents for any sharding or --workers.
    Dropped documents get reason `quality`. Score only CommonCrawl with --only-sources 'cc/*'
    (other documents pass through, quality_score empty). _SUCCESS holds per-source histograms.

    \b
    Examples:
      curate quality score --in out/cc_extract --out out/quality --model out/quality_model/model.bin \\
          --only-sources 'cc/*' --mode pareto --seed 1
      curate quality score --in out/cc --out out/dclm --model fasttext_oh_eli5.bin --label __label__hq \\
          --normalize none --mode annotate
    """  # noqa: D301
    from curate.stages.quality import QualityStage, recorded_normalize, score_lines

    recorded = recorded_normalize(model) if normalize == "auto" else None
    if normalize == "auto":
        normalize = recorded or "none"
    stage = QualityStage.for_model(model, label, mode=mode, threshold=threshold, alpha=alpha, seed=seed, normalize=normalize)
    if recorded or normalize == "none":
        log.info("quality score: text normalisation %s%s", normalize, " (from MODEL.metrics.json)" if recorded else "")
    record = run_map(stage, inputs, out, workers, overwrite, keep_rejected, only_sources)
    for line in score_lines(record):
        click.echo(line)


# --------------------------------------------------------------------------- dedup (issue 6)


@cli.group()
def dedup() -> None:
    """Remove exact and near duplicates across all inputs together (global stages)."""


def _dedup_common(fn: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--in", "inputs", multiple=True, required=True, metavar="DIR",
                     help="Input dataset directory (repeatable: all inputs are deduplicated together)."),
        click.option("--out", required=True, metavar="DIR", help="Output dataset directory (work files under OUT/_work/)."),
        click.option("--priority", default="", metavar="SRC,...",
                     help="Ordered sources or globs, best first (e.g. 'pile/Wikipedia,pile/*,cc/*'): "
                          "a cluster keeps its document from the best source."),
        click.option("--workers", type=click.IntRange(min=1), default=None, help="Worker processes [default: all cores]."),
        click.option("--overwrite", is_flag=True, help="Delete OUT and start again instead of resuming."),
        click.option("--keep-rejected", is_flag=True, help="Write removed duplicates to OUT/_rejected/ with reason and dup_of."),
    ]  # fmt: skip
    for opt in reversed(options):
        fn = opt(fn)
    return executor_options(fn)


def _split_list(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


@dedup.command("exact")
@_dedup_common
@click.option(
    "--normalize",
    default="lower,whitespace",
    show_default=True,
    metavar="OPS",
    help="Normalisations before hashing: any of lower, whitespace, punct (comma-separated; '' for none).",
)
def dedup_exact(
    inputs: tuple[str, ...], out: str, priority: str, workers: int | None, overwrite: bool, keep_rejected: bool, normalize: str
) -> None:
    """Drop documents whose normalised text appeared before, across all inputs.

    Of each group of identical texts the document of the best --priority source is kept
    (ties: the smallest id); the others are rejected with reason exact_dup and dup_of.
    OUT/_clusters.parquet lists every group (id, cluster, source, kept).

    \b
    Example:
      curate dedup exact --in out/langid --in out/cc_langid --out out/exact \\
          --priority 'pile/Wikipedia,pile/*,cc/*'
    """  # noqa: D301
    from curate.dedup.exact import run_exact

    record = run_exact(
        list(inputs),
        out,
        priority=_split_list(priority),
        normalize=_split_list(normalize),
        executor=_executor(workers),
        overwrite=overwrite,
        keep_rejected=keep_rejected,
    )
    _report("dedup exact", record, out)
    d = record.get("dedup", {})
    click.echo(f"  clusters: {d.get('clusters', 0):,}  sizes: {d.get('cluster_sizes', {})}")


@dedup.command("fuzzy")
@_dedup_common
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=0.8,
    show_default=True,
    help="Jaccard similarity of word n-gram sets at which two documents are duplicates.",
)
@click.option("--ngram", type=click.IntRange(min=1), default=5, show_default=True, help="Words per shingle.")
@click.option("--num-perm", type=click.IntRange(min=2), default=128, show_default=True, help="MinHash permutations.")
@click.option("--bands", type=click.IntRange(min=1), default=None, help="LSH bands [default: datasketch's optimum for the threshold].")
@click.option("--rows", type=click.IntRange(min=1), default=None, help="Rows per band (with --bands).")
@click.option(
    "--verify",
    type=click.Choice(["none", "signature", "exact"]),
    default="none",
    show_default=True,
    is_flag=False,
    flag_value="signature",
    help="Check each candidate pair's Jaccard before it joins a cluster: 'signature' estimates it from the "
    "full signature (--verify alone), 'exact' computes it from the shingle sets.",
)
@click.option("--seed", type=int, default=42, show_default=True, help="MinHash permutation seed.")
def dedup_fuzzy(
    inputs: tuple[str, ...],
    out: str,
    priority: str,
    workers: int | None,
    overwrite: bool,
    keep_rejected: bool,
    threshold: float,
    ngram: int,
    num_perm: int,
    bands: int | None,
    rows: int | None,
    verify: str,
    seed: int,
) -> None:
    """MinHash-LSH near-duplicate removal across all inputs (MT-NLG: Jaccard >= 0.8).

    Phases (each resumable, Parquet under OUT/_work/): signatures, LSH candidate pairs per
    band, connected components, removal. From each cluster the document of the best
    --priority source is kept (ties: the longest, then the smallest id); the others are
    rejected with reason fuzzy_dup and dup_of. Kept cluster members get dup_cluster.

    \b
    Example:
      curate dedup fuzzy --in out/exact --out out/fuzzy --priority 'pile/*,cc/*' --verify exact
    """  # noqa: D301
    from curate.dedup.fuzzy import FuzzyConfig, run_fuzzy

    cfg = FuzzyConfig(threshold, ngram, num_perm, bands, rows, seed, verify, _split_list(priority))
    record = run_fuzzy(list(inputs), out, cfg, executor=_executor(workers), overwrite=overwrite, keep_rejected=keep_rejected)
    _report("dedup fuzzy", record, out)
    d = record.get("dedup", {})
    click.echo(
        f"  {d.get('bands')} bands x {d.get('rows')} rows, verify {d.get('verify')}: {d.get('unique_edges', 0):,} edges, "
        f"{d.get('clusters', 0):,} clusters, sizes {d.get('cluster_sizes', {})}"
    )


# --------------------------------------------------------------------------- decontam (issue 7)


@cli.command("decontam")
@map_stage_options
@click.option(
    "--eval",
    "evals",
    multiple=True,
    required=True,
    metavar="PATH|NAME",
    help="Evaluation set (repeatable): a .jsonl/.json/.parquet/.txt file (.gz/.zst too), a directory of them "
    "(one set per file), or a hub dataset NAME[:CONFIG] loaded with `datasets` ('hub:' forces the hub).",
)
@click.option(
    "--eval-field",
    "eval_fields",
    multiple=True,
    metavar="[SET=]FIELD,...",
    help="Fields joined with a space into an item's text (repeatable or comma-separated; dotted for nested); "
    "SET=FIELDS for one set only.  [default: text]",
)
@click.option(
    "--eval-split",
    "eval_splits",
    multiple=True,
    metavar="[SET=]SPLIT,...",
    help="Hub splits to read (comma-separated; SET=SPLITS for one set).  [default: test]",
)
@click.option("--ngram", type=int, default=13, show_default=True, help="Words per n-gram key.")
@click.option(
    "--min-ngram",
    type=int,
    default=8,
    show_default=True,
    help="Evaluation texts of min-ngram to ngram-1 words are used whole as keys; shorter ones are ignored.",
)
@click.option(
    "--cut-chars",
    type=int,
    default=200,
    show_default=True,
    help="Characters removed on each side of a match, then extended to the nearest sentence end.",
)
@click.option("--min-piece-chars", type=int, default=200, show_default=True, help="Pieces shorter than this are dropped.")
@click.option("--max-pieces", type=int, default=10, show_default=True, help="A document left in more pieces is dropped whole.")
@click.option(
    "--freq-limit",
    type=int,
    default=10,
    show_default=True,
    help="N-grams found in more training documents than this are ignored as too common (0: no limit).",
)
@click.option("--sentence-ends", default=".!?", show_default=True, help="Characters that end a sentence (MT-NLG: .!?).")
def decontam(
    inputs: tuple[str, ...],
    out: str,
    workers: int | None,
    overwrite: bool,
    keep_rejected: bool,
    only_sources: str | None,
    evals: tuple[str, ...],
    eval_fields: tuple[str, ...],
    eval_splits: tuple[str, ...],
    ngram: int,
    min_ngram: int,
    cut_chars: int,
    min_piece_chars: int,
    max_pieces: int,
    freq_limit: int,
    sentence_ends: str,
) -> None:
    """Cut evaluation-set 13-grams out of the training documents (MT-NLG decontamination).

    Every 13-gram of lowercase words of an evaluation text (or the whole text, for texts
    of 8 to 12 words) is a key. Each match in a training document is removed with 200
    characters on each side, extended to the nearest sentence end (. ! ?), and the
    document is split there: pieces get ids <id>-<k> and meta.decontam_parent; pieces
    under 200 characters are dropped (reason decontam_short_piece), a document left in
    more than 10 pieces is dropped whole (decontam_too_many_pieces). N-grams found in more
    than --freq-limit training documents are ignored (a first counting pass). Untouched
    documents keep their id. Work files (the index, counts) are under OUT/_work/.

    \b
    Example:
      curate decontam --in out/dedup --out out/decontam \\
          --eval sample_data/eval/lambada_like.jsonl \\
          --eval sample_data/eval/qa_like.jsonl --eval-field qa_like=question,answer
    """  # noqa: D301
    from curate.decontam.run import contamination_lines, run_decontam

    record = run_decontam(
        list(inputs),
        out,
        evals=list(evals),
        eval_fields=list(eval_fields),
        eval_splits=list(eval_splits),
        ngram=ngram,
        min_ngram=min_ngram,
        cut_chars=cut_chars,
        min_piece_chars=min_piece_chars,
        max_pieces=max_pieces,
        freq_limit=freq_limit,
        sentence_ends=sentence_ends,
        executor=_executor(workers),
        overwrite=overwrite,
        keep_rejected=keep_rejected,
        only_sources=[only_sources] if only_sources else None,
    )
    _report("decontam", record, out)
    for line in contamination_lines(record):
        click.echo(line)


# --------------------------------------------------------------------------- tokenize, inspect, blend (issue 8)


@cli.command("tokenize")
@executor_options
@click.option(
    "--in",
    "inputs",
    multiple=True,
    required=True,
    metavar="DIR",
    help="Input dataset directory, Parquet file or glob (repeatable; read in this order).",
)
@click.option(
    "--out",
    "out",
    required=True,
    metavar="PREFIX",
    help="Output prefix: PREFIX.bin, PREFIX.idx, PREFIX.stats.json (a directory with --per-source).",
)
@click.option(
    "--tokenizer",
    default="gpt2",
    show_default=True,
    metavar="gpt2|PATH",
    help="gpt2 (GPT-2 BPE shipped with curate, offline), a Hugging Face tokenizer.json, or a tiktoken BPE file.",
)
@click.option("--append-eod/--no-append-eod", default=True, show_default=True, help="End every document with the end-of-document token.")
@click.option(
    "--eod-token", default=None, metavar="TOKEN", help="End-of-document token [default: <|endoftext|>, or the tokenizer's </s>-like token]."
)
@click.option(
    "--per-source", is_flag=True, help="Write one prefix per source: OUT/<source>.bin/.idx (e.g. OUT/pile_Wikipedia), and OUT/_SUCCESS."
)
@click.option(
    "--only-sources",
    "only_sources",
    default=None,
    metavar="GLOBS",
    help="Tokenize only documents of these sources (comma-separated globs); the others are counted as skipped.",
)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Worker processes [default: all cores].")
@click.option("--overwrite", is_flag=True, help="Replace finished outputs written with other parameters.")
def tokenize_cmd(
    inputs: tuple[str, ...],
    out: str,
    tokenizer: str,
    append_eod: bool,
    eod_token: str | None,
    per_source: bool,
    only_sources: str | None,
    workers: int | None,
    overwrite: bool,
) -> None:
    """Tokenize documents into Megatron-LM indexed datasets (.bin/.idx, MMIDIDX v1).

    One sequence per document, in input order (the same bytes for any --workers); uint16
    tokens when the vocabulary fits, else int32. Shards are tokenized in parallel into
    pieces and merged without re-tokenizing; an interrupted run resumes its pieces.

    \b
    Examples:
      curate tokenize --in out/decontam --out out/tokenized/corpus
      curate tokenize --in out/decontam --out out/tokenized --per-source --workers 8
      curate tokenize --in out/clean --out out/tok/llama --tokenizer path/to/tokenizer.json
    """  # noqa: D301
    from curate.stages.tokenize import summary_lines, tokenize

    record = tokenize(
        list(inputs),
        out,
        tokenizer=tokenizer,
        eod_token=eod_token,
        append_eod=append_eod,
        per_source=per_source,
        only_sources=only_sources,
        executor=_executor(workers),
        overwrite=overwrite,
    )
    for line in summary_lines(record):
        click.echo(line)


@cli.command("inspect")
@click.argument("prefix", metavar="PREFIX")
@click.option(
    "--doc", "doc", type=click.IntRange(min=0), default=None, metavar="N", help="Print document N: its token ids and decoded text."
)
@click.option(
    "--tokenizer", default=None, metavar="gpt2|PATH", help="Tokenizer to decode with [default: the one in PREFIX.stats.json, else gpt2]."
)
@click.option("--max-chars", type=click.IntRange(min=0), default=None, metavar="N", help="Print at most N characters of the document text.")
def inspect_cmd(prefix: str, doc: int | None, tokenizer: str | None, max_chars: int | None) -> None:
    """Counts, dtype and one decoded document of a Megatron indexed dataset.

    \b
    Examples:
      curate inspect out/tokenized/pile_Wikipedia
      curate inspect out/blend/blend --doc 0
    """
    from curate.stages.inspect import inspect_lines

    for line in inspect_lines(prefix, doc=doc, tokenizer=tokenizer, max_chars=max_chars):
        click.echo(line)


@cli.command("blend")
@executor_options
@click.option("--config", "config", required=True, metavar="BLEND.yaml", help="Sources with a weight or epochs, and total_tokens.")
@click.option(
    "--out",
    "out",
    required=True,
    metavar="DIR",
    help="Output directory (blend.bin/.idx, or data_path.txt; blend_table.txt, blend.json, _SUCCESS).",
)
@click.option(
    "--mode",
    type=click.Choice(["corpus", "megatron-args"]),
    default="corpus",
    show_default=True,
    help="corpus: write a sampled, shuffled, tokenized blend; megatron-args: write Megatron's --data-path for train-time blending.",
)
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Sampling seed [default: the config's seed, else 1234].")
@click.option(
    "--max-epochs",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Most passes over any source [default: the config's max_epochs, else 10].",
)
@click.option("--total-tokens", default=None, metavar="N|auto", help="Override the config's total_tokens (e.g. 270B, 1e6, auto).")
@click.option(
    "--workers", type=click.IntRange(min=1), default=None, help="Worker processes for sources that need tokenizing [default: all cores]."
)
@click.option("--overwrite", is_flag=True, help="Re-tokenize dataset-directory sources whose earlier tokenization used other parameters.")
@click.option(
    "--skip-missing",
    is_flag=True,
    help="Leave out sources whose path does not exist (warned) instead of failing; the other weights renormalise.",
)
def blend_cmd(
    config: str,
    out: str,
    mode: str,
    seed: int | None,
    max_epochs: float | None,
    total_tokens: str | None,
    workers: int | None,
    overwrite: bool,
    skip_missing: bool,
) -> None:
    """Blend sources by weight or epochs (the MT-NLG table), into a corpus or Megatron's --data-path.

    Each source is a tokenized prefix or a dataset directory (tokenized into DIR/sources/).
    Sources with epochs take that many passes; weighted sources share the rest of
    total_tokens by weight. Documents are sampled without replacement within each epoch.

    \b
    Example BLEND.yaml:
      total_tokens: 1000000          # or 270B, or auto
      max_epochs: 5
      sources:
        - {name: pile/Wikipedia, path: out/tokenized/pile_Wikipedia, weight: 0.04771}
        - {name: cc, path: out/dedup, only_sources: "cc/*", epochs: 1.0}
    \b
    Examples:
      curate blend --config blend.yaml --out out/blend
      curate blend --config blend.yaml --out out/blend --mode megatron-args
    """  # noqa: D301
    from curate.stages.blend import blend, parse_total_tokens

    record = blend(
        config,
        out,
        mode=mode,
        seed=seed,
        max_epochs=max_epochs,
        total_tokens=parse_total_tokens(total_tokens),
        executor=_executor(workers),
        overwrite=overwrite,
        skip_missing=skip_missing,
    )
    click.echo(record["table"])
    if mode == "corpus":
        click.echo(f"  output: {record['prefix']}.bin, {record['prefix']}.idx ({record['documents']:,} docs, {record['tokens']:,} tokens)")
    else:
        click.echo(f"--data-path {record['data_path']}")
        click.echo(f"  written to {record['data_path_file']}")


# --------------------------------------------------------------------------- report, stats (issue 10)


@cli.command("report")
@click.argument("dirs", nargs=-1, required=True, metavar="OUT...")
@click.option("--out", "out", required=True, metavar="FILE.html", help="The HTML page to write (self-contained: charts inlined).")
@click.option("--title", default=None, help="Page title [default: curate pipeline report].")
@click.option(
    "--samples", type=click.IntRange(min=0), default=2, show_default=True, help="Rejected documents shown per removal reason and stage."
)
def report_cmd(dirs: tuple[str, ...], out: str, title: str | None, samples: int) -> None:
    """One HTML page over a pipeline run: funnel, sources, languages, quality, rules, duplicates, blend.

    OUT is a pipeline root holding one directory per stage (e.g. out/sample), or stage
    directories, or tokenized prefixes. The page is built from each stage's _SUCCESS and
    stats files, orders the stages by the inputs they read, shows a few documents of each
    stage's _rejected/ output (--keep-rejected) and loads nothing from anywhere.

    \b
    Examples:
      curate report out/sample --out out/sample/report.html
      curate report out/clean out/dedup out/tokenized --out report.html
    """  # noqa: D301
    from curate.report import write_report

    summary = write_report(list(dirs), out, title=title, samples=samples)
    click.echo(
        f"report: {len(summary['stages'])} stages ({', '.join(summary['stages'])}), {summary['charts']} charts, "
        f"{summary['bytes'] / 1e3:,.0f} kB, {summary['seconds']:.1f} s"
    )
    for p in summary["unfinished"]:
        click.echo(f"  left out (not finished): {p}")
    click.echo(f"  output: {out}")


@cli.command("stats")
@click.argument("path", metavar="DIR")
def stats_cmd(path: str) -> None:
    """One stage's summary: documents and bytes per source, removal reasons, counters.

    DIR is a stage's output directory (or a tokenized PREFIX).

    \b
    Examples:
      curate stats out/sample/clean
      curate stats out/sample/blend
    """  # noqa: D301
    from curate.report import stats_lines

    for line in stats_lines(path):
        click.echo(line)


def main() -> None:
    """Console entry point."""
    cli.main()


if __name__ == "__main__":  # pragma: no cover
    main()

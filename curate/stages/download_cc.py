"""CommonCrawl WARC segments over HTTP: listing, path selection, resumable downloads.

``<base>/crawl-data/<snapshot>/warc.paths.gz`` lists a snapshot's WARC files (about 80,000,
1 GB each); N of them are picked (the first N, or a seeded sample) and each is fetched to
``OUT/<path as listed>``, so OUT mirrors the data host's layout. Each file is fetched by
``curate/fetch.py`` (resumable, retried, size-checked, safe against untrusted servers), so a
file under its real name is always whole and a re-run skips it without asking the server;
a file that fails does not stop the others. Downloads are I/O-bound, so they run in
threads (``workers``).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import random
import re
import threading
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from curate.dataset import Inputs, sha256_json
from curate.errors import CurateError
from curate.fetch import FileResult, RetryPolicy, check_ca_bundle, fetch_bytes, fetch_file, part_path, session
from curate.registry import stage
from curate.runtime import Common, Context, Stage, param
from curate.stats import mb
from curate.storage import AnyPath, as_path, is_local
from curate.targets import Target, read_json

log = logging.getLogger("curate")

DEFAULT_BASE_URL = "https://data.commoncrawl.org"
SNAPSHOT_RE = re.compile(r"^CC-MAIN-\d{4}-\d{2}$")
MANIFEST_DIR = "_download"


# --------------------------------------------------------------------------- listing


def check_base_url(base_url: str) -> str:
    """The base URL without a trailing slash; only http(s) URLs."""
    base = base_url.strip().rstrip("/")
    if not re.match(r"^https?://[^/\s]+", base):
        raise CurateError(f"--base-url {base_url!r}: expected an http:// or https:// URL, e.g. {DEFAULT_BASE_URL}")
    return base


def check_snapshot(snapshot: str) -> str:
    if not SNAPSHOT_RE.match(snapshot):
        raise CurateError(f"--snapshot {snapshot!r}: expected a CommonCrawl snapshot name like CC-MAIN-2020-50")
    return snapshot


def listing_url(base_url: str, snapshot: str) -> str:
    return f"{check_base_url(base_url)}/crawl-data/{check_snapshot(snapshot)}/warc.paths.gz"


def check_listing_path(line: str, where: str) -> str:
    """A listing line as a safe relative POSIX path, or a CurateError naming ``where``.

    Every path becomes ``OUT/<path>``, so anything that could leave OUT is refused: absolute
    paths, ``..``, URLs, backslashes, empty or ``.`` components, control characters.
    """
    why = None
    if re.search(r"[\x00-\x1f\x7f]", line):
        why = "control characters"
    elif "://" in line or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", line):
        why = "a URL, not a path"
    elif line.startswith("/") or line.startswith("~"):
        why = "an absolute path"
    elif "\\" in line:
        why = "a backslash"
    else:
        parts = line.split("/")
        if any(p == ".." for p in parts):
            why = "a '..' component"
        elif any(p in ("", ".") for p in parts):
            why = "an empty or '.' component"
        elif not parts[-1].endswith((".warc.gz", ".warc", ".warc.zst")):
            why = "not a .warc.gz file"
    if why:
        raise CurateError(
            f"{where}: {line[:200]!r} is {why}; refusing to download it (a listing line must be a relative path like crawl-data/...)"
        )
    return str(PurePosixPath(line))


MAX_LISTING_BYTES = 1 << 30  # a real warc.paths.gz inflates to ~12 MB (80,000 lines)


def parse_listing(data: bytes, where: str) -> list[str]:
    """The paths of a ``warc.paths.gz`` body (gzip or plain text), each checked."""
    if data[:2] == b"\x1f\x8b":
        try:
            d = zlib.decompressobj(31)
            data = d.decompress(data, MAX_LISTING_BYTES + 1)
            if len(data) > MAX_LISTING_BYTES:
                raise CurateError(f"{where}: inflates past {MAX_LISTING_BYTES:,} bytes; not a WARC listing (a decompression bomb?)")
            if not d.eof:
                raise EOFError("truncated gzip data")
        except (OSError, EOFError, zlib.error) as exc:
            raise CurateError(f"{where}: not a readable gzip file ({exc})") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CurateError(f"{where}: not a text listing (invalid UTF-8 at byte {exc.start})") from exc
    paths = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line:
            paths.append(check_listing_path(line, f"{where}: line {lineno}"))
    if not paths:
        raise CurateError(f"{where}: the listing is empty")
    return paths


def select_paths(paths: list[str], n: int, seed: int | None = None) -> list[str]:
    """The first ``n`` paths, or (with ``seed``) a seeded random sample kept in listing order."""
    if n < 1:
        raise CurateError(f"--segments must be at least 1, got {n}")
    if n > len(paths):
        raise CurateError(f"--segments {n}: the listing has only {len(paths)} WARC file(s)")
    if seed is None:
        return paths[:n]
    picked = sorted(random.Random(seed).sample(range(len(paths)), n))
    return [paths[i] for i in picked]


def dest_path(out: Path, rel: str) -> Path:
    """``out/rel``, checked to stay inside ``out``."""
    dest = out.joinpath(*rel.split("/"))
    try:
        dest.resolve().relative_to(out.resolve())
    except ValueError as exc:
        raise CurateError(f"{rel}: resolves outside {out}; refusing to write it") from exc
    return dest


# --------------------------------------------------------------------------- many files


class _Progress:
    """A byte progress bar on a terminal, a log line per file otherwise; thread-safe."""

    def __init__(self, desc: str, files: int) -> None:
        from tqdm import tqdm

        from curate.runtime import show_progress_bar

        self.lock = threading.Lock()
        self.files, self.done = files, 0
        self.desc = desc
        self.bar = (
            tqdm(desc=desc, total=0, unit="B", unit_scale=True, unit_divisor=1024, dynamic_ncols=True) if show_progress_bar() else None
        )

    def size(self, n: int) -> None:
        if self.bar is not None:
            with self.lock:
                self.bar.total = (self.bar.total or 0) + n
                self.bar.refresh()

    def advance(self, n: int) -> None:
        if self.bar is not None:
            with self.lock:
                self.bar.update(n)

    def finished(self, res: FileResult) -> None:
        with self.lock:
            self.done += 1
            if self.bar is None:
                if res.status == "failed":
                    log.error("%s [%d/%d] %s FAILED: %s", self.desc, self.done, self.files, res.path, res.error)
                else:
                    rate = f", {res.bytes / 1e6 / res.seconds:.1f} MB/s" if res.status == "downloaded" and res.seconds > 0 else ""
                    what = "downloaded" if res.status == "downloaded" else "already complete"
                    log.info("%s [%d/%d] %s %s (%s%s)", self.desc, self.done, self.files, res.path, what, mb(res.bytes), rate)
            elif res.status == "failed":
                self.bar.write(f"curate: {self.desc}: {res.path} FAILED: {res.error}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def download_cc(
    snapshot: str,
    segments: int,
    out: str | os.PathLike,
    *,
    seed: int | None = None,
    base_url: str = DEFAULT_BASE_URL,
    workers: int = 4,
    policy: RetryPolicy | None = None,
) -> dict[str, Any]:
    """Download ``segments`` WARC files of ``snapshot`` into ``out``; returns the summary.

    Raises CurateError naming the files that failed, after every other file finished.
    """
    policy = policy or RetryPolicy()
    policy.ca_bundle = check_ca_bundle(policy.ca_bundle)
    if policy.max_redirects < 0 or policy.max_file_bytes < 1:
        raise CurateError("--max-redirects must be at least 0 and --max-file-bytes at least 1")
    base = check_base_url(base_url)
    check_snapshot(snapshot)
    if workers < 1:
        raise CurateError(f"--workers must be at least 1, got {workers}")
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise CurateError(f"{out_dir}: exists and is not a directory")
    t0 = time.monotonic()
    url = listing_url(base, snapshot)
    local_listing = dest_path(out_dir, f"crawl-data/{snapshot}/warc.paths.gz")
    if local_listing.exists():
        log.info("download cc: using the listing downloaded before, %s", local_listing)
        data = local_listing.read_bytes()
    else:
        data = fetch_bytes(url, policy, local_listing)
    paths = parse_listing(data, url)
    chosen = select_paths(paths, segments, seed)
    jobs = [(p, f"{base}/{p}", dest_path(out_dir, p)) for p in chosen]

    progress = _Progress(f"download cc {snapshot}", len(jobs))
    results: list[FileResult | None] = [None] * len(jobs)
    work: queue.Queue[int] = queue.Queue()
    for i in range(len(jobs)):
        work.put(i)

    def worker() -> None:
        http = session(policy)
        while True:
            try:
                i = work.get_nowait()
            except queue.Empty:
                return
            rel, u, dest = jobs[i]
            try:
                res = fetch_file(http, u, dest, policy, label=rel, on_bytes=progress.advance, on_size=progress.size)
            except Exception as exc:  # noqa: BLE001 - one file's bug must not hide the others' results
                res = FileResult(rel, "failed", error=f"{type(exc).__name__}: {exc}")
            results[i] = res
            progress.finished(res)

    threads = [threading.Thread(target=worker, daemon=True, name=f"download-{k}") for k in range(min(workers, len(jobs)))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    finally:
        progress.close()
    done = [r for r in results if r is not None]
    failed = [r for r in done if r.status == "failed"]
    summary = {
        "snapshot": snapshot,
        "base_url": base,
        "listing": url,
        "listed": len(paths),
        "segments": segments,
        "seed": seed,
        "files": [asdict(r) for r in done],
        "downloaded": sum(r.status == "downloaded" for r in done),
        "present": sum(r.status == "present" for r in done),
        "failed": len(failed),
        "bytes": sum(r.bytes for r in done),
        "bytes_downloaded": sum(r.bytes - r.resumed_from for r in done if r.status == "downloaded"),
        "wall_seconds": round(time.monotonic() - t0, 3),
    }
    if failed:
        first = "; ".join(f"{r.path}: {r.error}" for r in failed[:3])
        more = f" (and {len(failed) - 3} more)" if len(failed) > 3 else ""
        raise CurateError(
            f"download cc {snapshot}: {len(failed)} of {len(jobs)} file(s) missing: {first}{more}; "
            "the complete files are kept, re-run to fetch the rest"
        )
    return summary


def summary_line(summary: dict[str, Any]) -> str:
    """One line for the CLI."""
    secs = summary["wall_seconds"]
    rate = f" ({summary['bytes_downloaded'] / 1e6 / secs:.1f} MB/s)" if summary["bytes_downloaded"] and secs > 0 else ""
    n = summary["downloaded"] + summary["present"]
    return (
        f"download cc {summary['snapshot']}: {n} of {summary['segments']} WARC file(s) complete "
        f"({summary['downloaded']} downloaded, {summary['present']} already there), "
        f"{mb(summary['bytes'])}, {mb(summary['bytes_downloaded'])} transferred in {secs:.1f} s{rate}"
    )


def manifest(out: str | os.PathLike, snapshot: str) -> dict[str, Any]:
    """The record of a finished download (tests, inspection)."""
    return json.loads((Path(out) / MANIFEST_DIR / f"{snapshot}.json").read_text())


class SnapshotTarget(Target):
    """One snapshot's files in a download directory: OUT/crawl-data/SNAPSHOT/... and OUT/_download/SNAPSHOT.json.

    Several snapshots share OUT; each has its own parameters (``_download/SNAPSHOT.params``)
    and record. WARC files already in OUT under their listed names (a mirror made by
    another tool) are adopted, not refused: complete ones are skipped, ``.part`` files
    resumed. ``--overwrite`` deletes only this snapshot's listed files and listing.
    """

    def __init__(self, out: str, snapshot: str) -> None:
        self.path = as_path(out)
        self.snapshot = snapshot
        self.record_file = self.path / MANIFEST_DIR / f"{snapshot}.json"
        self.params_file = self.path / MANIFEST_DIR / f"{snapshot}.params"
        self.listing = dest_path(Path(self.path), f"crawl-data/{snapshot}/warc.paths.gz")

    def exists(self) -> bool:
        if self.path.exists() and not self.path.is_dir():
            raise CurateError(f"{self.path}: exists and is not a directory")
        return self.params_file.exists() or self.record_file.exists()  # WARC files of another tool do not make it exist

    def owned(self) -> bool:
        return True  # only curate's own files (_download/) make a snapshot "exist"

    def _selected(self) -> list[str]:
        rec = read_json(self.record_file)
        if rec is not None:
            return [f["path"] for f in rec.get("files") or []]
        params = read_json(self.params_file) or {}
        if not self.listing.exists() or "segments" not in params:
            return []
        try:
            paths = parse_listing(self.listing.read_bytes(), str(self.listing))
        except CurateError:
            return []
        return select_paths(paths, int(params["segments"]), params.get("seed"))

    def data_files(self) -> list[tuple[str, AnyPath]]:
        return [(rel, dest_path(Path(self.path), rel)) for rel in self._selected()]

    def clear(self) -> None:
        for _, dest in self.data_files():  # before the listing goes: without a record it names the files
            dest.unlink(missing_ok=True)
            part_path(dest).unlink(missing_ok=True)
        self.listing.unlink(missing_ok=True)
        super().clear()


@stage("download cc", section="get data", order=20)
@dataclass
class DownloadCC(Stage):
    """CommonCrawl WARC files of one snapshot, resumable (extract them with `curate extract`).

    Reads BASE-URL/crawl-data/SNAPSHOT/warc.paths.gz, picks N paths and downloads each to
    OUT/<path>. A file is written under a temporary name and renamed when complete and of
    the announced size; an interrupted file resumes with an HTTP Range request; connection
    errors, timeouts and 5xx are retried with exponential backoff. A 404 or a size
    mismatch fails that file, the others still complete, and the command exits 1 naming
    what is missing. Re-running skips complete files (and reuses the saved listing).
    Several snapshots can share OUT. OUT must be local (resuming needs a local file);
    copy it to s3:// afterwards if the cluster reads from there: `curate extract --in s3://...`
    reads WARC files through fsspec.

    \b
    Example:
      curate download cc --snapshot CC-MAIN-2020-50 --segments 2 --out data/cc
      curate download cc --snapshot CC-MAIN-2021-04 --segments 100 --seed 1 --workers 8 --out data/cc
    """

    name: ClassVar[str] = "download_cc"
    kind: ClassVar[str] = "source"
    required_columns: ClassVar[tuple[str, ...]] = ()
    options: ClassVar[tuple[str, ...]] = ("out", "workers", "overwrite")
    option_help: ClassVar[dict[str, str]] = {
        "out": "Files go to DIR/<path as listed> (DIR mirrors the host's layout); a local directory (no s3:// here).",
        "workers": "Parallel downloads (threads) [default: 4].",
        "overwrite": "Delete this snapshot's files in OUT (only what an earlier download wrote) and download them again.",
    }
    option_defaults: ClassVar[dict[str, Any]] = {"workers": 4}
    snapshot: str = param(help="CommonCrawl snapshot, e.g. CC-MAIN-2020-50.", metavar="NAME", required=True)
    segments: int = param(help="How many WARC files to download.", min=1, metavar="N", required=True)
    seed: int | None = param(None, "Pick a seeded random sample of the listing instead of the first N.")
    base_url: str = param(DEFAULT_BASE_URL, "The data host; a mirror or a local server (python -m curate.httpserve DIR) works the same.",
                          metavar="URL", record=False)  # fmt: skip
    retries: int = param(5, "Retries of a file after a transient error.", min=0, record=False)
    retry_wait: float = param(1.0, "First backoff in seconds (doubles per retry, at most 60).", min=0.0, record=False)
    timeout: float = param(60.0, "Seconds without data before a read is retried.", min=0.1, record=False)
    ca_bundle: str | None = param(None, "Extra CA certificates to trust (a mirror with a private CA); certificates are always verified.",
                                  metavar="PEM", record=False)  # fmt: skip
    max_file_bytes: int = param(20 << 30, "A file larger than this (announced or received) fails instead of filling the disk.", min=1,
                                record=False)  # fmt: skip
    max_redirects: int = param(5, "Redirects followed per request (only to http/https, never from https to http).", min=0, record=False)

    def __post_init__(self) -> None:
        check_snapshot(self.snapshot)
        check_base_url(self.base_url)

    def inputs(self, common: Common) -> Inputs:
        return Inputs([self.snapshot], [], [sha256_json([self.snapshot, self.segments, self.seed])], [])

    def target(self, common: Common) -> Target:
        if not is_local(common.out):
            raise CurateError(
                f"download cc --out {common.out}: must be a local directory (resuming with HTTP Range requests needs a local file); "
                "download to local disk, then copy to the object store or run extract on the local copy"
            )
        return SnapshotTarget(str(as_path(common.out)), self.snapshot)

    def run(self, ctx: Context) -> dict[str, Any]:
        policy = RetryPolicy(
            retries=self.retries,
            wait=self.retry_wait,
            read_timeout=self.timeout,
            max_redirects=self.max_redirects,
            max_file_bytes=self.max_file_bytes,
            ca_bundle=self.ca_bundle,
        )
        summary = download_cc(self.snapshot, self.segments, str(ctx.out), seed=self.seed, base_url=self.base_url,
                              workers=ctx.common.workers or 4, policy=policy)  # fmt: skip
        record = {k: v for k, v in summary.items() if k not in ("files", "wall_seconds")}
        record["files"] = [{"path": r["path"], "bytes": r["bytes"]} for r in summary["files"]]
        return record

    def summary(self, record: dict[str, Any]) -> list[str]:
        return [summary_line(record), f"  output: {record.get('output', '')}"]


__all__ = [
    "DEFAULT_BASE_URL",
    "DownloadCC",
    "check_listing_path",
    "download_cc",
    "listing_url",
    "parse_listing",
    "select_paths",
]

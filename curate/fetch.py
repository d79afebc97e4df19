"""Resumable HTTP downloads of large files from untrusted servers, with bounded retries.

A file streams to ``.<name>.part`` and is renamed only when complete and of the announced
size, so a file under its real name is always whole. An interrupted file resumes with
``Range: bytes=<have>-``; connection errors, timeouts, HTTP 5xx/408/429 are retried with
exponential backoff a bounded number of times (:class:`RetryPolicy`); a 404 (or any other
4xx) and a size that does not match the announced one fail the file. Only ``http``/``https``
URLs are followed, redirects included (never from https down to http); TLS certificates are
always verified (``ca_bundle`` adds a private CA); a file larger than ``max_file_bytes``
(announced or received) fails. Used by ``curate download cc``; knows no stage.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import requests

from curate.errors import CurateError

log = logging.getLogger("curate")

CHUNK = 256 << 10
_CONTENT_RANGE = re.compile(r"^bytes\s+(?:(\d+)-(\d+)|\*)/(\d+|\*)$")
_USER_AGENT = "curate (https://github.com/; data pipeline) python-requests"


@dataclass
class RetryPolicy:
    """How hard to try: ``retries`` more attempts after the first, waiting ``wait * 2**k`` seconds (capped)."""

    retries: int = 5
    wait: float = 1.0
    max_wait: float = 60.0
    connect_timeout: float = 15.0
    read_timeout: float = 60.0
    max_redirects: int = 5
    max_file_bytes: int = 20 << 30
    ca_bundle: str | None = None  # a PEM file of extra trusted CAs (requests' verify=PATH); None: the default store

    def delay(self, attempt: int) -> float:
        return min(self.max_wait, self.wait * (2 ** max(0, attempt - 1)))


class _Transient(Exception):
    """A failure worth retrying (5xx, a short body)."""


class _Fatal(Exception):
    """A failure that retrying will not fix (404, a size mismatch)."""


@dataclass
class FileResult:
    path: str
    status: str  # downloaded | present | failed
    bytes: int = 0
    attempts: int = 0
    resumed_from: int = 0
    seconds: float = 0.0
    error: str | None = None


def _parse_content_range(value: str | None) -> tuple[int | None, int | None]:
    """``(start, total)`` of a Content-Range header (None where absent or ``*``)."""
    m = _CONTENT_RANGE.match((value or "").strip())
    if not m:
        return None, None
    start = int(m.group(1)) if m.group(1) is not None else None
    total = int(m.group(3)) if m.group(3) != "*" else None
    return start, total


def _int_header(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def part_path(dest: Path) -> Path:
    """Where ``dest`` streams until it is complete (kept across runs for resuming)."""
    return dest.with_name(f".{dest.name}.part")


def fetch_file(
    session: requests.Session,
    url: str,
    dest: Path,
    policy: RetryPolicy,
    *,
    label: str | None = None,
    on_bytes: Callable[[int], None] | None = None,
    on_size: Callable[[int], None] | None = None,
) -> FileResult:
    """Download ``url`` to ``dest`` (resumable, retried, size-checked). Never raises for HTTP trouble."""
    label = label or dest.name
    t0 = time.monotonic()
    if dest.exists():
        return FileResult(label, "present", dest.stat().st_size)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = part_path(dest)
    expected: int | None = None  # the size the server announced first
    attempts = 0
    resumed_from = part.stat().st_size if part.exists() else 0
    sized = False
    while True:
        attempts += 1
        have = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        try:
            # verify= per request: a session-level CA bundle would lose to REQUESTS_CA_BUNDLE in requests' merge
            timeout = (policy.connect_timeout, policy.read_timeout)
            with session.get(url, headers=headers, stream=True, timeout=timeout, verify=session.verify) as r:
                code = r.status_code
                if code == 416 and have:
                    _, total = _parse_content_range(r.headers.get("Content-Range"))
                    if total is not None and total == have and expected in (None, have):
                        os.replace(part, dest)
                        return FileResult(label, "downloaded", have, attempts, resumed_from, time.monotonic() - t0)
                    if expected is not None and total is not None and total != expected:
                        raise _Fatal(f"size mismatch: the server announced {expected:,} bytes but holds {total:,}")
                    part.unlink(missing_ok=True)  # the partial file does not fit the server's: start over
                    raise _Transient(f"HTTP 416 for a resume at byte {have:,}; starting over")
                if code >= 500 or code in (408, 429):
                    raise _Transient(f"HTTP {code} {r.reason}")
                if code not in (200, 206):
                    raise _Fatal(f"HTTP {code} {r.reason}")
                if code == 206:
                    start, total = _parse_content_range(r.headers.get("Content-Range"))
                    if start != have:
                        part.unlink(missing_ok=True)
                        raise _Transient(f"the server answered a resume at byte {have:,} from byte {start}; starting over")
                    mode = "ab"
                else:
                    total = _int_header(r.headers.get("Content-Length"))
                    have, mode = 0, "wb"  # a 200 is the whole file, whatever we asked for
                if total is not None and total > policy.max_file_bytes:
                    part.unlink(missing_ok=True)
                    raise _Fatal(f"the server announces {total:,} bytes, more than --max-file-bytes {policy.max_file_bytes:,}")
                if total is not None:
                    if expected is None:
                        expected = total
                    elif total != expected:
                        raise _Fatal(f"size mismatch: the server announced {expected:,} bytes, then {total:,}")
                    if not sized and on_size:
                        on_size(total)
                        if on_bytes and have:
                            on_bytes(have)
                        sized = True
                # A body cut short must keep what arrived (the resume starts there), so the length
                # is checked below rather than by urllib3, which would drop the last partial chunk.
                r.raw.enforce_content_length = False
                with open(part, mode) as fh:
                    got = have
                    for chunk in r.iter_content(CHUNK):
                        got += len(chunk)
                        if got > policy.max_file_bytes:  # a server that announces nothing, or lies
                            fh.close()
                            part.unlink(missing_ok=True)
                            raise _Fatal(f"more than --max-file-bytes {policy.max_file_bytes:,} bytes received")
                        fh.write(chunk)
                        if on_bytes:
                            on_bytes(len(chunk))
            size = part.stat().st_size
            if expected is not None and size != expected:
                if size > expected:
                    part.unlink(missing_ok=True)
                    raise _Fatal(f"size mismatch: received {size:,} bytes, the server announced {expected:,}")
                raise _Transient(f"short body: {size:,} of {expected:,} bytes")
            os.replace(part, dest)
            return FileResult(label, "downloaded", size, attempts, resumed_from, time.monotonic() - t0)
        except _Fatal as exc:
            return FileResult(label, "failed", 0, attempts, resumed_from, time.monotonic() - t0, f"{exc} ({url})")
        except requests.exceptions.SSLError as exc:  # a certificate problem does not go away by retrying
            why = "TLS certificate verification failed" if "CERTIFICATE_VERIFY_FAILED" in str(exc) else f"TLS error: {_short(exc)}"
            hint = (
                "; pass --ca-bundle PEM for a server with a private CA" if policy.ca_bundle is None else f" (CA bundle {policy.ca_bundle})"
            )
            return FileResult(label, "failed", 0, attempts, resumed_from, time.monotonic() - t0, f"{why}{hint} ({url})")
        except (_Transient, requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
            msg = _short(exc)
            if attempts > policy.retries:
                kept = part.stat().st_size if part.exists() else 0
                tail = f"; {kept:,} bytes kept in {part.name}, re-run to resume" if kept else ""
                return FileResult(
                    label,
                    "failed",
                    0,
                    attempts,
                    resumed_from,
                    time.monotonic() - t0,
                    f"gave up after {attempts} attempts: {msg} ({url}){tail}",
                )
            wait = policy.delay(attempts)
            log.info("download cc: %s: %s; retry %d of %d in %.1f s", label, msg, attempts, policy.retries, wait)
            time.sleep(wait)
        except requests.RequestException as exc:
            return FileResult(label, "failed", 0, attempts, resumed_from, time.monotonic() - t0, f"{_short(exc)} ({url})")
        except OSError as exc:
            return FileResult(
                label, "failed", 0, attempts, resumed_from, time.monotonic() - t0, f"cannot write {part}: {exc.strerror or exc}"
            )


def _short(exc: BaseException) -> str:
    if isinstance(exc, (_Transient, _Fatal)):
        return str(exc)
    text = str(exc)
    for pat, name in (
        (r"IncompleteRead|Connection broken|ProtocolError", "connection dropped mid-file"),
        (r"Connection reset|ConnectionResetError", "connection reset"),
        (r"Connection refused|Max retries exceeded|NewConnectionError", "connection refused"),
        (r"[Rr]ead timed out|ReadTimeout", "read timeout"),
        (r"[Cc]onnect timed out|ConnectTimeout", "connect timeout"),
    ):
        if re.search(pat, text) or re.search(pat, type(exc).__name__):
            return name
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


class _Session(requests.Session):
    """A session that follows only http(s) redirects, never from https down to http."""

    def get_redirect_target(self, resp: requests.Response) -> str | None:
        target = super().get_redirect_target(resp)
        if target:
            url = urljoin(resp.url, target)
            scheme = urlsplit(url).scheme.lower()
            if scheme not in ("http", "https"):
                raise _Fatal(f"redirected to {url[:200]!r}: only http and https URLs are followed")
            if urlsplit(resp.url).scheme.lower() == "https" and scheme == "http":
                raise _Fatal(f"redirected from https to plain http ({url[:200]}); refused")
        return target


def session(policy: RetryPolicy | None = None) -> requests.Session:
    policy = policy or RetryPolicy()
    s = _Session()
    s.headers["User-Agent"] = _USER_AGENT
    s.headers["Accept-Encoding"] = "identity"  # byte ranges must address the file, not a re-encoding
    s.max_redirects = policy.max_redirects
    s.verify = policy.ca_bundle if policy.ca_bundle else True  # a path is never overridden by REQUESTS_CA_BUNDLE
    return s


def check_ca_bundle(path: str | None) -> str | None:
    """``--ca-bundle``: an existing PEM file, as an absolute path."""
    if path is None:
        return None
    p = Path(path).expanduser()
    if not p.is_file():
        raise CurateError(f"--ca-bundle {path}: no such file (a PEM file of CA certificates)")
    return str(p.resolve())


def fetch_bytes(url: str, policy: RetryPolicy, dest: Path) -> bytes:
    """A small file (the listing) through the same resumable path; CurateError if it fails."""
    small = RetryPolicy(**{**asdict(policy), "max_file_bytes": min(policy.max_file_bytes, 256 << 20)})
    res = fetch_file(session(policy), url, dest, small, label=url)
    if res.status == "failed":
        raise CurateError(f"cannot download the listing {url}: {res.error}")
    return dest.read_bytes()

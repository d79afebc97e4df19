"""A fault-injecting HTTP server for the download tests: curate.httpserve plus per-path faults.

Faults are keyed by URL path (``/crawl-data/.../x.warc.gz``) and consumed per request:

* ``Fault(drop_after=N, times=K)``: send N bytes of the body, then close the connection (K times).
* ``Fault(status=503, times=K)``: answer 503 K times, then serve normally.
* ``Fault(status=404)``: always 404.
* ``Fault(extra_length=N)``: announce N more bytes than are sent, then close (every time).
* ``Fault(redirect=URL)``: answer 302 with ``Location: URL`` (relative URLs allowed).
* ``Fault(stall_after=N, stall_seconds=S, times=K)``: send N bytes, send nothing for S seconds, then the rest.
* ``Fault(hide_length=True)``: send no Content-Length (the body ends when the connection closes).

``server.log`` records every request as ``(path, Range header or None, status)``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from curate.httpserve import DirectoryHandler, DirectoryServer


@dataclass
class Fault:
    status: int | None = None
    drop_after: int | None = None
    extra_length: int = 0
    times: int | None = None  # None: every request
    redirect: str | None = None
    stall_after: int | None = None
    stall_seconds: float = 0.0
    hide_length: bool = False


class FaultyHandler(DirectoryHandler):
    server: FaultServer

    def _fault(self) -> Fault | None:
        path = urlsplit(self.path).path
        with self.server.lock:
            f = self.server.faults.get(path)
            if f is None:
                return None
            if f.times is not None:
                if f.times <= 0:
                    return None
                f.times -= 1
            return f

    def do_GET(self) -> None:  # noqa: N802
        fault = self._fault()
        self.current_fault = fault
        if fault is not None and fault.status is not None:
            self.send_plain(fault.status, f"fault {fault.status}\n".encode())
            return
        if fault is not None and fault.redirect is not None:
            self.send_plain(302, b"moved\n", {"Location": fault.redirect})
            return
        super().do_GET()

    def send_header(self, keyword: str, value: str) -> None:
        fault = getattr(self, "current_fault", None)
        if fault is not None and fault.hide_length and keyword.lower() == "content-length" and self.command == "GET":
            self.close_connection = True
            return
        super().send_header(keyword, value)

    def send_response(self, code: int, message: str | None = None) -> None:
        self.server.record(self.path, self.headers.get("Range"), int(code))
        super().send_response(code, message)

    def announced_length(self, path: Path, length: int) -> int:
        fault = getattr(self, "current_fault", None)
        return length + (fault.extra_length if fault else 0)

    def copy_bytes(self, path: Path, start: int, length: int) -> None:
        fault = getattr(self, "current_fault", None)
        if fault is not None and fault.stall_after is not None:
            first = min(length, fault.stall_after)
            super().copy_bytes(path, start, first)
            self.wfile.flush()
            time.sleep(fault.stall_seconds)
            start, length = start + first, length - first
            try:
                super().copy_bytes(path, start, length)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting: what the test wants
                self.close_connection = True
            return
        if fault is not None and fault.drop_after is not None:
            length = min(length, fault.drop_after)
        super().copy_bytes(path, start, length)
        if fault is not None and (fault.drop_after is not None or fault.extra_length):
            self.wfile.flush()
            self.close_connection = True


class FaultServer(DirectoryServer):
    def __init__(self, root: str | Path) -> None:
        super().__init__(root, handler=FaultyHandler)
        self.faults: dict[str, Fault] = {}
        self.log: list[tuple[str, str | None, int]] = []
        self.lock = threading.Lock()

    def record(self, path: str, rng: str | None, status: int) -> None:
        with self.lock:
            self.log.append((urlsplit(path).path, rng, status))

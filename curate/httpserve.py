"""A small threaded HTTP server for a directory, with byte ranges: the demo's stand-in for a data host.

``curate download cc`` talks to CommonCrawl's data host over HTTP; the demo and the tests
point it at this server on 127.0.0.1 instead, so the real download code (Range requests,
retries, size checks) runs without the internet::

    python -m curate.httpserve sample_data/cc --port 0 --port-file /tmp/port &   # background
    python -m curate.httpserve sample_data/cc -- sh -c 'curate download cc --base-url "$CURATE_SERVE_URL" ...'

The second form starts the server, runs the command with ``CURATE_SERVE_URL`` set, stops
the server whatever the command's outcome, and exits with the command's status. Only
GET and HEAD of regular files under the directory are served (no listings, no ``..``).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

log = logging.getLogger("curate")

CHUNK = 64 << 10
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class DirectoryHandler(BaseHTTPRequestHandler):
    """Serves files under ``server.root`` with ``Range: bytes=a-b`` support (one range)."""

    server: DirectoryServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        log.debug("httpserve: %s %s", self.address_string(), format % args)

    # -- resolution
    def resolve(self) -> Path | None:
        """The file the request names, or None (404) when it is outside the root or not a file."""
        rel = unquote(urlsplit(self.path).path).lstrip("/")
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if any(p == ".." or "\\" in p or "\0" in p for p in parts):
            return None
        path = self.server.root.joinpath(*parts) if parts else self.server.root
        try:
            path.resolve().relative_to(self.server.root)
        except ValueError:
            return None
        return path if path.is_file() else None

    # -- responses
    def send_plain(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def parse_range(self, size: int) -> tuple[int, int] | None | bool:
        """``(start, end_inclusive)`` of a satisfiable range, None without one, False if unsatisfiable."""
        header = self.headers.get("Range")
        if not header:
            return None
        m = _RANGE.match(header.strip())
        if not m or (not m.group(1) and not m.group(2)):
            return None  # malformed or multi-range: serve the whole file, as RFC 9110 allows
        if m.group(1):
            start = int(m.group(1))
            end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
        else:  # suffix range: the last N bytes
            n = int(m.group(2))
            start, end = max(0, size - n), size - 1
        if start >= size or start > end:
            return False
        return start, end

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        path = self.resolve()
        if path is None:
            self.send_plain(HTTPStatus.NOT_FOUND, b"not found\n")
            return
        size = path.stat().st_size
        rng = self.parse_range(size)
        if rng is False:
            self.send_plain(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE, b"", {"Content-Range": f"bytes */{size}"})
            return
        start, end = rng if rng else (0, size - 1)
        self.serve_file(path, size, start, end, partial=bool(rng))

    def serve_file(self, path: Path, size: int, start: int, end: int, partial: bool) -> None:
        """Send bytes ``start..end`` of ``path`` (a 206 when ``partial``)."""
        length = max(0, end - start + 1)
        self.send_response(HTTPStatus.PARTIAL_CONTENT if partial else HTTPStatus.OK)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(self.announced_length(path, length)))
        if partial:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if self.command == "HEAD":
            return
        self.copy_bytes(path, start, length)

    def announced_length(self, path: Path, length: int) -> int:
        """The Content-Length to announce (the tests' fault injection overrides this)."""
        return length

    def copy_bytes(self, path: Path, start: int, length: int) -> None:
        with open(path, "rb") as fh:
            fh.seek(start)
            left = length
            while left > 0:
                data = fh.read(min(CHUNK, left))
                if not data:
                    break
                self.wfile.write(data)
                left -= len(data)


class DirectoryServer(ThreadingHTTPServer):
    """A threaded server for ``root``; ``url`` is its base URL once bound."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, root: str | os.PathLike, host: str = "127.0.0.1", port: int = 0, handler: type = DirectoryHandler) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"{root}: not a directory")
        super().__init__((host, port), handler)

    def handle_error(self, request: object, client_address: tuple) -> None:
        """A client that hangs up (reset, broken pipe) is normal for a file server: no traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> DirectoryServer:
        """Serve in a background thread; returns self (``stop`` ends it)."""
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def __enter__(self) -> DirectoryServer:
        return self.start()  # ``with DirectoryServer(root) as srv:`` serves until the block ends

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m curate.httpserve DIR [--port N] [--port-file F] [-- CMD ...]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1 :]
    ap = argparse.ArgumentParser(prog="python -m curate.httpserve", description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="directory to serve")
    ap.add_argument("--host", default="127.0.0.1", help="address to bind [127.0.0.1]")
    ap.add_argument("--port", type=int, default=0, help="port; 0 picks a free one [0]")
    ap.add_argument("--port-file", help="write the bound port here once listening")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="curate: %(message)s")
    try:
        server = DirectoryServer(args.root, args.host, args.port)
    except (OSError, NotADirectoryError) as exc:
        print(f"curate.httpserve: error: {exc}", file=sys.stderr)
        return 1
    if args.port_file:
        tmp = Path(f"{args.port_file}.tmp.{os.getpid()}")
        tmp.write_text(f"{server.server_address[1]}\n")
        os.replace(tmp, args.port_file)
    if not command:
        print(f"serving {server.root} at {server.url} (Ctrl-C stops)", file=sys.stderr)
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
        return 0
    server.start()
    env = {**os.environ, "CURATE_SERVE_URL": server.url}
    try:
        return subprocess.run(command, env=env).returncode
    except OSError as exc:
        print(f"curate.httpserve: error: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    except KeyboardInterrupt:
        return 130
    finally:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

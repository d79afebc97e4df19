"""The time limit on extracting one page: a helper process runs the extractor and is killed and restarted when a page overruns.

A signal (SIGALRM) cannot do this: resiliparse extracts in native code holding the GIL, and
a page of 30,000 nested ``<div><span>`` took it 139 s here, during which a Python signal
handler never runs. The pages of a file go to the helper in groups, as one stream, and each
answer comes back when it is done (docs/extract.md, "Time limit").

The helper is ``python -m curate.stages.extract.sandbox --serve NAME`` (:func:`serve`); it
finds the extractor by its registry name, so one that an installed package registers (entry
point ``curate.extractors``) runs there too. Neither this module nor the extractors import
pyarrow or the runtime: the helper starts again after every timeout and crash, and the first
page's time includes its start.
"""

from __future__ import annotations

import atexit
import os
import select
import struct
import subprocess
import sys
import time

from curate.errors import CurateError
from curate.stages.extract.extractors import extractor_function


class ExtractTimeout(Exception):
    """One record's extraction overran the time limit."""


class ExtractCrash(Exception):
    """The helper process died while extracting one record."""


class Sandbox:
    """A helper process that extracts text from HTML; killed and restarted when a record overruns.

    Protocol on the helper's stdin/stdout: request = 8-byte length + UTF-8 HTML; answer =
    1 status byte (ASCII ``0``: text, ``1``: an error message) + 8-byte length + UTF-8 payload.
    """

    def __init__(self, extractor: str, comments: bool = False) -> None:
        self.extractor = extractor
        self.comments = comments
        self.proc: subprocess.Popen | None = None
        self.served = 0
        self.restarts = 0

    def _start(self) -> subprocess.Popen:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "curate.stages.extract.sandbox", "--serve", self.extractor, *(["--comments"] if self.comments else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,  # Ctrl-C in the terminal goes to curate, which stops it; no traceback from here
        )
        return self.proc

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - best effort
                pass
            for fh in (self.proc.stdin, self.proc.stdout):
                try:
                    fh.close()  # type: ignore[union-attr]
                except Exception:  # noqa: BLE001
                    pass
            self.proc = None

    def extract(self, html: str, timeout: float) -> str:
        """One page's text (raises ExtractTimeout, ExtractCrash, or RuntimeError for the extractor's own error)."""
        (result,) = self.extract_many([html], timeout)
        if isinstance(result, BaseException):
            raise result
        return result

    def extract_many(self, htmls: list[str], timeout: float) -> list[str | BaseException]:
        """Each page's text, or the exception that stands for its failure, in order.

        The pages go to the helper in one stream and their answers come back as they are
        done: one wake-up per group rather than per page (a round trip between two cores
        costs ~90 us here, several per page). Each page still has ``timeout`` seconds from
        when the helper could start it; on a timeout or a crash the helper is restarted and
        the pages after that one are sent again.
        """
        results: list[str | BaseException] = []
        while len(results) < len(htmls):
            results.extend(self._stream(htmls[len(results) :], timeout))
        return results

    def _stream(self, htmls: list[str], timeout: float) -> list[str | BaseException]:
        """Answers for a prefix of ``htmls``: all of them, or up to and including the first timeout or crash."""
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
        payloads = [h.encode("utf-8", "surrogatepass") for h in htmls]
        ends: list[int] = []  # where each page's request ends in the stream
        for p in payloads:
            ends.append((ends[-1] if ends else 0) + 8 + len(p))
        request = memoryview(b"".join(struct.pack("<Q", len(p)) + p for p in payloads))
        wfd, rfd = proc.stdin.fileno(), proc.stdout.fileno()  # type: ignore[union-attr]
        os.set_blocking(wfd, False)
        results: list[str | BaseException] = []
        written: list[float] = []  # when each page's request was all in the pipe
        answer = bytearray()
        sent = 0
        answered = time.monotonic()  # when the last answer came (the helper was free from then on)
        try:
            while len(results) < len(htmls):
                k = len(results)
                now = time.monotonic()
                # page k runs from when the helper had it and was done with the one before
                start = max(answered, written[k]) if k < len(written) else now
                if len(answer) >= 9:
                    start += 5.0  # the tail of a long answer: 5 s more
                wait = start + timeout - now
                if wait <= 0:
                    raise ExtractTimeout
                ready, writable, _ = select.select([rfd], [wfd] if sent < len(request) else [], [], wait)
                if writable:
                    try:
                        sent += os.write(wfd, request[sent : sent + (1 << 20)])
                    except BlockingIOError:
                        pass
                    while len(written) < len(ends) and ends[len(written)] <= sent:
                        written.append(time.monotonic())
                if not ready:
                    continue
                data = os.read(rfd, 1 << 20)
                if not data:
                    raise ExtractCrash("the extraction helper exited")
                answer += data
                while len(answer) >= 9 and len(results) < len(htmls):
                    need = 9 + struct.unpack_from("<Q", answer, 1)[0]
                    if len(answer) < need:
                        break
                    status, body = answer[:1], bytes(answer[9:need]).decode("utf-8", "surrogatepass")
                    del answer[:need]
                    results.append(RuntimeError(body) if status == b"1" else body)
                    self.served += 1
                    answered = time.monotonic()
        except ExtractTimeout as exc:
            self.close()
            self.restarts += 1
            results.append(exc)
        except (BrokenPipeError, ExtractCrash, OSError) as exc:
            first = self.served == 0
            self.close()
            self.restarts += 1
            if first:
                raise CurateError(f"the {self.extractor} extraction helper did not start ({exc}); try --record-timeout 0") from exc
            results.append(ExtractCrash(str(exc)))
        return results


_SANDBOXES: dict[tuple[str, bool], Sandbox] = {}


def sandbox(extractor: str, comments: bool = False) -> Sandbox:
    """This process's helper for ``extractor`` (started on first use, reused across files); ``comments``: keep comment sections."""
    box = _SANDBOXES.get((extractor, comments))
    if box is None:
        box = _SANDBOXES[(extractor, comments)] = Sandbox(extractor, comments)
    return box


@atexit.register
def _close_sandboxes() -> None:
    for box in _SANDBOXES.values():
        box.close()


def serve(extractor: str, comments: bool = False) -> int:
    """The helper's loop (``python -m curate.stages.extract.sandbox --serve NAME [--comments]``): pages in, answers out, until stdin ends."""
    fn = extractor_function(extractor, comments)
    inp = os.fdopen(os.dup(0), "rb", buffering=1 << 20)  # buffered: a stream of pages is read in few system calls
    out = os.fdopen(os.dup(1), "wb", buffering=0)  # each answer goes out at once (the parent times each page)
    os.dup2(2, 1)  # stray prints of a library go to stderr, never into the protocol
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return 0
        (n,) = struct.unpack("<Q", head)
        data = inp.read(n)  # a BufferedReader returns n bytes unless the stream ends
        if len(data) < n:
            return 0
        try:
            result, status = fn(data.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass"), b"0"
        except Exception as exc:  # noqa: BLE001 - reported to the parent, counted there
            result, status = f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:2000], b"1"
        try:
            out.write(status + struct.pack("<Q", len(result)) + result)
        except BrokenPipeError:  # the stage stopped (Ctrl-C, a killed worker): nobody is left to answer
            return 0


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--serve" and sys.argv[3:] in ([], ["--comments"]):
        sys.exit(serve(sys.argv[2], comments=len(sys.argv) == 4))
    sys.exit("usage: python -m curate.stages.extract.sandbox --serve EXTRACTOR [--comments]")

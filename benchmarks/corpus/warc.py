"""WARC output: one file of pages as CommonCrawl writes it, with curate.warc.writer."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from datetime import timedelta
from pathlib import Path

from curate.warc.writer import WarcWriter, http_head, warc_fields

from .plan import Corpus
from .util import NAME, rec_id


class _Hashing:
    """A file that also counts and hashes what is written to it (the manifest's size and sha256 of each file)."""

    def __init__(self, fh) -> None:
        self.fh, self.sha256 = fh, hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        return self.fh.write(data)


def write_file(args: tuple) -> dict:
    """Generate WARC file ``f``: returns its manifest rows and counts."""
    corpus: Corpus = _CORPUS
    f, out = args
    rel = corpus.file_name(f)
    path = Path(out) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    first, last = f * corpus.ppf, min(corpus.pages, (f + 1) * corpus.ppf)
    rng = corpus.rng("file", f)
    start = corpus.crawl_start + timedelta(minutes=7 * (f % 100) + 180 * (f // 100))
    rows = []
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        hashed = _Hashing(fh)
        w = WarcWriter(hashed, version="WARC/1.0", level=6)  # CommonCrawl's field order (below), each record its own gzip member
        info_id = rec_id(rng)
        fields = {"isPartOf": corpus.snapshot, "publisher": "Common Crawl", "description": f"Synthetic crawl for curate benchmarks (seed {corpus.seed})",
                  "operator": f"curate {NAME}", "hostname": f"ip-10-67-{f % 256}-{(f // 256) % 256}.ec2.internal",
                  "software": "Apache Nutch 1.17 (modified, https://github.com/commoncrawl/nutch/)",
                  "robots": "checked via crawler-commons 1.2-SNAPSHOT (https://github.com/crawler-commons/crawler-commons)",
                  "format": "WARC File Format 1.1", "conformsTo": "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"}  # fmt: skip
        w.write([("WARC-Type", "warcinfo"), ("WARC-Date", start.strftime("%Y-%m-%dT%H:%M:%SZ")), ("WARC-Filename", path.name),
                 ("WARC-Record-ID", info_id), ("Content-Length", None), ("Content-Type", "application/warc-fields")], warc_fields(fields))  # fmt: skip
        step = 3 * 3600 / max(1, last - first)
        for k, n in enumerate(range(first, last)):
            r = corpus.response(n)
            req_id, resp_id, meta_id = corpus.record_ids(n)
            when = start + timedelta(seconds=int(k * step + rng.random() * step))
            wdate = when.strftime("%Y-%m-%dT%H:%M:%SZ")
            url = r["url"]
            m = re.match(r"https?://([^/?#]+)(.*)", url)
            host, path_q = m.group(1), m.group(2) or "/"
            lang_hdr = {"en": "en-US,en;q=0.5"}.get(r["info"]["lang"], f"{r['info']['lang'].split('-')[0]},en-US;q=0.7,en;q=0.3")
            req = (f"GET {path_q} HTTP/1.1\r\nUser-Agent: CCBot/2.0 (https://commoncrawl.org/faq/)\r\n"
                   f"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: {lang_hdr}\r\n"
                   f"Accept-Encoding: br,gzip\r\nHost: {host}\r\nConnection: Keep-Alive\r\n\r\n").encode()  # fmt: skip
            w.write([("WARC-Type", "request"), ("WARC-Date", wdate), ("WARC-Record-ID", req_id), ("Content-Length", None),
                     ("Content-Type", "application/http; msgtype=request"), ("WARC-Warcinfo-ID", info_id),
                     ("WARC-IP-Address", r["ip"]), ("WARC-Target-URI", url)], http=req)  # fmt: skip
            body = r["body"]
            hdrs = [("Date", when.strftime("%a, %d %b %Y %H:%M:%S GMT"))] + list(r["headers"])
            if body and rng.random() < 0.7:
                hdrs.append(("X-Crawler-Content-Encoding", "gzip"))
                hdrs.append(("X-Crawler-Content-Length", str(max(20, len(body) // rng.randint(3, 6)))))
            hdrs.append(("Content-Length", str(len(body))))
            ctype = dict(r["headers"]).get("Content-Type")
            mime = (ctype or "text/html").split(";")[0]
            off = w.write([("WARC-Type", "response"), ("WARC-Date", wdate), ("WARC-Record-ID", resp_id), ("Content-Length", None),
                           ("Content-Type", "application/http; msgtype=response"), ("WARC-Warcinfo-ID", info_id),
                           ("WARC-Concurrent-To", req_id), ("WARC-IP-Address", r["ip"]), ("WARC-Target-URI", url),
                           ("WARC-Payload-Digest", None), ("WARC-Block-Digest", None)]
                          + ([("WARC-Identified-Payload-Type", mime)] if body else []), body, http=http_head(f"HTTP/1.1 {r['status']}", hdrs))  # fmt: skip
            info = r["info"]
            meta = f"fetchTimeMs: {int(rng.lognormvariate(math.log(300), 1.0)) + 5}\r\n"
            if mime in ("text/html", "application/xhtml+xml") and body:
                cs = info.get("charset", "utf-8").upper()
                meta += f"charset-detected: {cs}\r\n"
                lang = info["lang"].split("-")[0]
                cld2 = {"reliable": True, "text-bytes": len(body) // 6,
                        "languages": [{"code": lang, "text-covered": rng.randint(60, 99) / 100, "score": float(rng.randint(200, 1000))}]}  # fmt: skip
                meta += f"languages-cld2: {json.dumps(cld2, separators=(',', ':'))}\r\n"
            w.write([("WARC-Type", "metadata"), ("WARC-Date", wdate), ("WARC-Record-ID", meta_id), ("Content-Length", None),
                     ("Content-Type", "application/warc-fields"), ("WARC-Warcinfo-ID", info_id),
                     ("WARC-Concurrent-To", resp_id), ("WARC-Target-URI", url)], meta.encode())  # fmt: skip
            status = int(r["status"][:3])
            row = {"n": n, "file": rel, "offset": off, "record_id": resp_id[1:-1], "url": url, "status": status, "content_type": ctype,
                   "bytes": len(body), **{k2: v for k2, v in info.items() if k2 not in ("n", "status")}}  # fmt: skip
            if mime in ("text/html", "application/xhtml+xml") and status == 200 and info["kind"] != "non_html":
                row["expect"] = "doc"
            else:
                row["expect"] = "not_200" if status != 200 else "not_html"
            rows.append(row)
    os.replace(tmp, path)
    return {"file": rel, "pages": last - first, "bytes": w.offset, "sha256": hashed.sha256.hexdigest(), "rows": rows}


_CORPUS: Corpus | None = None  # the corpus of this process (a worker's is set by init_worker)


def init_worker(corpus: Corpus) -> None:
    global _CORPUS
    _CORPUS = corpus

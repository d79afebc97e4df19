"""The sha256 of every file ``make demo`` writes, minus what varies between runs (timings, ports, the checkout's path).

A refactor must leave these unchanged: record them before and after and compare::

    python benchmarks/demo_hashes.py out/sample > before.txt
    ... change the code, make demo again ...
    python benchmarks/demo_hashes.py out/sample | diff before.txt -

Data files (Parquet, .bin/.idx, models, text) are hashed as they are. JSON records have the
keys that hold timings, fingerprints (which include input modification times), server ports
and summary lines (which print seconds) removed, and the output root replaced by ``<OUT>``.
HTML (the report embeds timings) is listed without a hash.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

_VARYING = re.compile(
    r"second|time|elapsed|date|started|finished|created|host|pid|rss|wall|cpu|duration|fingerprint|summary|base_url|listing"
)


def _strip(value, root: str):
    if isinstance(value, dict):
        return {k: _strip(v, root) for k, v in value.items() if not _VARYING.search(k)}
    if isinstance(value, list):
        return [_strip(v, root) for v in value]
    if isinstance(value, str):
        return value.replace(root, "<OUT>")
    return value


def file_hash(path: Path, root: Path) -> str:
    if path.suffix == ".html":
        return "(html: not compared)"
    if path.suffix in (".json", ".params") or path.name == "_SUCCESS":
        try:
            data = json.loads(path.read_text())
        except ValueError:
            data = None
        if data is not None:
            rootstr = str(root.resolve().parent.parent)  # the checkout: paths to configs and outputs
            blob = json.dumps(_strip(data, rootstr), sort_keys=True)
            return hashlib.sha256(blob.encode()).hexdigest()
    if path.suffix == ".txt":  # blend's table and Megatron's data path name the checkout's absolute paths
        text = path.read_text().replace(str(root.resolve().parent.parent), "<OUT>")
        return hashlib.sha256(text.encode()).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "out/sample")
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        print(f"{file_hash(f, root)}  {f.relative_to(root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

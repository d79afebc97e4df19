"""Quality scoring: curate's compiled fastText kernel vs ``fasttext.load_model(...).predict``, one label's probability per document.

Both score the same prepared lines (DCLM's preparation: newlines to spaces) of the sample's Pile
documents (repeated to --docs) with the same bigram classifier, trained here in DCLM's label format
(``__label__hq`` vs ``__label__cc``) with the fastText library: softmax (as DCLM's), hierarchical
softmax and one-vs-all. The kernel's probabilities are compared bit for bit with the library's.
One process, one core; run under the EXCLUSIVE CPU lock.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _tables as tables
import numpy as np
import zstandard

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.fasttext import Classifier, label_probabilities  # noqa: E402
from curate.stages.quality.data import normalize_text  # noqa: E402


def sample_texts() -> list[tuple[str, str]]:
    """(pile subset, text) of the sample's Pile shards."""
    out = []
    for f in sorted((ROOT / "sample_data" / "pile" / "train").glob("*.jsonl.zst")):
        with zstandard.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                out.append((rec.get("meta", {}).get("pile_set_name", ""), rec["text"]))
    return out


def train(path: Path, data: Path, loss: str, dim: int, bucket: int) -> Path:
    code = (f"import fasttext; fasttext.train_supervised({str(data)!r}, loss={loss!r}, wordNgrams=2, dim={dim}, bucket={bucket}, "
            f"epoch=5, lr=0.5, minCount=1, thread=1, seed=1, verbose=0).save_model({str(path)!r})")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True)
    return path


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=20000, help="documents scored (the sample's, repeated)")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--bucket", type=int, default=200000)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    tables.add_write_option(ap)
    args = ap.parse_args()
    docs = sample_texts()
    hq = {"Wikipedia (en)", "Gutenberg (PG-19)", "BookCorpus2", "OpenWebText2", "StackExchange"}
    lines = [normalize_text(t, "dclm") for _, t in docs]
    tmp = Path(tempfile.mkdtemp(prefix="bench_quality_score_"))
    with open(tmp / "train.txt", "w", encoding="utf-8") as fh:
        for (subset, _), line in zip(docs, lines):
            fh.write(("__label__hq " if subset in hq else "__label__cc ") + line.replace("__label__", "label") + "\n")
    reps = -(-args.docs // len(lines))
    texts = (lines * reps)[: args.docs]
    mbytes = sum(len(t.encode()) for t in texts) / 1e6
    head = ["model", "documents", "MB", "fastText predict s", "curate kernel s", "speed-up", "bit-identical"]
    rows = []
    for loss in ("softmax", "hs", "ova"):
        path = train(tmp / f"{loss}.bin", tmp / "train.txt", loss, args.dim, args.bucket)
        c = Classifier(path)
        kernel = c.kernel
        assert kernel is not None, loss
        lib = c.library
        ours = kernel.probabilities(texts, "__label__hq")
        theirs = label_probabilities(lib, texts, "__label__hq")
        same = bool(np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)))
        t_lib = best_of(lambda m=lib: m.predict(texts, k=-1, threshold=0.0), args.repeat)
        t_ker = best_of(lambda m=kernel: m.probabilities(texts, "__label__hq"), args.repeat)
        rows.append([f"{loss}, bigrams, dim {args.dim}, bucket {args.bucket:,}", f"{len(texts):,}", f"{mbytes:.1f}",
                     f"{t_lib:.2f}", f"{t_ker:.2f}", f"{t_lib / t_ker:.1f}x", "yes" if same else "NO"])  # fmt: skip
    print(tables.text_table(head, rows))
    if args.write:
        note = ("One label's probability per document (`__label__hq`), as `fasttext.load_model(path).predict(lines, k=-1, "
                "threshold=0.0)` reports it, against `curate.fasttext.KernelModel.probabilities` (what `curate quality score` "
                "runs), on the same lines, in one process; best of "
                f"{args.repeat} runs. The models are trained here on the sample's Pile documents in DCLM's label format "
                "(word bigrams); bit-identical: every float32 probability equal.")  # fmt: skip
        tables.write_table("quality_score", "Quality scoring: curate's fastText kernel vs fastText's predict", tables.md_table(head, rows),
                           note)  # fmt: skip


if __name__ == "__main__":
    main()

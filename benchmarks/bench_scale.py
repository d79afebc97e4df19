"""Scale-out: one map stage (langid + filter) and one global stage (fuzzy dedup), 1 and 2 workers, local and Ray.

One run builds one input and runs every configuration on it, in this process, through the
same stage functions the CLI calls:

* ``local``: ``LocalExecutor(N)`` (N spawn worker processes; in-process when N is 1);
* ``ray``: ``RayExecutor(N)`` on a local Ray started once for the run (``--ray-cpus``, default
  all cores); N caps the tasks in flight. Ray's start-up is reported separately: on a
  cluster it is already running.

It prints wall seconds, documents per second, the speed-up over one local worker, the
number of tasks, and Ray's overhead per task: (Ray wall - local wall at the same N) / tasks.
A no-op task measures the bare cost of a task on each backend. Every configuration's output
is compared with one local worker's (the same bytes, or the table says so).

The input is sample_data/pile replicated with changed ids (``-r<k>`` appended) to --mb
megabytes of text, in shards of --shard-docs documents. Replicas keep their text, so fuzzy
dedup sees every document --mb / 11 times: clusters of that size (a heavy-duplication
workload; the stage's cost is dominated by signatures and the removal pass either way).

    .venv/bin/python benchmarks/bench_scale.py                  # 40 MB, the table
    .venv/bin/python benchmarks/bench_scale.py --mb 1 --shard-docs 50 --noop 20   # a quick check (the sample once, 11 MB)

The tables go to docs/benchmarks/scale.md (``--no-write``: print only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _tables as tables
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "_work" / "scale"
SAMPLE = ROOT / "sample_data" / "pile"


def _noop(x: int) -> int:
    """A task that does nothing: its wall time is the executor's overhead."""
    return x


class Counting:
    """Wraps an executor and counts the items it runs (the stage's tasks)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.tasks = inner, 0
        self.name = inner.name

    def map(self, fn: Callable[[Any], Any], items: Any, **kw: Any) -> list[Any]:
        self.tasks += len(items)
        return self.inner.map(fn, items, **kw)

    def share(self, value: Any) -> Any:
        return self.inner.share(value)

    def close(self) -> None:
        self.inner.close()


# --------------------------------------------------------------------------- input


def build_input(mb: float, shard_docs: int) -> tuple[Path, int, int]:
    """sample_data/pile replicated to ``mb`` MB of text (ids made unique per replica); (dir, docs, bytes)."""
    from curate.dataset import read_table
    from curate.formats.parquet import ParquetWriter
    from curate.runtime import run
    from curate.stages.pile import DownloadPile
    from curate.storage import write_json_atomic
    from curate.targets import shard_name

    out = WORK / f"input-{mb:g}MB-{shard_docs}"
    if (out / "_SUCCESS").exists():
        info = json.loads((out / "_SUCCESS").read_text())
        return out, info["docs_out"], info["bytes_out"]
    base_dir = WORK / "pile"
    if not (base_dir / "_SUCCESS").exists():
        run(DownloadPile(dataset=str(SAMPLE), shard_docs=10**9), out=base_dir)
    base = read_table(base_dir)
    base_bytes = int(pc.sum(pc.binary_length(base.column("text"))).as_py())
    reps = max(1, round(mb * 1e6 / base_bytes))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    parts = [base.set_column(0, "id", pc.binary_join_element_wise(base.column("id"), pa.scalar(f"-r{r}"), "")) for r in range(reps)]
    table = pa.concat_tables(parts)
    n = table.num_rows
    for i, start in enumerate(range(0, n, shard_docs)):
        w = ParquetWriter(out / f"{shard_name(i)}.parquet", table.schema)
        w.write(table.slice(start, shard_docs))
        w.close()
    write_json_atomic(out / "_SUCCESS", {"docs_out": n, "bytes_out": base_bytes * reps, "replicas": reps})
    return out, n, base_bytes * reps


# --------------------------------------------------------------------------- stages


def run_langid_filter(inp: Path, out: Path, executor: Any) -> None:
    from curate.runtime import run
    from curate.stages.filters import FilterStage
    from curate.stages.langid import LangIdStage

    run(LangIdStage(keep=["en"], min_score=0.65, filter_sources="cc/*"), inputs=[str(inp)], out=out / "langid", executor=executor)
    run(FilterStage(), inputs=[str(out / "langid")], out=out / "filter", executor=executor)


def run_fuzzy_dedup(inp: Path, out: Path, executor: Any) -> None:
    from curate.dedup.fuzzy import FuzzyDedup
    from curate.runtime import run

    run(FuzzyDedup(verify="signature"), inputs=[str(inp)], out=out / "fuzzy", executor=executor)


def digest(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(path.rglob("*.parquet")):
        h.update(str(f.relative_to(path)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def make(kind: str, workers: int) -> Any:
    from curate.executor import LocalExecutor, RayExecutor

    return Counting(LocalExecutor(workers) if kind == "local" else RayExecutor(workers))


def noop_seconds(kind: str, workers: int, n: int) -> float:
    """Seconds per no-op task (pool or workers already warm)."""
    ex = make(kind, workers)
    ex.map(_noop, list(range(max(workers, 2))), labels=["warm"] * max(workers, 2), desc="warm-up")
    t = time.perf_counter()
    ex.map(_noop, list(range(n)), labels=[str(i) for i in range(n)], desc="no-op")
    dt = (time.perf_counter() - t) / n
    ex.close()
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=40.0, help="megabytes of text in the input (default 40)")
    ap.add_argument("--shard-docs", type=int, default=500, help="documents per input shard (default 500)")
    ap.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    ap.add_argument("--executors", default="local,ray")
    ap.add_argument("--stages", default="langid+filter,fuzzy")
    ap.add_argument("--noop", type=int, default=200, help="no-op tasks for the per-task overhead (0: skip)")
    ap.add_argument("--ray-cpus", type=int, default=None, help="CPUs of the local Ray (default: all cores)")
    tables.add_write_option(ap)
    args = ap.parse_args()

    os.environ.setdefault("CURATE_PROGRESS", "log")
    import logging

    logging.getLogger("curate").setLevel(logging.WARNING)
    workers = [int(w) for w in args.workers.split(",")]
    kinds = args.executors.split(",")
    stages = {"langid+filter": run_langid_filter, "fuzzy": run_fuzzy_dedup}
    chosen = [s for s in args.stages.split(",") if s]

    inp, docs, nbytes = build_input(args.mb, args.shard_docs)
    shards = len(list(inp.glob("part-*.parquet")))
    print(f"input: {docs:,} docs, {nbytes / 1e6:.1f} MB of text, {shards} shards ({inp})")
    ray_start = None
    if "ray" in kinds:
        import ray

        t = time.perf_counter()
        ray.init(num_cpus=args.ray_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False, configure_logging=False)
        ray_start = time.perf_counter() - t

    rows = []
    for stage in chosen:
        base_wall: float | None = None
        base_digest = None
        local_wall: dict[int, float] = {}
        for kind in kinds:
            for n in workers:
                out = WORK / "out" / f"{stage}-{kind}-{n}"
                shutil.rmtree(out, ignore_errors=True)
                ex = make(kind, n)
                t = time.perf_counter()
                stages[stage](inp, out, ex)
                wall = time.perf_counter() - t
                ex.close()
                d = digest(out)
                if base_wall is None:
                    base_wall, base_digest = wall, d
                if kind == "local":
                    local_wall[n] = wall
                over = (wall - local_wall[n]) / ex.tasks * 1e3 if kind == "ray" and n in local_wall and ex.tasks else None
                rows.append([stage, kind, n, wall, docs / wall, base_wall / wall, ex.tasks, over, "yes" if d == base_digest else "NO"])
                shutil.rmtree(out, ignore_errors=True)

    head = ["stage", "executor", "workers", "wall s", "docs/s", "speed-up", "tasks", "ray - local ms/task", "same bytes"]
    cells = [
        [r[0], r[1], str(r[2]), f"{r[3]:.2f}", f"{r[4]:,.0f}", f"{r[5]:.2f}x", str(r[6]), "" if r[7] is None else f"{r[7]:+.0f}", r[8]]
        for r in rows
    ]
    print()
    print(tables.text_table(head, cells, left=2))
    legend = (
        "speed-up: against one local worker on the same stage; ray - local: the extra wall time per task over local at the same workers"
    )
    print("\n" + legend)
    noop_rows = []
    if args.noop:
        print(f"\nno-op tasks ({args.noop}, warm workers):")
        for kind in kinds:
            for n in workers:
                ms = noop_seconds(kind, n, args.noop) * 1e3
                print(f"  {kind:5s} workers {n}: {ms:7.2f} ms/task")
                noop_rows.append([kind, str(n), f"{ms:.2f}"])
    if ray_start is not None:
        print(f"\nRay start-up (ray.init, local, once per run; not in the times above): {ray_start:.1f} s")
    print(f"machine: {os.cpu_count()} cores")
    if args.write:
        body = [tables.md_table(head, cells), "", legend[0].upper() + legend[1:] + "."]
        if noop_rows:
            body += [
                "",
                f"## A no-op task ({args.noop} tasks, warm workers)",
                "",
                tables.md_table(["executor", "workers", "ms per task"], noop_rows),
            ]
        if ray_start is not None:
            body += ["", f"Ray start-up (`ray.init` of a local Ray, once per run; not in the times above): {ray_start:.1f} s."]
        ray_cpus = args.ray_cpus or os.cpu_count()
        note = (
            f"Input: sample_data/pile replicated (ids made unique) to {nbytes / 1e6:.1f} MB of text, {docs:,} documents in "
            f"{shards} shards of up to {args.shard_docs} documents; replicas keep their text, so fuzzy dedup sees each "
            "document once per replica (a heavy-duplication workload). Stages: "
            + ", ".join(f"`{s}`" for s in chosen)
            + " (langid keeps English with score >= 0.65 on cc/* sources, then the default filters; fuzzy dedup with "
            "`--verify signature`), through the same stage functions the CLI calls, in this process. Executors: "
            f"`local` = `LocalExecutor(N)` (spawned worker processes; in-process for one worker), `ray` = `RayExecutor(N)` "
            f"on a local Ray with {ray_cpus} CPUs started once for the run, N capping the tasks in flight. Each configuration "
            "runs once; its output is compared byte for byte with the first configuration's. "
            f"{tables.versions('ray')}."
        )
        tables.write_table("scale", "Scale-out: local and Ray executors, 1 and 2 workers", "\n".join(body), note)


if __name__ == "__main__":
    main()

"""The Ray executor on a real local Ray (started once per test session): same bytes as local, retries, failures."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pytest

from curate.errors import ShardError
from curate.runtime import MapResult, MapStage
from curate.runtime import run as run_py
from tests.conftest import SAMPLE
from tests.test_dataset import digest_dir, make_dataset

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'curate[ray]')")


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray for this module: ray.init(num_cpus=2), shut down after it.

    Module-scoped, not session-scoped: tests/test_ray_cluster.py ends with ``ray stop --force``,
    which kills every Ray process on the machine; a driver whose raylet was killed exits the
    whole pytest process with status 1 some seconds later, with no report.
    """
    root = str(Path(__file__).resolve().parents[1])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}},
    )
    yield ray
    ray.shutdown()


@dataclass
class FlakyStage(MapStage):
    """Fails the first time it sees a shard (a marker file remembers), then passes documents through."""

    name: ClassVar[str] = "flaky"
    marker_dir: str = ""
    always: bool = False

    def __call__(self, table: pa.Table) -> MapResult:
        first_id = table.column("id")[0].as_py() if table.num_rows else "empty"
        marker = Path(self.marker_dir) / first_id
        if self.always or not marker.exists():
            marker.touch()
            raise RuntimeError(f"injected failure at {first_id}")
        return MapResult(table)


def test_task_that_fails_once_is_retried(ray_session, tmp_path):
    from curate.executor import RayExecutor

    src = make_dataset(tmp_path / "in", shards=3, per_shard=10)
    (tmp_path / "markers").mkdir()
    rec = run_py(FlakyStage(str(tmp_path / "markers")), inputs=[str(src)], out=tmp_path / "out", executor=RayExecutor(max_retries=2))
    assert rec["docs_out"] == 30 and rec["shards"] == 3
    assert len(list((tmp_path / "markers").iterdir())) == 3  # each shard failed once, then succeeded


def test_task_that_always_fails_names_the_shard(ray_session, tmp_path):
    from curate.executor import RayExecutor

    src = make_dataset(tmp_path / "in", shards=2, per_shard=5)
    (tmp_path / "markers").mkdir()
    with pytest.raises(ShardError) as err:
        run_py(
            FlakyStage(str(tmp_path / "markers"), always=True), inputs=[str(src)], out=tmp_path / "out", executor=RayExecutor(max_retries=1)
        )
    assert "2 of 2 shard(s) failed" in str(err.value)
    assert [name for name, _ in err.value.failures] == ["part-00000", "part-00001"]
    assert all("injected failure" in msg for _, msg in err.value.failures)
    assert not (tmp_path / "out" / "_SUCCESS").exists()


@pytest.mark.slow
@pytest.mark.skipif(not (SAMPLE / "pile").exists(), reason="sample_data not built")
def test_sample_pipeline_on_ray_equals_local(ray_session, run, tmp_path):
    """download -> clean -> dedup -> decontam -> tokenize with --executor ray: every output equals the local executor's."""
    run("download", "pile", "--dataset", SAMPLE / "pile", "--shard-docs", "400", "--out", tmp_path / "pile")
    outputs = {}
    for ex in ("local", "ray"):
        o = tmp_path / ex
        common = ["--executor", ex, "--workers", "2"]
        run("clean", "--in", tmp_path / "pile", "--out", o / "clean", "--keep-rejected", *common)
        run("dedup", "exact", "--in", o / "clean", "--out", o / "exact", "--keep-rejected", *common)
        run("dedup", "fuzzy", "--in", o / "exact", "--out", o / "fuzzy", "--verify", "exact", "--keep-rejected", *common)
        run("decontam", "--in", o / "fuzzy", "--out", o / "decontam", "--eval", SAMPLE / "eval" / "lambada_like.jsonl", *common)
        run("tokenize", "--in", o / "decontam", "--out", o / "tok" / "all", *common)
        outputs[ex] = o
    for stage in ("clean", "exact", "fuzzy", "decontam"):
        local, on_ray = digest_dir(outputs["local"] / stage), digest_dir(outputs["ray"] / stage)
        assert local and local == on_ray, stage
    for ext in (".bin", ".idx"):
        assert (outputs["local"] / "tok" / f"all{ext}").read_bytes() == (outputs["ray"] / "tok" / f"all{ext}").read_bytes()


@pytest.fixture(scope="module")
def s3_on_ray():
    """A local S3 server (moto) for the Ray tasks; they get its AWS_* settings from the driver (storage_env)."""
    pytest.importorskip("s3fs", reason="s3fs is not installed (pip install 'curate[s3]')")
    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    from tests.test_fsspec import s3_bucket

    yield from s3_bucket()


@pytest.mark.slow
@pytest.mark.skipif(not (SAMPLE / "pile").exists(), reason="sample_data not built")
def test_ray_tasks_read_and_write_s3(ray_session, s3_on_ray, run, tmp_path):
    """clean -> dedup fuzzy -> decontam -> tokenize as Ray tasks on s3:// paths equal the local executor on local paths."""
    from tests.test_fsspec import BUCKET, fetch

    run("download", "pile", "--dataset", SAMPLE / "pile", "--max-docs", "100", "--shard-docs", "400", "--out", tmp_path / "pile")
    s3_on_ray.put(str(tmp_path / "pile") + "/", f"{BUCKET}/ray/pile/", recursive=True)
    ev = SAMPLE / "eval" / "lambada_like.jsonl"
    out = {}
    for root, inp, ex in (
        (str(tmp_path / "local"), str(tmp_path / "pile"), "local"),
        (f"s3://{BUCKET}/ray", f"s3://{BUCKET}/ray/pile", "ray"),
    ):
        common = ["--executor", ex, "--workers", "2"]
        run("clean", "--in", inp, "--out", f"{root}/clean", "--keep-rejected", *common)
        run("dedup", "fuzzy", "--in", f"{root}/clean", "--out", f"{root}/fuzzy", "--keep-rejected", *common)
        out[ex] = run("decontam", "--in", f"{root}/fuzzy", "--out", f"{root}/decontam", "--eval", ev, "--keep-rejected", *common).stdout
        run("tokenize", "--in", f"{root}/decontam", "--out", f"{root}/tok/all", *common)
    assert "10 docs contaminated" in out["ray"]  # the index reached the tasks (through the object store)
    got = fetch(s3_on_ray, f"s3://{BUCKET}/ray", tmp_path / "got")
    for stage in ("clean", "fuzzy", "decontam"):
        want = digest_dir(tmp_path / "local" / stage)
        assert want and digest_dir(got / stage) == want, stage
    for ext in (".bin", ".idx"):
        assert (got / "tok" / f"all{ext}").read_bytes() == (tmp_path / "local" / "tok" / f"all{ext}").read_bytes()

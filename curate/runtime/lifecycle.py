"""The lifecycle every command runs through: inputs, overlap, state, work, failure policy, record.

:func:`run_stage` is the only path a command takes (the package docstring lists its steps);
everything here is the same for every stage, so every guarantee holds everywhere.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from curate import __version__
from curate.dataset import Inputs, check_columns, check_ids, open_parquet, sha256_json
from curate.errors import CurateError, StageFailed
from curate.executor import Executor, make_executor
from curate.formats import DEFAULT as DEFAULT_FORMAT
from curate.runtime.params import Common
from curate.runtime.passes import Context
from curate.runtime.stage import Stage
from curate.storage import AnyPath, RemotePath
from curate.targets import Target

log = logging.getLogger("curate")


def _canonical(path: AnyPath) -> tuple[str, str]:
    if isinstance(path, RemotePath):
        return path.protocol, path.path.rstrip("/")
    return "file", str(Path(os.path.abspath(path)).resolve())


def check_overlap(outs: Iterable[AnyPath], ins: Iterable[AnyPath]) -> None:
    """Refuse an output that equals, lies inside or contains an input (nothing is touched yet)."""
    ins = list(ins)
    for o in outs:
        po, so = _canonical(o)
        for i in ins:
            pi, si = _canonical(i)
            if po != pi:
                continue
            if so == si:
                how = "is"
            elif so.startswith(si.rstrip("/") + "/"):
                how = "lies inside"
            elif si.startswith(so.rstrip("/") + "/"):
                how = "contains"
            else:
                continue
            raise CurateError(f"--out {o} {how} the input {i}; write the output outside the inputs (nothing was changed)")


def _diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    parts = []
    for k in sorted(set(old) | set(new)):
        if k.startswith("_") or k in ("inputs", "input_fingerprints") or old.get(k) == new.get(k):
            continue
        a, b = old.get(k), new.get(k)
        if isinstance(a, (dict, list)) or isinstance(b, (dict, list)) or len(repr(a)) + len(repr(b)) > 60:
            parts.append(k)
        else:
            parts.append(f"{k} {json.dumps(a)} -> {json.dumps(b)}")
    return ", ".join(parts) or "other curate version"


def _changed_inputs(old: dict[str, Any], new: dict[str, Any]) -> str:
    a, b = old.get("inputs") or [], new.get("inputs") or []
    fa, fb = old.get("input_fingerprints") or [], new.get("input_fingerprints") or []
    if a == b and len(fa) == len(fb):
        names = [n for n, x, y in zip(b, fa, fb) if x != y]
        return ", ".join(names) + (" changed since" if len(names) == 1 else " changed since")
    return "the inputs are others: " + ", ".join(b)


def prepare_output(stage: Stage, target: Target, params: dict[str, Any], overwrite: bool) -> dict[str, Any] | None:
    """Bring the output to a state where the work can start; returns the old record when nothing is to do.

    The rule (one for every command): same parameters and inputs -> resume, or nothing to
    do when complete; inputs changed -> start again, with one warning line; parameters
    changed -> an error unless ``overwrite`` (or nothing finished is there yet: a run that
    failed at once is simply redone). Only an output curate wrote is ever deleted.
    """
    title = stage.display()
    if target.exists():
        if not target.owned():
            raise CurateError(
                f"{target.path}: exists, is not empty and was not written by curate (no parameters file); choose another --out"
            )
        old = target.read_params()
        if overwrite:
            log.info("%s: --overwrite: deleting %s and starting again", title, target.path)
            target.clear()
        elif old is not None and _same_params(old, params):
            if old.get("input_fingerprints") == params.get("input_fingerprints"):
                record = target.read_record()
                if record is not None:
                    change = _changed_output(target, params, record)
                    if change is None:
                        target.touch()
                        log.info(
                            "%s: %s is complete and its inputs are unchanged; nothing to do (--overwrite redoes it)", title, target.path
                        )
                        return record
                    if change == "missing":
                        log.warning("%s: files of %s were deleted since it was written; making them again", title, target.path)
                    else:
                        log.warning("%s: %s was changed since it was written; starting again", title, target.path)
                        target.clear()
            else:
                log.warning("%s: %s was made from other inputs (%s it was written); starting again", title, target.path,
                            _changed_inputs(old, params))  # fmt: skip
                target.clear()
        elif not target.outputs():
            log.info("%s: %s holds no finished output of its earlier run (other parameters); starting again", title, target.path)
            target.clear()
        else:
            what = _diff(old or {}, params)
            writer = (old or {}).get("_stage", "a stage")
            raise CurateError(f"{target.path}: was written by {writer} with other parameters ({what}); use --overwrite to start again")
    target.create()
    if target.read_params() is None:
        target.write_params(params)
    return None


def output_fingerprint(target: Target, params: dict[str, Any]) -> str:
    """What the next stage fingerprints: the parameters (inputs included) and the output's data files (names, sizes)."""
    return sha256_json({"params": params, "outputs": target.outputs()})


def _changed_output(target: Target, params: dict[str, Any], record: dict[str, Any]) -> str | None:
    """None when a finished output is as its record says; "missing" when files were deleted; "changed" otherwise."""
    want = record.get("fingerprint")
    if not want or want == output_fingerprint(target, params):
        return None
    have = {name for name, _ in target.outputs()}
    listed = record.get("output_files")
    if listed is not None and have < set(listed):
        return "missing"
    return "changed"


def _same_params(old: dict[str, Any], new: dict[str, Any]) -> bool:
    skip = ("inputs", "input_fingerprints")
    return {k: v for k, v in old.items() if k not in skip} == {k: v for k, v in new.items() if k not in skip}


def check_outcome(stage: Stage, record: dict[str, Any]) -> None:
    """Fail a stage that kept nothing because its records failed; warn when many failed.

    "Failed" means a rejection reason the stage declares as an error (``error_reasons``):
    the extractor raised, the bytes did not decode, ... -- not a decision about the text.
    """
    din, dout = record.get("docs_in") or 0, record.get("docs_out") or 0
    rejected = record.get("rejected") or {}
    if not din or not rejected:
        return
    errors = {r: v["docs"] for r, v in rejected.items() if r in stage.error_reasons}
    if not errors:
        return
    top = max(rejected.items(), key=lambda kv: kv[1]["docs"])[0]
    first = ((record.get("counters") or {}).get("first_error") or {}).get(top)
    example = f" (the first: {first})" if first else ""
    if dout == 0 and top in errors:
        raise StageFailed(
            f"{stage.display()}: kept no document: {errors[top]:,} of {din:,} records failed with {top}{example}; "
            "fix the cause, then re-run with --overwrite"
        )
    n = sum(errors.values())
    if n >= 0.1 * din:
        worst = max(errors, key=errors.__getitem__)
        first = ((record.get("counters") or {}).get("first_error") or {}).get(worst)
        log.warning("%s: %s of %s records failed (%s)%s", stage.display(), f"{n:,}", f"{din:,}",
                    ", ".join(f"{r} {c:,}" for r, c in sorted(errors.items())), f"; the first {worst}: {first}" if first else "")  # fmt: skip


def check_input_columns(inputs: Inputs, required: Sequence[str]) -> None:
    """Required columns and their types, in the first shard of each input directory and in every foreign file (footers only)."""
    if not required or not inputs.files:
        return
    seen: set[str] = set()
    for f in inputs.files:
        parent = str(f.parent)
        if parent in seen and f not in inputs.foreign:
            continue
        seen.add(parent)
        check_columns(f, open_parquet(f).schema_arrow, required)


def stage_params(stage: Stage, inputs: Inputs, common: Common) -> dict[str, Any]:
    """What an output is made from: the stage's parameters, the shared options that change it, its inputs."""
    params: dict[str, Any] = {"_stage": stage.name, "inputs": inputs.names, "input_fingerprints": inputs.fingerprints}
    if "keep_rejected" in stage.options:
        params["keep_rejected"] = common.keep_rejected
    if "only_sources" in stage.options:
        params["only_sources"] = [common.only_sources] if common.only_sources else None
    if "format" in stage.options and common.format != DEFAULT_FORMAT:  # recorded only when not the default: older records stay valid
        params["format"] = common.format
    params.update(stage.params())
    return json.loads(json.dumps(params, sort_keys=True, default=str))


def run_stage(stage: Stage, common: Common, executor: Executor | None = None) -> dict[str, Any]:
    """Run one stage over its inputs into its output: the whole lifecycle (see the module docstring).

    Returns the completion record; its ``summary`` holds the lines to print.
    """
    started = time.monotonic()
    inputs = stage.inputs(common)
    target = stage.target(common)
    check_overlap(target.locations(), inputs.locations)
    params = stage_params(stage, inputs, common)
    check_input_columns(inputs, stage.required_columns)
    old = prepare_output(stage, target, params, common.overwrite)
    if old is not None:
        if "summary" not in old:
            old["summary"] = stage.summary(old)
        return old
    target.invalidate()
    if inputs.foreign and stage.required_columns:
        check_ids(inputs.foreign, ids=stage.checks_ids)
    own = executor is None
    if executor is None:
        executor = make_executor(common.executor or "local", common.workers, ray_address=common.ray_address)
    ctx = Context(stage, common, inputs, target, executor, params, started)
    try:
        result = stage.run(ctx)
    finally:
        if own:
            executor.close()
    check_outcome(stage, result)
    record = {
        "stage": stage.name,
        "curate_version": __version__,
        "params": {k: v for k, v in params.items() if not k.startswith("_")},
        "output": str(target.path),
        "wall_seconds": round(time.monotonic() - started, 3),
        **result,
    }
    outputs = target.outputs()
    record["fingerprint"] = sha256_json({"params": params, "outputs": outputs})
    record["output_files"] = [name for name, _ in outputs]
    record["summary"] = stage.summary(record)
    record["sections"] = dict(stage.sections)
    record["title"] = stage.display()
    target.write_record(record)
    return record


def run(stage: Stage, *, out: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (), executor: Executor | None = None,
        **options: Any) -> dict[str, Any]:  # fmt: skip
    """Run a stage from Python (a notebook, a test) with the command's lifecycle; ``options`` are the shared options."""
    return run_stage(stage, Common(inputs=[str(i) for i in inputs], out=str(out), **options), executor)

"""The stage runtime: one lifecycle for every command, so every guarantee holds everywhere.

A stage only describes its work: its parameters (a dataclass whose fields are declared with
:func:`param`), what it reads, where it writes, and the work itself. :func:`run_stage` does
the rest, the same way for every command:

1. **Inputs** are resolved and fingerprinted (a finished curate directory by its
   ``_SUCCESS`` fingerprint, other files by name, size and modification time).
2. **Overlap**: an output that equals, lies inside or contains an input is refused before
   anything is touched.
3. **State** of the output, compared with the parameters and input fingerprints an earlier
   run recorded: the same -> nothing to do (the old record is reported and its marker
   touched, so make is satisfied); inputs changed -> the output is deleted and made again,
   said in one warning line that ``--quiet`` does not hide; parameters changed -> an error
   naming what changed, unless ``--overwrite``. ``--overwrite`` and a restart delete only
   an output curate wrote (it has its parameters file) or an empty directory.
4. **Work**, on the executor the command asked for: a map pass (one shard per input shard),
   a file pass (one shard per input file), a stream cut into shards, or the stage's own
   phases (global stages end with a map pass; sinks write other files).
5. **Failure policy**: a failed shard is one line, printed once; the stage then fails with
   one line whose advice fits the cause. A stage that kept nothing and whose commonest
   rejection reason is an error (``extractor_error``, ``decode_error``, ...) exits 1.
6. **Completion**: the record (merged stats, parameters, the output's fingerprint and the
   stage's summary lines) is written last; it is what the next stage fingerprints.

Stage kinds (each a small protocol): :class:`MapStage` (a table in, kept and rejected
documents and counters out), :class:`Stage` with ``kind`` ``source`` (files or a stream in,
documents out), ``global`` (phases over the whole input, then a map pass) and ``sink``
(documents in, other files out). The CLI builds each command's options from the same
declaration (``cli.py``), and ``--params FILE.yaml`` takes the same keys.

Modules: ``params`` (parameter declarations and the shared options), ``stage`` (the stage
protocols and :class:`DocStage`, the base of per-document stages), ``lifecycle``
(:func:`run_stage`), ``passes`` (the :class:`Context` and its map, file and stream passes).
"""

from curate.executor import default_workers as default_workers  # stages do not import the executor
from curate.executor import show_progress_bar as show_progress_bar
from curate.runtime.lifecycle import check_outcome, check_overlap, output_fingerprint, prepare_output, run, run_stage, stage_params
from curate.runtime.params import COMMON, MAP_OPTIONS, Common, Param, absolute, declared_params, param
from curate.runtime.passes import Context, check_unique_output_ids, describe_shard
from curate.runtime.stage import KEEP, Batch, Decision, Decisions, DocStage, Document, FileBatch, MapResult, MapStage, Stage
from curate.stats import Counters, summary_line

__all__ = [
    "COMMON",
    "KEEP",
    "MAP_OPTIONS",
    "Batch",
    "Common",
    "Context",
    "Counters",
    "Decision",
    "Decisions",
    "DocStage",
    "Document",
    "FileBatch",
    "MapResult",
    "MapStage",
    "Param",
    "Stage",
    "absolute",
    "check_outcome",
    "check_overlap",
    "check_unique_output_ids",
    "declared_params",
    "default_workers",
    "describe_shard",
    "output_fingerprint",
    "param",
    "prepare_output",
    "run",
    "run_stage",
    "show_progress_bar",
    "stage_params",
    "summary_line",
]

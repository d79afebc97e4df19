"""Blend tokenized sources by weight or epochs into one corpus, or into Megatron's ``--data-path``.

A blend config (YAML) lists sources, each a tokenized prefix (``PREFIX.bin``/``.idx``) or a
dataset directory (tokenized here first), with a ``weight`` or a number of ``epochs``, and
a total token budget. Sources with ``epochs`` take ``epochs x tokens available``; the rest
of the budget is shared by the weighted sources in proportion to their (normalised)
weights, as in the MT-NLG training blend.

In *corpus* mode each source's documents are sampled without replacement within each
epoch (whole epochs, then a seeded prefix of one more permutation, cut at the document
that lands closest to the target: within one document of it), and the sources are
interleaved uniformly at random, all deterministic by seed. Streaming: memory is one
chunk of each source's order (computed, not stored) and one chunk of the output, whatever the sources' sizes.
In *megatron-args* mode the weights become ``--data-path "w1 prefix1 w2 prefix2 ..."``
for train-time blending.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from curate import __version__, megatron
from curate.dataset import Inputs, files_fingerprint, input_name, is_curate_dir, record_fingerprint
from curate.errors import CurateError
from curate.registry import stage
from curate.runtime import Common, Context, Stage, param
from curate.stages.blend.config import DEFAULT_MAX_EPOCHS, DEFAULT_SEED, load_config, parse_total_tokens
from curate.stages.blend.plan import data_path_string, format_table, plan_blend, resolve_sources, source_prefix, write_blend
from curate.storage import as_path, write_bytes_atomic, write_json_atomic
from curate.targets import read_json

log = logging.getLogger("curate")


@stage("blend", section="produce", order=20)
@dataclass
class BlendStage(Stage):
    """Blend sources by weight or epochs (the MT-NLG table), into a corpus or Megatron's --data-path.

    Each source is a tokenized prefix or a dataset directory (tokenized into OUT/sources/).
    Sources with epochs take that many passes; weighted sources share the rest of
    total_tokens by weight. Documents are sampled without replacement within each epoch.

    \b
    Example BLEND.yaml:
      total_tokens: 1000000          # or 270B, or auto
      max_epochs: 5
      sources:
        - {name: pile/Wikipedia, path: out/tokenized/pile_Wikipedia, weight: 0.04771}
        - {name: cc, path: out/dedup, sources: "cc/*", epochs: 1.0}
    \b
    Examples:
      curate blend --config blend.yaml --out out/blend
      curate blend --config blend.yaml --out out/blend --mode megatron-args
    """

    name: ClassVar[str] = "blend"
    sections: ClassVar[dict[str, str]] = {"blend": "rows"}
    kind: ClassVar[str] = "sink"
    options: ClassVar[tuple[str, ...]] = ("out", "workers", "overwrite", "executor", "ray_address")
    option_help: ClassVar[dict[str, str]] = {
        "out": "Output directory (blend.bin/.idx, or data_path.txt; blend_table.txt, blend.json, _SUCCESS).",
        "workers": "Worker processes for sources that need tokenizing [default: all cores].",
        "overwrite": "Delete what an earlier run wrote to OUT (sources it tokenized included) and start again.",
    }
    checks_ids: ClassVar[bool] = False
    required_columns: ClassVar[tuple[str, ...]] = ()
    config: str = param(help="Sources with a weight or epochs, and total_tokens.", metavar="BLEND.yaml", required=True, record=False)
    mode: str = param("corpus", "corpus: write a sampled, shuffled, tokenized blend; megatron-args: write Megatron's --data-path "
                      "for train-time blending.", choices=("corpus", "megatron-args"))  # fmt: skip
    seed: int | None = param(None, "Sampling seed [default: the config's seed, else 1234].", min=0)
    max_epochs: float | None = param(None, "Most passes over any source [default: the config's max_epochs, else 10].", min=0.0,
                                     min_open=True)  # fmt: skip
    total_tokens: str | None = param(None, "Override the config's total_tokens (e.g. 270B, 1e6, auto).", metavar="N|auto")
    skip_missing: bool = param(False, "Leave out sources that have no documents (no path, an empty prefix, none of their sources), "
                               "each named in a warning line, instead of failing; the other weights renormalise.")  # fmt: skip

    def __post_init__(self) -> None:
        if self.mode not in ("corpus", "megatron-args"):
            raise CurateError(f"--mode must be corpus or megatron-args, got {self.mode!r}")
        self.cfg = load_config(self.config)
        cfg = self.cfg
        self.seed_used = self.seed if self.seed is not None else (cfg.seed if cfg.seed is not None else DEFAULT_SEED)
        self.max_epochs_used = self.max_epochs if self.max_epochs is not None else (cfg.max_epochs if cfg.max_epochs is not None
                                                                                    else DEFAULT_MAX_EPOCHS)  # fmt: skip
        override = parse_total_tokens(self.total_tokens) if isinstance(self.total_tokens, str) else self.total_tokens
        self.budget = override if override is not None else cfg.total_tokens

    def derived_params(self) -> dict[str, Any]:
        """The config by content (its sources and tokenizer) and the values resolved from it."""
        return {
            "config": str(self.config),
            "sources": [{k: v for k, v in asdict(s).items() if k != "buckets" or v is not None} for s in self.cfg.sources],
            "tokenizer": self.cfg.tokenizer,
            "append_eod": self.cfg.append_eod,
            "seed": self.seed_used,
            "max_epochs": self.max_epochs_used,
            "total_tokens": self.budget,
        }

    def inputs(self, common: Common) -> Inputs:
        names, prints, locations = [], [], []
        for spec in self.cfg.sources:
            names.append(input_name(spec.path))
            prefix = source_prefix(spec)
            if prefix is not None:
                stats = read_json(as_path(f"{prefix}.stats.json"))
                fp = (stats or {}).get("fingerprint") or files_fingerprint([as_path(f"{prefix}.bin"), as_path(f"{prefix}.idx")])
                prints.append(fp)
                locations += [as_path(f"{prefix}.bin"), as_path(f"{prefix}.idx")]
            elif as_path(spec.path).is_dir():
                p = as_path(spec.path)
                prints.append(
                    record_fingerprint(p)
                    if is_curate_dir(p) and (p / "_SUCCESS").exists()
                    else files_fingerprint(sorted(p.glob("*.parquet")))
                )
                locations.append(p)
            else:
                prints.append("missing")
        return Inputs(names, [], prints, locations)

    def run(self, ctx: Context) -> dict[str, Any]:
        cfg = self.cfg
        out = ctx.out
        skipped: list[str] = []
        infos = resolve_sources(cfg, out, run_map=ctx.map, skip_missing=self.skip_missing, skipped=skipped)
        rows = plan_blend(infos, self.budget, self.max_epochs_used, self.config)
        tokenizer = next((i.tokenizer for i in infos if i.tokenizer is not None), None)
        seed = self.seed_used
        record: dict[str, Any] = {
            "config": str(self.config),
            "mode": self.mode,
            "seed": seed,
            "max_epochs": self.max_epochs_used,
            "total_tokens": sum(r.target_tokens for r in rows),
            "tokenizer": tokenizer,
            "skipped_sources": skipped,
        }
        if self.mode == "corpus":
            prefix = out / "blend"
            counts = write_blend(rows, prefix, seed, infos[0].dtype)
            title = f"blend of {len(rows)} sources -> {prefix}.bin/.idx (seed {seed})"
            per_source = {r.name: {"documents": r.docs_taken, "tokens": r.tokens_taken} for r in rows}
            stats = {
                "stage": "blend",
                "curate_version": __version__,
                "prefix": str(prefix),
                "tokenizer": tokenizer,
                "dtype": infos[0].dtype.name,
                "dtype_code": megatron.DTYPE_CODES[infos[0].dtype],
                **counts,
                "per_source": per_source,
                "seed": seed,
            }
            write_json_atomic(as_path(f"{prefix}.stats.json"), stats)
            record.update({"prefix": str(prefix), **counts})
        else:
            dp = data_path_string(rows)
            write_bytes_atomic(out / "data_path.txt", (dp + "\n").encode())
            record["data_path"] = dp
            record["data_path_file"] = str(out / "data_path.txt")
            title = f"blend of {len(rows)} sources for train-time blending (Megatron --data-path)"
        if skipped:
            title += f"\n(left out, not found: {', '.join(skipped)}; the other weights are renormalised)"
        table = format_table(rows, title)
        record["rows"] = [r.to_dict() for r in rows]
        record["table"] = table
        write_bytes_atomic(out / "blend_table.txt", (table + "\n").encode())
        write_json_atomic(out / "blend.json", record)
        return record

    def summary(self, record: dict[str, Any]) -> list[str]:
        lines = str(record.get("table", "")).splitlines()
        if record.get("mode") == "corpus":
            lines.append(
                f"  output: {record['prefix']}.bin, {record['prefix']}.idx ({record['documents']:,} docs, {record['tokens']:,} tokens)"
            )
        else:
            lines += [f"--data-path {record['data_path']}", f"  written to {record['data_path_file']}"]
        return lines

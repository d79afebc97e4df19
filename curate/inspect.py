"""``curate inspect``: counts, dtype and one decoded document of a Megatron indexed dataset."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from curate import megatron
from curate.errors import CurateError
from curate.storage import as_path


def _strip_suffix(prefix: str) -> str:
    for suffix in (".bin", ".idx", ".stats.json"):
        if prefix.endswith(suffix):
            return prefix[: -len(suffix)]
    return prefix


def _stats(prefix: str) -> dict[str, Any] | None:
    try:
        return json.loads(as_path(f"{prefix}.stats.json").read_text())
    except (OSError, ValueError):
        return None


def inspect_lines(prefix: str, doc: int | None = None, tokenizer: str | None = None, max_chars: int | None = None) -> list[str]:
    """The lines ``curate inspect`` prints."""
    prefix = _strip_suffix(str(prefix))
    if not megatron.exists(prefix):
        p = as_path(prefix)
        if p.is_dir():
            found = sorted(f.name[:-4] for f in p.glob("*.idx"))
            hint = f"; prefixes there: {', '.join(str(p / f) for f in found[:5])}" if found else ""
            raise CurateError(f"{prefix}: a directory; give a prefix (PREFIX for PREFIX.bin/.idx){hint}")
        missing = [str(f) for f in (megatron.bin_path(prefix), megatron.idx_path(prefix)) if not f.is_file()]
        raise CurateError(f"{prefix}: no indexed dataset here ({' and '.join(missing)} missing)")
    ds = megatron.IndexedDataset(prefix)
    stats = _stats(prefix)
    lengths = ds.document_lengths()
    lines = [
        f"prefix:     {prefix}",
        f"dtype:      {ds.dtype.name} (code {megatron.DTYPE_CODES[ds.dtype]})",
        f"documents:  {ds.num_documents:,}",
        f"sequences:  {len(ds):,}",
        f"tokens:     {ds.num_tokens:,}",
    ]
    if len(lengths):
        lines.append(f"per doc:    min {int(lengths.min()):,}, mean {float(lengths.mean()):,.1f}, max {int(lengths.max()):,} tokens")
    lines.append(
        f"files:      {megatron.bin_path(prefix).stat().st_size:,} bytes .bin, {megatron.idx_path(prefix).stat().st_size:,} bytes .idx"
    )
    tok_info = (stats or {}).get("tokenizer")
    if tok_info:
        lines.append(
            f"tokenizer:  {tok_info.get('name')} ({tok_info.get('source')}), vocabulary {tok_info.get('vocab_size'):,}, eod {tok_info.get('eod')}"
        )
    if stats and "per_source" in stats:
        per = stats["per_source"]
        if len(per) > 1 or stats.get("stage") == "blend":
            width = max(len(s) for s in per)
            lines.append("sources:")
            for s, v in sorted(per.items()):
                lines.append(f"  {s:<{width}}  {v.get('documents', 0):>10,} docs  {v.get('tokens', 0):>14,} tokens")
    if doc is not None:
        if doc >= ds.num_documents:
            raise CurateError(f"{prefix}: --doc {doc} is out of range (it has {ds.num_documents:,} documents)")
        from curate.tokenizer import load_tokenizer

        spec = tokenizer or (tok_info or {}).get("source") or "gpt2"
        eod_token = None if tokenizer else (tok_info or {}).get("eod_token")
        tok = load_tokenizer(spec, eod_token if spec != "gpt2" else None)
        ids = np.asarray(ds.document(doc))
        shown = ", ".join(str(int(i)) for i in ids[:24]) + (", ..." if len(ids) > 24 else "")
        text = tok.decode(ids)
        if max_chars is not None and len(text) > max_chars:
            text = text[:max_chars] + f" [... {len(text) - max_chars:,} more characters]"
        lines += [f"document {doc}: {len(ids):,} tokens", f"ids:        [{shown}]", "text:", text]
    return lines

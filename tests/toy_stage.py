"""A toy map stage for tests/test_runtime.py: what a new stage takes (this module, plus one registration line)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from curate.runtime import MapResult, MapStage, param
from curate.schema import BASE_FIELDS, with_column


@dataclass
class Shout(MapStage):
    """Upper-case the text of short documents; longer ones are rejected (too_long)."""

    name: ClassVar[str] = "shout"
    max_chars: int = param(5000, "Documents longer than this are rejected.", min=1)

    def __call__(self, table: pa.Table) -> MapResult:
        short = pc.less_equal(pc.utf8_length(table.column("text")), self.max_chars)
        upper = with_column(table, BASE_FIELDS[1], pc.utf8_upper(table.column("text")))
        rejected = table.filter(pc.invert(short))
        rejected = rejected.append_column("reason", pa.array(["too_long"] * rejected.num_rows, pa.string()))
        return MapResult(upper.filter(short), rejected, {"shouted": int(pc.sum(short).as_py() or 0)})

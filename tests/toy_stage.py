"""A toy map stage for tests/test_runtime.py: what a new stage takes (this module, registered by its decorator)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from curate.registry import stage
from curate.runtime import Batch, Counters, Decisions, DocStage, param


@stage("shout", section="clean", order=90)
@dataclass
class Shout(DocStage):
    """Upper-case the text of short documents; longer ones are rejected (too_long)."""

    name: ClassVar[str] = "shout"
    max_chars: int = param(5000, "Documents longer than this are rejected.", min=1)

    def decide_batch(self, batch: Batch) -> Decisions:
        reasons = [None if len(t) <= self.max_chars else "too_long" for t in batch.texts]
        return Decisions(reasons, [t.upper() for t in batch.texts], counters=Counters(shouted=reasons.count(None)))

"""``curate shout``: upper-case short documents, reject long ones (a map stage is one class)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from curate.registry import stage
from curate.runtime import Decision, DocStage, Document, param


@stage("shout", section="clean", order=90)
@dataclass
class Shout(DocStage):
    """Upper-case the text of short documents; longer ones are rejected (too_long)."""

    name: ClassVar[str] = "shout"
    max_chars: int = param(5000, "Documents longer than this are rejected.", min=1)

    def decide(self, doc: Document) -> Decision | str | None:
        if len(doc.text) > self.max_chars:
            return "too_long"
        return Decision(text=doc.text.upper())

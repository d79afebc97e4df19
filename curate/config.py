"""YAML configs read safely and strictly: an unknown key is an error naming it and the file."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml

from curate.errors import CurateError


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file with the safe loader; a missing or malformed file is a one-line error."""
    p = Path(path)
    if not p.is_file():
        raise CurateError(f"{p}: no such config file")
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CurateError(f"{p}: not valid YAML{where}: {problem}") from exc
    except UnicodeDecodeError as exc:
        raise CurateError(f"{p}: not UTF-8 text") from exc


def check_keys(mapping: Any, allowed: set[str] | list[str], where: str, path: str | Path) -> dict[str, Any]:
    """Return ``mapping`` if it is a dict whose keys are all in ``allowed``; else a clear error."""
    if mapping is None:
        return {}
    if not isinstance(mapping, dict):
        raise CurateError(f"{path}: {where} must be a mapping, got {type(mapping).__name__}")
    allowed = set(allowed)
    for key in mapping:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; allowed: {', '.join(sorted(allowed))}"
            raise CurateError(f"{path}: unknown key {key!r} in {where}{hint}")
    return mapping

"""YAML configs read safely and strictly: an unknown key is an error naming it and the file."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml

from curate.errors import CurateError

MAX_CONFIG_BYTES = 10 << 20
MAX_CONFIG_NODES = 1_000_000


def _check_size(data: Any, where: Path) -> None:
    """A config is plain data: no cycles, and at most ``MAX_CONFIG_NODES`` values once aliases are expanded.

    YAML aliases (``*a``) share one object, so nine levels of nine aliases ("billion laughs")
    parse in microseconds but expand to 10**9 values in anything that walks or copies them.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(x: Any) -> int:
        if not isinstance(x, (dict, list)):
            return 1
        key = id(x)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise CurateError(f"{where}: a YAML alias refers to itself (a recursive structure); a config must be plain data")
        active.add(key)
        items = list(x.keys()) + list(x.values()) if isinstance(x, dict) else x
        n = 1
        for item in items:
            n += size(item)
            if n > MAX_CONFIG_NODES:
                raise CurateError(f"{where}: expands to more than {MAX_CONFIG_NODES:,} values (YAML aliases?); not a config")
        active.discard(key)
        sizes[key] = n
        return n

    size(data)


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file with the safe loader (plain data, no tags that build objects); a bad file is a one-line error."""
    p = Path(path)
    if not p.is_file():
        raise CurateError(f"{p}: no such config file")
    if p.stat().st_size > MAX_CONFIG_BYTES:
        raise CurateError(f"{p}: {p.stat().st_size:,} bytes is too large for a config file")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
        _check_size(data, p)
        return data
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CurateError(f"{p}: not valid YAML{where}: {problem}") from exc
    except UnicodeDecodeError as exc:
        raise CurateError(f"{p}: not UTF-8 text") from exc
    except RecursionError as exc:
        raise CurateError(f"{p}: nested too deeply to be a config") from exc


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
